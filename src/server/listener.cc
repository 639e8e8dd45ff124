// Connections: the accept loop and one HTTP/1.1 session per connection.
#include <algorithm>
#include <ctime>
#include <limits>

#include "absl/strings/str_format.h"
#include "server/session.h"
#include "util/log.h"
#include "util/mutex.h"

namespace trainwatch::server::internal {
namespace {

constexpr size_t kReadChunk = 4096;

}  // namespace

std::string HttpDate() {
  // Formatting the Date header once per second per thread is plenty.
  thread_local std::time_t cached_second = 0;
  thread_local std::string cached;
  std::time_t now = std::time(nullptr);
  if (now != cached_second) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached = buf;
    cached_second = now;
  }
  return cached;
}

namespace {

api::HttpResponse PlainError(int status, std::string_view code, std::string_view message) {
  api::HttpResponse r;
  r.status = status;
  r.headers.Add("x-amzn-RequestId", api::NewRequestId());
  r.headers.Add("Content-Type", "application/json");
  r.body = absl::StrFormat("{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n", code, message);
  return r;
}

}  // namespace

Core::Core(const ServerOptions& o, RequestHandler& h, ServerMetrics& m)
    : options(o), handler(h), metrics(m) {
  keep_running.push_back(net::make_work_guard(accept_context));
  for (int i = 0; i < std::max(o.threads, 1); ++i) {
    contexts.push_back(std::make_unique<net::io_context>(1));  // one thread runs it
    keep_running.push_back(net::make_work_guard(*contexts.back()));
  }
}

Session::Session(tcp::socket&& socket, Core& core)
    : core_(core), stream_(std::move(socket)) {
  beast::error_code ec;
  tcp::endpoint remote = stream_.socket().remote_endpoint(ec);
  if (!ec) remote_ = absl::StrFormat("%s:%d", remote.address().to_string(), remote.port());
  core_.metrics.ConnectionOpened();
}

Session::~Session() {
  if (stream_body_ != nullptr) stream_body_->Close();
  core_.metrics.ConnectionClosed();
  util::MutexLock lock(core_.mu);
  core_.sessions.erase(this);
}

void Session::Start() {
  {
    util::MutexLock lock(core_.mu);
    core_.sessions.emplace(this, weak_from_this());
  }
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->WaitForRequest(); });
}

void Session::Stop() {
  if (state_ == State::kStreaming) return StopStream();
  if (state_ == State::kIdle || state_ == State::kHeader) Close();
}

void Session::WaitForRequest() {
  if (core_.stopping.load()) return Close();
  state_ = State::kIdle;
  if (buffer_.size() > 0) return ReadHeader();  // a pipelined request is already here
  stream_.expires_after(std::chrono::milliseconds(core_.options.idle_timeout_ms));
  stream_.async_read_some(
      buffer_.prepare(kReadChunk),
      [self = shared_from_this()](beast::error_code ec, size_t n) {
        self->buffer_.commit(n);
        if (ec) return self->OnReadError(ec, ServerMetrics::kIdle);
        self->ReadHeader();
      });
}

void Session::ReadHeader() {
  state_ = State::kHeader;
  started_ = std::chrono::steady_clock::now();
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(core_.options.max_header_bytes));
  // Beast would compare Content-Length with its default body limit while
  // parsing the header; the route's own limit is applied in OnHeader. (Not
  // boost::none: Beast 1.74 compares lengths with an empty optional as "over".)
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  stream_.expires_after(std::chrono::milliseconds(core_.options.header_timeout_ms));
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            self->OnHeader(ec);
                          });
}

void Session::OnReadError(beast::error_code ec, int phase) {
  if (ec == beast::error::timeout) {
    // The stream has closed the socket already; nothing can be answered.
    core_.metrics.Timeout(phase);
    return Close();
  }
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == net::error::operation_aborted) {
    return Close();
  }
  if (ec == http::error::header_limit) {
    core_.metrics.TooLarge();
    return Fail(431, "the request headers are larger than the server accepts");
  }
  if (ec == http::error::body_limit) {
    core_.metrics.TooLarge();
    api::HttpResponse r = core_.handler.TooLarge(request_, body_limit_);
    return Respond(std::move(r), false);
  }
  core_.metrics.Malformed();
  Fail(400, absl::StrFormat("malformed HTTP request: %s", ec.message()));
}

void Session::OnHeader(beast::error_code ec) {
  if (ec) return OnReadError(ec, ServerMetrics::kHeader);
  const auto& msg = parser_->get();
  request_ = api::HttpRequest{};
  request_.method = std::string(msg.method_string());
  request_.target = std::string(msg.target());
  for (const auto& field : msg) {
    request_.headers.Add(std::string(field.name_string()), std::string(field.value()));
  }
  size_t limit = core_.handler.BodyLimit(request_);
  boost::optional<uint64_t> length = parser_->content_length();
  if (length && *length > limit) {
    core_.metrics.TooLarge();
    return Respond(core_.handler.TooLarge(request_, limit), /*keep_alive=*/false);
  }
  body_limit_ = limit;
  parser_->body_limit(limit);
  auto expect = msg.find(http::field::expect);
  if (expect != msg.end() && beast::iequals(expect->value(), "100-continue")) {
    // curl asks before sending bodies over 1 KiB; say yes, then read.
    auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
    stream_.expires_after(std::chrono::milliseconds(core_.options.write_timeout_ms));
    return http::async_write(stream_, *cont,
                             [self = shared_from_this(), cont](beast::error_code ec, size_t) {
                               if (ec) return self->Close();
                               self->ReadBody();
                             });
  }
  ReadBody();
}

void Session::ReadBody() {
  state_ = State::kBody;
  stream_.expires_after(std::chrono::milliseconds(core_.options.body_timeout_ms));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t n) {
                     self->bytes_in_ = n;
                     self->OnBody(ec);
                   });
}

void Session::OnBody(beast::error_code ec) {
  if (ec) return OnReadError(ec, ServerMetrics::kBody);
  state_ = State::kHandling;
  bool keep_alive = parser_->get().keep_alive();
  request_.body = std::move(parser_->get().body());
  parser_.reset();
  api::HttpResponse response = core_.handler.Handle(request_);
  if (response.stream != nullptr) {
    if (request_.method == "GET" && !core_.stopping.load()) {
      return StartStream(std::move(response));
    }
    response.stream.reset();  // HEAD: the head only
  }
  Respond(std::move(response), keep_alive);
}

void Session::Respond(api::HttpResponse response, bool keep_alive) {
  state_ = State::kWriting;
  keep_alive = keep_alive && !core_.stopping.load();
  response_ = {};
  response_.version(11);
  response_.result(static_cast<unsigned>(response.status));
  bool has_request_id = false;
  for (const auto& [name, value] : response.headers.entries()) {
    has_request_id = has_request_id || api::EqualsIgnoreCase(name, "x-amzn-RequestId");
    response_.insert(name, value);
  }
  if (!has_request_id) response_.set("x-amzn-RequestId", api::NewRequestId());
  // No Server header: clients use none of it, and every header costs each
  // answer's reader (Python's http.client: 55 us for an answer of 5 headers,
  // 35 us for one of 2; BENCHMARKS.md, "Time-series store").
  response_.set(http::field::date, HttpDate());
  size_t body_size = response.body.size();
  if (request_.method == "HEAD") {
    response_.content_length(body_size);
  } else {
    response_.body() = std::move(response.body);
    response_.prepare_payload();
  }
  response_.keep_alive(keep_alive);

  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  core_.metrics.Request(response.status, bytes_in_, body_size, seconds);
  util::Log(util::LogLevel::kDebug,
            absl::StrFormat("%s \"%s %s\" %d %d %.1fms", remote_, request_.method,
                            request_.target.substr(0, 200), response.status, body_size,
                            seconds * 1000));
  stream_.expires_after(std::chrono::milliseconds(core_.options.write_timeout_ms));
  http::async_write(stream_, response_,
                    [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                      self->OnWrite(ec, keep_alive);
                    });
}

void Session::OnWrite(beast::error_code ec, bool keep_alive) {
  if (ec == beast::error::timeout) core_.metrics.Timeout(ServerMetrics::kWrite);
  if (ec || !keep_alive) return Close();
  bytes_in_ = 0;
  WaitForRequest();
}

void Session::Fail(int status, std::string_view message) {
  Respond(PlainError(status, status == 431 ? "RequestHeaderFieldsTooLarge" : "BadRequest", message),
          /*keep_alive=*/false);
}

void Session::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
}

void Listener::Accept() {
  acceptor_.async_accept(core_.NextContext(),
                         [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
                           self->OnAccept(ec, std::move(socket));
                         });
}

void Listener::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    // EMFILE and friends: back off briefly instead of spinning.
    util::LogOnce("server-accept-failed",
                  absl::StrFormat("accept failed (%s); retrying; raise the open-file limit "
                                  "(ulimit -n) if this persists",
                                  ec.message()));
    retry_.expires_after(std::chrono::milliseconds(50));
    retry_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
      if (!wait_ec) self->Accept();
    });
    return;
  }
  if (core_.stopping.load()) return;
  if (static_cast<size_t>(core_.metrics.connections_open()) >= core_.options.max_connections) {
    core_.metrics.ConnectionRejected();
    beast::error_code ignored;
    socket.close(ignored);
  } else {
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<Session>(std::move(socket), core_)->Start();
  }
  Accept();
}

}  // namespace trainwatch::server::internal
