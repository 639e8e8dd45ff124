#include "model/rule_result.h"

#include <cmath>

namespace trainwatch::model {

namespace {
constexpr struct {
  RuleStatusKind status;
  std::string_view name;
} kRuleStatuses[] = {
    {RuleStatusKind::kInProgress, "InProgress"}, {RuleStatusKind::kNoIssuesFound, "NoIssuesFound"},
    {RuleStatusKind::kIssuesFound, "IssuesFound"}, {RuleStatusKind::kError, "Error"},
    {RuleStatusKind::kStopping, "Stopping"},     {RuleStatusKind::kStopped, "Stopped"},
};

// NaN == NaN here: a finding about a NaN loss equals itself.
bool SameNumber(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
}  // namespace

std::string_view FindingSeverityName(FindingSeverity severity) {
  return severity == FindingSeverity::kWarning ? "warning" : "issue";
}

bool operator==(const RuleFinding& a, const RuleFinding& b) {
  return a.rule == b.rule && a.reason == b.reason && a.subject == b.subject && a.step == b.step &&
         a.t_ms == b.t_ms && SameNumber(a.observed, b.observed) &&
         SameNumber(a.threshold, b.threshold) && a.message == b.message &&
         a.recommendation == b.recommendation && a.severity == b.severity;
}

std::string_view RuleStatusName(RuleStatusKind status) {
  for (const auto& e : kRuleStatuses) {
    if (e.status == status) return e.name;
  }
  return "InProgress";
}

std::optional<RuleStatusKind> ParseRuleStatus(std::string_view name) {
  for (const auto& e : kRuleStatuses) {
    if (e.name == name) return e.status;
  }
  return std::nullopt;
}

bool CheckedNothing(const RuleStatus& status) {
  if (status.status != RuleStatusKind::kNoIssuesFound) return false;
  for (const RuleFinding& f : status.findings) {
    if (f.severity == FindingSeverity::kWarning && f.reason == "no_data") return true;
  }
  return false;
}

int64_t IssueCount(const RuleStatus& status) {
  int64_t warnings = 0;
  for (const RuleFinding& f : status.findings) warnings += f.severity == FindingSeverity::kWarning;
  return status.findings_total - warnings;
}

}  // namespace trainwatch::model
