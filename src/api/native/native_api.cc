#include "api/native/native_api.h"

#include "api/native/agent_codec.h"
#include "api/native/native_util.h"
#include "api/prometheus/remote_write.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "api/api.h"
#include "api/errors.h"
#include "api/form.h"
#include "util/gzip.h"
#include "api/snappy_body.h"
#include "api/logs/logs.h"
#include "api/pagination.h"
#include "api/wire_time.h"
#include "util/time_parse.h"

namespace trainwatch::api {
namespace native_internal {

HttpResponse Reply(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.headers.Add("Content-Type", "application/json");
  r.body = DumpJson(body);
  r.body.push_back('\n');
  return r;
}

HttpResponse Error(int status, std::string_view code, std::string_view message) {
  return Reply(status, Json{{"error", {{"code", code}, {"message", message}}}});
}

// A status from a backend or validation, in this API's error shape.
HttpResponse FromStatus(const absl::Status& s) {
  std::string message(MessageOf(s));
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return Error(400, "InvalidArgument", message);
    case absl::StatusCode::kNotFound: return Error(404, "NotFound", message);
    case absl::StatusCode::kAlreadyExists: return Error(409, "AlreadyExists", message);
    case absl::StatusCode::kFailedPrecondition: return Error(409, "FailedPrecondition", message);
    case absl::StatusCode::kResourceExhausted:
      return Error(AwsCodeOf(s) == "RequestEntityTooLarge" ? 413 : 503, "ResourceExhausted",
                   message);
    case absl::StatusCode::kUnavailable: return Error(503, "Unavailable", message);
    case absl::StatusCode::kUnimplemented: return Error(501, "Unimplemented", message);
    default: return Error(500, "Internal", message);
  }
}

HttpResponse NoBackend(std::string_view what) {
  return Error(501, "Unimplemented",
               absl::StrFormat("this trainwatch server has no %s attached; see docs/api.md",
                               what));
}

HttpResponse MethodNotAllowed(std::string_view allowed) {
  HttpResponse r = Error(405, "MethodNotAllowed",
                         absl::StrFormat("use %s for this resource", allowed));
  r.headers.Add("Allow", std::string(allowed));
  return r;
}

const std::string* Param(const Params& params, std::string_view name) {
  for (const auto& [k, v] : params) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::vector<std::string> ParamAll(const Params& params, std::string_view name) {
  std::vector<std::string> out;
  for (const auto& [k, v] : params) {
    if (k == name) out.push_back(v);
  }
  return out;
}

absl::StatusOr<int64_t> TimeParam(const Params& params, std::string_view name, int64_t now_ms,
                                  std::optional<int64_t> fallback) {
  const std::string* v = Param(params, name);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return absl::InvalidArgumentError(absl::StrFormat(
        "query parameter %s is required (a time: now-1h, 2025-01-15T12:00:00Z or epoch seconds)",
        name));
  }
  absl::StatusOr<int64_t> t = util::ParseTimeMs(*v, now_ms);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("query parameter %s: %s", name, MessageOf(t.status())));
  }
  return t;
}

absl::StatusOr<int64_t> IntParam(const Params& params, std::string_view name, int64_t fallback,
                                 int64_t min, int64_t max) {
  const std::string* v = Param(params, name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < min || n > max) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "query parameter %s=%s: want an integer from %d to %d", name, *v, min, max));
  }
  return n;
}

// "Name=Value" (exact) or "Name" (any value).
std::vector<DimensionFilter> DimensionParams(const Params& params) {
  std::vector<DimensionFilter> out;
  for (const std::string& d : ParamAll(params, "dimension")) {
    size_t eq = d.find('=');
    if (eq == std::string::npos) {
      out.push_back({d, std::nullopt});
    } else {
      out.push_back({d.substr(0, eq), d.substr(eq + 1)});
    }
  }
  return out;
}

Json DimensionsJson(const std::vector<model::Dimension>& dims) {
  Json out = Json::object();
  for (const model::Dimension& d : dims) out[d.name] = d.value;
  return out;
}

Json JobJson(const model::JobRecord& job) { return JobRecordJson(job); }

}  // namespace native_internal

using namespace native_internal;

namespace {
constexpr std::string_view kPrefix = "/api/v1/";
}  // namespace

NativeApi::NativeApi(NativeOptions options, Backends backends, const util::Clock& clock)
    : options_(std::move(options)), backends_(backends), clock_(clock) {}

HttpResponse NativeApi::TooLarge(size_t limit_bytes) const {
  return Error(413, "RequestEntityTooLarge",
               absl::StrFormat("the request body exceeds the limit of %d bytes; send smaller "
                               "batches",
                               limit_bytes));
}

HttpResponse NativeApi::Handle(const HttpRequest& request) const {
  std::string_view path = request.Path();
  if (path.substr(0, kPrefix.size()) != kPrefix) {
    return Error(404, "NotFound", "trainwatch's API lives under /api/v1/");
  }
  std::string_view rest = path.substr(kPrefix.size());
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  bool get = request.method == "GET" || request.method == "HEAD";
  bool post = request.method == "POST";
  if (rest == "health") return get ? Health() : MethodNotAllowed("GET");
  if (rest == "samples") return post ? IngestSamples(request) : MethodNotAllowed("POST");
  if (rest == "write") return post ? RemoteWrite(request) : MethodNotAllowed("POST");
  if (rest == "agent/deliver") return post ? Deliver(request) : MethodNotAllowed("POST");
  if (rest == "agent/heartbeat") return post ? Heartbeat(request) : MethodNotAllowed("POST");
  if (rest == "metrics") return get ? ListMetrics(request) : MethodNotAllowed("GET");
  if (rest == "metrics/statistics") return get ? Statistics(request) : MethodNotAllowed("GET");
  if (rest == "metrics/data") return post ? MetricData(request) : MethodNotAllowed("POST");
  if (rest == "logs/groups") return get ? LogGroups(request) : MethodNotAllowed("GET");
  if (rest == "logs/streams") return get ? LogStreams(request) : MethodNotAllowed("GET");
  if (rest == "logs/events") return get ? LogEvents(request) : MethodNotAllowed("GET");
  if (rest == "jobs") return get ? Jobs(request) : MethodNotAllowed("GET");
  if (rest == "chart") return get ? Chart(request) : MethodNotAllowed("GET");
  if (rest.substr(0, 5) == "jobs/") {
    std::string_view name = rest.substr(5);
    // "NAME/<what>": removes the suffix when it is there.
    const auto take = [&name](std::string_view what) {
      if (name.size() <= what.size() || name.substr(name.size() - what.size()) != what ||
          name.substr(0, name.size() - what.size()).find('/') != std::string_view::npos) {
        return false;
      }
      name.remove_suffix(what.size());
      return true;
    };
    if (take("/series")) return get ? JobSeries(std::string(name)) : MethodNotAllowed("GET");
    if (take("/samples")) {
      return get ? JobSamples(std::string(name), request) : MethodNotAllowed("GET");
    }
    if (take("/report")) return get ? Report(std::string(name), request) : MethodNotAllowed("GET");
    bool stop = name.size() > 5 && name.substr(name.size() - 5) == "/stop";
    if (stop) {
      name.remove_suffix(5);
      return post ? StopJob(std::string(name)) : MethodNotAllowed("POST");
    }
    if (name.find('/') == std::string_view::npos) {
      return get ? Job(std::string(name)) : MethodNotAllowed("GET");
    }
  }
  return Error(404, "NotFound",
               absl::StrFormat("no resource %s; see docs/api.md for the API", std::string(path)));
}

HttpResponse NativeApi::Health() const {
  Json body;
  body["status"] = "ok";
  body["version"] = options_.version;
  body["time_ms"] = clock_.NowMs();
  body["backends"] = {{"samples", backends_.samples != nullptr},
                      {"metrics", backends_.metrics != nullptr},
                      {"logs", backends_.logs != nullptr},
                      {"jobs", backends_.jobs != nullptr},
                      {"agents", backends_.agents != nullptr}};
  // What POST /api/v1/samples and /api/v1/agent/deliver bodies may be
  // compressed with: agents compress only for a server that lists it.
  body["content_encodings"] = {"gzip", "snappy"};
  // The dashboard polls a server whose live stream would carry nothing.
  body["live_updates"] = options_.live_updates;
  return Reply(200, body);
}

namespace {

// The body as sent, or inflated into *inflated (Content-Encoding gzip or
// snappy, up to `max_bytes`); false with the answer in *refusal for another
// encoding or a body that does not inflate.
bool InflatedBody(const HttpRequest& request, size_t max_bytes, std::string* inflated,
                  std::string_view* body, HttpResponse* refusal) {
  *body = request.body;
  const std::string* enc = request.headers.Find("Content-Encoding");
  if (enc == nullptr) return true;
  const std::string e = absl::AsciiStrToLower(absl::StripAsciiWhitespace(*enc));
  if (e.empty() || e == "identity") return true;
  if (e != "gzip" && e != "snappy") {
    *refusal = Error(415, "UnsupportedMediaType",
                     absl::StrFormat("Content-Encoding %s is not supported; use gzip or snappy",
                                     e.substr(0, 64)));
    return false;
  }
  absl::StatusOr<std::string> out = e == "gzip" ? util::Gunzip(request.body, max_bytes)
                                                : SnappyUncompress(request.body, max_bytes);
  if (absl::IsResourceExhausted(out.status())) {
    *refusal = Error(413, "RequestEntityTooLarge",
                     absl::StrFormat("%s Send smaller batches.", out.status().message()));
    return false;
  }
  if (!out.ok()) {
    *refusal = FromStatus(out.status());
    return false;
  }
  *inflated = *std::move(out);
  *body = *inflated;
  return true;
}

}  // namespace

HttpResponse NativeApi::IngestSamples(const HttpRequest& request) const {
  if (backends_.samples == nullptr) return NoBackend("metric store");
  std::string inflated;
  std::string_view body;
  if (HttpResponse refusal;
      !InflatedBody(request, options_.max_decompressed_bytes, &inflated, &body, &refusal)) {
    return refusal;
  }
  // Each request thread decodes into its own batch, which keeps its series'
  // keys and buffers for the thread's next body (agent_codec.h), within a
  // bound whatever the body held. Put() must not come back into this
  // function on the same thread (it does not: the store writes synchronously
  // and nothing subscribed calls the API).
  thread_local model::SampleBatch batch;
  absl::Status decoded = DecodeSamplesBodyInto(body, options_.max_samples_per_request, &batch);
  size_t count = decoded.ok() ? batch.SampleCount() : 0;
  absl::Status put = decoded.ok() && count > 0 ? backends_.samples->Put(batch) : absl::OkStatus();
  TrimDecodedSamples(&batch);
  if (!decoded.ok()) return FromStatus(decoded);
  if (!put.ok()) return FromStatus(put);
  return Reply(200, Json{{"accepted", count}});
}

// Prometheus remote write 1.0 (api/prometheus/remote_write.h). The answers
// follow its spec: 204 when stored; 4xx (the sender drops the batch) for a
// body that cannot be one, an encoding or version it does not speak, or
// series that cannot be stored; 5xx (the sender retries) when the store fails.
HttpResponse NativeApi::RemoteWrite(const HttpRequest& request) const {
  if (backends_.samples == nullptr) return NoBackend("metric store");
  const std::string* type = request.headers.Find("Content-Type");
  if (type == nullptr ||
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(*type)).rfind("application/x-protobuf", 0) != 0 ||
      type->find("io.prometheus.write.v2") != std::string::npos) {
    return Error(415, "UnsupportedMediaType",
                 "remote write 1.0 sends Content-Type: application/x-protobuf (a WriteRequest); "
                 "remote write 2.0 is not served");
  }
  const std::string* encoding = request.headers.Find("Content-Encoding");
  if (encoding == nullptr ||
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(*encoding)) != "snappy") {
    return Error(415, "UnsupportedMediaType",
                 "remote write bodies are snappy-compressed: send Content-Encoding: snappy");
  }
  std::string inflated;
  std::string_view body;
  if (HttpResponse refusal;
      !InflatedBody(request, options_.max_decompressed_bytes, &inflated, &body, &refusal)) {
    return refusal;
  }
  // As IngestSamples' batch: one decoder per request thread, whose slots and
  // keys serve the thread's next request.
  thread_local prometheus::WriteDecoder decoder;
  struct Trimmed {
    prometheus::WriteDecoder& d;
    ~Trimmed() { d.Trim(); }
  } trimmed{decoder};
  if (absl::Status decoded = decoder.Decode(body); !decoded.ok()) return FromStatus(decoded);
  const model::SampleBatch& batch = decoder.batch();
  if (batch.SampleCount() > options_.max_samples_per_request) {
    return Error(413, "RequestEntityTooLarge",
                 absl::StrFormat("%d samples in one request; at most %d", batch.SampleCount(),
                                 options_.max_samples_per_request));
  }
  if (!batch.series.empty()) {
    if (absl::Status put = backends_.samples->Put(batch); !put.ok()) return FromStatus(put);
  }
  if (decoder.refused() > 0) {
    return Error(400, "InvalidArgument",
                 absl::StrFormat("%d series could not be stored (the others were): the first: %s",
                                 decoder.refused(), decoder.first_refusal()));
  }
  HttpResponse r;
  r.status = 204;
  return r;
}

HttpResponse NativeApi::Deliver(const HttpRequest& request) const {
  if (backends_.agents == nullptr) {
    return Error(503, "Unavailable",
                 "this server only follows its data folder (a run held it when the server "
                 "started), so it cannot take agents' data; restart it once no run holds it");
  }
  std::string inflated;
  std::string_view body;
  if (HttpResponse refusal;
      !InflatedBody(request, options_.max_decompressed_bytes, &inflated, &body, &refusal)) {
    return refusal;
  }
  if (JsonNestingDepth(body, 8) > 8) {
    return Error(400, "InvalidArgument", "the body nests JSON deeper than agent batches do");
  }
  absl::StatusOr<AgentBatch> batch = DecodeAgentBatch(body, options_.max_samples_per_request);
  if (!batch.ok()) return FromStatus(batch.status());
  absl::StatusOr<bool> written = backends_.agents->Deliver(*batch);
  if (!written.ok()) return FromStatus(written.status());
  return Reply(200, Json{{"seq", batch->seq}, {"written", *written}});
}

HttpResponse NativeApi::Heartbeat(const HttpRequest& request) const {
  if (backends_.agents == nullptr) {
    return Error(503, "Unavailable", "this server only follows its data folder: it takes no agents");
  }
  absl::StatusOr<AgentHeartbeat> heartbeat = DecodeAgentHeartbeat(request.body);
  if (!heartbeat.ok()) return FromStatus(heartbeat.status());
  absl::StatusOr<bool> stop = backends_.agents->Heartbeat(*heartbeat);
  if (!stop.ok()) return FromStatus(stop.status());
  return Reply(200, Json{{"stop_requested", *stop}});
}

HttpResponse NativeApi::ListMetrics(const HttpRequest& request) const {
  if (backends_.metrics == nullptr) return NoBackend("metric store");
  absl::StatusOr<Params> params = DecodeFormPairs(request.Query());
  if (!params.ok()) return FromStatus(params.status());
  int64_t now = clock_.NowMs();
  ListMetricsQuery query;
  if (const std::string* ns = Param(*params, "namespace")) query.ns = *ns;
  if (const std::string* m = Param(*params, "metric")) query.metric = *m;
  query.dimensions = DimensionParams(*params);
  absl::StatusOr<int64_t> since = TimeParam(*params, "since", now, now - 14 * 86400000LL);
  const std::string* since_param = Param(*params, "since");
  const std::string since_text = since_param != nullptr ? *since_param : "";
  absl::StatusOr<int64_t> limit = IntParam(*params, "limit", 500, 1, 10000);
  if (!since.ok()) return FromStatus(since.status());
  if (!limit.ok()) return FromStatus(limit.status());
  query.active_since_ms = *since;
  query.limit = static_cast<size_t>(*limit) + 1;
  if (const std::string* after = Param(*params, "after")) {
    absl::StatusOr<nlohmann::json> cursor =
        DecodeToken(CursorKind::kListMetrics, MetricListingBinding(query, since_text), *after,
                    "InvalidArgument", "query parameter after is not usable");
    if (!cursor.ok()) return Error(400, "InvalidArgument", std::string(MessageOf(cursor.status())));
    if (!cursor->contains("n") || !cursor->contains("m") || !cursor->contains("d") ||
        !(*cursor)["n"].is_string() || !(*cursor)["m"].is_string() || !(*cursor)["d"].is_object()) {
      return Error(400, "InvalidArgument", "query parameter after is not a token from this API");
    }
    MetricId id{(*cursor)["n"].get<std::string>(), (*cursor)["m"].get<std::string>(), {}};
    for (const auto& [k, v] : (*cursor)["d"].items()) {
      if (v.is_string()) id.dimensions.push_back({k, v.get<std::string>()});
    }
    query.after = std::move(id);
  }
  absl::StatusOr<std::vector<MetricId>> metrics = backends_.metrics->ListMetrics(query);
  if (!metrics.ok()) return FromStatus(metrics.status());
  Json body;
  Json items = Json::array();
  bool more = metrics->size() > static_cast<size_t>(*limit);
  if (more) metrics->resize(static_cast<size_t>(*limit));
  for (const MetricId& m : *metrics) {
    items.push_back({{"namespace", m.ns}, {"metric", m.metric},
                     {"dimensions", DimensionsJson(m.dimensions)}});
  }
  body["metrics"] = std::move(items);
  if (more) {
    const MetricId& last = metrics->back();
    nlohmann::json dims = nlohmann::json::object();
    for (const model::Dimension& d : last.dimensions) dims[d.name] = d.value;
    body["next"] = EncodeToken(CursorKind::kListMetrics, MetricListingBinding(query, since_text),
                               {{"n", last.ns}, {"m", last.metric}, {"d", dims}});
  }
  return Reply(200, body);
}

}  // namespace trainwatch::api
