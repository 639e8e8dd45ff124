#pragma once
// Test helper: the argv that runs tests/e2e/fake_trainer.py with the given actions
// (see the script's docstring), and a thread-safe collector of captured lines.

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

#include "model/log_event.h"

namespace trainwatch::testing {

inline std::string FakeTrainerPath() { return std::string(TW_SOURCE_DIR) + "/tests/e2e/fake_trainer.py"; }

inline std::vector<std::string> FakeTrainer(std::initializer_list<std::string> actions) {
  std::vector<std::string> argv = {"/usr/bin/python3", FakeTrainerPath()};
  argv.insert(argv.end(), actions.begin(), actions.end());
  return argv;
}

// Puts SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGTSTP at their default dispositions
// while alive.
// A test binary started in the background by a non-interactive shell inherits SIGINT
// and SIGQUIT ignored; runners (rightly) leave ignored signals alone, so Ctrl-C tests
// need this to mean anything. The fake trainer inherits the defaults too.
class DefaultSignals {
 public:
  DefaultSignals() {
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    for (int i = 0; i < kCount; ++i) ::sigaction(kSignals[i], &dfl, &saved_[i]);
  }
  ~DefaultSignals() {
    for (int i = 0; i < kCount; ++i) ::sigaction(kSignals[i], &saved_[i], nullptr);
  }
  DefaultSignals(const DefaultSignals&) = delete;
  DefaultSignals& operator=(const DefaultSignals&) = delete;

 private:
  static constexpr int kCount = 5;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP};
  struct sigaction saved_[kCount];
};

struct CapturedLine {
  int64_t t_ms;
  model::OutputStream stream;
  std::string text;
};

// Collects lines from any thread; WaitFor polls a condition on them.
class LineCollector {
 public:
  void Add(const model::LogLine& line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back({line.t_ms, line.stream, std::string(line.text)});
    cv_.notify_all();
  }
  std::function<void(const model::LogLine&)> Handler() {
    return [this](const model::LogLine& line) { Add(line); };
  }
  std::vector<CapturedLine> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  std::vector<std::string> Texts(model::OutputStream stream) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& l : lines_) {
      if (l.stream == stream) out.push_back(l.text);
    }
    return out;
  }
  // True once a line equal to `text` has arrived (waits up to `timeout`).
  bool WaitForLine(const std::string& text,
                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      for (const auto& l : lines_) {
        if (l.text == text) return true;
      }
      return false;
    });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CapturedLine> lines_;
};

}  // namespace trainwatch::testing
