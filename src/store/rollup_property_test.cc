// Property test: every tier's aggregates equal a brute-force reference
// computed from the input, over random data with out-of-order and duplicate
// timestamps, statistic sets, weighted values, both resolutions, random
// chunk limits, seals and restarts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "store/db.h"
#include "store/rollup.h"
#include "store/test_util.h"
#include "util/clock.h"

namespace trainwatch::store {
namespace {

constexpr int64_t kT0 = 1736942400000;

struct RefBucket {
  double count = 0, sum = 0;
  double min = INFINITY, max = -INFINITY;
  bool no_percentiles = false;
  std::vector<std::pair<double, double>> values;  // (value, count)
  // Nearest rank generalised to fractional counts (Values/Counts): the
  // smallest value whose cumulative count reaches q * N; p0 = min, p100 = max.
  std::optional<double> Percentile(double q) const {
    if (count <= 0 || no_percentiles || min < 0 || values.empty()) return std::nullopt;
    auto v = values;
    std::sort(v.begin(), v.end());
    if (q <= 0) return v.front().first;
    if (q >= 1) return v.back().first;
    double total = 0;
    for (auto& [x, c] : v) total += c;
    const double target = q * total - 1e-9 * total;
    double acc = 0;
    for (auto& [x, c] : v) {
      acc += c;
      if (acc >= target) return x;
    }
    return v.back().first;
  }
};

struct Input {
  uint8_t lane;
  Row row;
};

void AddToRef(RefBucket* b, const Input& in) {
  const Row& r = in.row;
  switch (LaneKind(in.lane)) {
    case SampleKind::kPlain:
      b->count += 1;
      b->sum += r.c[0];
      b->min = std::min(b->min, r.c[0]);
      b->max = std::max(b->max, r.c[0]);
      b->values.push_back({r.c[0], 1});
      break;
    case SampleKind::kWeighted:
      if (r.c[1] <= 0) break;
      b->count += r.c[1];
      b->sum += r.c[0] * r.c[1];
      b->min = std::min(b->min, r.c[0]);
      b->max = std::max(b->max, r.c[0]);
      b->values.push_back({r.c[0], r.c[1]});
      break;
    case SampleKind::kStatSet:
      b->count += r.c[0];
      b->sum += r.c[1];
      b->min = std::min(b->min, r.c[2]);
      b->max = std::max(b->max, r.c[3]);
      if (r.c[2] == r.c[3] && r.c[1] == r.c[2] * r.c[0]) {
        b->values.push_back({r.c[2], r.c[0]});
      } else {
        b->no_percentiles = true;
      }
      break;
  }
}

class RollupPropertyTest : public ::testing::TestWithParam<int> {};

TEST_P(RollupPropertyTest, TiersMatchBruteForce) {
  const int seed = GetParam();
  std::mt19937_64 rng(seed);
  testing::TempDir dir;
  util::FakeClock clock(kT0);
  DbOptions o;
  o.data_dir = dir.Sub("data");
  o.clock = &clock;
  o.background_thread = false;
  o.head.max_chunk_rows = 4 + rng() % 60;
  o.head.max_chunk_span_ms = (1 + rng() % 6) * 600'000;
  // Seed parity: sketches stored in the tiers (raw kept for less time than
  // the tiers) or not (raw kept forever: percentiles then come from raw).
  // Raw must outlive the test's two days of data, or compactions would
  // (rightly) drop it in the background.
  const bool raw_forever = seed % 2 == 1;
  RetentionPolicy policy;
  ASSERT_TRUE(policy.AddRule("*", raw_forever ? "raw=forever" : "raw=3d").ok());
  o.retention = policy;
  // Every fourth seed reads rollup records without keeping them decoded.
  if (seed % 4 == 0) o.rollup_cache_bytes = 0;
  auto db_or = Db::Open(o);
  ASSERT_TRUE(db_or.ok()) << db_or.status();
  std::unique_ptr<Db> db = std::move(*db_or);
  auto key = model::MakeSeriesKey("trainwatch/Prop", "m", {{"seed", std::to_string(seed)}});
  ASSERT_TRUE(key.ok());

  std::vector<Input> inputs;
  const int64_t span_ms = 2 * 86'400'000LL;
  const int64_t base = kT0 - span_ms;
  int64_t cursor = base;
  std::uniform_real_distribution<double> unit(0, 1);
  for (int batch = 0; batch < 60; ++batch) {
    model::SampleBatch b;
    model::SeriesSamples hi{*key, 1, {}, {}, {}};
    model::SeriesSamples std60{*key, 60, {}, {}, {}};
    const int n = 1 + rng() % 40;
    for (int i = 0; i < n; ++i) {
      // Mostly forward in time; sometimes late (up to a day back) or repeated.
      int64_t t;
      double dice = unit(rng);
      if (dice < 0.1) {
        t = cursor - static_cast<int64_t>(rng() % 86'400'000);
      } else if (dice < 0.15) {
        t = cursor;
      } else {
        cursor += rng() % 120'000;
        t = cursor;
      }
      t = std::max(t, base);
      const bool standard = unit(rng) < 0.2;
      model::SeriesSamples& s = standard ? std60 : hi;
      const double v = std::round((unit(rng) * 200 - (unit(rng) < 0.05 ? 150 : 0)) * 100) / 100;
      double kind = unit(rng);
      Input in;
      in.row.t_ms = t;
      if (kind < 0.7) {
        s.samples.push_back({t, v});
        in.lane = MakeLane(SampleKind::kPlain, standard);
        in.row.c[0] = v;
      } else if (kind < 0.85) {
        const double c = (rng() % 5) * 0.5;
        s.weighted.push_back({t, v, c});
        in.lane = MakeLane(SampleKind::kWeighted, standard);
        in.row.c[0] = v;
        in.row.c[1] = c;
      } else {
        const double c = 1 + rng() % 10;
        const bool identical = unit(rng) < 0.5;
        const double lo = v, hi_v = identical ? v : v + 1 + rng() % 5;
        const double sum = identical ? lo * c : (lo + hi_v) / 2 * c;
        s.statistic_sets.push_back({t, c, sum, lo, hi_v});
        in.lane = MakeLane(SampleKind::kStatSet, standard);
        in.row.c[0] = c;
        in.row.c[1] = sum;
        in.row.c[2] = lo;
        in.row.c[3] = hi_v;
      }
      inputs.push_back(in);
    }
    if (hi.size() > 0) b.series.push_back(std::move(hi));
    if (std60.size() > 0) b.series.push_back(std::move(std60));
    ASSERT_TRUE(db->PutSamples(b).ok());
    if (rng() % 10 == 0) {
      ASSERT_TRUE(db->SealAll().ok());
    }
    if (rng() % 15 == 0) {  // restart: the head is replayed
      db.reset();
      db_or = Db::Open(o);
      ASSERT_TRUE(db_or.ok()) << db_or.status();
      db = std::move(*db_or);
    }
  }
  if (seed % 3 == 0) {
    ASSERT_TRUE(db->SealAll().ok());
  }

  auto view = db->View();
  ASSERT_TRUE(view.ok());
  std::vector<SeriesRef> refs;
  ASSERT_TRUE(view->FindSeries(key->ns, key->metric, key->dimensions, nullptr, &refs).ok());
  ASSERT_EQ(refs.size(), 1u);

  struct Case {
    Tier source;
    int64_t period_ms;
    bool high_res_only;
  };
  std::vector<Case> cases = {{Tier::kRaw, 1000, true},    {Tier::kRaw, 10'000, true},
                             {Tier::kRaw, 60'000, false},  {Tier::k60, 60'000, false},
                             {Tier::k60, 600'000, false},  {Tier::k300, 300'000, false},
                             {Tier::k300, 3'600'000, false}, {Tier::k3600, 3'600'000, false},
                             {Tier::k3600, 86'400'000, false}};
  for (const Case& c : cases) {
    // Aligned to the tier; for raw fine periods, a window short enough for
    // the datapoint limits real queries have.
    const int64_t start = AlignDown(base + 3'600'000 + 1234, c.period_ms);
    const int64_t end = c.period_ms < 60'000 ? start + 1440 * c.period_ms : cursor + 1;
    const int64_t n = (end - start + c.period_ms - 1) / c.period_ms;
    std::vector<Aggregate> got(n);
    AggregateRequest req{.start_ms = start, .end_ms = end, .origin_ms = start,
                         .period_ms = c.period_ms, .source = c.source,
                         .distribution = c.source == Tier::kRaw ? Distribution::kExact
                                                                : Distribution::kSketch,
                         .high_resolution_only = c.high_res_only};
    ASSERT_TRUE(view->AggregateSeries(refs[0].id, req, &got).ok());
    std::vector<RefBucket> want(n);
    for (const Input& in : inputs) {
      if (in.row.t_ms < start || in.row.t_ms >= end) continue;
      if (c.high_res_only && LaneIsStandardResolution(in.lane)) continue;
      AddToRef(&want[(in.row.t_ms - start) / c.period_ms], in);
    }
    if (c.source != Tier::kRaw) {
      // Without percentiles the records' buckets come from the decoded
      // record cache (unless turned off): the first read decodes and keeps
      // them, the second is served from it.
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<Aggregate> plain(n);
        AggregateRequest plain_req = req;
        plain_req.distribution = Distribution::kNone;
        ASSERT_TRUE(view->AggregateSeries(refs[0].id, plain_req, &plain).ok());
        for (int64_t k = 0; k < n; ++k) {
          SCOPED_TRACE(::testing::Message() << "seed " << seed << " tier " << TierName(c.source)
                                            << " period " << c.period_ms << " bucket " << k
                                            << " pass " << pass);
          ASSERT_EQ(plain[k].count, want[k].count);
          if (want[k].count == 0) continue;
          EXPECT_EQ(plain[k].ReportedSum(), got[k].ReportedSum());
          EXPECT_EQ(plain[k].min, want[k].min);
          EXPECT_EQ(plain[k].max, want[k].max);
          EXPECT_EQ(plain[k].no_percentiles, want[k].no_percentiles);
        }
      }
    }
    // Without stored sketches a bucket has percentiles only when all its
    // data is still in the head; whatever is returned must be right.
    const bool tier_has_sketches = c.source == Tier::kRaw || !raw_forever;
    for (int64_t k = 0; k < n; ++k) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " tier " << TierName(c.source)
                                      << " period " << c.period_ms << " bucket " << k);
      ASSERT_EQ(got[k].count, want[k].count);
      if (want[k].count == 0) continue;
      EXPECT_NEAR(got[k].sum, want[k].sum, 1e-9 * std::max(1.0, std::abs(want[k].sum)));
      EXPECT_EQ(got[k].min, want[k].min);
      EXPECT_EQ(got[k].max, want[k].max);
      EXPECT_EQ(got[k].no_percentiles, want[k].no_percentiles);
      for (double q : {0.0, 0.5, 0.9, 0.99, 1.0}) {
        std::optional<double> w = want[k].Percentile(q);
        std::optional<double> g = got[k].Percentile(q);
        if (!tier_has_sketches && !g) continue;  // stored without sketches: may be absent

        ASSERT_EQ(g.has_value(), w.has_value()) << "q=" << q;
        if (w && c.source == Tier::kRaw) {
          EXPECT_EQ(*g, *w) << "q=" << q;  // raw data: exact
        } else if (w) {
          EXPECT_NEAR(*g, *w, 0.01 * std::abs(*w) + 1e-12) << "q=" << q;  // sketches: 1 %
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RollupPropertyTest, ::testing::Range(1, 9));

}  // namespace
}  // namespace trainwatch::store
