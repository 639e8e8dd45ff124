#pragma once
// PromText: writes the Prometheus text exposition format (version 0.0.4),
// which /metrics answers in. Each family is announced once (HELP, TYPE) and
// its samples follow; label values and help texts are escaped as the format
// says. Names must already be valid (model/prometheus_names.h makes them).
//
//   util::PromText text;
//   text.Family("trainwatch_ingest_samples_total", "counter", "Samples stored.");
//   text.Sample("trainwatch_ingest_samples_total", {}, 1234);
//   text.Histogram("trainwatch_rules_evaluation_seconds", "...", rules_latency);
//   return text.str();
//
// Not thread-safe; one per answer.
//
// Histogram: a fixed-bucket histogram that many threads observe without a
// lock (relaxed atomics: a scrape may see a count one ahead of the sum).

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainwatch::util {

class Histogram {
 public:
  // Upper bounds in seconds, ascending; +Inf is implied. The defaults cover
  // a millisecond to ten seconds.
  static constexpr std::array<double, 12> kDefaultBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 10.0};

  void Observe(double seconds);
  std::span<const double> bounds() const { return kDefaultBounds; }
  // Observations at or below bounds()[i] (cumulative, as Prometheus counts).
  uint64_t CumulativeCount(size_t i) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum_seconds() const {
    return static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
  }

 private:
  std::array<std::atomic<uint64_t>, kDefaultBounds.size()> buckets_{};  // per bucket, not cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};
};

class PromText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // `type`: "counter", "gauge", "histogram" or "untyped".
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const Labels& labels, double value);
  // Family and samples of a histogram in one call.
  void Histogram(std::string_view name, std::string_view help, const util::Histogram& h,
                 const Labels& labels = {});

  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// A label value escaped for the format (\\, \n, \"), with each byte that
// is not part of valid UTF-8 replaced by U+FFFD (Prometheus refuses the
// whole scrape otherwise).
std::string EscapeLabelValue(std::string_view v);

}  // namespace trainwatch::util
