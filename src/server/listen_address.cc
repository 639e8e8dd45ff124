#include "server/listen_address.h"

#include <boost/asio/ip/address.hpp>

#include "absl/strings/str_format.h"

namespace trainwatch::server {

absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--listen \"%s\": %s; want HOST:PORT, e.g. 127.0.0.1:9400, [::1]:9400 or :9400",
        std::string(text), why));
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string host(text.substr(0, colon));
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return bad("IPv6 addresses go in brackets");
  }
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  if (port_text.empty() || port_text.size() > 5) return bad("the port is 0-65535");
  unsigned port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') return bad("the port is 0-65535");
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port > 65535) return bad("the port is 0-65535");
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (ec) return bad("the host must be a numeric IP address or localhost");
  return ListenAddress{host, static_cast<uint16_t>(port)};
}

bool IsLoopback(std::string_view host) {
  boost::system::error_code ec;
  boost::asio::ip::address a = boost::asio::ip::make_address(std::string(host), ec);
  return !ec && a.is_loopback();
}

}  // namespace trainwatch::server
