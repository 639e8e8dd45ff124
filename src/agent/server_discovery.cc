#include "agent/server_discovery.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace trainwatch::agent {
namespace {

std::string DiscoveryPath(const std::string& data_dir) { return data_dir + "/server.json"; }

struct Published {
  std::string url;
  int64_t pid = 0;
};

std::optional<Published> Read(const std::string& data_dir) {
  std::ifstream in(DiscoveryPath(data_dir));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("url") || !j["url"].is_string() || !j.contains("pid") ||
      !j["pid"].is_number_integer()) {
    return std::nullopt;
  }
  return Published{j["url"].get<std::string>(), j["pid"].get<int64_t>()};
}

}  // namespace

absl::Status PublishServer(const std::string& data_dir, const std::string& url) {
  const std::string path = DiscoveryPath(data_dir);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"url", url}, {"pid", ::getpid()}}.dump() << "\n";
    if (!out) {
      return absl::UnavailableError(absl::StrFormat("cannot write \"%s\"", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrFormat("cannot write \"%s\"", path));
  }
  return absl::OkStatus();
}

void WithdrawServer(const std::string& data_dir) {
  std::optional<Published> p = Read(data_dir);
  if (p && p->pid == ::getpid()) std::remove(DiscoveryPath(data_dir).c_str());
}

std::optional<std::string> FindServer(const std::string& data_dir) {
  std::optional<Published> p = Read(data_dir);
  if (!p || p->pid <= 0) return std::nullopt;
  if (::kill(static_cast<pid_t>(p->pid), 0) != 0 && errno != EPERM) return std::nullopt;
  // A server killed with -9 leaves the file behind, and its pid may be
  // reused: only a live `trainwatch server` counts.
  std::ifstream cmdline(absl::StrFormat("/proc/%d/cmdline", p->pid), std::ios::binary);
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  if (cmdline.is_open() && (args.find("trainwatch") == std::string::npos ||
                            args.find(std::string("server\0", 7)) == std::string::npos)) {
    return std::nullopt;
  }
  return p->url;
}

std::string SpoolRoot(const std::string& data_dir) { return data_dir + "/spool"; }

}  // namespace trainwatch::agent
