#pragma once
// The fixture of the rules' end-to-end tests: a fresh data folder per test,
// `trainwatch` command lines over it, scripts written to the test's folder,
// and (with a fake NVML, tests/e2e/rules_e2e_profiler_test.cc) GPUs.

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "tests/e2e/subprocess.h"

namespace trainwatch::testing {

inline const std::string& TrainwatchBinary() {
  static const std::string* path = new std::string(std::string(TW_BINARY_DIR) + "/trainwatch");
  return *path;
}

// "2024-05-01T12:34:56.789Z" (or without the milliseconds) -> epoch ms; -1
// when it is not that.
inline int64_t ParseIso8601Ms(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  char frac[4] = {};
  int n = std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3[0-9]Z", &tm.tm_year, &tm.tm_mon,
                      &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, frac);
  if (n < 6) return -1;
  if (n == 7) ms = std::atoi(frac);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(::timegm(&tm)) * 1000 + ms;
}

// Polls `done` every 100 ms until it holds or `timeout` passes.
inline bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

class RulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tw-rules-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    data_ = dir_ + "/data";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> Tw(std::vector<std::string> args) const {
    args.insert(args.begin(), TrainwatchBinary());
    args.insert(args.begin() + 2, {"--data", data_});
    if (args[1] == "rules" && args.size() > 4 && args[4] == "replay") {
      // `rules replay --data` is the replay subcommand's own flag.
      args.erase(args.begin() + 2, args.begin() + 4);
      args.insert(args.begin() + 3, {"--data", data_});
    }
    return args;
  }
  std::string Script(const std::string& name, const std::string& body) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << body;
    return path;
  }
  nlohmann::json Json(const std::vector<std::string>& args) const {
    Finished f = RunCommand(Tw(args));
    EXPECT_EQ(f.exit_code, 0) << f.err;
    return nlohmann::json::parse(f.out, nullptr, false);
  }
  // The JSON a command prints, or nullopt when it fails (a job not created yet).
  std::optional<nlohmann::json> TryJson(const std::vector<std::string>& args) const {
    Finished f = RunCommand(Tw(args));
    if (f.exit_code != 0) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(f.out, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
  }
  // The job's TrainingJobStatus ("" when there is no such job yet).
  std::string JobStatus(const std::string& job) const {
    std::optional<nlohmann::json> j = TryJson({"describe", job, "--json"});
    return j ? j->value("TrainingJobStatus", "") : "";
  }

  std::string dir_;
  std::string data_;
};

}  // namespace trainwatch::testing
