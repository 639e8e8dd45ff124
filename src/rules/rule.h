#pragma once
// The rule contract (spec/rules.md §4): every built-in rule is a pure function
//
//   Verdict OnInput(const Params&, State&, const Input&);   // one input, in time order
//   Verdict OnEnd(const Params&, State&, int64_t end_ms);   // the job ended
//
// pure apart from the State it owns: no I/O, no clock, no locks, never blocks.
// The engine (rules/engine.h) turns what a job produces (datapoints, log lines,
// step numbers, non-finite matches, a clock tick) into Inputs, feeds each
// job's rules in time order, and maps their Verdicts to statuses; `trainwatch
// rules replay` feeds the same functions from the store, so a live run and its
// replay give the same verdicts.
//
// A rule is written as a Params struct (parsed and range-checked by
// rules/params.h from the user's strings), a State struct (value-initialised
// when the rule starts) and the two functions above, overloaded on Params.
// PureRule<Params, State> wraps them as a Rule object for the engine.
//
// Time is the data's time (Input::t_ms), never the wall clock: a rule that
// waits (StalledTrainingRule, MaxInitializationTime) decides on kTick inputs,
// which carry the engine's clock, so replay decides exactly as live did.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/rule_result.h"

namespace trainwatch::rules {

// What an Input carries. Utilisations are percentages (0-100).
enum class Signal : uint8_t {
  kCoreCpu,          // one CPU core's utilisation; index = core
  kCoreIoWait,       // one core's I/O wait; index = core
  kHostCpu,          // the host's CPU utilisation over all cores
  kGpuUtil,          // one GPU's utilisation; index = GPU
  kGpuMemUtil,       // one GPU's memory used, percent of its total; index = GPU
  kGpuMemUsedBytes,  // one GPU's memory used in bytes; index = GPU
  kGpuMemTotalBytes, // one GPU's memory in bytes; index = GPU
  kJobCpu,           // the job's process tree CPU (percent of one core, summed)
  kJobProcesses,     // processes in the job's tree (data-loader workers included)
  kCpuCores,         // the host's CPU cores (the profiler publishes it)
  kMetric,           // a metric the job produced (log line or client); name, value
  kTensor,           // a statistic of a tensor (Python client's hook): name = tensor,
                     // collection, index = the TensorStat, value
  kPrediction,       // predictions of a classifier (Python client's log_predictions):
                     // index = the true class, predicted = the predicted class, value = how
                     // many samples of one step had that pair
  kNonFinite,        // a metric match whose value was NaN or ±Inf; name, value
  kStep,             // the job reached step `value` (from the step metric)
  kHostStep,         // host `host` reached step `value` (its own copy of the step metric,
                     // model/job_events.h kHostStepMetric)
  kLogLine,          // the job printed a line (value unused)
  kTick,             // the engine's clock (time-driven rules decide here)
};


// The statistics of a tensor at one step (model/job_events.h's
// trainwatch/Tensors series, docs/python.md); Input::index of a kTensor input.
enum class TensorStat : uint8_t {
  kCount, kZeros, kNan, kPosInf, kNegInf, kMin, kMax, kMean, kAbsMean, kVariance, kL1, kL2,
  kNorm,               // weights at the optimizer step: ||W||
  kUpdateNorm,         // ||W_s - W_previous||
  kUpdateRatio,        // ||dW|| / ||W_previous||
  kDeadFraction,       // ReLU outputs: share of units positive for < 1% of the batch
  kSaturatedFraction,  // tanh/sigmoid inputs: share of units outside the flat-region bounds
  kP5,                 // gradients at the first steps: 5th and 95th percentiles
  kP95,
  kChannelMean,        // an image input's mean of one channel (Input::part); with kSamples
  kSamples,            // the images (first dimension) of the step's input
  kTokenFraction,      // a token-id input's share of one token id (Input::part)
};
// "abs_mean" -> kAbsMean; nullopt for a name that is none.
std::optional<TensorStat> ParseTensorStat(std::string_view name);
std::string_view TensorStatName(TensorStat stat);

struct Input {
  Signal signal = Signal::kTick;
  int64_t t_ms = 0;      // data time; for kTick the engine's clock
  double value = 0;
  int index = -1;        // core or GPU index; -1 when not per core/GPU
  int host = 1;          // host index of a multi-host job ("algo-<host>")
  std::string_view name; // kMetric, kNonFinite: the metric's name; kTensor: the tensor's
  std::string_view collection;  // kTensor: the tensor's collection ("gradients", ...)
  int predicted = -1;           // kPrediction: the predicted class
  int part = -1;                // kTensor: the channel (kChannelMean) or token id (kTokenFraction)
  int rank = 0;                 // kTensor: the process of a distributed job that sent it
  int64_t step = -1;     // the last step seen at t_ms (-1: none yet); the engine fills it
};

// One thing a rule found (model/rule_result.h). `rule` is filled by the
// engine (the configuration name).
using Finding = model::RuleFinding;
using Severity = model::FindingSeverity;

// kPending: nothing decided yet. kOk: the rule's checks passed so far (or, from
// OnEnd, for the whole run). kIssue: `findings` holds at least one kIssue finding.
// Warnings ("no data") may come with any kind.
struct Verdict {
  enum Kind : uint8_t { kPending, kOk, kIssue };
  Kind kind = kPending;
  std::vector<Finding> findings;

  static Verdict Pending() { return {}; }
  static Verdict Ok() { return {kOk, {}}; }
  static Verdict Issue(Finding f) {
    Verdict v{kIssue, {}};
    v.findings.push_back(std::move(f));
    return v;
  }
};

// The engine's view of a rule: a Params, a State and the two functions.
class Rule {
 public:
  virtual ~Rule() = default;
  virtual Verdict OnInput(const Input& input) = 0;
  virtual Verdict OnEnd(int64_t end_ms) = 0;
};

namespace detail {
// Unqualified calls, so that argument-dependent lookup finds the rule's
// overloads at instantiation (a member named OnInput would hide them).
template <class P, class S>
Verdict CallOnInput(const P& p, S& s, const Input& in) {
  return OnInput(p, s, in);
}
template <class P, class S>
Verdict CallOnEnd(const P& p, S& s, int64_t end_ms) {
  return OnEnd(p, s, end_ms);
}
}  // namespace detail

template <class Params, class State>
class PureRule final : public Rule {
 public:
  explicit PureRule(Params params) : params_(std::move(params)) {}
  Verdict OnInput(const Input& input) override { return detail::CallOnInput(params_, state_, input); }
  Verdict OnEnd(int64_t end_ms) override { return detail::CallOnEnd(params_, state_, end_ms); }
  const State& state() const { return state_; }

 private:
  const Params params_;
  State state_{};
};

}  // namespace trainwatch::rules
