#include "capture/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

extern char** environ;

namespace trainwatch::capture {
namespace {

// What the child reports through the status pipe when it cannot exec.
enum Stage : int32_t { kStageSetup = 1, kStageChdir = 2, kStageExec = 3 };
struct ChildError {
  int32_t stage;
  int32_t err;
  int32_t candidate;  // index into the candidate paths (exec stage)
};

// glibc 2.36's <sys/pidfd.h> lacks extern "C", so call the kernel directly.
int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// execvp's default search path when PATH is unset (glibc).
constexpr char kDefaultPath[] = "/bin:/usr/bin";

std::string ErrnoText(int err) { return std::strerror(err); }

absl::Status Errno(std::string_view what, int err) {
  return absl::InternalError(absl::StrFormat("cannot start the command: %s: %s", what,
                                             ErrnoText(err)));
}

// Moves fd to a number >= 3, so that dup2 onto 0/1/2 in the child cannot clobber
// another of our fds (possible when the runner was started with 0, 1 or 2 closed).
absl::Status MoveAbove2(UniqueFd* fd) {
  if (fd->get() > 2) return absl::OkStatus();
  int moved = ::fcntl(fd->get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return Errno("fcntl(F_DUPFD_CLOEXEC)", errno);
  fd->reset(moved);
  return absl::OkStatus();
}

absl::Status SetFlags(int fd, bool nonblock) {
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return Errno("fcntl(FD_CLOEXEC)", errno);
  if (nonblock) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
      return Errno("fcntl(O_NONBLOCK)", errno);
    }
  }
  return absl::OkStatus();
}

// Our end (read side) and the child's end of one output stream.
struct Channel {
  UniqueFd ours;
  UniqueFd theirs;
};

absl::StatusOr<Channel> MakeChannel(OutputKind kind, const struct winsize& size) {
  Channel ch;
  if (kind == OutputKind::kPipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe2", errno);
    ch.ours.reset(fds[0]);
    ch.theirs.reset(fds[1]);
  } else {
    int master = -1;
    int slave = -1;
    struct winsize ws = size;
    if (::openpty(&master, &slave, nullptr, nullptr, &ws) != 0) {
      return Errno("openpty (no pseudo-terminals available? run with pipes instead)", errno);
    }
    ch.ours.reset(master);
    ch.theirs.reset(slave);
    // Raw mode: no output post-processing (ONLCR would turn "\n" into "\r\n"), so the
    // bytes we read are exactly the bytes the program wrote.
    struct termios tio;
    if (::tcgetattr(slave, &tio) != 0) return Errno("tcgetattr on the pty", errno);
    ::cfmakeraw(&tio);
    if (::tcsetattr(slave, TCSANOW, &tio) != 0) return Errno("tcsetattr on the pty", errno);
  }
  auto status = SetFlags(ch.ours.get(), /*nonblock=*/true);
  if (status.ok()) status = SetFlags(ch.theirs.get(), /*nonblock=*/false);
  if (status.ok()) status = MoveAbove2(&ch.ours);
  if (status.ok()) status = MoveAbove2(&ch.theirs);
  if (!status.ok()) return status;
  return ch;
}

// "NAME=value" entries: ours, PYTHONUNBUFFERED=1, then options.env.
std::vector<std::string> BuildEnvironment(const SpawnOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  auto set = [&env](const std::string& name, const std::string& value) {
    std::string prefix = name + "=";
    for (std::string& entry : env) {
      if (entry.compare(0, prefix.size(), prefix) == 0) {
        entry = prefix + value;
        return;
      }
    }
    env.push_back(prefix + value);
  };
  set("PYTHONUNBUFFERED", "1");
  for (const auto& [name, value] : options.env) set(name, value);
  return env;
}

std::string FindInEnvironment(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& entry : env) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::string();
}

// The paths execvp would try, in order.
std::vector<std::string> Candidates(const std::string& command, const std::string& path_var,
                                    bool path_set) {
  if (command.find('/') != std::string::npos) return {command};
  std::vector<std::string> out;
  std::string path = path_set ? path_var : kDefaultPath;
  size_t start = 0;
  for (;;) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos
                                                                     : colon - start);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + command);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The interpreter named by a script's "#!" line, or "" when there is none.
std::string Shebang(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || line.rfind("#!", 0) != 0) return "";
  size_t begin = line.find_first_not_of(" \t", 2);
  if (begin == std::string::npos) return "";
  size_t end = line.find_first_of(" \t\r", begin);
  return line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

absl::Status StartError(const SpawnOptions& options, const std::vector<std::string>& candidates,
                        const ChildError& error) {
  const std::string& command = options.argv[0];
  const int err = error.err;
  if (error.stage == kStageChdir) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot start \"%s\": cannot change to the working directory \"%s\": "
                        "%s; give an existing directory",
                        command, options.working_dir, ErrnoText(err)));
  }
  if (error.stage != kStageExec) {
    return absl::InternalError(absl::StrFormat(
        "cannot start \"%s\": setting up the new process failed: %s", command, ErrnoText(err)));
  }
  const bool searched = command.find('/') == std::string::npos;
  std::string path = error.candidate >= 0 && static_cast<size_t>(error.candidate) <
                                                 candidates.size()
                         ? candidates[static_cast<size_t>(error.candidate)]
                         : command;
  std::string stat_path =
      path.front() == '/' || options.working_dir.empty() ? path : options.working_dir + "/" + path;
  // How to name the file in messages: the command, plus where PATH found it.
  std::string shown = searched ? absl::StrFormat("\"%s\" (found as %s)", command, path)
                               : absl::StrFormat("\"%s\"", command);
  struct stat st;
  const bool exists = ::stat(stat_path.c_str(), &st) == 0;
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      if (searched && !exists) {
        return absl::NotFoundError(absl::StrFormat(
            "cannot start \"%s\": No such file or directory (is it on PATH?)", command));
      }
      if (exists) {
        std::string interpreter = Shebang(stat_path);
        if (!interpreter.empty()) {
          return absl::NotFoundError(absl::StrFormat(
              "cannot start %s: its interpreter \"%s\" (named on its first line) was not "
              "found; install it or run the script with an interpreter that exists, e.g. "
              "python3 %s",
              shown, interpreter, command));
        }
        return absl::NotFoundError(absl::StrFormat(
            "cannot start %s: No such file or directory (the program exists, but a file it "
            "needs to start, such as its dynamic loader, does not)",
            shown));
      }
      return absl::NotFoundError(
          absl::StrFormat("cannot start \"%s\": No such file or directory", command));
    case EACCES:
      if (exists && S_ISDIR(st.st_mode)) {
        return absl::PermissionDeniedError(
            absl::StrFormat("cannot start %s: it is a directory, not a program", shown));
      }
      if (exists && !S_ISREG(st.st_mode)) {
        return absl::PermissionDeniedError(
            absl::StrFormat("cannot start %s: it is not a regular file", shown));
      }
      return absl::PermissionDeniedError(absl::StrFormat(
          "cannot start %s: Permission denied (is it executable? run chmod +x %s, or give its "
          "interpreter first, e.g. python3 %s)",
          shown, path, path));
    case ENOEXEC:
      return absl::FailedPreconditionError(absl::StrFormat(
          "cannot start %s: not a program this machine can run (Exec format error)", shown));
    default:
      return absl::FailedPreconditionError(
          absl::StrFormat("cannot start %s: %s", shown, ErrnoText(err)));
  }
}

[[noreturn]] void ReportAndExit(int status_fd, Stage stage, int err, int candidate) {
  ChildError error{stage, err, candidate};
  const char* p = reinterpret_cast<const char*>(&error);
  size_t left = sizeof(error);
  while (left > 0) {
    ssize_t n = ::write(status_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::_exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only, no
// allocation (everything was prepared by the parent).
[[noreturn]] void ChildMain(pid_t parent, const SpawnOptions& options, int status_fd, int stdin_fd,
                            int stdout_fd, int stderr_fd, char* const* argv, char* const* envp,
                            const std::vector<std::string>& candidates, char** sh_argv) {
  // Our handlers must not run here (they would write to the runner's signal pipe);
  // ignored signals stay ignored, as exec would keep them.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction old_action;
    if (::sigaction(sig, nullptr, &old_action) != 0) continue;
    if (old_action.sa_handler != SIG_DFL && old_action.sa_handler != SIG_IGN) {
      ::signal(sig, SIG_DFL);
    }
  }
  for (int sig : options.default_signals) ::signal(sig, SIG_DFL);
  if (options.kill_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the runner died already
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  if (::setsid() < 0) ReportAndExit(status_fd, kStageSetup, errno, -1);
  if (stdin_fd != 0 && ::dup2(stdin_fd, 0) < 0) ReportAndExit(status_fd, kStageSetup, errno, -1);
  if (::dup2(stdout_fd, 1) < 0 || ::dup2(stderr_fd, 2) < 0) {
    ReportAndExit(status_fd, kStageSetup, errno, -1);
  }
  // The training command gets 0, 1 and 2 only: no store, socket or lock fd of the
  // runner leaks into it (the status pipe stays open until exec succeeds).
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  if (!options.working_dir.empty() && ::chdir(options.working_dir.c_str()) != 0) {
    ReportAndExit(status_fd, kStageChdir, errno, -1);
  }
  // execvp's search: ENOENT-like errors try the next directory; EACCES is remembered
  // and reported if nothing else works; other errors stop the search.
  int eacces_index = -1;
  int last_err = ENOENT;
  int last_index = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const char* path = candidates[i].c_str();
    ::execve(path, argv, envp);
    int err = errno;
    if (err == ENOEXEC) {
      sh_argv[1] = const_cast<char*>(path);
      ::execve("/bin/sh", sh_argv, envp);
      ReportAndExit(status_fd, kStageExec, ENOEXEC, static_cast<int>(i));
    }
    last_err = err;
    last_index = static_cast<int>(i);
    if (err == EACCES) {
      if (eacces_index < 0) eacces_index = static_cast<int>(i);
      continue;
    }
    if (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT) {
      continue;
    }
    break;
  }
  if (eacces_index >= 0 && (last_err == ENOENT || last_err == ENOTDIR || last_err == EACCES)) {
    ReportAndExit(status_fd, kStageExec, EACCES, eacces_index);
  }
  ReportAndExit(status_fd, kStageExec, last_err, last_index);
}

}  // namespace

absl::StatusOr<SpawnedProcess> Spawn(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError(
        "no command to run: give the training command after --, e.g. -- python3 train.py");
  }
  for (const auto& [name, value] : options.env) {
    if (name.empty() || name.find('=') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "environment variable name \"%s\" is not valid: want a non-empty name without '='",
          name));
    }
  }

  // Everything the child needs is built here, before fork.
  std::vector<std::string> argv_strings = options.argv;
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<std::string> env_strings = BuildEnvironment(options);
  std::vector<char*> envp = CStrings(env_strings);
  bool path_set = false;
  for (const std::string& e : env_strings) path_set |= e.rfind("PATH=", 0) == 0;
  std::vector<std::string> candidates =
      Candidates(options.argv[0], FindInEnvironment(env_strings, "PATH"), path_set);
  std::vector<std::string> sh_strings = {"/bin/sh", ""};
  for (size_t i = 1; i < options.argv.size(); ++i) sh_strings.push_back(options.argv[i]);
  std::vector<char*> sh_argv = CStrings(sh_strings);

  auto out = MakeChannel(options.stdout_kind, options.window_size);
  if (!out.ok()) return out.status();
  auto err = MakeChannel(options.stderr_kind, options.window_size);
  if (!err.ok()) return err.status();
  UniqueFd dev_null;
  int stdin_fd = options.stdin_fd;
  if (stdin_fd < 0) {
    dev_null.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!dev_null.valid()) return Errno("open /dev/null", errno);
    if (auto moved = MoveAbove2(&dev_null); !moved.ok()) return moved;
    stdin_fd = dev_null.get();
  }
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return Errno("pipe2", errno);
  UniqueFd status_read(status_pipe[0]);
  UniqueFd status_write(status_pipe[1]);
  if (auto moved = MoveAbove2(&status_write); !moved.ok()) return moved;

  // Signals stay blocked across fork so that no handler of ours runs in the child
  // before it has reset them.
  sigset_t all;
  sigset_t old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ChildMain(parent, options, status_write.get(), stdin_fd, out->theirs.get(),
              err->theirs.get(), argv.data(), envp.data(), candidates, sh_argv.data());
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (pid < 0) return Errno("fork", fork_errno);

  // The child's ends belong to the child now; closing ours lets EOF arrive.
  out->theirs.reset();
  err->theirs.reset();
  status_write.reset();
  dev_null.reset();

  ChildError error{};
  size_t got = 0;
  while (got < sizeof(error)) {
    ssize_t n = ::read(status_read.get(), reinterpret_cast<char*>(&error) + got,
                       sizeof(error) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: exec succeeded (the pipe closed on exec)
    got += static_cast<size_t>(n);
  }
  if (got > 0) {
    int wait_status = 0;
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    if (got < sizeof(error)) {
      return absl::InternalError(absl::StrFormat(
          "cannot start \"%s\": the new process stopped while reporting an error",
          options.argv[0]));
    }
    return StartError(options, candidates, error);
  }

  SpawnedProcess process;
  process.pid = pid;
  process.pidfd.reset(PidfdOpen(pid));  // invalid on kernels without pidfd (< 5.3)
  process.stdout_fd = std::move(out->ours);
  process.stderr_fd = std::move(err->ours);
  process.stdout_kind = options.stdout_kind;
  process.stderr_kind = options.stderr_kind;
  return process;
}

}  // namespace trainwatch::capture
