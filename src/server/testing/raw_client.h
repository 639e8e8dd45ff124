#pragma once
// RawClient: a blocking HTTP/1.1 client over a plain socket for server tests:
// it sends exactly the bytes given (so tests can send malformed or partial
// requests) and reads one response at a time. Every read is bounded by a
// receive timeout, so a broken server fails a test instead of hanging it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "api/http.h"

namespace trainwatch::server::testing {

class RawClient {
 public:
  // `receive_buffer_bytes` > 0: the socket's receive buffer (SO_RCVBUF), set
  // before connecting, for a client that stops reading early.
  explicit RawClient(uint16_t port, int timeout_ms = 10000, int receive_buffer_bytes = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer_bytes > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof(receive_buffer_bytes));
    }
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // One response (status, headers, Content-Length body), or nullopt when the
  // connection closed or timed out first.
  std::optional<api::HttpResponse> ReadResponse() {
    size_t head_end;
    while ((head_end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    std::string head = pending_.substr(0, head_end);
    pending_.erase(0, head_end + 4);
    api::HttpResponse r;
    if (head.size() < 12) return std::nullopt;
    r.status = std::atoi(head.substr(9, 3).c_str());
    size_t pos = head.find("\r\n");
    size_t length = 0;
    while (pos != std::string::npos) {
      size_t start = pos + 2;
      pos = head.find("\r\n", start);
      std::string line = head.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value[0] == ' ') value.erase(0, 1);
      if (api::EqualsIgnoreCase(name, "Content-Length")) length = std::stoul(value);
      r.headers.Add(name, value);
    }
    if (r.status == 100) return r;
    while (pending_.size() < length) {
      if (!Fill()) return std::nullopt;
    }
    r.body = pending_.substr(0, length);
    pending_.erase(0, length);
    return r;
  }

  // The bytes up to and including the next `marker` (a streamed body's
  // "\n\n" after an event), or nullopt when the connection closed or timed
  // out first.
  std::optional<std::string> ReadUntil(std::string_view marker) {
    size_t at;
    while ((at = pending_.find(marker)) == std::string::npos) {
      if (!Fill()) return std::nullopt;
    }
    std::string out = pending_.substr(0, at + marker.size());
    pending_.erase(0, at + marker.size());
    return out;
  }

  // True when the server closed the connection (read returns end of file)
  // before the receive timeout.
  bool WaitForClose() {
    char buf[4096];
    while (true) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

 private:
  bool Fill() {
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;
};

// A minimal well-formed request.
inline std::string RawRequest(std::string_view method, std::string_view target,
                              std::string_view body = "", std::string_view extra_headers = "") {
  std::string r = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: test\r\n";
  r += extra_headers;
  if (!body.empty() || method == "POST") r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  r += "\r\n";
  r += body;
  return r;
}

}  // namespace trainwatch::server::testing
