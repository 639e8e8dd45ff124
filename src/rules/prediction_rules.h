#pragma once
// The classification rules (spec/rules.md §5.15, §5.16) over what the
// client's log_predictions sends (kPrediction inputs: per step, samples by
// true and predicted class). A step's inputs share its time; a step is
// judged when the next one begins, or at the end of the job.

#include <cstdint>
#include <map>
#include <utility>

#include "rules/rule.h"

namespace trainwatch::rules {

// ClassImbalance (§5.15): over the steps so far, once `samples` samples were
// seen: the most frequent class over the rarest (classes seen) above
// threshold_imbalance, or a class mispredicted more often than
// threshold_misprediction. Each reason is reported once per class set.
struct ClassImbalanceParams {
  double threshold_imbalance = 10;
  double threshold_misprediction = 0.7;
  int64_t samples = 500;
};
struct ClassImbalanceState {
  std::map<int, double> count;    // samples by true class
  std::map<int, double> correct;  // of those, predicted right
  double total = 0;
  int64_t step_t_ms = -1;         // time of the step being gathered
  Input last;                     // its last input (step, time) for the finding
  bool imbalance_reported = false;
  std::map<int, bool> misprediction_reported;
  bool seen = false;
};
Verdict OnInput(const ClassImbalanceParams& p, ClassImbalanceState& s, const Input& in);
Verdict OnEnd(const ClassImbalanceParams& p, ClassImbalanceState& s, int64_t end_ms);

// Confusion (§5.16): each step's confusion matrix C[label][predicted],
// normalised per predicted class i (Σ_k C[k][i] > 0): C[i][i] share >=
// min_diag and every C[j][i] share (j != i) <= max_off_diag.
struct ConfusionParams {
  double min_diag = 0.9;
  double max_off_diag = 0.1;
};
struct ConfusionState {
  std::map<std::pair<int, int>, double> matrix;  // (label, predicted) -> samples, this step
  int64_t step_t_ms = -1;
  Input last;
  bool seen = false;
};
Verdict OnInput(const ConfusionParams& p, ConfusionState& s, const Input& in);
Verdict OnEnd(const ConfusionParams& p, ConfusionState& s, int64_t end_ms);

}  // namespace trainwatch::rules
