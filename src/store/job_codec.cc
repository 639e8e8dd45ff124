#include "store/job_codec.h"

#include <cctype>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace trainwatch::store {
namespace {

using nlohmann::json;

// Field names are short and stable; a field missing in stored JSON (written
// by an older version) keeps the JobRecord default.
json TransitionToJson(const model::StatusTransition& t) {
  json j = {{"status", std::string(model::SecondaryStatusName(t.status))},
            {"start_ms", t.start_ms},
            {"message", t.message}};
  if (t.end_ms) j["end_ms"] = *t.end_ms;
  return j;
}

template <typename T>
void GetIf(const json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) *out = it->get<T>();
}

template <typename T>
void GetOptional(const json& j, const char* key, std::optional<T>* out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) *out = it->get<T>();
}

}  // namespace

std::string JobKey(std::string_view name) {
  std::string key = "j";
  for (char c : name) key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return key;
}

std::string JobHostKey(std::string_view name, int host_index) {
  std::string key = JobKey(name);
  if (host_index != 1) key += absl::StrFormat("%c%d", kJobHostSeparator, host_index);
  return key;
}

std::string_view JobKeyOfHostKey(std::string_view host_key) {
  return host_key.substr(0, host_key.find(kJobHostSeparator));
}

std::string EncodeJob(const model::JobRecord& job) {
  json j;
  j["v"] = 1;
  j["name"] = job.name;
  j["arn"] = job.arn;
  j["status"] = std::string(model::JobStatusName(job.status));
  j["secondary_status"] = std::string(model::SecondaryStatusName(job.secondary_status));
  j["failure_reason"] = job.failure_reason;
  j["creation_ms"] = job.creation_ms;
  if (job.training_start_ms) j["training_start_ms"] = *job.training_start_ms;
  if (job.training_end_ms) j["training_end_ms"] = *job.training_end_ms;
  j["last_modified_ms"] = job.last_modified_ms;
  json transitions = json::array();
  for (const auto& t : job.transitions) transitions.push_back(TransitionToJson(t));
  j["transitions"] = std::move(transitions);
  json finals = json::array();
  for (const auto& f : job.final_metrics) {
    finals.push_back({{"name", f.name}, {"value", f.value}, {"t_ms", f.t_ms}});
  }
  j["final_metrics"] = std::move(finals);
  json defs = json::array();
  for (const auto& d : job.metric_definitions) {
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
  j["log_stream"] = job.log_stream;
  if (job.exit_code) j["exit_code"] = *job.exit_code;
  if (job.exit_signal) j["exit_signal"] = *job.exit_signal;
  j["runner"] = {{"hostname", job.runner.hostname},
                 {"boot_id", job.runner.boot_id},
                 {"pid", job.runner.pid},
                 {"start_ticks", job.runner.start_ticks}};
  j["request_json"] = job.request_json;
  if (job.stop_requested_ms) j["stop_requested_ms"] = *job.stop_requested_ms;
  // Invalid UTF-8 (a command line is bytes) is replaced rather than refused.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<model::JobRecord> DecodeJob(std::string_view bytes) {
  json j = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name")) {
    return absl::DataLossError(absl::StrFormat("stored job record is not valid JSON: \"%s\"",
                                               std::string(bytes.substr(0, 80))));
  }
  try {
    model::JobRecord job;
    GetIf(j, "name", &job.name);
    GetIf(j, "arn", &job.arn);
    std::string status;
    GetIf(j, "status", &status);
    if (auto s = model::ParseJobStatus(status)) job.status = *s;
    std::string secondary;
    GetIf(j, "secondary_status", &secondary);
    if (auto s = model::ParseSecondaryStatus(secondary)) job.secondary_status = *s;
    GetIf(j, "failure_reason", &job.failure_reason);
    GetIf(j, "creation_ms", &job.creation_ms);
    GetOptional(j, "training_start_ms", &job.training_start_ms);
    GetOptional(j, "training_end_ms", &job.training_end_ms);
    GetIf(j, "last_modified_ms", &job.last_modified_ms);
    if (auto it = j.find("transitions"); it != j.end() && it->is_array()) {
      for (const json& t : *it) {
        model::StatusTransition tr{};
        std::string st;
        GetIf(t, "status", &st);
        if (auto s = model::ParseSecondaryStatus(st)) tr.status = *s;
        GetIf(t, "start_ms", &tr.start_ms);
        GetOptional(t, "end_ms", &tr.end_ms);
        GetIf(t, "message", &tr.message);
        job.transitions.push_back(std::move(tr));
      }
    }
    if (auto it = j.find("final_metrics"); it != j.end() && it->is_array()) {
      for (const json& f : *it) {
        model::FinalMetric fm{};
        GetIf(f, "name", &fm.name);
        GetIf(f, "value", &fm.value);
        GetIf(f, "t_ms", &fm.t_ms);
        job.final_metrics.push_back(std::move(fm));
      }
    }
    if (auto it = j.find("metric_definitions"); it != j.end() && it->is_array()) {
      for (const json& d : *it) {
        model::MetricDefinition md;
        GetIf(d, "name", &md.name);
        GetIf(d, "regex", &md.regex);
        job.metric_definitions.push_back(std::move(md));
      }
    }
    GetIf(j, "max_runtime_s", &job.max_runtime_s);
    GetIf(j, "command", &job.command);
    GetIf(j, "working_dir", &job.working_dir);
    GetIf(j, "hyperparameters", &job.hyperparameters);
    GetIf(j, "environment", &job.environment);
    GetIf(j, "profiling_interval_ms", &job.profiling_interval_ms);
    GetIf(j, "host_index", &job.host_index);
    GetIf(j, "log_stream", &job.log_stream);
    GetOptional(j, "exit_code", &job.exit_code);
    GetOptional(j, "exit_signal", &job.exit_signal);
    if (auto it = j.find("runner"); it != j.end() && it->is_object()) {
      GetIf(*it, "hostname", &job.runner.hostname);
      GetIf(*it, "boot_id", &job.runner.boot_id);
      GetIf(*it, "pid", &job.runner.pid);
      GetIf(*it, "start_ticks", &job.runner.start_ticks);
    }
    GetIf(j, "request_json", &job.request_json);
    GetOptional(j, "stop_requested_ms", &job.stop_requested_ms);
    return job;
  } catch (const json::exception& e) {
    return absl::DataLossError(
        absl::StrFormat("stored job record has a field of the wrong type: %s", e.what()));
  }
}

}  // namespace trainwatch::store
