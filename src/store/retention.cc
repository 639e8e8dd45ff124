#include "store/retention.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "util/time_parse.h"

namespace trainwatch::store {
namespace {

std::optional<Tier> ParseTierName(std::string_view name) {
  if (name == "raw") return Tier::kRaw;
  if (name == "60s" || name == "1m") return Tier::k60;
  if (name == "300s" || name == "5m") return Tier::k300;
  if (name == "3600s" || name == "1h") return Tier::k3600;
  return std::nullopt;
}

// Pieces of `s` between any of `seps` (empty pieces dropped when skip_empty).
std::vector<std::string_view> Split(std::string_view s, std::string_view seps, bool skip_empty) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || seps.find(s[i]) != std::string_view::npos) {
      if (!skip_empty || i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::string_view TierName(Tier tier) {
  static constexpr std::string_view kNames[] = {"raw", "60s", "300s", "3600s"};
  return kNames[static_cast<int>(tier)];
}

bool TierRetention::Covers(Tier tier, int64_t t_ms, int64_t now_ms) const {
  int64_t keep = Get(tier);
  if (keep == kForever) return true;
  return t_ms >= now_ms - keep;
}

std::string FormatRetention(int64_t keep_ms) {
  if (keep_ms == kForever) return "forever";
  return util::FormatDurationMs(keep_ms);
}

RetentionPolicy::RetentionPolicy() {
  Rule all;
  all.pattern = "*";
  TierRetention defaults;
  for (int i = 0; i < kTierCount; ++i) all.keep_ms[i] = defaults.keep_ms[i];
  rules_.push_back(all);
  // Profiling data and the tensor statistics of the Python client are what a
  // job is analysed by afterwards (report, Trial): kept at full resolution.
  for (const char* ns : {"trainwatch/Profiler", "trainwatch/Tensors"}) {
    Rule keep;
    keep.pattern = ns;
    keep.keep_ms[static_cast<int>(Tier::kRaw)] = kForever;
    rules_.push_back(keep);
  }
}

int RetentionPolicy::Specificity(const Rule& rule) {
  if (rule.pattern == "*") return 0;
  if (rule.pattern.size() >= 2 && rule.pattern.substr(rule.pattern.size() - 2) == "/*") {
    return 1 + static_cast<int>(rule.pattern.size());
  }
  return 1 << 20;  // exact
}

bool RetentionPolicy::Matches(const Rule& rule, std::string_view ns) {
  if (rule.pattern == "*") return true;
  std::string_view p = rule.pattern;
  if (p.size() >= 2 && p.substr(p.size() - 2) == "/*") {
    std::string_view prefix = p.substr(0, p.size() - 1);  // keeps the '/'
    return ns.substr(0, prefix.size()) == prefix;
  }
  return ns == p;
}

absl::Status RetentionPolicy::AddRule(std::string_view pattern, std::string_view settings) {
  pattern = Trim(pattern);
  if (pattern.empty()) {
    return absl::InvalidArgumentError("retention rule without a namespace pattern");
  }
  if (pattern != "*" && pattern.find('*') != std::string_view::npos &&
      !(pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == "/*" &&
        pattern.substr(0, pattern.size() - 2).find('*') == std::string_view::npos)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "retention pattern \"%s\": want a namespace, \"prefix/*\" or \"*\"", pattern));
  }
  Rule rule;
  rule.pattern = std::string(pattern);
  bool any = false;
  for (std::string_view item : Split(settings, " \t", true)) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "retention setting \"%s\": want <tier>=<duration>, e.g. raw=3h or 60s=forever", item));
    }
    std::string_view name = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    std::optional<Tier> tier = ParseTierName(name);
    if (!tier) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "retention setting \"%s\": unknown tier \"%s\"; tiers are raw, 60s, 300s, 3600s", item,
          name));
    }
    int64_t keep;
    if (value == "forever") {
      keep = kForever;
    } else {
      absl::StatusOr<int64_t> ms = util::ParseDurationMs(value);
      if (!ms.ok() || *ms <= 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "retention setting \"%s\": want a positive duration (3h, 15d, 2w) or \"forever\"",
            item));
      }
      keep = *ms;
    }
    rule.keep_ms[static_cast<int>(*tier)] = keep;
    any = true;
  }
  if (!any) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "retention rule for \"%s\" sets nothing; want e.g. \"%s raw=forever\"", pattern, pattern));
  }
  for (Rule& existing : rules_) {
    if (existing.pattern == rule.pattern) {
      for (int i = 0; i < kTierCount; ++i) {
        if (rule.keep_ms[i]) existing.keep_ms[i] = rule.keep_ms[i];
      }
      return absl::OkStatus();
    }
  }
  rules_.push_back(std::move(rule));
  return absl::OkStatus();
}

absl::StatusOr<RetentionPolicy> RetentionPolicy::Parse(std::string_view text,
                                                       std::string_view source) {
  RetentionPolicy policy;
  int lineno = 0;
  for (std::string_view line : Split(text, "\n", false)) {
    ++lineno;
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: \"%s\": want \"<namespace pattern> <tier>=<duration> ...\", e.g. "
          "\"trainwatch/Profiler raw=forever\"",
          source, lineno, line));
    }
    absl::Status s = policy.AddRule(line.substr(0, sp), line.substr(sp + 1));
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s:%d: %s", source, lineno, s.message()));
    }
  }
  return policy;
}

absl::StatusOr<RetentionPolicy> RetentionPolicy::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return RetentionPolicy();
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

TierRetention RetentionPolicy::For(std::string_view ns) const {
  std::vector<const Rule*> matching;
  for (const Rule& r : rules_) {
    if (Matches(r, ns)) matching.push_back(&r);
  }
  std::stable_sort(matching.begin(), matching.end(), [](const Rule* a, const Rule* b) {
    return Specificity(*a) < Specificity(*b);
  });
  TierRetention out;
  for (const Rule* r : matching) {
    for (int i = 0; i < kTierCount; ++i) {
      if (r->keep_ms[i]) out.keep_ms[i] = *r->keep_ms[i];
    }
  }
  return out;
}

std::string RetentionPolicy::ToText() const {
  std::string out;
  RetentionPolicy defaults;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Rule& r = rules_[i];
    // Skip the built-in rules while they are unchanged.
    if (i < defaults.rules_.size() && r.pattern == defaults.rules_[i].pattern &&
        r.keep_ms == defaults.rules_[i].keep_ms) {
      continue;
    }
    out += r.pattern;
    for (int t = 0; t < kTierCount; ++t) {
      if (r.keep_ms[t]) {
        out += absl::StrFormat(" %s=%s", TierName(static_cast<Tier>(t)), FormatRetention(*r.keep_ms[t]));
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace trainwatch::store
