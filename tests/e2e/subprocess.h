#pragma once
// Test helper: runs a program with its stdout and stderr captured, in the
// foreground (Run) or the background (Start ... Wait), with extra environment.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace trainwatch::testing {

struct Finished {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

class Subprocess {
 public:
  // Starts argv[0] (looked up on PATH) with `env` added to this environment.
  Subprocess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Default signal handling in the child (ctest may start us with SIGINT ignored).
    sigset_t all;
    sigfillset(&all);
    posix_spawnattr_setsigdefault(&attr, &all);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv(*e);
      size_t eq = kv.find('=');
      if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : env) merged[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (std::string& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);
    if (posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(out[1]);
    ::close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    reader_ = std::thread([this] { Drain(); });
  }
  ~Subprocess() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
    if (reader_.joinable()) reader_.join();
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig) const { ::kill(pid_, sig); }

  Finished Wait() {
    int status = 0;
    if (pid_ > 0) ::waitpid(pid_, &status, 0);
    waited_ = true;
    if (reader_.joinable()) reader_.join();
    Finished f;
    f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    f.out = std::move(out_);
    f.err = std::move(err_);
    return f;
  }

 private:
  void Drain() {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    std::string* bufs[2] = {&out_, &err_};
    int open = 2;
    char buf[65536];
    while (open > 0) {
      if (::poll(fds, 2, -1) < 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
        if (n > 0) {
          bufs[i]->append(buf, static_cast<size_t>(n));
        } else {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open;
        }
      }
    }
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool waited_ = false;
  std::string out_;
  std::string err_;
  std::thread reader_;
};

inline Finished RunCommand(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env = {}) {
  Subprocess p(argv, env);
  return p.Wait();
}

}  // namespace trainwatch::testing
