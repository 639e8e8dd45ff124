// StalledTrainingRule (spec/rules.md §5.12): a job that stopped producing
// anything. It decides on the engine's clock ticks, so replay decides as live.

#include <cmath>

#include "absl/strings/str_format.h"
#include "rules/log_rules.h"
#include "rules/log_rules_internal.h"

namespace trainwatch::rules {

using log_internal::AtStep;
using log_internal::Num;
using log_internal::Seconds;

StalledTrainingParams MakeStalledTrainingParams(const ParamValues& values) {
  StalledTrainingParams p;
  p.threshold_ms = std::llround(values.Seconds("threshold") * 1000);
  return p;
}

namespace {

bool IsProgress(Signal signal) {
  return signal == Signal::kLogLine || signal == Signal::kMetric || signal == Signal::kNonFinite ||
         signal == Signal::kStep || signal == Signal::kTensor || signal == Signal::kPrediction;
}

// "step 120", "metric train:loss = 0.42 at step 120", "a log line at step 120".
std::string LastSeen(const StalledTrainingState& s) {
  switch (s.last_signal) {
    case Signal::kStep:
      return absl::StrFormat("step %d", static_cast<int64_t>(s.last_value));
    case Signal::kMetric:
    case Signal::kNonFinite:
      return absl::StrFormat("metric %s = %s%s", s.last_name, Num(s.last_value),
                             AtStep(s.last_step));
    case Signal::kTensor:
      return absl::StrFormat("statistics of tensor %s%s", s.last_name, AtStep(s.last_step));
    default:
      return absl::StrFormat("a log line%s", AtStep(s.last_step));
  }
}

}  // namespace

Verdict OnInput(const StalledTrainingParams& p, StalledTrainingState& s, const Input& in) {
  if (!s.started) {
    s.started = true;
    s.since_ms = in.t_ms;
  }
  if (IsProgress(in.signal)) {
    s.since_ms = in.t_ms;
    s.saw_progress = true;
    s.fired = false;
    s.last_signal = in.signal;
    s.last_name.assign(in.name);
    s.last_value = in.value;
    s.last_step = in.step;
    return Verdict::Pending();
  }
  if (in.signal != Signal::kTick) return Verdict::Pending();
  const int64_t quiet_ms = in.t_ms - s.since_ms;
  if (quiet_ms < p.threshold_ms) return Verdict::Ok();
  if (s.fired) return Verdict::Pending();  // this stall is reported already
  s.fired = true;
  Finding f;
  f.reason = "stalled";
  f.subject = "job";
  f.step = in.step;
  f.t_ms = in.t_ms;
  f.observed = static_cast<double>(quiet_ms) / 1000;
  f.threshold = static_cast<double>(p.threshold_ms) / 1000;
  f.message = absl::StrFormat("No log line, metric or step for %s, the threshold being %s; %s.",
                              Seconds(f.observed), Seconds(f.threshold),
                              s.saw_progress ? "the last thing seen was " + LastSeen(s)
                                             : std::string("the job has printed nothing since "
                                                           "the rule started"));
  f.recommendation =
      "The job may hang (a deadlock, a stuck data loader or collective, a dead worker) or be "
      "slower than the threshold allows: look at its last output and its processes (py-spy dump "
      "shows where Python waits), and log a heartbeat more often than the threshold.";
  return Verdict::Issue(std::move(f));
}

Verdict OnEnd(const StalledTrainingParams&, StalledTrainingState& s, int64_t end_ms) {
  if (!s.saw_progress) {
    return {Verdict::kOk,
            {NoDataFinding("the job printed no log line, metric or step",
                           "Check that the job's output is captured (stdout/stderr) and that it "
                           "ran at all.",
                           end_ms)}};
  }
  return Verdict::Ok();
}

}  // namespace trainwatch::rules
