#pragma once
// Actions: what an issue does besides being recorded (rules/config.h lists the
// forms). They run on a thread of their own, in order, so that a slow program
// or an unreachable webhook never holds up evaluation.
//
//   StopTraining      stops the job (ActionTargets::stop) with the rule and the
//                     finding as the Stopped status's message
//   signal:SIGUSR1    sends the signal to the training process group
//                     (ActionTargets::signal): checkpoint, then stop, as the
//                     script decides
//   exec:/path/prog   runs the program (no shell, no arguments) with
//                     {"job": ..., "finding": {...}} on its standard input; its
//                     output goes to this process's log; killed after
//                     exec_timeout_ms
//   webhook:http://h:p/path  POSTs the same JSON (Content-Type
//                     application/json), retried with backoff on errors and
//                     5xx answers, up to webhook_attempts times
//
// Thread safety: Run is thread-safe. The destructor waits for the action
// running now, not for the queued ones (they are logged as dropped).

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "rules/engine.h"
#include "util/mutex.h"

namespace trainwatch::rules {

struct ActionTargets {
  // Stops job `job`; `message` says which rule and why.
  std::function<void(const std::string& job, const std::string& message)> stop;
  // Sends `signo` to the job's training process group.
  std::function<absl::Status(const std::string& job, int signo)> signal;
};

struct ActionOptions {
  int64_t exec_timeout_ms = 30'000;
  int webhook_attempts = 4;
  int64_t webhook_first_backoff_ms = 500;  // doubled after each failed attempt
  int64_t webhook_timeout_ms = 5'000;      // per attempt
  size_t max_queued = 1000;
};

// The message StopTraining puts in the job's status:
// "Stopped by rule nan (ExplodingTensor): train:loss was NaN at step 7."
std::string StopMessage(const ActionRequest& request);

// {"job": "...", "finding": {...}} as exec and webhook receive it.
std::string ActionPayload(const ActionRequest& request);

class Actions final : public ActionHandler {
 public:
  explicit Actions(ActionTargets targets, ActionOptions options = {});
  ~Actions() override;

  void Run(const ActionRequest& request) override;

  // Returns once every action queued before the call has run (tests).
  void Drain();

 private:
  void Loop(std::stop_token stop);
  void Execute(const ActionRequest& request, std::stop_token stop);

  const ActionTargets targets_;
  const ActionOptions options_;
  util::Mutex mu_;
  std::condition_variable changed_;
  std::deque<ActionRequest> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  std::jthread thread_;  // last: joins before the members above go
};

// Runs `program` with `input` on its standard input; its output, trimmed to
// 64 KiB, in *output. DeadlineExceeded when it ran longer than timeout_ms (it
// is killed); Internal for a non-zero exit, naming the status.
absl::Status RunProgram(const std::string& program, const std::string& input, int64_t timeout_ms,
                        std::string* output);

// POSTs `body` as application/json to an http:// URL; the HTTP status code, or
// Unavailable for a connection or timeout error.
absl::StatusOr<int> PostJson(const std::string& url, const std::string& body, int64_t timeout_ms);

}  // namespace trainwatch::rules
