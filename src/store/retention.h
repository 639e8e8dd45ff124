#pragma once
// How long each tier of a namespace's data is kept (docs/store.md, "Retention").
//
// Tiers: raw (every sample), and rollups of 60 s, 300 s and 3600 s buckets.
// Built-in defaults follow CloudWatch: raw 3 h, 60 s 15 d, 300 s 63 d,
// 3600 s 455 d; namespaces "trainwatch/Profiler" and
// "trainwatch/Tensors" keep raw data forever.
// Rules in <data>/retention.conf (one per line) override them:
//
//   # pattern              settings
//   *                      raw=3h
//   trainwatch/Profiler    raw=forever
//   trainwatch/Imported/*  raw=forever 60s=forever 300s=forever 3600s=forever
//
// A pattern is a namespace, "prefix/*" or "*". For each setting, the most
// specific matching rule that sets it wins (exact, then the longest prefix,
// then "*", then the defaults). Durations as util::ParseDurationMs ("90m",
// "15d", "2w") or "forever". Tier names: raw, 60s (or 1m), 300s (or 5m),
// 3600s (or 1h).

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace trainwatch::store {

enum class Tier : int { kRaw = 0, k60 = 1, k300 = 2, k3600 = 3 };
inline constexpr int kTierCount = 4;
// Bucket width of each rollup tier (raw: 0).
inline constexpr std::array<int64_t, kTierCount> kTierPeriodMs = {0, 60'000, 300'000, 3'600'000};
inline constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

// "raw", "60s", "300s", "3600s".
std::string_view TierName(Tier tier);

// Retention of every tier of one namespace, in ms (kForever = never expires).
struct TierRetention {
  std::array<int64_t, kTierCount> keep_ms = {3 * 3'600'000LL, 15 * 86'400'000LL,
                                             63 * 86'400'000LL, 455 * 86'400'000LL};
  int64_t Get(Tier tier) const { return keep_ms[static_cast<int>(tier)]; }
  // True when data of `tier` at time t_ms is still kept at now_ms.
  bool Covers(Tier tier, int64_t t_ms, int64_t now_ms) const;
  // Rollup buckets of `tier` carry a quantile sketch only when raw data
  // expires before them; while raw data exists, percentiles come from it.
  bool SketchesNeeded(Tier tier) const { return Get(Tier::kRaw) < Get(tier); }
};

class RetentionPolicy {
 public:
  // The built-in defaults (see above).
  RetentionPolicy();

  // Parses retention.conf text (`source` names it in errors). InvalidArgument
  // quoting the line, its number and the expected form on a bad line.
  static absl::StatusOr<RetentionPolicy> Parse(std::string_view text, std::string_view source);
  // The defaults plus the rules of `path`; the defaults alone when the file
  // does not exist.
  static absl::StatusOr<RetentionPolicy> LoadFile(const std::string& path);

  // Adds a rule ("trainwatch/Imported", "raw=forever 60s=30d"); it overrides
  // an earlier rule with the same pattern setting by setting.
  absl::Status AddRule(std::string_view pattern, std::string_view settings);

  TierRetention For(std::string_view ns) const;

  // The rules as retention.conf text (without the built-in defaults).
  std::string ToText() const;

 private:
  struct Rule {
    std::string pattern;  // "*", "prefix/*" or a namespace
    std::array<std::optional<int64_t>, kTierCount> keep_ms;
  };
  static int Specificity(const Rule& rule);  // higher wins
  static bool Matches(const Rule& rule, std::string_view ns);
  std::vector<Rule> rules_;  // the built-in defaults first
};

// "3h", "15d", "forever".
std::string FormatRetention(int64_t keep_ms);

}  // namespace trainwatch::store
