#pragma once
// Server: trainwatch's asynchronous HTTP/1.1 server (Boost.Beast over Asio),
// the only part of trainwatch that touches sockets (start here).
//
// One listener on a thread of its own and a small pool of request threads,
// each running its own io_context; each connection belongs to one of them
// (round robin) and is a session that
// reads a request, hands it to the RequestHandler, writes the answer, and
// loops while the client keeps the connection alive. Slow or idle clients
// hold no thread:
//   - idle timeout: waiting for the first byte of the next request;
//   - header deadline: from the first byte to the end of the headers
//     (a slowloris client dribbling headers is cut off here);
//   - body and write deadlines;
//   - header size cap (431), body size cap per route (413 answered from the
//     headers, without reading the body), connection cap.
// A response with a stream (api::ResponseStream: Server-Sent Events) is
// written as the stream produces it, after headers without a length
// (Connection: close), one write in flight, until the client leaves or the
// server stops; it holds no thread while it waits.
// Stop() stops accepting, lets requests in flight finish, ends streams (one
// last write of what they hold, of at most 1 s, unless a write is in flight), closes idle
// connections and joins the threads. Handlers run on the server's threads; a
// handler that takes long (a large ingest batch) delays only the other
// connections of its thread.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "api/http.h"
#include "server/metrics.h"

namespace trainwatch::server {

// What the server serves. Implementations are thread-safe.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // The largest body accepted for a request with this method, target and headers.
  virtual size_t BodyLimit(const api::HttpRequest& head) const = 0;
  // The answer to a request whose body exceeds BodyLimit (sent without
  // reading the body; the connection is then closed).
  virtual api::HttpResponse TooLarge(const api::HttpRequest& head, size_t limit) const = 0;
  virtual api::HttpResponse Handle(const api::HttpRequest& request) const = 0;
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // numeric address
  uint16_t port = 9400;            // 0: any free port (see Server::port())
  // Refuse a non-loopback host unless requests are authenticated (--auth).
  bool authenticated = false;
  int threads = 2;  // request threads (one more accepts connections)
  // After it has run a handler, a request thread keeps looking for the next
  // one this long before it sleeps, so that a client sending requests one
  // after another (a dashboard, a script) does not wait for the thread to be
  // woken each time. Costs at most this much CPU after each handler the
  // thread runs (a request, a part of a slow body, a timer), none when idle;
  // 0 turns it off.
  int64_t poll_us = 200;
  size_t max_connections = 10000;
  size_t max_header_bytes = 16 * 1024;
  int64_t idle_timeout_ms = 60'000;
  int64_t header_timeout_ms = 10'000;
  int64_t body_timeout_ms = 30'000;
  int64_t write_timeout_ms = 30'000;
  // How long Stop() waits for requests in flight.
  int64_t shutdown_grace_ms = 5'000;
  // Streaming responses (api::ResponseStream, e.g. GET /api/v1/live): a
  // heartbeat this often, at most this many bytes a write. Waiting for data
  // counts against no timeout; each write against write_timeout_ms.
  int64_t stream_heartbeat_ms = 15'000;
  size_t stream_write_bytes = 64 * 1024;
};

class Server {
 public:
  // Binds, listens and starts the threads. `handler` and `metrics` must
  // outlive the Server. FailedPrecondition for a non-loopback host without
  // authentication; Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       RequestHandler& handler,
                                                       ServerMetrics& metrics);
  ~Server();  // Stop()

  uint16_t port() const;
  std::string address() const;  // "127.0.0.1:9400"

  // Graceful shutdown (idempotent); returns when the threads have exited.
  void Stop();
  // Blocks until SIGINT or SIGTERM arrives (or Stop() is called), then stops.
  // Returns the signal number, or 0 when stopped otherwise.
  int RunUntilSignal();

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Raises this process's open-file soft limit to at least `wanted` (capped by
// the hard limit); returns the limit now in force.
uint64_t RaiseOpenFileLimit(uint64_t wanted);

}  // namespace trainwatch::server
