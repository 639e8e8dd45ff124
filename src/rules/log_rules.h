#pragma once
// Rules over the metrics a job produces (extracted from its log lines or sent
// by the client) and over its output itself: spec/rules.md §5.8-§5.12, and the
// rules beyond Debugger. Each is a Params/State pair and its OnInput/OnEnd
// (rules/rule.h); LogRuleInfos() (rules/catalog.h) lists them.

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "rules/params.h"
#include "rules/rule.h"
#include "rules/tensor_rules.h"

namespace trainwatch::rules {

// ExplodingTensor (§5.2) over metrics: a match whose value is NaN or ±Inf
// (`loss: nan`) is an issue. The store refuses non-finite values, so the job
// reports such a match as a kNonFinite input instead of a datapoint. Over
// tensor statistics (tensor_rules.h): a selected tensor with a NaN (or ±Inf)
// element is an issue.
struct ExplodingTensorParams {
  bool only_nan = false;             // ±Inf is not an issue
  std::vector<std::string> metrics;  // empty: every metric
  TensorSelection tensors;           // its default: every tensor
};
struct ExplodingTensorState {
  bool saw_metric = false;
};
ExplodingTensorParams MakeExplodingTensorParams(const ParamValues& values);
Verdict OnInput(const ExplodingTensorParams& p, ExplodingTensorState& s, const Input& in);
Verdict OnEnd(const ExplodingTensorParams& p, ExplodingTensorState& s, int64_t end_ms);

// LossNotDecreasing (§5.8, trainwatch decision [R]) on one metric. Its steps
// are Input::step when the engine knows it (>= 0); when the job reports no
// steps, the metric's own datapoints are counted as steps (0, 1, 2, ...). Each
// datapoint is a "saved step"; a second value at the same step replaces the
// first, and a step lower than the last one (a restart from a checkpoint)
// starts the history over.
// - not_decreasing: at a check, improvement% = 100·(L_p − L_s)/max(|L_p|, ε) is
//   below diff_percent. The first check is at the first saved step s with a
//   saved step p <= s − num_steps (p: the newest such); later checks at the
//   first saved step >= last check + num_steps.
// - diverging: a value above the lowest so far by more than
//   increase_threshold_percent of |lowest|; once per excursion (it fires again
//   after the loss has come back under the limit).
struct LossNotDecreasingParams {
  std::string metric = "train:loss";
  int64_t num_steps = 10;
  double diff_percent = 0.1;
  double increase_threshold_percent = 5;
};
struct LossNotDecreasingState {
  struct Point {
    int64_t step;
    double value;
  };
  std::deque<Point> history;  // saved steps back to the newest one <= s − num_steps
  int64_t datapoints = 0;     // values seen (the steps when the job has none)
  int64_t last_check = -1;    // step of the last check; -1: none yet
  bool have_min = false;
  double min_value = 0;
  int64_t min_step = -1;
  bool diverging = false;  // above the divergence limit now (fired already)
};
LossNotDecreasingParams MakeLossNotDecreasingParams(const ParamValues& values);
Verdict OnInput(const LossNotDecreasingParams& p, LossNotDecreasingState& s, const Input& in);
Verdict OnEnd(const LossNotDecreasingParams& p, LossNotDecreasingState& s, int64_t end_ms);

// Overfit (§5.9 [R]): an evaluation round is a run of validation values that
// follows training values. When the round ends (the next training value, or
// the end of the job), r = (mean(validation values of the round) − mean(train
// values since the previous round)) / max(|mean(train)|, ε). A counter of
// rounds in a row with r > ratio_threshold fires "overfit" when it reaches
// patience (once per streak). Rounds before start_step are skipped; a round's
// step is the Input::step of its last validation value, or when the job
// reports no steps, the number of training values seen.
struct OverfitParams {
  std::string train_metric = "train:loss";
  std::string validation_metric = "validation:loss";
  int64_t start_step = 0;
  int64_t patience = 1;
  double ratio_threshold = 0.1;
};
struct OverfitState {
  bool saw_train = false;
  bool saw_validation = false;
  int64_t train_values = 0;
  double train_sum = 0;  // since the previous round
  int64_t train_count = 0;
  double val_sum = 0;  // the open round
  int64_t val_count = 0;
  int64_t round_step = -1;
  int64_t rounds = 0;  // rounds judged
  int64_t streak = 0;  // rounds in a row with r > ratio_threshold
};
OverfitParams MakeOverfitParams(const ParamValues& values);
Verdict OnInput(const OverfitParams& p, OverfitState& s, const Input& in);
Verdict OnEnd(const OverfitParams& p, OverfitState& s, int64_t end_ms);

// Overtraining (§5.10 [R]): per metric, the best value so far; a value is a new
// optimum when v < best − delta. Each value is one saved step. When the values
// since the last optimum reach patience_train (training metric) or
// patience_validation (validation metric), "training_plateau" or
// "validation_plateau" fires, once per plateau.
struct OvertrainingParams {
  std::string train_metric = "train:loss";
  std::string validation_metric = "validation:loss";
  int64_t patience_train = 5;
  int64_t patience_validation = 10;
  double delta = 0.01;
};
struct OvertrainingState {
  struct Track {
    bool seen = false;
    double best = 0;
    int64_t best_step = -1;
    int64_t since_best = 0;  // values since the last optimum
  };
  Track train;
  Track validation;
};
OvertrainingParams MakeOvertrainingParams(const ParamValues& values);
Verdict OnInput(const OvertrainingParams& p, OvertrainingState& s, const Input& in);
Verdict OnEnd(const OvertrainingParams& p, OvertrainingState& s, int64_t end_ms);

// StalledTrainingRule (§5.12): the hang detector. Progress is any log line,
// metric, non-finite match or step. On a kTick (t_ms = the engine's clock),
// "stalled" fires when now − last progress >= threshold; then not again until
// progress resumes and stalls again. Before any progress, time counts from the
// rule's first input (ticks included). stop_training_on_fire and
// training_job_name_prefix are SageMaker's; the engine acts on them.
struct StalledTrainingParams {
  int64_t threshold_ms = 1800 * 1000;
};
struct StalledTrainingState {
  bool started = false;
  int64_t since_ms = 0;  // last progress, or the first input before any
  bool saw_progress = false;
  bool fired = false;  // fired for the current stall
  // The last progress seen, for the message.
  Signal last_signal = Signal::kTick;
  std::string last_name;
  double last_value = 0;
  int64_t last_step = -1;
};
StalledTrainingParams MakeStalledTrainingParams(const ParamValues& values);
Verdict OnInput(const StalledTrainingParams& p, StalledTrainingState& s, const Input& in);
Verdict OnEnd(const StalledTrainingParams& p, StalledTrainingState& s, int64_t end_ms);

// LossSpike (beyond Debugger): a value of `metric` far above the running median
// m of the previous `window` values, judged once min_values are there:
// - m > 0: a spike is v > k·m;
// - m <= 0 (a log-likelihood, a loss shifted below zero): v > m + k·scale with
//   scale = max(1.4826·MAD, |m|) (MAD scaled to σ for normal data; |m| keeps a
//   flat history from flagging noise). scale 0 (all values 0) judges nothing.
// Once per excursion: after a spike it fires again only after a value under
// the limit. O(window) per value.
struct LossSpikeParams {
  std::string metric = "train:loss";
  double k = 3;
  int64_t window = 50;
  int64_t min_values = 20;  // capped at window
};
struct LossSpikeState {
  std::vector<double> ring;     // the last `window` values
  size_t next = 0;              // where the next value goes once the ring is full
  std::vector<double> scratch;  // for the median (kept to avoid allocating)
  bool spiking = false;
  bool saw_metric = false;
  bool judged = false;  // some value was judged (min_values were there)
};
LossSpikeParams MakeLossSpikeParams(const ParamValues& values);
Verdict OnInput(const LossSpikeParams& p, LossSpikeState& s, const Input& in);
Verdict OnEnd(const LossSpikeParams& p, LossSpikeState& s, int64_t end_ms);

// Finding for a rule that saw none of its input by the end of the job
// (spec/rules.md §4: never a silent NoIssuesFound).
Finding NoDataFinding(std::string_view what_was_missing, std::string_view recommendation,
                      int64_t t_ms);

}  // namespace trainwatch::rules
