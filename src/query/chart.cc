#include "query/chart.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "absl/strings/str_format.h"
#include "model/job_events.h"
#include "model/log_event.h"
#include "query/m4.h"
#include "store/rollup.h"
#include "util/status_macros.h"

namespace trainwatch::query {
namespace {

using store::Tier;

// A part of a range and the tier it is read from.
struct Segment {
  Tier tier;
  int64_t lo, hi;  // [lo, hi)
};

int64_t AlignUp(int64_t t, int64_t step) {
  return t > std::numeric_limits<int64_t>::max() - step ? t : store::AlignDown(t + step - 1, step);
}

// [start, end) cut where a tier stops covering it, oldest part first, each
// part from the finest tier that covers it. A cut between a rollup tier and
// a finer one is at a period boundary of the rollup tier, so that no period
// is split; where the finer tier is raw, the raw part starts there too.
// A part older than every tier keeps is left out.
std::vector<Segment> Segments(const store::TierRetention& r, int64_t now_ms, int64_t start_ms,
                              int64_t end_ms) {
  std::vector<Segment> out;
  int64_t hi = end_ms;
  for (int i = 0; i < store::kTierCount && hi > start_ms; ++i) {
    const Tier tier = static_cast<Tier>(i);
    const int64_t keep = r.Get(tier);
    if (keep == store::kForever || now_ms - keep <= start_ms) {
      out.push_back({tier, start_ms, hi});
      break;
    }
    int64_t lo = now_ms - keep;  // the tier covers [lo, now]
    if (i + 1 < store::kTierCount) lo = AlignUp(lo, store::kTierPeriodMs[i + 1]);
    if (lo < hi) {
      out.push_back({tier, lo, hi});
      hi = lo;
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// Calls fn(t_ms, min, max) for each period of a rollup tier that starts in
// [AlignDown(lo), hi) and holds data, in time order: the buckets of a period
// that several records hold (one per seal) merged.
absl::Status ReadPeriods(const store::ReadView& view, store::SeriesId id, Tier tier, int64_t lo,
                         int64_t hi,
                         const std::function<void(int64_t, double, double)>& fn) {
  struct Period {
    int64_t t_ms;
    double min, max;
  };
  std::vector<Period> periods;
  const int64_t period = store::kTierPeriodMs[static_cast<int>(tier)];
  TW_RETURN_IF_ERROR(view.ScanRollupBuckets(
      id, tier, store::AlignDown(lo, period), hi, store::kMinColumn | store::kMaxColumn,
      [&](int64_t t_ms, const store::Aggregate& a) {
        if (!a.empty()) periods.push_back({t_ms, a.min, a.max});
      }));
  std::sort(periods.begin(), periods.end(),
            [](const Period& a, const Period& b) { return a.t_ms < b.t_ms; });
  for (size_t i = 0; i < periods.size();) {
    Period p = periods[i];
    for (++i; i < periods.size() && periods[i].t_ms == p.t_ms; ++i) {
      p.min = std::min(p.min, periods[i].min);
      p.max = std::max(p.max, periods[i].max);
    }
    fn(p.t_ms, p.min, p.max);
  }
  return absl::OkStatus();
}

// Calls add(t_ms, value) for each point of the series in [seg.lo, seg.hi).
template <typename Add>
absl::Status ReadPoints(const store::ReadView& view, store::SeriesId id, const Segment& seg,
                        Add& add) {
  auto add_row = [&](uint8_t lane, const store::Row& row) {
    if (store::LaneKind(lane) == store::SampleKind::kStatSet) {
      if (row.c[0] <= 0) return;
      add(row.t_ms, row.c[2]);
      if (row.c[3] != row.c[2]) add(row.t_ms, row.c[3]);
      return;
    }
    add(row.t_ms, row.c[0]);
  };
  if (seg.tier == Tier::kRaw) return view.ScanRows(id, seg.lo, seg.hi, add_row);
  // A period that begins before the segment shows at the segment's start
  // (only the range's first one can: later segments start on a boundary).
  TW_RETURN_IF_ERROR(
      ReadPeriods(view, id, seg.tier, seg.lo, seg.hi, [&](int64_t t_ms, double min, double max) {
        const int64_t t = std::max(t_ms, seg.lo);
        add(t, min);
        if (max != min) add(t, max);
      }));
  // Late data not sealed yet is in no tier.
  return view.ScanHeadRows(id, seg.lo, seg.hi, add_row);
}

// The job's steps, from its creation (or start_ms, if earlier) to end_ms.
absl::StatusOr<StepMap> ReadSteps(const store::ReadView& view, const model::JobRecord& job,
                                  int64_t start_ms, int64_t end_ms) {
  std::vector<store::SeriesRef> series;
  TW_RETURN_IF_ERROR(view.FindSeries(model::kTrainingJobsNamespace, job.step_metric,
                                     {{std::string(model::kTrainingJobNameDim), job.name}},
                                     nullptr, &series));
  std::vector<std::pair<int64_t, int64_t>> steps;
  const int64_t from = job.creation_ms > 0 ? std::min(job.creation_ms, start_ms) : start_ms;
  const std::vector<Segment> segments =
      Segments(view.retention().For(model::kTrainingJobsNamespace), view.now_ms(), from, end_ms);
  for (const store::SeriesRef& s : series) {
    for (const Segment& seg : segments) {
      if (seg.tier == Tier::kRaw) {
        auto add = [&](int64_t t, double v) { steps.emplace_back(t, StepOfValue(v)); };
        TW_RETURN_IF_ERROR(ReadPoints(view, s.id, seg, add));
        continue;
      }
      // A period: its smallest step at its start, its largest at its end.
      const int64_t period = store::kTierPeriodMs[static_cast<int>(seg.tier)];
      TW_RETURN_IF_ERROR(ReadPeriods(view, s.id, seg.tier, seg.lo, seg.hi,
                                     [&](int64_t t_ms, double min, double max) {
                                       steps.emplace_back(t_ms, StepOfValue(min));
                                       steps.emplace_back(t_ms + period - 1, StepOfValue(max));
                                     }));
      TW_RETURN_IF_ERROR(view.ScanHeadRows(
          s.id, seg.lo, seg.hi, [&](uint8_t, const store::Row& row) {
            steps.emplace_back(row.t_ms, StepOfValue(row.c[0]));
          }));
    }
  }
  return StepMap(std::move(steps));
}

}  // namespace

absl::StatusOr<ChartAnswer> ChartFromView(const store::ReadView& view, const ChartQuery& q) {
  TW_RETURN_IF_ERROR(ValidateChartQuery(q));
  std::vector<model::Dimension> dims = q.metric.dimensions;
  std::sort(dims.begin(), dims.end());
  ChartAnswer out;
  out.x_kind = q.x;
  out.x_start = q.start_ms;
  out.x_end = q.end_ms;

  std::optional<StepMap> steps;
  if (q.x == ChartX::kStep) {
    TW_ASSIGN_OR_RETURN(std::optional<model::JobRecord> job, view.GetJob(q.job));
    if (!job) return absl::NotFoundError(absl::StrFormat("no job named %s", q.job));
    if (job->step_metric.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "job %s has no step metric (it is named when the job starts: --step-metric, or a "
          "metric called step, train:step or global_step); chart it over time instead",
          job->name));
    }
    TW_ASSIGN_OR_RETURN(StepMap map, ReadSteps(view, *job, q.start_ms, q.end_ms));
    std::optional<std::pair<int64_t, int64_t>> span = map.Span(q.start_ms, q.end_ms);
    if (!span) {
      out.x_start = out.x_end = 0;
      return out;  // no step yet: nothing to draw against
    }
    out.x_start = span->first;
    out.x_end = span->second;
    steps.emplace(std::move(map));
  }
  out.column = (static_cast<double>(out.x_end) - static_cast<double>(out.x_start)) / q.width;

  std::vector<store::SeriesRef> series;
  TW_RETURN_IF_ERROR(view.FindSeries(q.metric.ns, q.metric.metric, dims,
                                     q.unit ? &*q.unit : nullptr, &series));
  const std::vector<Segment> segments =
      Segments(view.retention().For(q.metric.ns), view.now_ms(), q.start_ms, q.end_ms);
  bool all_raw = true;
  for (const Segment& seg : segments) {
    out.tier_period_s =
        std::max(out.tier_period_s, store::kTierPeriodMs[static_cast<int>(seg.tier)] / 1000);
    all_raw = all_raw && seg.tier == Tier::kRaw;
  }
  M4 m4(out.x_start, out.x_end, q.width);
  for (const store::SeriesRef& s : series) {
    for (const Segment& seg : segments) {
      if (steps) {
        auto add = [&](int64_t t, double v) {
          if (std::optional<int64_t> step = steps->At(t)) m4.Add(*step, t, v);
        };
        TW_RETURN_IF_ERROR(ReadPoints(view, s.id, seg, add));
      } else {
        auto add = [&](int64_t t, double v) { m4.Add(t, t, v); };
        TW_RETURN_IF_ERROR(ReadPoints(view, s.id, seg, add));
      }
    }
  }
  m4.FinishInto(&out, all_raw);
  return out;
}

}  // namespace trainwatch::query
