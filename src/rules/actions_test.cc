#include "rules/actions.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "util/testing/temp_dir.h"

namespace trainwatch::rules {
namespace {

using ::testing::HasSubstr;

ActionRequest Request(std::string action) {
  ActionRequest r;
  r.job = "mnist-7";
  r.action = std::move(action);
  r.finding.rule = "nan";
  r.finding.reason = "nan";
  r.finding.subject = "train:loss";
  r.finding.message = "train:loss was NaN at step 7.";
  r.finding.observed = std::nan("");
  return r;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Actions, StopTrainingAndSignalReachTheirTargets) {
  std::vector<std::string> seen;
  std::mutex mu;
  ActionTargets targets;
  targets.stop = [&](const std::string& job, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(job + ": " + message);
  };
  targets.signal = [&](const std::string& job, int signo) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(job + ": signal " + std::to_string(signo));
    return absl::OkStatus();
  };
  Actions actions(targets);
  actions.Run(Request("StopTraining"));
  actions.Run(Request("signal:SIGUSR1"));
  actions.Drain();
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "mnist-7: Stopped by rule nan: train:loss was NaN at step 7.",
                      "mnist-7: signal " + std::to_string(SIGUSR1)}));
}

TEST(Actions, ExecGetsTheFindingOnStdinWithoutAShell) {
  util::testing::TempDir dir;
  const std::string out = dir.Sub("payload.json");
  const std::string script = dir.Sub("hook.sh");
  {
    std::ofstream s(script);
    s << "#!/bin/sh\ncat > '" << out << "'\necho hook ran\n";
  }
  ::chmod(script.c_str(), 0755);
  std::string output;
  ASSERT_TRUE(RunProgram(script, ActionPayload(Request("exec:" + script)), 5000, &output).ok());
  EXPECT_EQ(output, "hook ran\n");
  EXPECT_THAT(Slurp(out), HasSubstr("{\"job\":\"mnist-7\",\"action\":\"exec:"));
  EXPECT_THAT(Slurp(out), HasSubstr("\"observed\":\"NaN\""));
}

TEST(Actions, ExecFailuresAndTimeoutsAreReported) {
  std::string output;
  absl::Status missing = RunProgram("/nonexistent/prog", "{}", 5000, &output);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("exited with status 127"));
  EXPECT_THAT(output, HasSubstr("cannot run /nonexistent/prog"));
  util::testing::TempDir dir;
  const std::string script = dir.Sub("slow.sh");
  {
    std::ofstream s(script);
    s << "#!/bin/sh\nsleep 30\n";
  }
  ::chmod(script.c_str(), 0755);
  output.clear();
  absl::Status slow = RunProgram(script, "{}", 200, &output);
  EXPECT_EQ(slow.code(), absl::StatusCode::kDeadlineExceeded);
}

// A one-connection-at-a-time HTTP server answering each POST with the next code.
class TinyServer {
 public:
  explicit TinyServer(std::vector<int> codes) : codes_(std::move(codes)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 8);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (int code : codes_) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::string req;
        char buf[4096];
        while (req.find("\r\n\r\n") == std::string::npos ||
               req.size() < req.find("\r\n\r\n") + 4 + BodyLength(req)) {
          ssize_t n = ::read(c, buf, sizeof(buf));
          if (n <= 0) break;
          req.append(buf, static_cast<size_t>(n));
        }
        requests.push_back(req);
        std::string answer = "HTTP/1.1 " + std::to_string(code) + " X\r\nContent-Length: 0\r\n\r\n";
        (void)!::write(c, answer.data(), answer.size());
        ::close(c);
      }
    });
  }
  ~TinyServer() {
    thread_.join();
    ::close(fd_);
  }
  static size_t BodyLength(const std::string& req) {
    size_t at = req.find("Content-Length: ");
    return at == std::string::npos ? 0 : std::stoul(req.substr(at + 16));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  std::vector<std::string> requests;

 private:
  std::vector<int> codes_;
  int fd_;
  int port_;
  std::thread thread_;
};

TEST(Actions, WebhookRetriesServerErrorsThenDelivers) {
  TinyServer server({503, 200});
  {
    ActionOptions options;
    options.webhook_first_backoff_ms = 10;
    Actions actions({}, options);
    actions.Run(Request("webhook:" + server.url()));
    actions.Drain();
  }
  ASSERT_EQ(server.requests.size(), 2u);
  EXPECT_THAT(server.requests[1], HasSubstr("POST /hook HTTP/1.1"));
  EXPECT_THAT(server.requests[1], HasSubstr("Content-Type: application/json"));
  EXPECT_THAT(server.requests[1], HasSubstr("\"finding\":{\"rule\":\"nan\""));
}

TEST(Actions, AnUnreachableWebhookFailsQuickly) {
  absl::StatusOr<int> code = PostJson("http://127.0.0.1:1/x", "{}", 1000);
  EXPECT_FALSE(code.ok());
}

}  // namespace
}  // namespace trainwatch::rules
