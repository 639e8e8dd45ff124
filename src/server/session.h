#pragma once
// Internals of the server: the state shared by all connections (Core), one
// connection (Session) and the accept loop (Listener). See server.h.

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/metrics.h"
#include "server/server.h"
#include "util/mutex.h"

namespace trainwatch::server::internal {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

class Session;

// The Date header's value now ("Sun, 06 Dec 2026 03:28:53 GMT").
std::string HttpDate();

// One io_context per request thread: a connection's operations all run on
// the thread it was given, so a request never waits for another thread to
// wake up (a hand-over between threads cost about 80 us a request). The
// acceptor and the signals have a context and thread of their own, so a long
// request never holds up new connections or a stop.
struct Core {
  Core(const ServerOptions& o, RequestHandler& h, ServerMetrics& m);

  // The context of the next accepted connection (round robin).
  net::io_context& NextContext() {
    return *contexts[next_context.fetch_add(1, std::memory_order_relaxed) % contexts.size()];
  }

  const ServerOptions options;
  RequestHandler& handler;
  ServerMetrics& metrics;
  std::atomic<size_t> next_context{0};
  std::atomic<bool> stopping{false};

  util::Mutex mu;
  std::unordered_map<const Session*, std::weak_ptr<Session>> sessions ABSL_GUARDED_BY(mu);

  // Declared after mu and sessions, so destroyed before them: handlers still
  // queued when a context is destroyed unregister their sessions. The accept
  // context goes first: its pending accept holds a socket of a request context.
  std::vector<std::unique_ptr<net::io_context>> contexts;  // options.threads of them
  net::io_context accept_context{1};
  // Keep each thread's run() going while its context has nothing to do.
  std::vector<net::executor_work_guard<net::io_context::executor_type>> keep_running;
};

// One connection. Lives as long as an operation on it is pending; all its
// handlers run on its context's one thread.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Core& core);
  ~Session();
  void Start();
  // On server stop: closes the connection unless a request is being
  // answered (that one finishes, then the connection closes); ends a stream.
  void Stop();
  net::any_io_executor executor() { return stream_.get_executor(); }

 private:
  enum class State { kIdle, kHeader, kBody, kHandling, kWriting, kStreaming, kClosed };

  void WaitForRequest();
  void ReadHeader();
  void OnHeader(beast::error_code ec);
  void ReadBody();
  void OnBody(beast::error_code ec);
  void Respond(api::HttpResponse response, bool keep_alive);
  void OnWrite(beast::error_code ec, bool keep_alive);
  // A server-made error (400, 408, 431...) then close.
  void Fail(int status, std::string_view message);
  void Close();
  void OnReadError(beast::error_code ec, int phase);

  // A streaming response (api::ResponseStream, stream.cc): the head, then
  // what the stream gives, one write in flight; a heartbeat timer; a read
  // that notices the client leaving.
  void StartStream(api::HttpResponse response);
  void PumpStream();
  void WriteStream(std::string bytes);
  void OnStreamWritten(beast::error_code ec, size_t n);
  void ArmHeartbeat();
  void WatchPeer();
  void EndStream();
  // Server stop: what the stream holds goes out in one last write (briefly),
  // unless a write is in flight (the client is behind): then it ends at once.
  void StopStream();

  Core& core_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  api::HttpRequest request_;
  State state_ = State::kIdle;
  std::string remote_;
  std::chrono::steady_clock::time_point started_;
  uint64_t bytes_in_ = 0;
  size_t body_limit_ = 0;

  std::shared_ptr<api::ResponseStream> stream_body_;
  std::string stream_out_;  // the write in flight
  bool stream_writing_ = false;
  bool stream_ending_ = false;  // server stop: a last write, then close
  std::optional<net::steady_timer> heartbeat_;
  std::array<char, 256> peer_bytes_{};
};

// Accepts connections until the acceptor is closed.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(Core& core, tcp::acceptor& acceptor)
      : core_(core), acceptor_(acceptor), retry_(core.accept_context) {}
  void Accept();

 private:
  void OnAccept(beast::error_code ec, tcp::socket socket);
  Core& core_;
  tcp::acceptor& acceptor_;
  net::steady_timer retry_;
};

}  // namespace trainwatch::server::internal
