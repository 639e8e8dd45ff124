#pragma once
// Events a job reports as datapoints, so that they travel the one ingest path
// (in this process or from an agent) to the rules like any metric.

#include <string_view>

namespace trainwatch::model {

inline constexpr std::string_view kJobEventsNamespace = "trainwatch/JobEvents";

// A metric definition matched a line, but its value was NaN or ±Inf (`loss:
// nan`). The store refuses non-finite values, so the match is counted here
// instead: value = matches in the batch, dimensions TrainingJobName,
// MetricName (the definition's name) and Value ("NaN", "+Inf" or "-Inf").
inline constexpr std::string_view kNonFiniteMetricValues = "NonFiniteMetricValues";
// Each host's own steps: every datapoint of the job's step metric that host
// extracted, also written to (kJobEventsNamespace, kHostStepMetric, {Host =
// "<job>/algo-<n>"}), since the step metric's own series is the whole job's
// (TrainingJobName only, as on SageMaker). The Straggler rule compares them.
inline constexpr std::string_view kHostStepMetric = "HostStep";
inline constexpr std::string_view kTrainingJobNameDim = "TrainingJobName";
// A host's own series (profiler, HostStep): "<job>/algo-<n>", see
// JobRecord::HostName and ParseHostName (model/job_record.h).
inline constexpr std::string_view kHostDim = "Host";
inline constexpr std::string_view kMetricNameDim = "MetricName";
inline constexpr std::string_view kValueDim = "Value";

// Tensor statistics the Python client's PyTorch hook sends (docs/python.md):
// one series per tensor and statistic, metric = the statistic's name
// (rules/rule.h's TensorStat), dimensions TrainingJobName, Tensor (the
// parameter or module name), Collection (gradients, weights, biases,
// activations, ...) and, for a job of several processes, Rank.
inline constexpr std::string_view kTensorsNamespace = "trainwatch/Tensors";
inline constexpr std::string_view kTensorDim = "Tensor";
inline constexpr std::string_view kCollectionDim = "Collection";
// The part of a tensor a per-part statistic describes: the channel of an
// image input's channel_mean, the token id of a token input's token_fraction.
inline constexpr std::string_view kChannelDim = "Channel";
inline constexpr std::string_view kTokenDim = "Token";

// A classifier's predictions, from the Python client's log_predictions: per
// step, how many samples of each true class (dimension Label) were predicted
// as each class (Predicted); metric Count, dimensions TrainingJobName, Label,
// Predicted (class numbers from 0). ClassImbalance and Confusion read them.
inline constexpr std::string_view kPredictionsNamespace = "trainwatch/Predictions";
inline constexpr std::string_view kPredictionCountMetric = "Count";
inline constexpr std::string_view kLabelDim = "Label";
inline constexpr std::string_view kPredictedDim = "Predicted";

}  // namespace trainwatch::model
