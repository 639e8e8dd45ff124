#include "rules/evaluator.h"

#include <exception>

#include "absl/strings/str_format.h"

namespace trainwatch::rules {

namespace {

std::string Clip(std::string text, size_t max) {
  if (text.size() > max) {
    text.resize(max - 3);
    text += "...";
  }
  return text;
}

}  // namespace

JobEvaluator::JobEvaluator(const model::JobRecord& job, int64_t now_ms, int64_t repeat_quiet_ms,
                           const RuleEnvironment& environment)
    : job_(job.name),
      status_host_(job.host_index),
      step_metric_(job.step_metric),
      compat_(job.rules_profile == ProfileName(Profile::kSageMakerCompat)),
      repeat_quiet_ms_(repeat_quiet_ms) {
  const Profile profile = compat_ ? Profile::kSageMakerCompat : Profile::kDefault;
  for (const model::RuleConfiguration& config : job.rule_configurations) {
    model::RuleStatus status;
    status.configuration_name = config.name;
    status.rule = config.rule;
    status.last_modified_ms = now_ms;
    Active active;
    active.actions = config.actions;
    if (const RuleInfo* info = FindRule(config.rule)) {
      status.rule = std::string(info->name);
      status.family = std::string(RuleFamilyName(info->family));
    }
    absl::StatusOr<std::unique_ptr<Rule>> rule =
        MakeRule(config.rule, config.parameters, profile, environment);
    const RuleInfo* info = FindRule(config.rule);
    if (rule.ok() && info != nullptr && info->needs_steps && step_metric_.empty()) {
      Finding f;
      f.reason = "no_data";
      f.subject = "job";
      f.message = absl::StrFormat(
          "No data: the job has no step metric, so %s could not tell when steps happen.",
          info->name);
      f.recommendation =
          "Define the step number as a metric, e.g. --metric 'step=step (\\d+)', or name "
          "one with --step-metric.";
      f.severity = Severity::kWarning;
      active.idle_warning = std::move(f);
    } else if (rule.ok()) {
      active.rule = std::move(*rule);
    } else {
      status.status = model::RuleStatusKind::kError;
      status.details = Clip(std::string(rule.status().message()), model::kMaxStatusDetailsChars);
    }
    statuses_.push_back(std::move(status));
    active_.push_back(std::move(active));
  }
}

void JobEvaluator::Fail(size_t i, const std::string& why, int64_t t_ms, Outcome* out) {
  active_[i].rule.reset();
  model::RuleStatus& status = statuses_[i];
  status.status = model::RuleStatusKind::kError;
  status.details = Clip(why, model::kMaxStatusDetailsChars);
  status.last_modified_ms = t_ms;
  out->statuses_changed = true;
}

void JobEvaluator::Apply(size_t i, Verdict verdict, Outcome* out) {
  model::RuleStatus& status = statuses_[i];
  Active& active = active_[i];
  bool issue_recorded = false;
  for (Finding& f : verdict.findings) {
    f.rule = status.configuration_name;
    ++status.findings_total;
    out->statuses_changed = true;
    const bool is_issue = f.severity == model::FindingSeverity::kIssue;
    if (is_issue && status.status != model::RuleStatusKind::kIssuesFound &&
        status.status != model::RuleStatusKind::kError) {
      status.status = model::RuleStatusKind::kIssuesFound;
      status.details = Clip(f.message, model::kMaxStatusDetailsChars);
    }
    status.last_modified_ms = std::max(status.last_modified_ms, f.t_ms);
    auto key = std::make_pair(f.reason, f.subject);
    auto it = active.last_recorded_ms.find(key);
    if (it != active.last_recorded_ms.end() && f.t_ms - it->second < repeat_quiet_ms_) continue;
    active.last_recorded_ms[key] = f.t_ms;
    if (status.findings.size() < model::kMaxStoredFindings) status.findings.push_back(f);
    if (is_issue) {
      issue_recorded = true;
      for (const std::string& action : active.actions) out->actions.push_back({job_, action, f});
    }
    out->findings.push_back(std::move(f));
  }
  // SageMaker's rules end at their first issue; so does the compat profile.
  if (compat_ && issue_recorded) active.rule.reset();
}

void JobEvaluator::FeedAll(const Input& input, Outcome* out) {
  for (size_t i = 0; i < active_.size(); ++i) {
    if (!active_[i].rule) continue;
    try {
      Apply(i, active_[i].rule->OnInput(input), out);
    } catch (const std::exception& e) {
      Fail(i, absl::StrFormat("internal error in the rule: %s", e.what()), input.t_ms, out);
    }
  }
}

int64_t JobEvaluator::StepAt(int64_t t_ms) const {
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
    if (it->first <= t_ms) return it->second;
  }
  return step_before_history_;
}

void JobEvaluator::Feed(const Input& input, Outcome* out) {
  if (ended_) return;
  Input in = input;
  if (in.signal == Signal::kMetric && !step_metric_.empty() && in.name == step_metric_) {
    in.step = static_cast<int64_t>(in.value);
    steps_.emplace_back(in.t_ms, in.step);
    if (steps_.size() > kStepHistory) {
      step_before_history_ = steps_.front().second;
      steps_.pop_front();
    }
    FeedAll(in, out);
    Input step = in;
    step.signal = Signal::kStep;
    FeedAll(step, out);
    return;
  }
  in.step = StepAt(in.t_ms);
  FeedAll(in, out);
}

void JobEvaluator::JobChanged(const model::JobRecord& job, Outcome* out) {
  if (ended_) return;
  if (model::IsTerminal(job.status)) {
    End(job.status, job.training_end_ms.value_or(job.last_modified_ms), out);
    return;
  }
  if (job.status == model::JobStatus::kStopping) {
    for (size_t i = 0; i < statuses_.size(); ++i) {
      if (statuses_[i].status == model::RuleStatusKind::kInProgress) {
        statuses_[i].status = model::RuleStatusKind::kStopping;
        statuses_[i].last_modified_ms = job.last_modified_ms;
        out->statuses_changed = true;
      }
    }
  }
}

void JobEvaluator::End(model::JobStatus status, int64_t end_ms, Outcome* out) {
  if (ended_) return;
  ended_ = true;
  for (size_t i = 0; i < active_.size(); ++i) {
    if (active_[i].idle_warning) {
      Verdict idle{Verdict::kOk, {*active_[i].idle_warning}};
      idle.findings[0].t_ms = end_ms;
      Apply(i, std::move(idle), out);
    }
    if (active_[i].rule) {
      try {
        Apply(i, active_[i].rule->OnEnd(end_ms), out);
      } catch (const std::exception& e) {
        Fail(i, absl::StrFormat("internal error in the rule: %s", e.what()), end_ms, out);
      }
      active_[i].rule.reset();
    }
    model::RuleStatus& s = statuses_[i];
    if (s.status == model::RuleStatusKind::kInProgress ||
        s.status == model::RuleStatusKind::kStopping) {
      s.status = status == model::JobStatus::kStopped ? model::RuleStatusKind::kStopped
                                                      : model::RuleStatusKind::kNoIssuesFound;
      // "No data" and other warnings say why nothing was found.
      for (const model::RuleFinding& f : s.findings) {
        if (f.severity == model::FindingSeverity::kWarning && s.details.empty()) {
          s.details = Clip(f.message, model::kMaxStatusDetailsChars);
        }
      }
      s.last_modified_ms = std::max(s.last_modified_ms, end_ms);
      out->statuses_changed = true;
    }
  }
}

}  // namespace trainwatch::rules
