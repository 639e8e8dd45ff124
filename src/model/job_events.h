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
inline constexpr std::string_view kTrainingJobNameDim = "TrainingJobName";
inline constexpr std::string_view kMetricNameDim = "MetricName";
inline constexpr std::string_view kValueDim = "Value";

}  // namespace trainwatch::model
