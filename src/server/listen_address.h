#pragma once
// --listen HOST:PORT as users write it: "127.0.0.1:9400", "localhost:9400",
// "[::1]:9400", ":9400" (loopback), "0.0.0.0:9400".

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trainwatch::server {

struct ListenAddress {
  std::string host;  // numeric IPv4/IPv6 ("localhost" becomes 127.0.0.1)
  uint16_t port = 0;
};

// InvalidArgument quoting `text` and showing the accepted forms.
absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view text);

// Whether `host` (numeric) is a loopback address (127.0.0.0/8, ::1).
bool IsLoopback(std::string_view host);

}  // namespace trainwatch::server
