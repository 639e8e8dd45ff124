#include "agent/signing.h"

#include <chrono>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "api/http.h"

namespace trainwatch::agent {

const Signing& EnvironmentSigning() {
  static const Signing* signing = [] {
    auto* s = new Signing();  // for the process's lifetime
    auto env = [](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v == nullptr ? "" : v);
    };
    api::sigv4::Credential c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"),
                             env("AWS_SESSION_TOKEN")};
    if (!c.access_key_id.empty() && !c.secret_access_key.empty()) s->credential = std::move(c);
    s->region = env("AWS_REGION");
    if (s->region.empty()) s->region = env("AWS_DEFAULT_REGION");
    if (s->region.empty()) s->region = "us-east-1";
    return s;
  }();
  return *signing;
}

std::vector<std::string> SigningHeaderLines(const Signing& signing, std::string_view service,
                                            const std::string& method, const std::string& url,
                                            std::string_view body, std::string_view content_type,
                                            bool content_sha256) {
  if (!signing.credential) return {};
  // http://[USER@]HOST[:PORT]/PATH?QUERY: curl sends HOST[:PORT] as Host,
  // without the scheme's default port.
  std::string_view rest = url;
  std::string_view scheme = "http";
  if (size_t end = rest.find("://"); end != std::string_view::npos) {
    scheme = rest.substr(0, end);
    rest.remove_prefix(end + 3);
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  const std::string_view default_port = scheme == "https" ? ":443" : ":80";
  if (authority.size() > default_port.size() && authority.ends_with(default_port)) {
    authority.remove_suffix(default_port.size());
  }
  api::HttpRequest request;
  request.method = method;
  request.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  request.headers.Add("Host", std::string(authority));
  request.headers.Add("Content-Type", std::string(content_type));
  request.body = std::string(body);
  if (content_sha256) {
    request.headers.Add("X-Amz-Content-SHA256", api::sigv4::HexSha256(body));
  }
  api::sigv4::SignRequest(&request, *signing.credential, signing.region, service,
                          std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
  std::vector<std::string> lines;
  for (const char* name :
       {"X-Amz-Date", "Authorization", "X-Amz-Security-Token", "X-Amz-Content-SHA256"}) {
    if (const std::string* v = request.headers.Find(name)) {
      lines.push_back(absl::StrFormat("%s: %s", name, *v));
    }
  }
  return lines;
}

}  // namespace trainwatch::agent
