// RenderHtml: the report as one self-contained page (inline CSS and SVG, no
// script, nothing fetched), sections in the order a user asks the questions:
// what happened, what went wrong and what to do, then the evidence.

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/report.h"
#include "report/svg.h"
#include "util/time_parse.h"

namespace trainwatch::report {

namespace {

constexpr size_t kFindingsShownPerRule = 20;

constexpr char kStyle[] = R"css(
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2937;--muted:#6b7280;--line:#e5e7eb;--card:#f9fafb;
--issue:#b91c1c;--ok:#047857;--warn:#b45309;--bar:#3b82f6}
@media (prefers-color-scheme:dark){:root{--bg:#111827;--fg:#e5e7eb;--muted:#9ca3af;--line:#374151;
--card:#1f2937;--issue:#f87171;--ok:#34d399;--warn:#fbbf24;--bar:#60a5fa}}
body{background:var(--bg);color:var(--fg);font:14px/1.5 system-ui,sans-serif;margin:0 auto;
max-width:980px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:15px;margin:20px 0 6px}
.muted{color:var(--muted)}table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.status{white-space:nowrap}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px;
border:1px solid currentColor}
.IssuesFound,.Failed,.Error{color:var(--issue)}.NoIssuesFound,.Completed{color:var(--ok)}
.InProgress,.Stopping,.Stopped{color:var(--warn)}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 14px;margin:8px 0}
.finding{margin:6px 0 6px 12px}.rec{color:var(--muted)}
svg.chart{width:100%;height:auto;display:block}svg .grid{stroke:var(--line)}
svg .tick{fill:var(--muted);font-size:11px}svg .mark{stroke:var(--issue);stroke-dasharray:3 3}
svg .bar{fill:var(--bar)}.legend span{margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.phases{display:flex;height:22px;border-radius:4px;overflow:hidden;margin:8px 0}
.phases div{color:#fff;font-size:12px;padding:2px 6px;white-space:nowrap;overflow:hidden}
code{font-size:13px}
)css";

std::string Time(int64_t t_ms) { return util::FormatIso8601Ms(t_ms); }

std::string Num(double v) { return absl::StrFormat("%.4g", v); }

void Row(std::string* out, std::string_view name, std::string_view value_html) {
  absl::StrAppendFormat(out, "<tr><th>%s</th><td>%s</td></tr>", name, value_html);
}

void Summary(const JobReport& r, std::string* out) {
  const model::JobRecord& job = r.job;
  *out += "<h2 id=\"summary\">Summary</h2><table>";
  const std::string status(model::JobStatusName(job.status));
  Row(out, "Status",
      absl::StrFormat("<span class=\"badge %s\">%s</span> %s", status, status,
                      EscapeHtml(model::SecondaryStatusName(job.secondary_status))));
  if (!job.failure_reason.empty()) Row(out, "Failure reason", EscapeHtml(job.failure_reason));
  if (job.exit_code) Row(out, "Exit code", absl::StrFormat("%d", *job.exit_code));
  if (job.exit_signal) Row(out, "Killed by signal", absl::StrFormat("%d", *job.exit_signal));
  if (!job.command.empty()) {
    Row(out, "Command", "<code>" + EscapeHtml(absl::StrJoin(job.command, " ")) + "</code>");
  }
  Row(out, "Created", Time(job.creation_ms));
  Row(out, "Training", absl::StrFormat("%s to %s (%s)", Time(r.phases.start_ms),
                                       job.training_end_ms ? Time(*job.training_end_ms)
                                       : model::IsTerminal(job.status)
                                           ? Time(r.phases.end_ms)  // ended before training did
                                           : std::string("now, still running"),
                                       FormatDuration(r.phases.end_ms - r.phases.start_ms)));
  *out += "</table>";

  // Where the time went: initialization, the training loop, finalization.
  const int64_t total = std::max<int64_t>(r.phases.end_ms - r.phases.start_ms, 1);
  *out += "<h3>Where the time went</h3>";
  if (!r.phases.loop_start_ms) {
    *out += "<p class=\"muted\">The job produced no metric, so its training loop cannot be "
            "told from its initialization.</p>";
    return;
  }
  const int64_t init = std::max<int64_t>(*r.phases.loop_start_ms - r.phases.start_ms, 0);
  const int64_t loop = std::max<int64_t>(*r.phases.loop_end_ms - *r.phases.loop_start_ms, 0);
  const int64_t fin = std::max<int64_t>(r.phases.end_ms - *r.phases.loop_end_ms, 0);
  const auto pct = [&](int64_t ms) { return 100.0 * static_cast<double>(ms) / total; };
  absl::StrAppendFormat(
      out,
      "<div class=\"phases\" role=\"img\" aria-label=\"initialization %.0f%%, training loop "
      "%.0f%%, finalization %.0f%%\"><div style=\"width:%.2f%%;background:#6b7280\">init</div>"
      "<div style=\"width:%.2f%%;background:#3b82f6\">training loop</div>"
      "<div style=\"width:%.2f%%;background:#8b5cf6\">final</div></div>",
      pct(init), pct(loop), pct(fin), pct(init), pct(loop), pct(fin));
  *out += "<table><tr><th>Phase</th><th class=\"num\">Duration</th><th class=\"num\">Share</th></tr>";
  const auto phase = [&](std::string_view name, int64_t ms) {
    absl::StrAppendFormat(out, "<tr><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%.1f%%</td></tr>",
                          name, FormatDuration(ms), pct(ms));
  };
  phase(r.phases.loop_from_steps ? "Initialization (to the first step)"
                                 : "Initialization (to the first metric)",
        init);
  phase("Training loop", loop);
  phase("Finalization", fin);
  phase("Idle (job CPU < 5 % of a core, GPUs < 5 %)", r.phases.idle_ms);
  *out += "</table>";
}

std::vector<Mark> FindingMarks(const JobReport& r) {
  std::vector<Mark> marks;
  for (const model::RuleStatus& s : r.rules) {
    for (const model::RuleFinding& f : s.findings) {
      if (f.severity != model::FindingSeverity::kIssue) continue;
      marks.push_back({f.t_ms, s.configuration_name + ": " + f.message});
    }
  }
  return marks;
}

void Rules(const JobReport& r, std::string* out) {
  *out += "<h2 id=\"rules\">Rules</h2>";
  if (r.rules.empty()) {
    *out += "<p class=\"muted\">No rule watched this job.</p>";
    return;
  }
  std::vector<const model::RuleStatus*> rules;
  for (const model::RuleStatus& s : r.rules) rules.push_back(&s);
  // The rules that found most first.
  std::stable_sort(rules.begin(), rules.end(), [](const auto* a, const auto* b) {
    return model::IssueCount(*a) > model::IssueCount(*b);
  });
  int issues = 0, unchecked = 0;
  for (const auto* s : rules) {
    issues += s->status == model::RuleStatusKind::kIssuesFound;
    unchecked += model::CheckedNothing(*s);
  }
  absl::StrAppendFormat(out, "<p>%d of %d rules found issues", issues, rules.size());
  if (unchecked > 0) {
    absl::StrAppendFormat(out, "; %d had no data to check (their details say why)", unchecked);
  }
  *out += ".</p>";
  *out += "<table><tr><th>Rule</th><th>Status</th><th class=\"num\">Issues</th><th>Details</th></tr>";
  for (const auto* s : rules) {
    const std::string status(model::RuleStatusName(s->status));
    absl::StrAppendFormat(out,
                          "<tr><td>%s</td><td class=\"status\"><span class=\"badge %s\">%s</span>%s</td>"
                          "<td class=\"num\">%d</td><td>%s</td></tr>",
                          EscapeHtml(s->configuration_name), status, status,
                          model::CheckedNothing(*s) ? " <span class=\"muted\">no data</span>" : "",
                          model::IssueCount(*s), EscapeHtml(s->details));
  }
  *out += "</table>";
  // A card per rule with issues; warnings ("no data") stay in the table.
  for (const auto* s : rules) {
    if (s->status != model::RuleStatusKind::kIssuesFound || s->findings.empty()) continue;
    absl::StrAppendFormat(out, "<div class=\"card\"><h3>%s</h3>", EscapeHtml(s->configuration_name));
    for (size_t i = 0; i < s->findings.size() && i < kFindingsShownPerRule; ++i) {
      const model::RuleFinding& f = s->findings[i];
      if (f.severity != model::FindingSeverity::kIssue) continue;
      absl::StrAppendFormat(out,
                            "<div class=\"finding\"><b>%s</b> %s%s: %s<div class=\"rec\">%s</div></div>",
                            Time(f.t_ms), EscapeHtml(f.subject),
                            f.step >= 0 ? absl::StrFormat(" (step %d)", f.step) : "",
                            EscapeHtml(f.message), EscapeHtml(f.recommendation));
    }
    if (s->findings_total > static_cast<int64_t>(std::min(s->findings.size(), kFindingsShownPerRule))) {
      absl::StrAppendFormat(out, "<p class=\"muted\">%d findings in all; "
                            "<code>trainwatch rules %s --all</code> lists every one.</p>",
                            s->findings_total, EscapeHtml(r.job.name));
    }
    *out += "</div>";
  }
}

void Charts(const std::vector<Chart>& charts, const JobReport& r, std::string* out) {
  const std::vector<Mark> marks = FindingMarks(r);
  for (const Chart& c : charts) {
    absl::StrAppendFormat(out, "<h3>%s <span class=\"muted\">%s</span></h3>", EscapeHtml(c.title),
                          c.unit == "None" ? "" : EscapeHtml(c.unit));
    *out += LineChartSvg(c, r.phases.start_ms, r.phases.end_ms, marks);
  }
}

void Usage(const JobReport& r, std::string* out) {
  *out += "<h2 id=\"system\">System utilisation</h2>";
  Charts(r.system_charts, r, out);
  if (r.usage.empty()) {
    *out += "<p class=\"muted\">No system samples were recorded (profiling off).</p>";
    return;
  }
  *out += "<table><tr><th>Host</th><th>Resource</th><th class=\"num\">p50</th>"
          "<th class=\"num\">p95</th><th class=\"num\">max</th><th class=\"num\">min</th>"
          "<th class=\"num\">samples</th></tr>";
  for (const UsageRow& u : r.usage) {
    const auto v = [&](double x) { return FormatQuantity(x, u.unit); };
    absl::StrAppendFormat(out,
                          "<tr><td>algo-%d</td><td>%s</td><td class=\"num\">%s</td>"
                          "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                          "<td class=\"num\">%d</td></tr>",
                          u.host, EscapeHtml(u.resource), v(u.p50), v(u.p95), v(u.max), v(u.min),
                          u.count);
  }
  *out += "</table>";
}

void Steps(const JobReport& r, std::string* out) {
  *out += "<h2 id=\"steps\">Step times</h2>";
  if (!r.step_times || r.step_times->steps == 0) {
    *out += r.job.step_metric.empty()
                ? "<p class=\"muted\">The job names no step metric: run it with "
                  "<code>--step-metric NAME</code> (a metric whose value is the step) to "
                  "measure step times.</p>"
                : "<p class=\"muted\">The step metric had fewer than two steps.</p>";
    return;
  }
  const StepTimes& s = *r.step_times;
  absl::StrAppendFormat(out,
                        "<table><tr><th class=\"num\">steps</th><th class=\"num\">mean</th>"
                        "<th class=\"num\">p50</th><th class=\"num\">p95</th><th class=\"num\">p99</th>"
                        "<th class=\"num\">max</th></tr><tr><td class=\"num\">%d</td>"
                        "<td class=\"num\">%s ms</td><td class=\"num\">%s ms</td><td class=\"num\">%s ms</td>"
                        "<td class=\"num\">%s ms</td><td class=\"num\">%s ms</td></tr></table>",
                        s.steps, Num(s.mean_ms), Num(s.p50_ms), Num(s.p95_ms), Num(s.p99_ms),
                        Num(s.max_ms));
  *out += "<h3>Step durations (ms)</h3>";
  *out += HistogramSvg(s.edges_ms, s.counts, "step duration (ms)");
  *out += "<h3>Slowest steps</h3><table><tr><th class=\"num\">step</th><th>ended</th>"
          "<th class=\"num\">duration</th></tr>";
  for (const StepTimes::Slow& slow : s.slowest) {
    absl::StrAppendFormat(out, "<tr><td class=\"num\">%d</td><td>%s</td><td class=\"num\">%s ms</td></tr>",
                          slow.step, Time(slow.t_ms), Num(slow.duration_ms));
  }
  *out += "</table>";
}

void EfficiencySection(const JobReport& r, std::string* out) {
  const Efficiency& e = r.efficiency;
  *out += "<h2 id=\"efficiency\">Efficiency</h2><table>";
  if (e.cpu_cores > 0) {
    Row(out, "CPU", absl::StrFormat("%d cores for %s = %.3g core-hours; the job's processes used "
                                    "%.3g core-hours (%.1f %%); host CPU mean %.1f %%",
                                    e.cpu_cores, FormatDuration(r.phases.end_ms - r.phases.start_ms),
                                    e.cpu_core_hours, e.job_cpu_hours,
                                    e.cpu_core_hours > 0 ? 100 * e.job_cpu_hours / e.cpu_core_hours : 0,
                                    e.host_cpu_mean));
  } else {
    Row(out, "CPU", "not sampled");
  }
  if (e.gpus > 0) {
    Row(out, "GPU", absl::StrFormat("%d GPUs = %.3g GPU-hours, mean utilisation %.1f %% "
                                    "(%.3g GPU-hours of work); memory at most %.1f %%",
                                    e.gpus, e.gpu_hours, e.gpu_util_mean,
                                    e.gpu_hours * e.gpu_util_mean / 100, e.gpu_memory_max));
  } else {
    Row(out, "GPU", "none seen");
  }
  Row(out, "Idle", FormatDuration(r.phases.idle_ms));
  *out += "</table>";
}

}  // namespace

std::string RenderHtml(const JobReport& r) {
  const model::JobRecord& job = r.job;
  std::string out = absl::StrFormat(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>trainwatch report: %s</title><style>%s</style></head><body><main>"
      "<h1>Training job report: %s</h1><p class=\"muted\">Generated %s by trainwatch.</p>",
      EscapeHtml(job.name), kStyle, EscapeHtml(job.name), Time(r.generated_ms));
  out += "<nav aria-label=\"sections\"><a href=\"#summary\">Summary</a> · <a href=\"#rules\">Rules</a>"
         " · <a href=\"#metrics\">Metrics</a> · <a href=\"#system\">System</a> · "
         "<a href=\"#steps\">Steps</a> · <a href=\"#efficiency\">Efficiency</a> · "
         "<a href=\"#timeline\">Timeline</a></nav>";
  for (const std::string& note : r.notes) {
    out += "<p class=\"card muted\">" + EscapeHtml(note) + "</p>";
  }
  Summary(r, &out);
  Rules(r, &out);

  out += "<h2 id=\"metrics\">Metrics</h2>";
  if (!r.final_metrics.empty()) {
    out += "<table><tr><th>Metric</th><th class=\"num\">Final value</th><th>At</th></tr>";
    for (const FinalMetric& m : r.final_metrics) {
      absl::StrAppendFormat(&out, "<tr><td>%s</td><td class=\"num\">%s</td><td>%s</td></tr>",
                            EscapeHtml(m.name), Num(m.value), Time(m.t_ms));
    }
    out += "</table>";
  }
  if (r.metric_charts.empty()) out += "<p class=\"muted\">The job produced no metric.</p>";
  Charts(r.metric_charts, r, &out);
  Usage(r, &out);
  Steps(r, &out);
  EfficiencySection(r, &out);

  out += "<h2 id=\"timeline\">Timeline</h2><table><tr><th>Status</th><th>From</th><th>To</th>"
         "<th>Message</th></tr>";
  for (const model::StatusTransition& t : job.transitions) {
    absl::StrAppendFormat(&out, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>",
                          EscapeHtml(model::SecondaryStatusName(t.status)), Time(t.start_ms),
                          t.end_ms ? Time(*t.end_ms) : std::string(), EscapeHtml(t.message));
  }
  out += "</table></main></body></html>\n";
  return out;
}

}  // namespace trainwatch::report
