#pragma once
// HttpRequest / HttpResponse: the api layer's own HTTP value types, so that
// every operation can be tested without sockets. The server (Beast) converts
// to and from these; nothing here knows about connections.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainwatch::api {

// Header fields in arrival order. Names compare case-insensitively (clients
// send both "Host" and "host"); values are kept as received.
class Headers {
 public:
  void Add(std::string name, std::string value);
  // Removes every field called `name`, then adds one.
  void Set(std::string_view name, std::string value);
  void Remove(std::string_view name);
  // The first field called `name`, or nullptr.
  const std::string* Find(std::string_view name) const;
  // Every value of fields called `name`, in arrival order.
  std::vector<std::string_view> FindAll(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

struct HttpRequest {
  std::string method = "POST";
  std::string target = "/";  // path and query string as received
  Headers headers;
  std::string body;  // bytes as received (still compressed if Content-Encoding says so)

  std::string_view Path() const;   // target up to '?'
  std::string_view Query() const;  // after '?', or empty
};

// Whether a browser sent `request` for a page of another site (Sec-Fetch-Site,
// else an Origin other than http(s)://Host): a form another site posts
// carries the credentials a browser keeps, and reaches a server on loopback.
// Clients that are no browser send neither header.
bool FromAnotherSite(const HttpRequest& request);

// A response body written as it is produced, for as long as the client
// stays (Server-Sent Events: GET /api/v1/live). The server writes the status
// and headers, then, one write at a time, what Pull gives; when Pull gives
// nothing it waits, holding no thread, until the stream calls `wake`, and
// writes Heartbeat() every ServerOptions::stream_heartbeat_ms meanwhile.
// Close ends it (the client went away, the server stops). Start, Pull,
// Heartbeat and Close run on the connection's thread, one at a time.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Called once, first. `wake` may be called from any thread, any number of
  // times, until Close() returns; it only schedules a Pull and never blocks.
  virtual void Start(std::function<void()> wake) = 0;
  // The next bytes to write (about max_bytes at most), or "" when nothing is ready.
  virtual std::string Pull(size_t max_bytes) = 0;
  // Bytes that keep an idle connection open (": ping\n\n").
  virtual std::string Heartbeat() = 0;
  // After it returns, `wake` is not called again.
  virtual void Close() = 0;
};

struct HttpResponse {
  int status = 200;
  Headers headers;
  std::string body;
  // When set (status 200, empty body), the body is this stream and the
  // connection closes when it ends.
  std::shared_ptr<ResponseStream> stream;
};

// ASCII case-insensitive equality (header names, tokens).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The reason phrase for a status code ("Bad Request"); "Unknown" if not known.
std::string_view StatusReason(int status);

// A random version-4 UUID ("c0ffee00-0000-4000-8000-000000000001" shape), the
// x-amzn-RequestId of a response. Thread-safe.
std::string NewRequestId();

}  // namespace trainwatch::api
