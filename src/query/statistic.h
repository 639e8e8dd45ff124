#pragma once
// CloudWatch statistic names (spec/aws-api.md §4.3): the five plain ones and
// percentiles pNN / pNN.NN (nearest rank). Trimmed means, winsorized means,
// trimmed counts/sums and percentile ranks are well-formed but not supported
// yet, and say so.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "query/reader.h"
#include "store/aggregate.h"

namespace trainwatch::query {

enum class PlainStatistic { kSampleCount, kAverage, kSum, kMinimum, kMaximum };

struct ParsedStatistic {
  std::string name;  // as requested ("Average", "p99.9")
  std::optional<PlainStatistic> plain;
  double percentile = 0;  // 0-100, when !plain
};

// "SampleCount", "Average", "Sum", "Minimum", "Maximum".
std::optional<PlainStatistic> ParsePlainStatistic(std::string_view name);
std::string_view PlainStatisticName(PlainStatistic s);

// Either kind, as a reader's Statistic: nullopt when `name` is neither a
// plain statistic nor a percentile trainwatch computes.
std::optional<Statistic> ParseStatistic(std::string_view name);

enum class ExtendedParse { kOk, kMalformed, kUnsupported };
// Parses an extended statistic; kUnsupported for well-formed forms trainwatch
// does not compute yet (tm90, TM(10%:90%), IQM, wm, tc, ts, PR).
ExtendedParse ParseExtendedStatistic(std::string_view name, double* percentile);

// The value of `stat` over an aggregate; nullopt when undefined (empty
// bucket, or a percentile the bucket cannot answer).
std::optional<double> Evaluate(const ParsedStatistic& stat, const store::Aggregate& agg);

}  // namespace trainwatch::query
