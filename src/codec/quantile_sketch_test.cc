#include "codec/quantile_sketch.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace trainwatch::codec {
namespace {

using Weighted = std::vector<std::pair<double, double>>;  // (value, count)

const double kQs[] = {0,    0.001, 0.01, 0.05, 0.1,  0.25,  0.333, 0.5,
                      0.67, 0.75,  0.9,  0.95, 0.99, 0.999, 1};

// Brute-force nearest rank with QuantileSketch's definition; `data` sorted.
double SortedReference(const Weighted& data, double q) {
  double n = 0;
  for (const auto& [v, c] : data) n += c;
  if (q <= 0) return data.front().first;
  if (q >= 1) return data.back().first;
  const double target = q * n - 4 * DBL_EPSILON * n;
  double cumulative = 0;
  for (const auto& [v, c] : data) {
    cumulative += c;
    if (cumulative >= target) return v;
  }
  return data.back().first;
}

Weighted Sorted(Weighted data) {
  std::stable_sort(data.begin(), data.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return data;
}

double Reference(const Weighted& data, double q) { return SortedReference(Sorted(data), q); }

QuantileSketch Sketch(const Weighted& data) {
  QuantileSketch s;
  for (const auto& [v, c] : data) s.Add(v, c);
  return s;
}

Weighted Unweighted(const std::vector<double>& values) {
  Weighted w;
  for (double v : values) w.emplace_back(v, 1.0);
  return w;
}

void ExpectMatchesReference(const Weighted& data, const QuantileSketch& s, const char* what) {
  SCOPED_TRACE(what);
  double n = 0, sum = 0, lo = data[0].first, hi = data[0].first;
  for (const auto& [v, c] : data) {
    n += c;
    sum += v * c;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(s.count(), n);
  EXPECT_EQ(s.sum(), sum);
  EXPECT_EQ(s.min(), lo);
  EXPECT_EQ(s.max(), hi);
  const Weighted sorted = Sorted(data);
  for (double q : kQs) {
    const double want = SortedReference(sorted, q);
    const std::optional<double> got = s.Quantile(q);
    ASSERT_TRUE(got.has_value());
    if (s.exact() || q == 0 || q == 1) {
      EXPECT_EQ(*got, want) << "q " << q;
    } else {
      EXPECT_LE(std::abs(*got - want),
                QuantileSketch::kRelativeAccuracy * std::abs(want) * (1 + 1e-9))
          << "q " << q << " got " << *got << " want " << want;
    }
  }
}

std::vector<Weighted> Distributions(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0, 100);
  std::lognormal_distribution<double> lognormal(0, 2);
  std::normal_distribution<double> normal(0, 10);
  std::uniform_int_distribution<int> small(1, 40);
  std::uniform_int_distribution<int> weight(1, 1000);
  std::vector<Weighted> out(6);
  for (size_t i = 0; i < n; ++i) {
    out[0].emplace_back(uniform(rng), 1);
    out[1].emplace_back(lognormal(rng), 1);
    // Negatives, positives and a fifth exact zeros.
    out[2].emplace_back(i % 5 == 0 ? 0.0 : normal(rng), 1);
    // Few distinct values (stays exact): percentages with one decimal.
    out[3].emplace_back(std::round(uniform(rng) / 10) * 10 + 0.5, 1);
    out[4].emplace_back(lognormal(rng), static_cast<double>(weight(rng)));      // whole weights
    out[5].emplace_back(-lognormal(rng), static_cast<double>(small(rng)) / 8);  // fractional
  }
  return out;
}

TEST(QuantileSketch, Empty) {
  QuantileSketch s;
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.Quantile(0.5).has_value());
  std::string bytes;
  s.EncodeTo(&bytes);
  EXPECT_EQ(bytes.size(), 3u);
  auto decoded = QuantileSketch::Decode(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->empty());
}

TEST(QuantileSketch, NearestRankOnASmallSet) {
  const QuantileSketch s = Sketch(Unweighted({3, 1, 2, 2}));
  EXPECT_TRUE(s.exact());
  EXPECT_EQ(s.Quantile(0), 1);
  EXPECT_EQ(s.Quantile(0.25), 1);  // rank 1
  EXPECT_EQ(s.Quantile(0.26), 2);  // rank ceil(1.04) = 2
  EXPECT_EQ(s.Quantile(0.5), 2);
  EXPECT_EQ(s.Quantile(0.75), 2);  // rank 3
  EXPECT_EQ(s.Quantile(0.76), 3);
  EXPECT_EQ(s.Quantile(1), 3);
  EXPECT_EQ(s.Quantile(-1), 1);  // clamped
  EXPECT_EQ(s.Quantile(2), 3);
  EXPECT_FALSE(s.Quantile(std::nan("")).has_value());
  // 0.3 * 10 is 3.0000000000000004 in doubles; the rank is still 3.
  std::vector<double> ten;
  for (int i = 1; i <= 10; ++i) ten.push_back(i);
  EXPECT_EQ(Sketch(Unweighted(ten)).Quantile(0.3), 3);
}

TEST(QuantileSketch, MatchesBruteForceOnSeveralDistributions) {
  for (size_t n : {1, 2, 10, 63, 64, 65, 1000, 20000}) {
    const std::vector<Weighted> all = Distributions(n, n);
    const char* names[] = {"uniform",    "lognormal", "normal with zeros",
                           "few values", "weighted",  "fractional negative"};
    for (size_t d = 0; d < all.size(); ++d) {
      SCOPED_TRACE(n);
      const QuantileSketch s = Sketch(all[d]);
      if (n <= QuantileSketch::kMaxExactValues) {
        EXPECT_TRUE(s.exact()) << names[d];
      }
      if (d == 3) {
        EXPECT_TRUE(s.exact()) << "at most 11 distinct values";
      }
      ExpectMatchesReference(all[d], s, names[d]);
    }
  }
}

TEST(QuantileSketch, BucketsKeepOnePercentNearBoundaries) {
  for (int i = -300; i <= 300; i += 7) {
    const double edge = std::pow((1 + 0.01) / (1 - 0.01), i);
    for (double v : {edge, std::nextafter(edge, 0.0), std::nextafter(edge, 1e300)}) {
      const double rep = QuantileSketch::BucketValue(QuantileSketch::BucketIndex(v));
      EXPECT_LE(std::abs(rep - v), 0.01 * v * (1 + 1e-9)) << v;
    }
  }
  for (double v : {std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(),
                   1e-300, 1e300}) {
    const int i = QuantileSketch::BucketIndex(v);
    EXPECT_LE(std::abs(QuantileSketch::BucketValue(i) - v), 0.0101 * v) << v;
  }
}

TEST(QuantileSketch, MergeIsCommutativeAndAssociative) {
  std::mt19937_64 rng(9);
  for (size_t n : {20, 200, 5000}) {
    // Whole values and counts keep the sums exact whatever the order.
    std::vector<Weighted> parts(3);
    Weighted all;
    std::lognormal_distribution<double> lognormal(3, 2);
    for (size_t i = 0; i < 3 * n; ++i) {
      const double v = std::round(lognormal(rng)) * (i % 7 == 0 ? -1 : 1);
      const double c = static_cast<double>(1 + rng() % 5);
      parts[i % 3].emplace_back(v, c);
      all.emplace_back(v, c);
    }
    const QuantileSketch a = Sketch(parts[0]), b = Sketch(parts[1]), c = Sketch(parts[2]);
    QuantileSketch ab = a, ba = b, ab_c, a_bc, bc = b, whole = Sketch(all);
    ab.Merge(b);
    ba.Merge(a);
    ab_c = ab;
    ab_c.Merge(c);
    bc.Merge(c);
    a_bc = a;
    a_bc.Merge(bc);
    for (const QuantileSketch* s : {&ab_c, &a_bc}) {
      EXPECT_EQ(s->count(), whole.count());
      EXPECT_EQ(s->sum(), whole.sum());
      EXPECT_EQ(s->min(), whole.min());
      EXPECT_EQ(s->max(), whole.max());
      EXPECT_EQ(s->exact(), whole.exact());
      for (double q : kQs) EXPECT_EQ(s->Quantile(q), whole.Quantile(q)) << "n " << n << " q " << q;
    }
    for (double q : kQs) EXPECT_EQ(ab.Quantile(q), ba.Quantile(q));
    EXPECT_EQ(ab.count(), ba.count());
    EXPECT_EQ(ab.sum(), ba.sum());
    ExpectMatchesReference(all, ab_c, "merged");
  }
}

TEST(QuantileSketch, SmallExactSketchesMergeExactly) {
  QuantileSketch a = Sketch(Unweighted({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  std::vector<double> more;
  for (int i = 5; i < 50; ++i) more.push_back(i + 0.25);
  const QuantileSketch b = Sketch(Unweighted(more));
  a.Merge(b);
  EXPECT_TRUE(a.exact());
  Weighted all = Unweighted({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  for (double v : more) all.emplace_back(v, 1);
  ExpectMatchesReference(all, a, "merged exact");
  a.Merge(a);  // with itself
  EXPECT_EQ(a.count(), 2 * static_cast<double>(all.size()));
  // Past kMaxExactValues distinct values the merge switches to buckets.
  std::vector<double> many;
  for (int i = 0; i < 100; ++i) many.push_back(1000 + i);
  a.Merge(Sketch(Unweighted(many)));
  EXPECT_FALSE(a.exact());
}

void ExpectSameSketch(const QuantileSketch& a, const QuantileSketch& b) {
  EXPECT_EQ(std::bit_cast<uint64_t>(a.count()), std::bit_cast<uint64_t>(b.count()));
  EXPECT_EQ(std::bit_cast<uint64_t>(a.sum()), std::bit_cast<uint64_t>(b.sum()));
  EXPECT_EQ(a.min(), b.min());
  EXPECT_EQ(a.max(), b.max());
  EXPECT_EQ(a.exact(), b.exact());
  for (double q : kQs) EXPECT_EQ(a.Quantile(q), b.Quantile(q)) << q;
}

TEST(QuantileSketch, EncodeDecodeRoundTrip) {
  for (size_t n : {1, 5, 64, 65, 3000}) {
    for (const Weighted& data : Distributions(n, 100 + n)) {
      const QuantileSketch s = Sketch(data);
      std::string bytes = "prefix";
      s.EncodeTo(&bytes);
      auto decoded = QuantileSketch::Decode(std::string_view(bytes).substr(6));
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      if (decoded->exact() == s.exact()) {
        ExpectSameSketch(s, *decoded);
      } else {
        // Many full-precision values: written bucketed, which is smaller.
        EXPECT_TRUE(s.exact());
        ExpectMatchesReference(data, *decoded, "decoded");
      }
      // Decoding then encoding again gives the same bytes.
      std::string again;
      decoded->EncodeTo(&again);
      EXPECT_EQ(again, bytes.substr(6));
    }
  }
}

size_t EncodedSize(const QuantileSketch& s) {
  std::string bytes;
  s.EncodeTo(&bytes);
  return bytes.size();
}

TEST(QuantileSketch, RollupBucketsStaySmall) {
  std::mt19937_64 rng(10);
  std::normal_distribution<double> noise(0, 1);
  QuantileSketch cpu_minute, cpu_hour, loss_minute, loss_hour, counter_minute;
  double x = 0, counter = 5e11;
  for (int t = 0; t < 3600; ++t) {
    x = 0.9 * x + 2.5 * noise(rng);
    const double cpu = std::round((60 + x) * 100) / 100;
    const double loss = 0.8 * (1 + 0.06 * noise(rng));
    counter += std::floor(1e8 * (1 + 0.2 * noise(rng)));
    cpu_hour.Add(cpu);
    loss_hour.Add(loss);
    if (t < 60) {
      cpu_minute.Add(cpu);
      loss_minute.Add(loss);
      counter_minute.Add(counter);
    }
  }
  EXPECT_TRUE(cpu_minute.exact());
  EXPECT_LT(EncodedSize(cpu_minute), 90u);      // exact: about a byte per value
  EXPECT_LT(EncodedSize(loss_minute), 120u);    // bucketed: smaller than 60 full doubles
  EXPECT_LT(EncodedSize(counter_minute), 60u);  // bucketed
  EXPECT_LT(EncodedSize(cpu_hour), 400u);
  EXPECT_LT(EncodedSize(loss_hour), 150u);
  EXPECT_LT(cpu_hour.MemoryBytes(), 4096u);
}

TEST(QuantileSketch, MemoryStaysBoundedAcrossManyDecades) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> exponent(-150, 150);
  Weighted data;
  QuantileSketch s;
  for (int i = 0; i < 50000; ++i) {
    const double v = std::pow(10.0, exponent(rng)) * (i % 3 == 0 ? -1 : 1);
    data.emplace_back(v, 1);
    s.Add(v);
  }
  EXPECT_LT(s.MemoryBytes(), 2 * 2 * QuantileSketch::kMaxBuckets * sizeof(double) + 1024);
  EXPECT_EQ(s.count(), 50000);
  EXPECT_EQ(s.Quantile(0), Reference(data, 0));
  EXPECT_EQ(s.Quantile(1), Reference(data, 1));
  // The largest magnitudes (18 decades of 300 here) keep their accuracy; the
  // collapsed small ones do not.
  const Weighted sorted = Sorted(data);
  for (double q : {0.001, 0.01, 0.995, 0.999}) {
    const double want = SortedReference(sorted, q);
    EXPECT_LE(std::abs(*s.Quantile(q) - want), 0.01 * std::abs(want) * (1 + 1e-9)) << q;
  }
  std::string bytes;
  s.EncodeTo(&bytes);
  auto decoded = QuantileSketch::Decode(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ExpectSameSketch(s, *decoded);
}

TEST(QuantileSketch, DecodeRejectsDamageWithoutMisbehaving) {
  std::mt19937_64 rng(12);
  for (const Weighted& data : Distributions(300, 13)) {
    for (size_t n : {size_t{5}, data.size()}) {
      const QuantileSketch s = Sketch(Weighted(data.begin(), data.begin() + static_cast<long>(n)));
      std::string bytes;
      s.EncodeTo(&bytes);
      for (size_t len = 0; len < bytes.size(); len += 1 + len / 64) {
        EXPECT_FALSE(QuantileSketch::Decode(bytes.substr(0, len)).ok()) << len;
      }
      EXPECT_FALSE(QuantileSketch::Decode(bytes + "x").ok());
      for (int trial = 0; trial < 100; ++trial) {
        std::string damaged = bytes;
        damaged[rng() % damaged.size()] ^= static_cast<char>(1 << (rng() % 8));
        auto decoded = QuantileSketch::Decode(damaged);
        if (decoded.ok() && !decoded->empty()) {  // still usable and consistent
          for (double q : kQs) {
            EXPECT_GE(*decoded->Quantile(q), decoded->min());
            EXPECT_LE(*decoded->Quantile(q), decoded->max());
          }
          std::string again;
          decoded->EncodeTo(&again);
        }
      }
    }
  }
  // A bucketed sketch whose min claims a sign no bucket has is refused.
  std::vector<double> positive;
  for (int i = 1; i <= 100; ++i) positive.push_back(i * 1.5);
  std::string bytes;
  Sketch(Unweighted(positive)).EncodeTo(&bytes);
  ASSERT_EQ(bytes[1] & 1, 1);  // bucketed
  const double minus_one = -1.0;
  std::memcpy(&bytes[2], &minus_one, 8);
  EXPECT_EQ(QuantileSketch::Decode(bytes).status().code(), absl::StatusCode::kDataLoss);

  auto wrong_version = QuantileSketch::Decode(std::string_view("\x07\x00\x00", 3));
  EXPECT_EQ(wrong_version.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_version.status().message().find("version 7"), std::string_view::npos);
}

TEST(QuantileSketch, SumMayOverflowAndStillRoundTrips) {
  for (int values : {3, 100}) {  // exact and bucketed forms
    QuantileSketch s;
    for (int i = 0; i < values; ++i) s.Add(-5e307 * (1 + i % 3) * (1 - 1e-3 * i), 16);
    EXPECT_EQ(s.exact(), values == 3);
    EXPECT_EQ(s.sum(), -std::numeric_limits<double>::infinity());
    std::string bytes;
    s.EncodeTo(&bytes);
    auto decoded = QuantileSketch::Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->sum(), s.sum());
    EXPECT_EQ(decoded->count(), s.count());
  }
}

TEST(QuantileSketchDeathTest, RefusesNonFiniteValuesAndCounts) {
  QuantileSketch s;
  EXPECT_DEATH(s.Add(std::nan("")), "invariant violated");
  EXPECT_DEATH(s.Add(std::numeric_limits<double>::infinity()), "invariant violated");
  EXPECT_DEATH(s.Add(1.0, 0.0), "invariant violated");
}

}  // namespace
}  // namespace trainwatch::codec
