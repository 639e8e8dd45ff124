// Fuzz target: the SigV4 Authorization header parser and the verifier fed
// arbitrary headers (the input is split on '\n' into Authorization,
// X-Amz-Date, X-Amz-Security-Token (and Origin) and the body); and the check
// of trainwatch's own routes (VerifyOwnRoute) on the same request.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/sigv4.h"
#include "nlohmann/json.hpp"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch::api;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = sigv4::ParseAuthorization(input);
  if (parsed.ok()) {
    TW_CHECK(parsed->signature.size() == 64);
    TW_CHECK(!parsed->signed_header_names.empty());
  }

  std::string parts[4];
  size_t start = 0;
  for (int i = 0; i < 4 && start <= input.size(); ++i) {
    size_t nl = i == 3 ? std::string_view::npos : input.find('\n', start);
    if (nl == std::string_view::npos) nl = input.size();
    parts[i] = std::string(input.substr(start, nl - start));
    start = nl + 1;
  }
  HttpRequest request;
  request.target = "/a/./b/../%2F c?x=1&b=%20";
  request.headers.Add("Authorization", parts[0]);
  request.headers.Add("Host", "127.0.0.1:9400");
  if (!parts[1].empty()) request.headers.Add("X-Amz-Date", parts[1]);
  if (!parts[2].empty()) request.headers.Add("X-Amz-Security-Token", parts[2]);
  request.body = parts[3];
  sigv4::CredentialStore store;
  (void)store.Add({"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "token"});
  absl::Status s = sigv4::Verify(request, Service::kCloudWatch, Protocol::kQuery, store,
                                 1764496531000, sigv4::VerifyOptions{});
  TW_CHECK(!s.ok());  // nobody guesses a signature
  TW_CHECK(AwsCodeOf(s).has_value());

  // trainwatch's own routes: Basic or SigV4, and other sites' pages refused.
  request.method = "POST";
  if (!parts[2].empty()) request.headers.Add("Origin", parts[2]);
  absl::Status own = sigv4::VerifyOwnRoute(request, store, 1764496531000, sigv4::VerifyOptions{});
  TW_CHECK(own.ok() || absl::IsUnauthenticated(own) || absl::IsPermissionDenied(own));
  TW_CHECK(own.ok() || !own.message().empty());
  // The refusal quotes the client's bytes; its JSON must be written whatever they are.
  (void)nlohmann::json{{"message", std::string(own.message())}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
