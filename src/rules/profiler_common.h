#pragma once
// Building blocks the profiler rules share (rules/profiler_rules.h): subject
// names, durations in words, percentiles, a robust slope, windows of samples
// in time or in samples (the sagemaker_compat profile counts samples), and the
// grouping of one host's per-core/per-GPU samples into snapshots by their
// exact sample time.

#include <cstdint>
#include <deque>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rules/rule.h"

namespace trainwatch::rules::prof {

// "GPU 0", or "GPU 0 on algo-2" for a host other than the first.
std::string Subject(std::string_view kind, int index, int host);
// "host", or "host algo-2".
std::string HostSubject(int host);
// " on algo-2" for a host other than the first, else "".
std::string OnHost(int host);
// "45 s", "250 s", "20 min", "3.5 h".
std::string Seconds(double s);

// Linear-interpolated quantile q in [0, 1] (numpy's default); reorders `v`.
// NaN for an empty vector.
double Quantile(std::vector<double>& v, double q);
// The median of the pairwise slopes (Theil–Sen) of (x, y); 0 for < 2 points.
double TheilSenSlope(const std::vector<std::pair<double, double>>& points);

// How a rule's window and patience are counted: seconds of data time
// (default) or samples (sagemaker_compat, as SageMaker counted them).
struct Span {
  bool samples = false;
  double window = 0;    // seconds or samples
  double patience = 0;  // seconds or samples
};

// Values, each with a sequence number that tells equal values apart, kept in
// order: order statistics in O(log n), because rules ask for percentiles
// every second over windows of thousands of values (a replay of a long job
// asks millions of times). Same results as prof::Quantile over the values.
class OrderStatistics {
 public:
  void Insert(double value, uint64_t seq) { tree_.insert({value, seq}); }
  void Erase(double value, uint64_t seq) { tree_.erase({value, seq}); }
  size_t size() const { return tree_.size(); }
  // The k-th smallest (0-based; among equal values, the smallest seq first).
  std::pair<double, uint64_t> Select(size_t k) const { return *tree_.find_by_order(k); }
  size_t CountLess(double x) const;    // values < x
  size_t CountAtMost(double x) const;  // values <= x
  double Quantile(double q) const;
  // The q-quantile of |value - center| over the values (the MAD at q = 0.5
  // and center = the median), in O(log^2 n).
  double QuantileOfDeviations(double center, double q) const;

 private:
  double SelectDeviation(double center, size_t k) const;
  __gnu_pbds::tree<std::pair<double, uint64_t>, __gnu_pbds::null_type,
                   std::less<std::pair<double, uint64_t>>, __gnu_pbds::rb_tree_tag,
                   __gnu_pbds::tree_order_statistics_node_update>
      tree_;
};

// One series' values over the last window, its total count and first time.
class Series {
 public:
  void Add(int64_t t_ms, double value, const Span& span);
  // Patience is over: `patience` seconds since the first value, or more
  // than `patience` values (SageMaker's n > patience).
  bool WarmedUp(const Span& span) const;
  // The q-quantile of the window's values (as prof::Quantile over them) and
  // the largest value, in O(log n) (OrderStatistics).
  double Quantile(double q) const;
  double Max() const;
  bool empty() const { return values_.empty(); }
  int64_t count() const { return count_; }
  int64_t first_ms() const { return first_ms_; }
  int64_t last_ms() const { return values_.empty() ? first_ms_ : values_.back().t_ms; }
  size_t size() const { return values_.size(); }

 private:
  struct Entry {
    int64_t t_ms;
    double value;
    uint64_t seq;  // tells equal values apart in sorted_
  };
  void PopFront();
  std::deque<Entry> values_;
  OrderStatistics sorted_;
  uint64_t next_seq_ = 0;
  int64_t count_ = 0;
  int64_t first_ms_ = 0;
};

// "the last 250 s", or "the last 500 samples" when counted in samples.
std::string WindowText(const Span& span);

// Issue when a finding is an issue; else Ok when something was decided (the
// findings, warnings, ride along); else Pending.
Verdict MakeVerdict(bool decided, std::vector<Finding> findings);

// Once-per-second gate: true (and remembers t) when t is at least 1 s after
// the last time it said true.
bool Due(int64_t& last_ms, int64_t t_ms);

// What one host reported at one sample time.
struct Snapshot {
  int64_t t_ms = 0;
  std::vector<double> core_cpu;
  std::vector<double> core_iowait;
  std::vector<double> gpu_util;  // index order is not kept: the rules need none
  double host_cpu = -1;          // -1: not reported
};

// Groups one host's samples by exact t_ms. Signals of one sample time may
// arrive interleaved with the next sample's (up to one interval late), so the
// newest few sample times stay open; a snapshot closes once three newer
// sample times have been seen. A sample for an already closed time is dropped.
class SnapshotAssembler {
 public:
  // Returns false when the input is not a snapshot signal.
  template <class F>
  bool Add(const Input& in, F&& on_closed) {
    if (!AddValue(in)) return false;
    while (open_.size() > kOpen) CloseOldest(on_closed);
    return true;
  }
  template <class F>
  void Flush(F&& on_closed) {
    while (!open_.empty()) CloseOldest(on_closed);
  }

 private:
  static constexpr size_t kOpen = 3;
  bool AddValue(const Input& in);
  template <class F>
  void CloseOldest(F& on_closed) {
    auto it = open_.begin();
    closed_until_ = it->first;
    Snapshot snap = std::move(it->second);
    snap.t_ms = it->first;
    open_.erase(it);
    on_closed(snap);
  }
  std::map<int64_t, Snapshot> open_;
  int64_t closed_until_ = INT64_MIN;
};

}  // namespace trainwatch::rules::prof
