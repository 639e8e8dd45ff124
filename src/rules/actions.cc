#include "rules/actions.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "rules/catalog.h"
#include "util/log.h"

namespace trainwatch::rules {

namespace {

int64_t MonotonicMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int SignalNumber(std::string_view name) {
  if (name == "SIGUSR1") return SIGUSR1;
  if (name == "SIGUSR2") return SIGUSR2;
  if (name == "SIGINT") return SIGINT;
  if (name == "SIGTERM") return SIGTERM;
  if (name == "SIGHUP") return SIGHUP;
  if (name == "SIGQUIT") return SIGQUIT;
  return 0;
}

// Writes all of `data` to fd (EINTR/partial writes retried); false on error.
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string StopMessage(const ActionRequest& r) {
  const model::RuleFinding& f = r.finding;
  return absl::StrFormat("Stopped by rule %s: %s", f.rule, f.message);
}

std::string ActionPayload(const ActionRequest& r) {
  nlohmann::ordered_json j;
  j["job"] = r.job;
  j["action"] = r.action;
  j["finding"] = nlohmann::ordered_json::parse(FindingJson(r.finding));
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Status RunProgram(const std::string& program, const std::string& input, int64_t timeout_ms,
                        std::string* output) {
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return absl::InternalError("pipe failed");
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) ::close(fd);
    return absl::InternalError(absl::StrFormat("cannot start %s: fork failed", program));
  }
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(out_pipe[1], 2);
    ::setpgid(0, 0);
    char* const argv[] = {const_cast<char*>(program.c_str()), nullptr};
    ::execv(program.c_str(), argv);
    const std::string msg = absl::StrFormat("cannot run %s: %s\n", program, std::strerror(errno));
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  // The payload is small (a few KiB): the pipe holds it, so writing first
  // cannot deadlock against a program that writes before it reads.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old {};
  ::sigaction(SIGPIPE, &ignore, &old);
  WriteAll(in_pipe[1], input);
  ::sigaction(SIGPIPE, &old, nullptr);
  ::close(in_pipe[1]);
  const int64_t deadline = MonotonicMs() + timeout_ms;
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const int64_t left = deadline - MonotonicMs();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = ::read(out_pipe[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output->size() < 65536) output->append(buf, static_cast<size_t>(n));
  }
  ::close(out_pipe[0]);
  if (timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrFormat("%s ran longer than %d ms and was killed", program, timeout_ms));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  if (WIFEXITED(status)) {
    return absl::InternalError(absl::StrFormat("%s exited with status %d", program,
                                               WEXITSTATUS(status)));
  }
  return absl::InternalError(
      absl::StrFormat("%s was killed by signal %d", program, WTERMSIG(status)));
}

absl::StatusOr<int> PostJson(const std::string& url, const std::string& body,
                             int64_t timeout_ms) {
  // http://host[:port]/path
  std::string rest = url.substr(7);
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string host = authority, port = "80";
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &addrs); rc != 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot resolve %s: %s", host, ::gai_strerror(rc)));
  }
  const int64_t deadline = MonotonicMs() + timeout_ms;
  int fd = -1;
  for (addrinfo* a = addrs; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      ::close(fd);
      fd = -1;
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(deadline - MonotonicMs(), 1))) != 1 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(addrs);
  if (fd < 0) return absl::UnavailableError(absl::StrFormat("cannot connect to %s", authority));
  const std::string request = absl::StrFormat(
      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: "
      "%d\r\nConnection: close\r\nUser-Agent: trainwatch-rules\r\n\r\n%s",
      path, authority, body.size(), body);
  std::string_view pending = request;
  std::string answer;
  char buf[1024];
  while (MonotonicMs() < deadline) {
    pollfd p{fd, static_cast<short>(pending.empty() ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(deadline - MonotonicMs(), 1))) <= 0) {
      continue;
    }
    if (!pending.empty()) {
      ssize_t n = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) break;
      pending.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
    if (answer.find("\r\n") != std::string::npos) break;  // the status line is all we need
  }
  ::close(fd);
  // "HTTP/1.1 204 No Content"
  int code = 0;
  if (answer.size() >= 12 && answer.compare(0, 5, "HTTP/") == 0 &&
      absl::SimpleAtoi(answer.substr(9, 3), &code)) {
    return code;
  }
  return absl::UnavailableError(absl::StrFormat("no HTTP answer from %s within %d ms", authority,
                                                timeout_ms));
}

Actions::Actions(ActionTargets targets, ActionOptions options)
    : targets_(std::move(targets)), options_(options) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

Actions::~Actions() {
  thread_.request_stop();
  {
    util::MutexLock lock(mu_);
    if (!queue_.empty()) {
      util::LogWarning(absl::StrFormat("rules: %d action(s) not run: shutting down",
                                       queue_.size()));
    }
    changed_.notify_all();
  }
  thread_.join();
}

void Actions::Run(const ActionRequest& request) {
  util::MutexLock lock(mu_);
  if (queue_.size() >= options_.max_queued) {
    util::LogOnce("rules-actions-full",
                  absl::StrFormat("rules: more than %d actions waiting; dropping %s of rule %s",
                                  options_.max_queued, request.action, request.finding.rule));
    ++queued_;
    ++done_;
    return;
  }
  queue_.push_back(request);
  ++queued_;
  changed_.notify_all();
}

void Actions::Drain() {
  util::MutexLock lock(mu_);
  const uint64_t target = queued_;
  lock.Wait(changed_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ >= target; });
}

void Actions::Loop(std::stop_token stop) {
  while (true) {
    ActionRequest request;
    {
      util::MutexLock lock(mu_);
      while (queue_.empty() && !stop.stop_requested()) lock.WaitOnce(changed_);
      if (stop.stop_requested()) return;
      request = std::move(queue_.front());
      queue_.pop_front();
    }
    Execute(request, stop);
    util::MutexLock lock(mu_);
    ++done_;
    changed_.notify_all();
  }
}

void Actions::Execute(const ActionRequest& r, std::stop_token stop) {
  const std::string what =
      absl::StrFormat("rules: action %s of rule %s (job %s)", r.action, r.finding.rule, r.job);
  if (r.action == "StopTraining") {
    if (targets_.stop) {
      util::LogInfo(what + ": stopping the job");
      targets_.stop(r.job, StopMessage(r));
    } else {
      util::LogWarning(what + ": this process cannot stop jobs");
    }
    return;
  }
  const size_t colon = r.action.find(':');
  const std::string kind = r.action.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : r.action.substr(colon + 1);
  if (kind == "signal") {
    absl::Status s = targets_.signal ? targets_.signal(r.job, SignalNumber(arg))
                                     : absl::UnimplementedError("this process cannot signal jobs");
    util::Log(s.ok() ? util::LogLevel::kInfo : util::LogLevel::kWarning,
              s.ok() ? what + ": sent" : what + ": " + std::string(s.message()));
    return;
  }
  const std::string payload = ActionPayload(r);
  if (kind == "exec") {
    std::string output;
    absl::Status s = RunProgram(arg, payload, options_.exec_timeout_ms, &output);
    util::Log(s.ok() ? util::LogLevel::kInfo : util::LogLevel::kWarning,
              absl::StrFormat("%s: %s%s%s", what, s.ok() ? "ran" : std::string(s.message()),
                              output.empty() ? "" : "; its output:\n", output));
    return;
  }
  if (kind == "webhook") {
    int64_t backoff = options_.webhook_first_backoff_ms;
    for (int attempt = 1; attempt <= options_.webhook_attempts; ++attempt) {
      absl::StatusOr<int> code = PostJson(arg, payload, options_.webhook_timeout_ms);
      if (code.ok() && *code < 500) {
        util::Log(*code < 300 ? util::LogLevel::kInfo : util::LogLevel::kWarning,
                  absl::StrFormat("%s: %s answered %d", what, arg, *code));
        return;
      }
      if (attempt == options_.webhook_attempts || stop.stop_requested()) {
        util::LogWarning(absl::StrFormat(
            "%s: gave up after %d attempts: %s", what, attempt,
            code.ok() ? absl::StrFormat("HTTP %d", *code) : std::string(code.status().message())));
        return;
      }
      util::MutexLock lock(mu_);
      lock.WaitOnceFor(changed_, std::chrono::milliseconds(backoff));
      backoff *= 2;
    }
    return;
  }
  util::LogWarning(what + ": not an action this version knows");
}

}  // namespace trainwatch::rules
