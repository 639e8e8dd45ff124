#include "query/metrics.h"

#include <algorithm>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "query/cursor.h"
#include "query/errors.h"
#include "query/statistic.h"
#include "store/coding.h"
#include "store/rollup.h"
#include "util/status_macros.h"

namespace trainwatch::query {
namespace {

using store::Tier;

constexpr Tier kTiersCoarseFirst[] = {Tier::k3600, Tier::k300, Tier::k60};
constexpr Tier kTiersFineFirst[] = {Tier::kRaw, Tier::k60, Tier::k300, Tier::k3600};

int64_t TierPeriodMs(Tier t) { return store::kTierPeriodMs[static_cast<int>(t)]; }

std::string PeriodMessage(std::string_view param) {
  return absl::StrFormat("The parameter %s must be 1, 5, 10, 20, 30, or a multiple of 60.", param);
}

// How a query over [start, end) with a period is answered.
struct Plan {
  bool no_data = false;     // the period does not fit the tier: no datapoints
  int64_t start_ms = 0;     // rounded StartTime
  int64_t period_ms = 0;
  int64_t buckets = 0;
  Tier source = Tier::kRaw;
  bool high_resolution_only = false;
};

absl::StatusOr<Plan> MakePlan(const store::TierRetention& r, int64_t now_ms, int64_t start_ms,
                              int64_t end_ms, int64_t period_s, bool want_percentiles,
                              int64_t limit) {
  Plan p;
  p.period_ms = period_s * 1000;
  // The finest tier that still covers the start decides (§4.2).
  std::optional<Tier> finest;
  for (Tier t : kTiersFineFirst) {
    if (r.Covers(t, start_ms, now_ms)) {
      finest = t;
      break;
    }
  }
  int64_t round_ms = 60'000;
  if (finest && *finest != Tier::kRaw) round_ms = TierPeriodMs(*finest);
  if (period_s < 60) round_ms = p.period_ms;
  p.start_ms = store::AlignDown(start_ms, round_ms);
  p.buckets = (end_ms - p.start_ms + p.period_ms - 1) / p.period_ms;
  if (p.buckets > limit) {
    return MakeError(ErrorKind::kInvalidCombination,
                     absl::StrFormat("You have requested up to %d datapoints, which exceeds the "
                                     "limit of %d. You may reduce the datapoints requested by "
                                     "increasing Period, or decreasing the time range.",
                                     p.buckets, limit));
  }
  if (!finest || (*finest != Tier::kRaw && p.period_ms % TierPeriodMs(*finest) != 0)) {
    p.no_data = true;
    return p;
  }
  p.high_resolution_only = period_s < 60;
  // The coarsest stored tier that gives the same answer.
  p.source = *finest;
  const bool raw_covers = r.Covers(Tier::kRaw, p.start_ms, now_ms);
  if (period_s >= 60) {
    for (Tier t : kTiersCoarseFirst) {
      const int64_t tp = TierPeriodMs(t);
      if (!r.Covers(t, p.start_ms, now_ms) || p.period_ms % tp != 0 || p.start_ms % tp != 0) {
        continue;
      }
      // Percentiles are exact from raw data while it exists.
      if (want_percentiles && raw_covers) continue;
      p.source = t;
      break;
    }
  }
  if (p.source == Tier::kRaw && !raw_covers) p.source = *finest;
  return p;
}

absl::StatusOr<std::vector<model::Dimension>> SortedDimensions(
    std::vector<model::Dimension> dims, std::string_view param) {
  if (dims.size() > model::kMaxDimensions) {
    return MakeError(ErrorKind::kInvalidValue,
                     absl::StrFormat("The collection %s must not have a size greater than 30.",
                                     param));
  }
  std::sort(dims.begin(), dims.end());
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i].name == dims[i - 1].name) {
      return MakeError(ErrorKind::kInvalidValue,
                       absl::StrFormat("The dimension %s is given twice in %s.", dims[i].name,
                                       param));
    }
  }
  return dims;
}

// The rollup columns a set of statistics reads.
uint8_t ColumnsFor(const std::vector<ParsedStatistic>& stats) {
  uint8_t c = 0;
  for (const ParsedStatistic& s : stats) {
    if (!s.plain) return store::kAllColumns;
    switch (*s.plain) {
      case PlainStatistic::kSampleCount:
        break;
      case PlainStatistic::kAverage:
      case PlainStatistic::kSum:
        c |= store::kSumColumn;
        break;
      case PlainStatistic::kMinimum:
        c |= store::kMinColumn;
        break;
      case PlainStatistic::kMaximum:
        c |= store::kMaxColumn;
        break;
    }
  }
  return c;
}

absl::Status AggregateAll(const store::ReadView& view, const std::vector<store::SeriesRef>& series,
                          const Plan& plan, int64_t end_ms, bool sketch, uint8_t columns,
                          std::vector<store::Aggregate>* buckets) {
  store::AggregateRequest req;
  req.start_ms = plan.start_ms;
  req.end_ms = end_ms;
  req.origin_ms = plan.start_ms;
  req.period_ms = plan.period_ms;
  req.source = plan.source;
  req.distribution = !sketch                        ? store::Distribution::kNone
                     : plan.source == store::Tier::kRaw ? store::Distribution::kExact
                                                        : store::Distribution::kSketch;
  req.high_resolution_only = plan.high_resolution_only;
  req.columns = columns;
  for (const store::SeriesRef& s : series) {
    TW_RETURN_IF_ERROR(view.AggregateSeries(s.id, req, buckets));
  }
  return absl::OkStatus();
}

bool ValidQueryId(std::string_view id) {
  if (id.empty() || id.size() > 255 || !(id[0] >= 'a' && id[0] <= 'z')) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

// ---- GetMetricStatistics ----------------------------------------------------

absl::StatusOr<GetMetricStatisticsResponse> GetMetricStatistics(
    const store::ReadView& view, const GetMetricStatisticsRequest& req) {
  if (req.ns.empty()) {
    return MakeError(ErrorKind::kMissing, "The parameter Namespace is required.");
  }
  if (req.metric.empty()) {
    return MakeError(ErrorKind::kMissing, "The parameter MetricName is required.");
  }
  if (req.start_ms >= req.end_ms) {
    return MakeError(ErrorKind::kInvalidValue,
                     "The parameter StartTime must be less than the parameter EndTime.");
  }
  if (!IsAllowedPeriod(req.period_s)) {
    return MakeError(ErrorKind::kInvalidValue, PeriodMessage("Period"));
  }
  if (req.statistics.empty() == req.extended_statistics.empty()) {
    return MakeError(ErrorKind::kInvalidCombination,
                     "Must specify either Statistics or ExtendedStatistics, but not both.");
  }
  if (req.statistics.size() > 5) {
    return MakeError(ErrorKind::kInvalidValue,
                     "The collection Statistics must not have a size greater than 5.");
  }
  if (req.extended_statistics.size() > 10) {
    return MakeError(ErrorKind::kInvalidValue,
                     "The collection ExtendedStatistics must not have a size greater than 10.");
  }
  std::vector<ParsedStatistic> stats;
  for (size_t i = 0; i < req.statistics.size(); ++i) {
    std::optional<PlainStatistic> p = ParsePlainStatistic(req.statistics[i]);
    if (!p) {
      return MakeError(ErrorKind::kInvalidValue,
                       absl::StrFormat("The value %s for parameter Statistics.member.%d is not "
                                       "valid: want SampleCount, Average, Sum, Minimum or Maximum.",
                                       req.statistics[i], i + 1));
    }
    stats.push_back({req.statistics[i], p, 0});
  }
  for (size_t i = 0; i < req.extended_statistics.size(); ++i) {
    const std::string& name = req.extended_statistics[i];
    double pct = 0;
    switch (ParseExtendedStatistic(name, &pct)) {
      case ExtendedParse::kOk:
        stats.push_back({name, std::nullopt, pct});
        break;
      case ExtendedParse::kUnsupported:
        return MakeError(ErrorKind::kInvalidValue,
                         absl::StrFormat("The extended statistic %s is not supported by trainwatch "
                                         "yet; percentiles (p0-p100, e.g. p99.9) are.",
                                         name));
      case ExtendedParse::kMalformed:
        return MakeError(ErrorKind::kInvalidValue,
                         absl::StrFormat("The value %s for parameter ExtendedStatistics.member.%d "
                                         "is not a valid extended statistic.",
                                         name, i + 1));
    }
  }
  TW_ASSIGN_OR_RETURN(std::vector<model::Dimension> dims,
                      SortedDimensions(req.dimensions, "Dimensions"));
  const bool percentiles = !req.extended_statistics.empty();
  TW_ASSIGN_OR_RETURN(Plan plan, MakePlan(view.retention().For(req.ns), view.now_ms(),
                                          req.start_ms, req.end_ms, req.period_s, percentiles,
                                          kMaxStatisticsDatapoints));
  GetMetricStatisticsResponse out;
  out.label = req.metric;
  if (plan.no_data) return out;
  std::vector<store::SeriesRef> series;
  TW_RETURN_IF_ERROR(view.FindSeries(req.ns, req.metric, dims,
                                     req.unit ? &*req.unit : nullptr, &series));
  // One group per unit, or one for them all.
  std::vector<std::vector<store::SeriesRef>> groups;
  if (req.merge_units && !series.empty()) {
    groups.push_back(std::move(series));
  } else {
    for (store::SeriesRef& s : series) groups.push_back({std::move(s)});
  }
  for (const std::vector<store::SeriesRef>& group : groups) {
    std::string unit = group[0].key.unit;
    for (const store::SeriesRef& s : group) {
      if (s.key.unit != unit) unit.clear();
    }
    std::vector<store::Aggregate> buckets(plan.buckets);
    TW_RETURN_IF_ERROR(
        AggregateAll(view, group, plan, req.end_ms, percentiles, ColumnsFor(stats), &buckets));
    out.datapoints.reserve(out.datapoints.size() +
                           std::count_if(buckets.begin(), buckets.end(),
                                         [](const store::Aggregate& a) { return !a.empty(); }));
    for (int64_t k = 0; k < plan.buckets; ++k) {
      const store::Aggregate& a = buckets[k];
      if (a.empty()) continue;
      Datapoint d;
      d.t_ms = plan.start_ms + k * plan.period_ms;
      d.unit = unit;
      for (const ParsedStatistic& st : stats) {
        std::optional<double> v = Evaluate(st, a);
        if (!st.plain) {
          if (v) d.extended.emplace_back(st.name, *v);
          continue;
        }
        switch (*st.plain) {
          case PlainStatistic::kSampleCount:
            d.sample_count = v;
            break;
          case PlainStatistic::kAverage:
            d.average = v;
            break;
          case PlainStatistic::kSum:
            d.sum = v;
            break;
          case PlainStatistic::kMinimum:
            d.minimum = v;
            break;
          case PlainStatistic::kMaximum:
            d.maximum = v;
            break;
        }
      }
      out.datapoints.push_back(std::move(d));
    }
  }
  auto by_time = [](const Datapoint& a, const Datapoint& b) { return a.t_ms < b.t_ms; };
  if (!std::is_sorted(out.datapoints.begin(), out.datapoints.end(), by_time)) {
    std::stable_sort(out.datapoints.begin(), out.datapoints.end(), by_time);  // several series
  }
  return out;
}

// ---- GetMetricData ----------------------------------------------------------

absl::StatusOr<GetMetricDataResponse> GetMetricData(const store::ReadView& view,
                                                    const GetMetricDataRequest& req) {
  if (req.queries.empty() || req.queries.size() > 500) {
    return MakeError(ErrorKind::kInvalidQuery,
                     absl::StrFormat("The collection MetricDataQueries must have 1 to 500 "
                                     "members; it has %d.",
                                     req.queries.size()));
  }
  if (req.start_ms >= req.end_ms) {
    return MakeError(ErrorKind::kInvalidValue,
                     "The parameter StartTime must be less than the parameter EndTime.");
  }
  const int64_t budget = req.max_datapoints.value_or(kMaxMetricDataDatapoints);
  if (budget < 1) {
    return MakeError(ErrorKind::kInvalidValue,
                     "The parameter MaxDatapoints must be greater than 0.");
  }
  std::vector<std::string> problems;
  std::set<std::string> ids;
  std::vector<ParsedStatistic> stats(req.queries.size());
  for (size_t i = 0; i < req.queries.size(); ++i) {
    const MetricDataQuery& q = req.queries[i];
    const std::string member = absl::StrFormat("MetricDataQueries.member.%d", i + 1);
    if (!ValidQueryId(q.id)) {
      problems.push_back(absl::StrFormat("The value %s for parameter %s.Id is not matching the "
                                         "expected pattern ^[a-z][a-zA-Z0-9_]*$.",
                                         q.id, member));
    } else if (!ids.insert(q.id).second) {
      problems.push_back(absl::StrFormat("The value %s for parameter %s.Id is used more than "
                                         "once; Ids must be unique.",
                                         q.id, member));
    }
    if (q.expression) {
      problems.push_back(absl::StrFormat(
          "%s.Expression: Metric math expressions are not supported by trainwatch yet.", member));
      continue;
    }
    if (q.ns.empty() || q.metric.empty()) {
      problems.push_back(absl::StrFormat("The parameter %s.MetricStat.Metric.%s is required.",
                                         member, q.ns.empty() ? "Namespace" : "MetricName"));
      continue;
    }
    if (std::optional<PlainStatistic> p = ParsePlainStatistic(q.stat)) {
      stats[i] = {q.stat, p, 0};
    } else {
      double pct = 0;
      ExtendedParse e = ParseExtendedStatistic(q.stat, &pct);
      if (e == ExtendedParse::kUnsupported) {
        return MakeError(ErrorKind::kInvalidValue,
                         absl::StrFormat("The statistic %s of %s.MetricStat.Stat is not supported "
                                         "by trainwatch yet; percentiles (e.g. p99.9) are.",
                                         q.stat, member));
      }
      if (e == ExtendedParse::kMalformed) {
        problems.push_back(absl::StrFormat(
            "The value %s for parameter %s.MetricStat.Stat is not a valid statistic.", q.stat,
            member));
      }
      stats[i] = {q.stat, std::nullopt, pct};
    }
  }
  if (!problems.empty()) {
    std::string msg;
    for (const std::string& p : problems) msg += (msg.empty() ? "" : "\n") + p;
    return MakeError(ErrorKind::kInvalidQuery, msg);
  }
  for (size_t i = 0; i < req.queries.size(); ++i) {
    if (!IsAllowedPeriod(req.queries[i].period_s)) {
      return MakeError(ErrorKind::kInvalidValue,
                       PeriodMessage(absl::StrFormat("MetricDataQueries.member.%d.MetricStat.Period",
                                                     i + 1)));
    }
  }

  size_t first_query = 0;
  int64_t skip = 0;
  // A token resumes the same request: same queries, range, order and budget.
  CursorBinding binding;
  binding.Add(req.start_ms).Add(req.end_ms).Add(req.scan_ascending ? "asc" : "desc").Add(budget);
  for (const MetricDataQuery& q : req.queries) {
    binding.Add(q.id).Add(q.ns).Add(q.metric).Add(q.period_s).Add(q.stat);
    binding.Add(q.unit ? "u=" + *q.unit : "").Add(q.return_data ? "r" : "-");
    for (const model::Dimension& d : q.dimensions) binding.Add(d.name).Add(d.value);
  }
  if (!req.next_token.empty()) {
    TW_ASSIGN_OR_RETURN(nlohmann::json cursor,
                        DecodeCursor(CursorKind::kMetricData, binding, req.next_token));
    auto q = cursor.find("q"), k = cursor.find("k");
    if (q == cursor.end() || k == cursor.end() || !q->is_number_unsigned() ||
        !k->is_number_unsigned() || q->get<size_t>() >= req.queries.size()) {
      return MakeError(ErrorKind::kInvalidCursor, "it holds no position in these queries");
    }
    first_query = q->get<size_t>();
    skip = k->get<int64_t>();
  }

  GetMetricDataResponse out;
  int64_t left = budget;
  for (size_t i = first_query; i < req.queries.size(); ++i) {
    const MetricDataQuery& q = req.queries[i];
    if (!q.return_data) continue;
    if (left == 0) {
      out.next_token = EncodeCursor(CursorKind::kMetricData, binding, {{"q", i}, {"k", 0}});
      break;
    }
    MetricDataResult r;
    r.id = q.id;
    r.label = q.label.empty() ? q.metric : q.label;
    TW_ASSIGN_OR_RETURN(std::vector<model::Dimension> dims,
                        SortedDimensions(q.dimensions, absl::StrFormat(
                                                           "MetricDataQueries.member.%d.MetricStat."
                                                           "Metric.Dimensions",
                                                           i + 1)));
    const bool percentile = !stats[i].plain;
    TW_ASSIGN_OR_RETURN(Plan plan, MakePlan(view.retention().For(q.ns), view.now_ms(), req.start_ms,
                                            req.end_ms, q.period_s, percentile,
                                            kMaxMetricDataDatapoints));
    if (!plan.no_data) {
      std::vector<store::SeriesRef> series;
      TW_RETURN_IF_ERROR(
          view.FindSeries(q.ns, q.metric, dims, q.unit ? &*q.unit : nullptr, &series));
      std::vector<store::Aggregate> buckets(plan.buckets);
      TW_RETURN_IF_ERROR(AggregateAll(view, series, plan, req.end_ms, percentile,
                                      ColumnsFor({stats[i]}), &buckets));
      for (int64_t k = 0; k < plan.buckets; ++k) {
        std::optional<double> v = Evaluate(stats[i], buckets[k]);
        if (!v) continue;
        r.timestamps_ms.push_back(plan.start_ms + k * plan.period_ms);
        r.values.push_back(*v);
      }
      if (!req.scan_ascending) {
        std::reverse(r.timestamps_ms.begin(), r.timestamps_ms.end());
        std::reverse(r.values.begin(), r.values.end());
      }
    }
    const int64_t offset = i == first_query ? skip : 0;
    const int64_t total = static_cast<int64_t>(r.values.size());
    const int64_t from = std::min(offset, total);
    const int64_t take = std::min(left, total - from);
    r.timestamps_ms = std::vector<int64_t>(r.timestamps_ms.begin() + from,
                                           r.timestamps_ms.begin() + from + take);
    r.values = std::vector<double>(r.values.begin() + from, r.values.begin() + from + take);
    left -= take;
    if (from + take < total) {
      r.complete = false;
      out.next_token =
          EncodeCursor(CursorKind::kMetricData, binding, {{"q", i}, {"k", from + take}});
      out.results.push_back(std::move(r));
      break;
    }
    out.results.push_back(std::move(r));
  }
  return out;
}

// ---- Last value -------------------------------------------------------------

absl::StatusOr<std::optional<store::LastValue>> LastValue(const store::ReadView& view,
                                                          const model::SeriesKey& key) {
  std::vector<store::SeriesRef> series;
  TW_RETURN_IF_ERROR(view.FindSeries(key.ns, key.metric, key.dimensions, &key.unit, &series));
  if (series.empty()) return std::optional<store::LastValue>();
  return view.GetLastValue(series[0].id);
}

}  // namespace trainwatch::query
