// End to end, across processes: from a training script printing a metric line
// to its datapoint being queryable by another process that reads the same data
// folder (what `trainwatch metrics`, `describe` and the server do).
//
// Starts `trainwatch run` on a fresh data folder with a Python script that
// prints "step=I t_us=T" every --interval-ms, T being its own clock at print
// time (CLOCK_REALTIME, microseconds), and the definition
// print_us=\bt_us=([0-9]+). This process follows the folder as a reader and
// polls the series' last value every --poll-us; when a new value V appears,
// now - V is one latency. A line whose datapoint is overtaken by the next one
// before a poll sees it is counted as "not seen" (polling resolution).
//
//   cmake --preset release
//   cmake --build --preset release --target trainwatch print_to_query_latency
//   build/release/bench/job/print_to_query_latency build/release/trainwatch
//   build/release/bench/job/print_to_query_latency build/release/trainwatch 400 25 1000 server
//
// With "server", a `trainwatch server` holds the folder first and the run
// sends its data there (spool, HTTP, the server's write): the agent path.
//
// Prints p50, p90, p99 and max in milliseconds.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "model/series.h"
#include "query/metrics.h"
#include "store/db.h"

extern char** environ;

namespace {

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Percentile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[std::min(i, v.size() - 1)]) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainwatch;
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr,
                 "usage: print_to_query_latency TRAINWATCH_BINARY [LINES=400] [INTERVAL_MS=25] "
                 "[POLL_US=1000] [server]\n");
    return 2;
  }
  const std::string binary = argv[1];
  const int lines = argc > 2 ? std::atoi(argv[2]) : 400;
  const int interval_ms = argc > 3 ? std::atoi(argv[3]) : 25;
  const int poll_us = argc > 4 ? std::atoi(argv[4]) : 1000;
  const bool via_server = argc > 5 && std::string(argv[5]) == "server";

  char dir_template[] = "/tmp/tw-latency-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string data_dir = dir_template;
  pid_t server_pid = 0;
  if (via_server) {
    std::vector<std::string> server_args = {binary, "server", "--data", data_dir, "--listen",
                                            "127.0.0.1:0"};
    std::vector<char*> sargs;
    for (std::string& a : server_args) sargs.push_back(a.data());
    sargs.push_back(nullptr);
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&server_pid, binary.c_str(), &quiet, nullptr, sargs.data(), environ) != 0) {
      std::fprintf(stderr, "cannot start the server\n");
      return 1;
    }
    posix_spawn_file_actions_destroy(&quiet);
    for (int i = 0; i < 500 && !std::filesystem::exists(data_dir + "/server.json"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const std::string script =
      "import time\n"
      "time.sleep(1.5)\n"
      "for i in range(" + std::to_string(lines) + "):\n"
      "    print(f'step={i} t_us={time.time_ns() // 1000}', flush=True)\n"
      "    time.sleep(" + std::to_string(interval_ms / 1000.0) + ")\n";
  std::vector<std::string> args = {binary, "run", "--data", data_dir, "--name", "latency",
                                   "--metric", "print_us=\\bt_us=([0-9]+)",
                                   "--profile-interval", "off", "-q", "--",
                                   "/usr/bin/python3", "-c", script};
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  if (int err = posix_spawn(&pid, binary.c_str(), &actions, nullptr, cargs.data(), environ);
      err != 0) {
    std::fprintf(stderr, "cannot start %s: %s\n", binary.c_str(), std::strerror(err));
    return 1;
  }
  posix_spawn_file_actions_destroy(&actions);

  // Follow the folder once the run has created it.
  std::unique_ptr<store::Db> db;
  for (int attempt = 0; attempt < 1000 && db == nullptr; ++attempt) {
    store::DbOptions options;
    options.data_dir = data_dir;
    options.mode = store::OpenMode::kReader;
    options.background_thread = false;
    absl::StatusOr<std::unique_ptr<store::Db>> opened = store::Db::Open(options);
    if (opened.ok()) {
      db = *std::move(opened);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (db == nullptr) {
    std::fprintf(stderr, "the run never created %s\n", data_dir.c_str());
    ::kill(pid, SIGKILL);
    return 1;
  }
  const model::SeriesKey key = *model::MakeSeriesKey(
      "/aws/sagemaker/TrainingJobs", "print_us", {{"TrainingJobName", "latency"}});

  std::vector<int64_t> latencies_us;
  double last_seen = -1;
  int status = 0;
  bool exited = false;
  while (!exited) {
    if (::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    absl::StatusOr<store::ReadView> view = db->View();
    if (!view.ok()) {
      std::fprintf(stderr, "view: %s\n", std::string(view.status().message()).c_str());
      return 1;
    }
    absl::StatusOr<std::optional<store::LastValue>> last = query::LastValue(*view, key);
    const int64_t now_us = NowUs();
    if (last.ok() && last->has_value() && (*last)->value != last_seen) {
      last_seen = (*last)->value;
      latencies_us.push_back(now_us - static_cast<int64_t>(last_seen));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(poll_us));
  }
  db.reset();
  if (server_pid > 0) {
    ::kill(server_pid, SIGTERM);
    ::waitpid(server_pid, nullptr, 0);
  }
  std::filesystem::remove_all(data_dir);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "trainwatch run failed (status %d)\n", status);
    return 1;
  }
  std::printf("lines printed: %d every %d ms; datapoints seen by the reader: %zu (polling every "
              "%d us); %s\n",
              lines, interval_ms, latencies_us.size(), poll_us,
              via_server ? "through trainwatch server (spool, HTTP, the server writes)"
                         : "trainwatch run writes the folder");
  std::printf("print -> queryable from another process: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, "
              "max %.1f ms\n",
              Percentile(latencies_us, 0.5), Percentile(latencies_us, 0.9),
              Percentile(latencies_us, 0.99), Percentile(latencies_us, 1.0));
  return latencies_us.empty() ? 1 : 0;
}
