// Streaming responses (api::ResponseStream: Server-Sent Events). The head
// goes out without a length (the body ends when the connection closes);
// then, one write at a time, what the stream's Pull gives. While a write is
// in flight nothing more is taken from the stream: what is produced
// meanwhile waits in the stream (the live hub's history, bounded; a reader
// too far behind is reset there), so a client that reads slowly costs one
// write buffer here. Waiting for data holds no thread and no deadline; each
// write has the write deadline; a heartbeat keeps idle connections (and the
// proxies on the way) open; a read pending on the socket notices the client
// leaving.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_format.h"
#include "server/session.h"
#include "util/log.h"

namespace trainwatch::server::internal {
namespace {

// The deadline of the last write when the server stops.
constexpr int64_t kLastWriteMs = 1000;

}  // namespace

void Session::StartStream(api::HttpResponse response) {
  state_ = State::kStreaming;
  stream_body_ = std::move(response.stream);
  core_.metrics.StreamOpened();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  core_.metrics.Request(200, bytes_in_, 0, seconds);
  util::Log(util::LogLevel::kDebug,
            absl::StrFormat("%s \"%s %s\" 200 stream", remote_, request_.method,
                            request_.target.substr(0, 200)));
  std::string head = "HTTP/1.1 200 OK\r\n";
  bool has_request_id = false;
  for (const auto& [name, value] : response.headers.entries()) {
    if (api::EqualsIgnoreCase(name, "Content-Length") ||
        api::EqualsIgnoreCase(name, "Transfer-Encoding") ||
        api::EqualsIgnoreCase(name, "Connection")) {
      continue;
    }
    has_request_id = has_request_id || api::EqualsIgnoreCase(name, "x-amzn-RequestId");
    head += absl::StrFormat("%s: %s\r\n", name, value);
  }
  if (!has_request_id) head += absl::StrFormat("x-amzn-RequestId: %s\r\n", api::NewRequestId());
  head += absl::StrFormat("Date: %s\r\nConnection: close\r\n\r\n", HttpDate());

  // `wake` may run on any thread (ingest's): it only posts a pump, at most
  // one pending at a time. After Close() (EndStream, ~Session) it is not
  // called again, so it never outlives this session's context.
  auto pending = std::make_shared<std::atomic<bool>>(false);
  std::weak_ptr<Session> weak = weak_from_this();
  net::any_io_executor executor = stream_.get_executor();
  stream_body_->Start([weak, executor, pending] {
    if (pending->exchange(true)) return;
    net::post(executor, [weak, pending] {
      pending->store(false);
      if (std::shared_ptr<Session> self = weak.lock()) self->PumpStream();
    });
  });
  heartbeat_.emplace(stream_.get_executor());
  ArmHeartbeat();
  WatchPeer();
  WriteStream(head + stream_body_->Pull(core_.options.stream_write_bytes));
}

void Session::PumpStream() {
  if (state_ != State::kStreaming || stream_writing_ || stream_ending_) return;
  std::string bytes = stream_body_->Pull(core_.options.stream_write_bytes);
  if (!bytes.empty()) WriteStream(std::move(bytes));
}

void Session::WriteStream(std::string bytes) {
  stream_writing_ = true;
  stream_out_ = std::move(bytes);
  stream_.expires_after(std::chrono::milliseconds(
      stream_ending_ ? std::min<int64_t>(core_.options.write_timeout_ms, kLastWriteMs)
                     : core_.options.write_timeout_ms));
  net::async_write(stream_, net::buffer(stream_out_),
                   [self = shared_from_this()](beast::error_code ec, size_t n) {
                     self->OnStreamWritten(ec, n);
                   });
}

void Session::OnStreamWritten(beast::error_code ec, size_t n) {
  stream_writing_ = false;
  if (state_ != State::kStreaming) return;
  core_.metrics.StreamBytes(n);
  if (ec || stream_ending_) {
    if (ec == beast::error::timeout) core_.metrics.Timeout(ServerMetrics::kWrite);
    return EndStream();
  }
  stream_.expires_never();  // waiting for data has no deadline
  PumpStream();
}

void Session::ArmHeartbeat() {
  heartbeat_->expires_after(std::chrono::milliseconds(core_.options.stream_heartbeat_ms));
  heartbeat_->async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->state_ != State::kStreaming || self->stream_ending_) return;
    if (!self->stream_writing_) self->WriteStream(self->stream_body_->Heartbeat());
    self->ArmHeartbeat();
  });
}

void Session::WatchPeer() {
  // The client sends nothing more on a stream; whatever it does send is
  // dropped, and its end (or an error) ends the stream.
  stream_.socket().async_read_some(net::buffer(peer_bytes_),
                                   [self = shared_from_this()](beast::error_code ec, size_t) {
                                     if (self->state_ != State::kStreaming) return;
                                     if (ec) return self->EndStream();
                                     self->WatchPeer();
                                   });
}

void Session::StopStream() {
  if (state_ != State::kStreaming || stream_ending_) return;
  if (stream_writing_) return EndStream();
  stream_ending_ = true;
  std::string bytes = stream_body_->Pull(core_.options.stream_write_bytes);
  if (bytes.empty()) return EndStream();
  WriteStream(std::move(bytes));
}

void Session::EndStream() {
  if (state_ != State::kStreaming) return;
  stream_body_->Close();
  core_.metrics.StreamClosed();
  if (heartbeat_) heartbeat_->cancel();
  Close();
}

}  // namespace trainwatch::server::internal
