#include "model/job_record_json.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "util/status_macros.h"

namespace trainwatch::model {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

enum class Form { kStored, kWire };

// The stored form's "v". Members added since (stop_requested_ms) did not
// change it: older readers ignore them, this one defaults what is missing.
constexpr int kStoredVersion = 1;

// JSON has no NaN or infinities; a finding about a NaN loss keeps them as the
// strings "NaN", "Infinity" and "-Infinity" (as JavaScript spells them).
template <typename J>
J NumberJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

double NumberFromJson(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// Written into nlohmann::json for the stored form, which sorts the members
// by name (the bytes data folders hold), and into ordered_json for the wire,
// which keeps them in the order written here.
template <typename J>
J ToJson(const JobRecord& job, Form form) {
  const bool stored = form == Form::kStored;
  J j;
  if (stored) j["v"] = kStoredVersion;
  j["name"] = job.name;
  j["arn"] = job.arn;
  j["status"] = std::string(JobStatusName(job.status));
  j["secondary_status"] = std::string(SecondaryStatusName(job.secondary_status));
  if (stored || !job.failure_reason.empty()) j["failure_reason"] = job.failure_reason;
  j["creation_ms"] = job.creation_ms;
  if (job.training_start_ms) j["training_start_ms"] = *job.training_start_ms;
  if (job.training_end_ms) j["training_end_ms"] = *job.training_end_ms;
  j["last_modified_ms"] = job.last_modified_ms;
  J transitions = J::array();
  for (const StatusTransition& t : job.transitions) {
    J item{{"status", std::string(SecondaryStatusName(t.status))}, {"start_ms", t.start_ms}};
    if (t.end_ms) item["end_ms"] = *t.end_ms;
    item["message"] = t.message;
    transitions.push_back(std::move(item));
  }
  j["transitions"] = std::move(transitions);
  J finals = J::array();
  for (const FinalMetric& m : job.final_metrics) {
    finals.push_back({{"name", m.name}, {"value", m.value}, {"t_ms", m.t_ms}});
  }
  j["final_metrics"] = std::move(finals);
  J defs = J::array();
  for (const MetricDefinition& d : job.metric_definitions) {
    defs.push_back({{"name", d.name}, {"regex", d.regex}});
  }
  j["metric_definitions"] = std::move(defs);
  j["max_runtime_s"] = job.max_runtime_s;
  j["command"] = job.command;
  j["working_dir"] = job.working_dir;
  j["hyperparameters"] = job.hyperparameters;
  j["environment"] = job.environment;
  j["profiling_interval_ms"] = job.profiling_interval_ms;
  j["host_index"] = job.host_index;
  if (!stored) j["host"] = job.HostName();
  j["log_stream"] = job.log_stream;
  if (job.exit_code) j["exit_code"] = *job.exit_code;
  if (job.exit_signal) j["exit_signal"] = *job.exit_signal;
  j["runner"] = {{"hostname", job.runner.hostname},
                 {"boot_id", job.runner.boot_id},
                 {"pid", job.runner.pid},
                 {"start_ticks", job.runner.start_ticks}};
  if (stored || !job.request_json.empty()) j["request_json"] = job.request_json;
  if (job.stop_requested_ms) j["stop_requested_ms"] = *job.stop_requested_ms;
  // Rules: only when there are any, so records without rules keep their bytes.
  if (!job.rule_configurations.empty()) {
    J configs = J::array();
    for (const RuleConfiguration& c : job.rule_configurations) {
      configs.push_back(
          {{"name", c.name}, {"rule", c.rule}, {"parameters", c.parameters}, {"actions", c.actions}});
    }
    j["rule_configurations"] = std::move(configs);
  }
  if (!job.rules_profile.empty()) j["rules_profile"] = job.rules_profile;
  if (!job.step_metric.empty()) j["step_metric"] = job.step_metric;
  if (!job.rule_statuses.empty()) {
    J statuses = J::array();
    for (const RuleStatus& rs : job.rule_statuses) {
      J findings = J::array();
      for (const RuleFinding& f : rs.findings) {
        J item;
        item["rule"] = f.rule;
        item["reason"] = f.reason;
        item["subject"] = f.subject;
        item["severity"] = std::string(FindingSeverityName(f.severity));
        if (f.step >= 0) item["step"] = f.step;
        item["t_ms"] = f.t_ms;
        item["observed"] = NumberJson<J>(f.observed);
        item["threshold"] = NumberJson<J>(f.threshold);
        item["message"] = f.message;
        item["recommendation"] = f.recommendation;
        findings.push_back(std::move(item));
      }
      statuses.push_back({{"configuration_name", rs.configuration_name},
                          {"rule", rs.rule},
                          {"family", rs.family},
                          {"status", std::string(RuleStatusName(rs.status))},
                          {"details", rs.details},
                          {"last_modified_ms", rs.last_modified_ms},
                          {"findings_total", rs.findings_total},
                          {"findings", std::move(findings)}});
    }
    j["rule_statuses"] = std::move(statuses);
  }
  if (!stored && !job.hosts.empty()) {
    J hosts = J::array();
    for (const JobRecord& host : job.hosts) hosts.push_back(ToJson<J>(host, form));
    j["hosts"] = std::move(hosts);
  }
  return j;
}

absl::Status Bad(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", where, what));
}

constexpr bool kRequired = true;

// The members of one JSON object, read by the rules of a form:
// - stored: a member that is absent or null keeps what *out holds (the
//   JobRecord default) and `required` does not apply; a member there is
//   converted as nlohmann's get<T>() does (any number for a number), which
//   throws json::type_error for another type (DecodeStoredJobRecord: DataLoss).
//   An object that is not one has no members.
// - wire: a required member must be there, and a member there must have the
//   type (null is "absent" only for optional integers); InvalidArgument
//   naming the member otherwise.
class Members {
 public:
  Members(const Json& j, std::string where, Form form)
      : j_(j), where_(std::move(where)), stored_(form == Form::kStored) {}

  absl::Status String(const char* key, std::string* out, bool required = false) const {
    const Json* v = Find(key);
    if (v == nullptr) return Absent(key, required);
    if (!stored_ && !v->is_string())
      return Bad(where_, absl::StrFormat("%s must be a string", key));
    *out = v->get<std::string>();
    return absl::OkStatus();
  }
  template <typename Int>
  absl::Status Integer(const char* key, Int* out, bool required = false) const {
    const Json* v = Find(key);
    if (v == nullptr) return Absent(key, required);
    if (!stored_ && !v->is_number_integer()) {
      return Bad(where_, absl::StrFormat("%s must be an integer", key));
    }
    *out = v->get<Int>();
    return absl::OkStatus();
  }
  template <typename Int>
  absl::Status OptionalInteger(const char* key, std::optional<Int>* out) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return absl::OkStatus();
    if (!stored_ && !v->is_number_integer()) {
      return Bad(where_, absl::StrFormat("%s must be an integer", key));
    }
    *out = v->get<Int>();
    return absl::OkStatus();
  }
  absl::Status Number(const char* key, double* out, bool required = false) const {
    const Json* v = Find(key);
    if (v == nullptr) return Absent(key, required);
    if (!stored_ && !v->is_number())
      return Bad(where_, absl::StrFormat("%s must be a number", key));
    *out = v->get<double>();
    return absl::OkStatus();
  }
  absl::Status StringMap(const char* key, std::map<std::string, std::string>* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return absl::OkStatus();
    if (stored_) {
      *out = v->get<std::map<std::string, std::string>>();
      return absl::OkStatus();
    }
    if (!v->is_object()) {
      return Bad(where_, absl::StrFormat("%s must be an object of strings", key));
    }
    for (const auto& [k, item] : v->items()) {
      if (!item.is_string()) return Bad(where_, absl::StrFormat("%s.%s must be a string", key, k));
      (*out)[k] = item.get<std::string>();
    }
    return absl::OkStatus();
  }
  // Stored: a list of strings when there (not a list throws); wire: a member
  // that is not a list is ignored, as Array's are.
  absl::Status StringList(const char* key, std::vector<std::string>* out) const {
    if (stored_) {
      if (const Json* v = Find(key)) *out = v->get<std::vector<std::string>>();
      return absl::OkStatus();
    }
    const Json* list = Array(key);
    if (list == nullptr) return absl::OkStatus();
    for (const Json& item : *list) {
      if (!item.is_string()) return Bad(Inner(key), "items must be strings");
      out->push_back(item.get<std::string>());
    }
    return absl::OkStatus();
  }
  // The member when it is a list; both forms ignore one that is not.
  const Json* Array(const char* key) const {
    const Json* v = Find(key);
    return v != nullptr && v->is_array() ? v : nullptr;
  }
  // The member, or null when absent (stored: or null, or not an object).
  const Json* Find(const char* key) const {
    if (!j_.is_object()) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end() || (stored_ && it->is_null())) return nullptr;
    return &*it;
  }
  // "job.transitions" for the member "transitions" of "job".
  std::string Inner(const char* key) const { return absl::StrFormat("%s.%s", where_, key); }

 private:
  absl::Status Absent(const char* key, bool required) const {
    if (!required || stored_) return absl::OkStatus();
    return Bad(where_, absl::StrFormat("%s is missing", key));
  }

  const Json& j_;
  std::string where_;
  bool stored_;
};

absl::StatusOr<JobRecord> FromJson(const Json& j, Form form) {
  const bool stored = form == Form::kStored;
  if (!j.is_object()) return Bad("job", "must be an object");
  JobRecord job;
  Members f(j, "job", form);
  std::string status, secondary;
  TW_RETURN_IF_ERROR(f.String("name", &job.name, kRequired));
  TW_RETURN_IF_ERROR(f.String("arn", &job.arn));
  TW_RETURN_IF_ERROR(f.String("status", &status, kRequired));
  TW_RETURN_IF_ERROR(f.String("secondary_status", &secondary, kRequired));
  TW_RETURN_IF_ERROR(f.String("failure_reason", &job.failure_reason));
  TW_RETURN_IF_ERROR(f.Integer("creation_ms", &job.creation_ms, kRequired));
  TW_RETURN_IF_ERROR(f.OptionalInteger("training_start_ms", &job.training_start_ms));
  TW_RETURN_IF_ERROR(f.OptionalInteger("training_end_ms", &job.training_end_ms));
  TW_RETURN_IF_ERROR(f.Integer("last_modified_ms", &job.last_modified_ms, kRequired));
  TW_RETURN_IF_ERROR(f.Integer("max_runtime_s", &job.max_runtime_s));
  TW_RETURN_IF_ERROR(f.String("working_dir", &job.working_dir));
  TW_RETURN_IF_ERROR(f.StringMap("hyperparameters", &job.hyperparameters));
  TW_RETURN_IF_ERROR(f.StringMap("environment", &job.environment));
  TW_RETURN_IF_ERROR(f.Integer("profiling_interval_ms", &job.profiling_interval_ms));
  TW_RETURN_IF_ERROR(f.Integer("host_index", &job.host_index));
  TW_RETURN_IF_ERROR(f.String("log_stream", &job.log_stream));
  TW_RETURN_IF_ERROR(f.OptionalInteger("exit_code", &job.exit_code));
  TW_RETURN_IF_ERROR(f.OptionalInteger("exit_signal", &job.exit_signal));
  TW_RETURN_IF_ERROR(f.String("request_json", &job.request_json));
  TW_RETURN_IF_ERROR(f.OptionalInteger("stop_requested_ms", &job.stop_requested_ms));
  // A spelling this version does not know: the default when stored.
  if (std::optional<JobStatus> s = ParseJobStatus(status)) {
    job.status = *s;
  } else if (!stored) {
    return Bad("job", absl::StrFormat("status \"%s\" is not a job status", status));
  }
  if (std::optional<SecondaryStatus> s = ParseSecondaryStatus(secondary)) {
    job.secondary_status = *s;
  } else if (!stored) {
    return Bad("job", absl::StrFormat("secondary_status \"%s\" is not one", secondary));
  }
  // Items of the lists: the wire refuses one that is not an object; stored,
  // such an item reads as the item's defaults.
  if (const Json* list = f.Array("transitions")) {
    const std::string where = f.Inner("transitions");
    for (const Json& t : *list) {
      if (!stored && !t.is_object()) return Bad(where, "items must be objects");
      Members tf(t, where, form);
      std::string name;
      StatusTransition tr{};
      TW_RETURN_IF_ERROR(tf.String("status", &name, kRequired));
      TW_RETURN_IF_ERROR(tf.Integer("start_ms", &tr.start_ms, kRequired));
      TW_RETURN_IF_ERROR(tf.OptionalInteger("end_ms", &tr.end_ms));
      TW_RETURN_IF_ERROR(tf.String("message", &tr.message));
      if (std::optional<SecondaryStatus> s = ParseSecondaryStatus(name)) {
        tr.status = *s;
      } else if (!stored) {
        return Bad(where, absl::StrFormat("unknown status \"%s\"", name));
      }
      job.transitions.push_back(std::move(tr));
    }
  }
  if (const Json* list = f.Array("final_metrics")) {
    const std::string where = f.Inner("final_metrics");
    for (const Json& m : *list) {
      Members mf(m, where, form);
      if (!stored &&
          (!m.is_object() || mf.Find("value") == nullptr || !mf.Find("value")->is_number())) {
        return Bad(where, "items must be {name, value, t_ms}");
      }
      FinalMetric fm{};
      TW_RETURN_IF_ERROR(mf.Number("value", &fm.value));
      TW_RETURN_IF_ERROR(mf.String("name", &fm.name, kRequired));
      TW_RETURN_IF_ERROR(mf.Integer("t_ms", &fm.t_ms, kRequired));
      job.final_metrics.push_back(std::move(fm));
    }
  }
  if (const Json* list = f.Array("metric_definitions")) {
    const std::string where = f.Inner("metric_definitions");
    for (const Json& d : *list) {
      if (!stored && !d.is_object()) return Bad(where, "items must be {name, regex}");
      Members df(d, where, form);
      MetricDefinition def;
      TW_RETURN_IF_ERROR(df.String("name", &def.name, kRequired));
      TW_RETURN_IF_ERROR(df.String("regex", &def.regex, kRequired));
      job.metric_definitions.push_back(std::move(def));
    }
  }
  TW_RETURN_IF_ERROR(f.StringList("command", &job.command));
  if (const Json* r = f.Find("runner")) {
    if (!stored && !r->is_object()) return Bad(f.Inner("runner"), "must be an object");
    Members rf(*r, f.Inner("runner"), form);
    TW_RETURN_IF_ERROR(rf.String("hostname", &job.runner.hostname));
    TW_RETURN_IF_ERROR(rf.String("boot_id", &job.runner.boot_id));
    TW_RETURN_IF_ERROR(rf.Integer("pid", &job.runner.pid));
    TW_RETURN_IF_ERROR(rf.Integer("start_ticks", &job.runner.start_ticks));
  }
  TW_RETURN_IF_ERROR(f.String("rules_profile", &job.rules_profile));
  TW_RETURN_IF_ERROR(f.String("step_metric", &job.step_metric));
  if (const Json* list = f.Array("rule_configurations")) {
    const std::string where = f.Inner("rule_configurations");
    for (const Json& c : *list) {
      if (!stored && !c.is_object()) return Bad(where, "items must be objects");
      Members cf(c, where, form);
      RuleConfiguration config;
      TW_RETURN_IF_ERROR(cf.String("name", &config.name, kRequired));
      TW_RETURN_IF_ERROR(cf.String("rule", &config.rule, kRequired));
      TW_RETURN_IF_ERROR(cf.StringMap("parameters", &config.parameters));
      TW_RETURN_IF_ERROR(cf.StringList("actions", &config.actions));
      job.rule_configurations.push_back(std::move(config));
    }
  }
  if (const Json* list = f.Array("rule_statuses")) {
    const std::string where = f.Inner("rule_statuses");
    for (const Json& r : *list) {
      if (!stored && !r.is_object()) return Bad(where, "items must be objects");
      Members rf(r, where, form);
      RuleStatus rs;
      std::string status;
      TW_RETURN_IF_ERROR(rf.String("configuration_name", &rs.configuration_name, kRequired));
      TW_RETURN_IF_ERROR(rf.String("rule", &rs.rule));
      TW_RETURN_IF_ERROR(rf.String("family", &rs.family));
      TW_RETURN_IF_ERROR(rf.String("status", &status, kRequired));
      TW_RETURN_IF_ERROR(rf.String("details", &rs.details));
      TW_RETURN_IF_ERROR(rf.Integer("last_modified_ms", &rs.last_modified_ms));
      TW_RETURN_IF_ERROR(rf.Integer("findings_total", &rs.findings_total));
      if (std::optional<RuleStatusKind> k = ParseRuleStatus(status)) {
        rs.status = *k;
      } else if (!stored) {
        return Bad(where, absl::StrFormat("status \"%s\" is not a rule evaluation status", status));
      }
      if (const Json* findings = rf.Array("findings")) {
        const std::string fwhere = rf.Inner("findings");
        for (const Json& fj : *findings) {
          if (!stored && !fj.is_object()) return Bad(fwhere, "items must be objects");
          Members ff(fj, fwhere, form);
          RuleFinding finding;
          std::string severity;
          TW_RETURN_IF_ERROR(ff.String("rule", &finding.rule));
          TW_RETURN_IF_ERROR(ff.String("reason", &finding.reason, kRequired));
          TW_RETURN_IF_ERROR(ff.String("subject", &finding.subject));
          TW_RETURN_IF_ERROR(ff.String("severity", &severity));
          TW_RETURN_IF_ERROR(ff.Integer("step", &finding.step));
          TW_RETURN_IF_ERROR(ff.Integer("t_ms", &finding.t_ms));
          TW_RETURN_IF_ERROR(ff.String("message", &finding.message));
          TW_RETURN_IF_ERROR(ff.String("recommendation", &finding.recommendation));
          if (const Json* v = ff.Find("observed")) finding.observed = NumberFromJson(*v);
          if (const Json* v = ff.Find("threshold")) finding.threshold = NumberFromJson(*v);
          finding.severity =
              severity == "warning" ? FindingSeverity::kWarning : FindingSeverity::kIssue;
          rs.findings.push_back(std::move(finding));
        }
      }
      job.rule_statuses.push_back(std::move(rs));
    }
  }
  // Hosts are the wire's only: a stored record is one host's.
  if (const Json* list = stored ? nullptr : f.Array("hosts")) {
    for (const Json& h : *list) {
      if (h.is_object() && h.contains("hosts")) return Bad(f.Inner("hosts"), "a host has no hosts");
      TW_ASSIGN_OR_RETURN(JobRecord host, FromJson(h, form));
      job.hosts.push_back(std::move(host));
    }
  }
  return job;
}

}  // namespace

std::string EncodeStoredJobRecord(const JobRecord& job) {
  return ToJson<Json>(job, Form::kStored).dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<JobRecord> DecodeStoredJobRecord(std::string_view bytes) {
  Json j = Json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name")) {
    return absl::DataLossError(absl::StrFormat("stored job record is not valid JSON: \"%s\"",
                                               std::string(bytes.substr(0, 80))));
  }
  // The stored form's reader reports a member of the wrong type by throwing
  // (Members); nothing else of it fails.
  try {
    absl::StatusOr<JobRecord> job = FromJson(j, Form::kStored);
    if (!job.ok()) return absl::DataLossError(std::string(job.status().message()));
    return job;
  } catch (const Json::exception& e) {
    return absl::DataLossError(
        absl::StrFormat("stored job record has a field of the wrong type: %s", e.what()));
  }
}

OrderedJson WireJobRecordJson(const JobRecord& job) {
  return ToJson<OrderedJson>(job, Form::kWire);
}

absl::StatusOr<JobRecord> JobRecordFromWireJson(const Json& j) { return FromJson(j, Form::kWire); }

}  // namespace trainwatch::model
