#include "api/native/agent_codec.h"

#include "absl/strings/str_format.h"
#include "simdjson.h"
#include "api/errors.h"
#include "api/native/samples_codec_internal.h"
#include "model/job_record_json.h"
#include "util/status_macros.h"

namespace trainwatch::api {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

absl::Status Bad(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", where, what));
}

// Readers for a JSON object's members that say which member is wrong (the
// heartbeat's; model/job_record_json.cc reads job records).
class Fields {
 public:
  Fields(const Json& j, std::string where) : j_(j), where_(std::move(where)) {}

  absl::Status String(const char* key, std::string* out, bool required = true) const {
    auto it = j_.find(key);
    if (it == j_.end()) return required ? Bad(where_, absl::StrFormat("%s is missing", key)) : absl::OkStatus();
    if (!it->is_string()) return Bad(where_, absl::StrFormat("%s must be a string", key));
    *out = it->get<std::string>();
    return absl::OkStatus();
  }
  template <typename Int>
  absl::Status Integer(const char* key, Int* out, bool required = true) const {
    auto it = j_.find(key);
    if (it == j_.end()) return required ? Bad(where_, absl::StrFormat("%s is missing", key)) : absl::OkStatus();
    if (!it->is_number_integer()) return Bad(where_, absl::StrFormat("%s must be an integer", key));
    *out = it->get<Int>();
    return absl::OkStatus();
  }

 private:
  const Json& j_;
  std::string where_;
};

}  // namespace

OrderedJson JobRecordJson(const model::JobRecord& job) { return model::WireJobRecordJson(job); }

absl::StatusOr<model::JobRecord> JobRecordFromJson(const Json& j) {
  return model::JobRecordFromWireJson(j);
}

std::string EncodeAgentHeartbeat(const AgentHeartbeat& heartbeat) {
  OrderedJson j;
  j["job"] = heartbeat.job;
  j["host"] = heartbeat.host;
  j["runner"] = {{"hostname", heartbeat.runner.hostname},
                 {"boot_id", heartbeat.runner.boot_id},
                 {"pid", heartbeat.runner.pid},
                 {"start_ticks", heartbeat.runner.start_ticks}};
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

absl::StatusOr<AgentHeartbeat> DecodeAgentHeartbeat(std::string_view body) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Bad("body", "must be a JSON object {\"job\", \"host\", \"runner\"}");
  }
  AgentHeartbeat heartbeat;
  Fields f(j, "heartbeat");
  absl::Status s;
  if (!(s = f.String("job", &heartbeat.job)).ok() ||
      !(s = f.Integer("host", &heartbeat.host)).ok()) {
    return s;
  }
  auto r = j.find("runner");
  if (r == j.end() || !r->is_object()) return Bad("heartbeat.runner", "must be an object");
  Fields rf(*r, "heartbeat.runner");
  if (!(s = rf.String("hostname", &heartbeat.runner.hostname)).ok() ||
      !(s = rf.String("boot_id", &heartbeat.runner.boot_id, false)).ok() ||
      !(s = rf.Integer("pid", &heartbeat.runner.pid)).ok() ||
      !(s = rf.Integer("start_ticks", &heartbeat.runner.start_ticks, false)).ok()) {
    return s;
  }
  return heartbeat;
}

namespace {

using samples_internal::AsInt64;
using samples_internal::ParseObject;
using samples_internal::SamplesFromDom;
using simdjson::dom::element;

// Members of a parsed object, with the messages Fields gives.
absl::Status StringMember(simdjson::dom::object o, std::string_view where, const char* key,
                          std::string_view* out) {
  element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) {
    return Bad(where, absl::StrFormat("%s is missing", key));
  }
  if (e.get_string().get(*out) != simdjson::SUCCESS) {
    return Bad(where, absl::StrFormat("%s must be a string", key));
  }
  return absl::OkStatus();
}

absl::Status IntegerMember(simdjson::dom::object o, std::string_view where, const char* key,
                           int64_t* out) {
  element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) {
    return Bad(where, absl::StrFormat("%s is missing", key));
  }
  if (!AsInt64(e, out)) return Bad(where, absl::StrFormat("%s must be an integer", key));
  return absl::OkStatus();
}

}  // namespace

std::string EncodeAgentBatch(const AgentBatch& batch) {
  OrderedJson j;
  j["agent"] = batch.agent;
  j["seq"] = batch.seq;
  switch (batch.kind) {
    case AgentBatch::Kind::kSamples:
      j["kind"] = "samples";
      j["series"] = std::move(SamplesJson(batch.samples)["series"]);
      break;
    case AgentBatch::Kind::kLogs: {
      j["kind"] = "logs";
      j["group"] = batch.logs.stream.group;
      j["stream"] = batch.logs.stream.stream;
      OrderedJson events = OrderedJson::array();
      for (const model::LogEvent& e : batch.logs.events) {
        events.push_back({{"t_ms", e.t_ms}, {"message", e.message}});
      }
      j["events"] = std::move(events);
      break;
    }
    case AgentBatch::Kind::kCreateJob:
    case AgentBatch::Kind::kUpdateJob:
      j["kind"] = batch.kind == AgentBatch::Kind::kCreateJob ? "create_job" : "update_job";
      j["job"] = JobRecordJson(batch.job);
      break;
  }
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

absl::StatusOr<AgentBatch> DecodeAgentBatch(std::string_view body, size_t max_samples) {
  // One parse with the samples' parser: samples and log batches are what
  // agents send all along (job records go through nlohmann::json, below).
  constexpr std::string_view kWhere = "agent batch";
  simdjson::dom::object top;
  TW_RETURN_IF_ERROR(ParseObject(body, "{\"agent\", \"seq\", \"kind\", ...}", &top));
  AgentBatch batch;
  std::string_view agent, kind;
  TW_RETURN_IF_ERROR(StringMember(top, kWhere, "agent", &agent));
  TW_RETURN_IF_ERROR(IntegerMember(top, kWhere, "seq", &batch.seq));
  TW_RETURN_IF_ERROR(StringMember(top, kWhere, "kind", &kind));
  if (agent.empty() || agent.size() > 200 || batch.seq <= 0) {
    return Bad(kWhere, "agent must be 1-200 bytes and seq > 0");
  }
  batch.agent = std::string(agent);
  if (kind == "samples") {
    batch.kind = AgentBatch::Kind::kSamples;
    element series;
    if (top.at_key("series").get(series) != simdjson::SUCCESS) return Bad(kWhere, "series is missing");
    TW_RETURN_IF_ERROR(SamplesFromDom(series, max_samples, &batch.samples));
  } else if (kind == "logs") {
    batch.kind = AgentBatch::Kind::kLogs;
    std::string_view group, stream;
    TW_RETURN_IF_ERROR(StringMember(top, kWhere, "group", &group));
    TW_RETURN_IF_ERROR(StringMember(top, kWhere, "stream", &stream));
    batch.logs.stream.group = std::string(group);
    batch.logs.stream.stream = std::string(stream);
    simdjson::dom::array events;
    if (top.at_key("events").get_array().get(events) != simdjson::SUCCESS) {
      return Bad(kWhere, "events must be a list");
    }
    batch.logs.events.reserve(events.size());
    for (element e : events) {
      simdjson::dom::object event;
      if (e.get_object().get(event) != simdjson::SUCCESS) {
        return Bad(kWhere, "events must be {t_ms, message} objects");
      }
      model::LogEvent out{0, ""};
      std::string_view message;
      TW_RETURN_IF_ERROR(IntegerMember(event, "agent batch event", "t_ms", &out.t_ms));
      TW_RETURN_IF_ERROR(StringMember(event, "agent batch event", "message", &message));
      out.message = std::string(message);
      batch.logs.events.push_back(std::move(out));
    }
  } else if (kind == "create_job" || kind == "update_job") {
    batch.kind = kind == "create_job" ? AgentBatch::Kind::kCreateJob : AgentBatch::Kind::kUpdateJob;
    // Small and rare: read through the job record's own decoder.
    Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    auto it = doc.is_object() ? doc.find("job") : doc.end();
    if (!doc.is_object() || it == doc.end()) return Bad(kWhere, "job is missing");
    absl::StatusOr<model::JobRecord> job = JobRecordFromJson(*it);
    if (!job.ok()) return job.status();
    batch.job = *std::move(job);
  } else {
    return Bad(kWhere, absl::StrFormat("kind \"%s\" is not samples, logs, create_job or update_job",
                                       kind.substr(0, 40)));
  }
  return batch;
}

}  // namespace trainwatch::api
