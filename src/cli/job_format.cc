#include "cli/job_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

std::string QuoteArg(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;!#~") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string FormatDouble(double value) {
  // Counts and other whole numbers in full (2000000, not 2e+06).
  if (std::trunc(value) == value && std::fabs(value) < 1e15) return absl::StrFormat("%.0f", value);
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return absl::StrFormat("%.17g", value);
  return std::string(buf, end);
}

std::string FormatElapsed(int64_t ms) {
  if (ms < 0) ms = 0;
  // Tenths under 10 s (a 1.05 s job took 1.1s, not 2s), rounded half up.
  const int64_t tenths = (ms + 50) / 100;
  if (tenths < 100) return absl::StrFormat("%d.%ds", tenths / 10, tenths % 10);
  const int64_t s = (ms + 500) / 1000;
  if (s < 60) return absl::StrFormat("%ds", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
}

std::string FormatJobDescription(const model::JobRecord& job, int64_t now_ms) {
  std::string out;
  auto row = [&](const char* label, const std::string& value) {
    out += absl::StrFormat("%-16s%s\n", label, value);
  };
  row("Job:", job.name);
  row("ARN:", job.arn);
  row("Status:", absl::StrFormat("%s (%s)", model::JobStatusName(job.status),
                                 model::SecondaryStatusName(job.secondary_status)));
  if (!job.failure_reason.empty()) row("Failure reason:", job.failure_reason);
  if (!job.command.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& a : job.command) quoted.push_back(QuoteArg(a));
    row("Command:", absl::StrJoin(quoted, " "));
  }
  row("Created:", util::FormatIso8601Ms(job.creation_ms));
  if (job.training_start_ms) {
    if (job.training_end_ms) {
      row("Training:", absl::StrFormat("%s to %s (%s)", util::FormatIso8601Ms(*job.training_start_ms),
                                       util::FormatIso8601Ms(*job.training_end_ms),
                                       FormatElapsed(*job.training_end_ms - *job.training_start_ms)));
    } else {
      row("Training:", absl::StrFormat("since %s (%s so far)",
                                       util::FormatIso8601Ms(*job.training_start_ms),
                                       FormatElapsed(now_ms - *job.training_start_ms)));
    }
  }
  if (job.exit_code) row("Exit code:", absl::StrFormat("%d", *job.exit_code));
  if (job.exit_signal) row("Killed by:", absl::StrFormat("signal %d", *job.exit_signal));
  row("Max runtime:", util::FormatDurationMs(job.max_runtime_s * 1000));
  row("Profiling:", job.profiling_interval_ms > 0
                        ? absl::StrFormat("every %s", util::FormatDurationMs(job.profiling_interval_ms))
                        : std::string("off"));
  if (!job.log_stream.empty() && job.hosts.empty()) {
    row("Log stream:", absl::StrFormat("%s  (trainwatch logs %s)", job.log_stream, job.name));
  }
  if (!job.runner.hostname.empty() && !model::IsTerminal(job.status) && job.hosts.empty()) {
    row("Runner:", absl::StrFormat("pid %d on %s", job.runner.pid, job.runner.hostname));
  }
  if (!job.hosts.empty()) {
    out += absl::StrFormat("\nHosts (%d; `trainwatch logs %s --host N` for one's output):\n",
                           job.hosts.size(), job.name);
    for (const model::JobRecord& h : job.hosts) {
      std::string exit = "-";
      if (h.exit_code) exit = absl::StrFormat("exit %d", *h.exit_code);
      if (h.exit_signal) exit = absl::StrFormat("signal %d", *h.exit_signal);
      std::string where = h.runner.hostname.empty()
                              ? std::string("-")
                              : absl::StrFormat("pid %d on %s", h.runner.pid, h.runner.hostname);
      out += absl::StrFormat("  algo-%-4d %-30s %-10s %-28s %s\n", h.host_index,
                             absl::StrFormat("%s (%s)", model::JobStatusName(h.status),
                                             model::SecondaryStatusName(h.secondary_status)),
                             exit, where, h.log_stream);
    }
  }

  if (!job.transitions.empty()) {
    out += "\nStatus transitions:\n";
    for (const model::StatusTransition& t : job.transitions) {
      std::string end = t.end_ms ? util::FormatIso8601Ms(*t.end_ms) : std::string("-");
      out += absl::StrFormat("  %-20s %-26s %-26s %s\n", model::SecondaryStatusName(t.status),
                             util::FormatIso8601Ms(t.start_ms), end, t.message);
    }
  }

  if (!job.metric_definitions.empty()) {
    out += "\nFinal metrics:\n";
    if (!model::IsTerminal(job.status)) {
      out += "  (filled when the job ends; `trainwatch metrics " + job.name +
             "` shows them live)\n";
    } else if (job.final_metrics.empty()) {
      out += "  (no definition matched any line; check them with `trainwatch extract --job " +
             job.name + " --definitions FILE`)\n";
    } else {
      size_t width = 6;
      for (const model::FinalMetric& m : job.final_metrics) width = std::max(width, m.name.size());
      for (const model::FinalMetric& m : job.final_metrics) {
        out += absl::StrFormat("  %-*s  %-24s %s\n", static_cast<int>(width), m.name,
                               FormatDouble(m.value), util::FormatIso8601Ms(m.t_ms));
      }
    }
  }
  if (!job.rule_configurations.empty() || !job.rule_statuses.empty()) {
    out += "\n" + FormatRuleStatuses(job);
  }
  return out;
}

std::string FormatRuleStatuses(const model::JobRecord& job) {
  std::string out = "Rules";
  if (!job.rules_profile.empty()) out += " (profile " + job.rules_profile + ")";
  out += ":\n";
  size_t width = 4;
  for (const model::RuleConfiguration& c : job.rule_configurations) {
    width = std::max(width, c.name.size());
  }
  for (const model::RuleConfiguration& c : job.rule_configurations) {
    const model::RuleStatus* status = nullptr;
    for (const model::RuleStatus& s : job.rule_statuses) {
      if (s.configuration_name == c.name) status = &s;
    }
    std::string line = absl::StrFormat(
        "  %-*s  %-13s", static_cast<int>(width), c.name,
        status != nullptr ? model::RuleStatusName(status->status) : "(not evaluated)");
    if (status != nullptr && !status->details.empty()) line += "  " + status->details;
    out += line + "\n";
    if (status == nullptr) continue;
    for (const model::RuleFinding& f : status->findings) {
      if (f.severity != model::FindingSeverity::kIssue) continue;
      std::string where = util::FormatIso8601Ms(f.t_ms);
      if (f.step >= 0) where += absl::StrFormat(", step %d", f.step);
      out += absl::StrFormat("  %*s  - %s (%s)\n", static_cast<int>(width), "", f.message, where);
      if (!f.recommendation.empty()) {
        out += absl::StrFormat("  %*s    %s\n", static_cast<int>(width), "", f.recommendation);
      }
    }
    if (status->findings_total > static_cast<int64_t>(status->findings.size())) {
      out += absl::StrFormat("  %*s  (%d findings in all: trainwatch rules %s --all)\n",
                             static_cast<int>(width), "", status->findings_total, job.name);
    }
  }
  return out;
}

std::string FormatJobTable(const std::vector<model::JobRecord>& jobs, int64_t now_ms) {
  size_t width = 4;
  for (const model::JobRecord& j : jobs) width = std::max(width, j.name.size());
  std::string out = absl::StrFormat("%-*s  %-10s  %-18s  %-24s  %s\n", static_cast<int>(width),
                                    "NAME", "STATUS", "SECONDARY", "CREATED", "DURATION");
  for (const model::JobRecord& j : jobs) {
    std::string duration = "-";
    if (j.training_start_ms) {
      int64_t end = j.training_end_ms ? *j.training_end_ms : now_ms;
      duration = FormatElapsed(end - *j.training_start_ms);
    }
    out += absl::StrFormat("%-*s  %-10s  %-18s  %-24s  %s\n", static_cast<int>(width), j.name,
                           model::JobStatusName(j.status),
                           model::SecondaryStatusName(j.secondary_status),
                           util::FormatIso8601Ms(j.creation_ms), duration);
  }
  return out;
}

}  // namespace trainwatch::cli
