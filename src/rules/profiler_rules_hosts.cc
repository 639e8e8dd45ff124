// Straggler: the rule over the hosts of a job on several machines.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "rules/profiler_rules.h"

namespace trainwatch::rules {
namespace {

struct Rate {
  int host = 0;
  double steps_per_s = 0;
  double last_step = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string PerSecond(double rate) {
  return rate >= 0.1 ? absl::StrFormat("%.2f steps/s", rate)
                     : absl::StrFormat("%.2f steps/min", rate * 60);
}

std::string StepTime(double rate) {
  return rate > 0 ? absl::StrFormat("%s a step", prof::Seconds(1 / rate)) : "no step";
}

Finding StragglerFinding(const StragglerParams& p, const Input& in, const Rate& lagging,
                         double others, size_t other_hosts, double others_last_step) {
  Finding f;
  f.reason = "straggler";
  // Always named, host 1 too: the hosts are compared with each other.
  f.subject = absl::StrFormat("host algo-%d", lagging.host);
  f.t_ms = in.t_ms;
  f.observed = lagging.steps_per_s;
  f.threshold = others * (1 - p.threshold / 100);
  const double slower = 100 * (1 - lagging.steps_per_s / others);
  f.message = absl::StrFormat(
      "Host algo-%d made %s over the last %s (%s), %.0f%% fewer than the median of the other "
      "%d host%s, %s (%s); it is at step %.0f, they are at step %.0f.",
      lagging.host, PerSecond(lagging.steps_per_s), prof::Seconds(p.window_s),
      StepTime(lagging.steps_per_s), slower, other_hosts, other_hosts == 1 ? "" : "s",
      PerSecond(others), StepTime(others), lagging.last_step, others_last_step);
  f.recommendation =
      "Compare that host with the others (the job page's hosts chart): a slower or throttled "
      "GPU or CPU, another process on the machine, a slower disk or network for its data, or "
      "fewer data-loader workers. In synchronous data-parallel training every host waits for "
      "the slowest, so fixing it speeds up the whole job.";
  return f;
}

}  // namespace

StragglerParams MakeStragglerParams(const ParamValues& v) {
  return {v.Number("threshold"), v.Seconds("window")};
}

Verdict OnInput(const StragglerParams& p, StragglerState& s, const Input& in) {
  if (in.signal != Signal::kHostStep) return Verdict::Pending();
  const int64_t window_ms = static_cast<int64_t>(p.window_s * 1000);
  StragglerState::Host& host = s.hosts[in.host];
  if (host.steps.empty() && host.first_ms == 0) host.first_ms = in.t_ms;
  if (!host.steps.empty() && in.value < host.steps.back().second) host.steps.clear();  // a restart
  host.steps.emplace_back(in.t_ms, in.value);
  if (s.hosts.size() < 2 || !prof::Due(s.last_eval, in.t_ms)) return Verdict::Pending();

  // Each host's rate over the window ending now; a full window of data first.
  const int64_t from = in.t_ms - window_ms;
  std::vector<Rate> rates;
  for (auto& [index, h] : s.hosts) {
    if (in.t_ms - h.first_ms < window_ms) return Verdict::Pending();
    // Keep one step at or before the window's start: the rate counts from it.
    while (h.steps.size() > 1 && h.steps[1].first <= from) h.steps.pop_front();
    // Steps from the last one at or before the window's start to now (a host
    // silent since then counts as slowing down, as it is; one step: rate 0).
    const auto& [t0, step0] = h.steps.front();
    const double step1 = h.steps.back().second;
    const double span_s = static_cast<double>(in.t_ms - t0) / 1000;
    rates.push_back({index, span_s > 0 ? (step1 - step0) / span_s : 0, step1});
  }
  std::vector<Finding> findings;
  for (const Rate& r : rates) {
    std::vector<double> others, others_steps;
    for (const Rate& o : rates) {
      if (o.host == r.host) continue;
      others.push_back(o.steps_per_s);
      others_steps.push_back(o.last_step);
    }
    const double median = Median(others);
    StragglerState::Host& h = s.hosts[r.host];
    const bool lagging = median > 0 && r.steps_per_s < median * (1 - p.threshold / 100);
    if (lagging && !h.firing) {
      findings.push_back(StragglerFinding(p, in, r, median, others.size(), Median(others_steps)));
    }
    h.firing = lagging;
  }
  return prof::MakeVerdict(true, std::move(findings));
}

Verdict OnEnd(const StragglerParams&, StragglerState&, int64_t) { return Verdict::Ok(); }

}  // namespace trainwatch::rules
