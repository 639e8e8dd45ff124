#include "agent/remote_sink.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "agent/signing.h"
#include "api/native/agent_codec.h"
#include "api/snappy_body.h"
#include "nlohmann/json.hpp"
#include "util/log.h"
#include "util/shared_library.h"
#include "util/mutex.h"
#include "util/stop_wait.h"

namespace trainwatch::agent {
namespace {

size_t CollectBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One header line of the answer: "Name: value\r\n", or a status line, which
// starts the headers over (a 100 Continue or a redirect comes first).
size_t CollectHeader(char* data, size_t size, size_t n, void* out) {
  auto* headers = static_cast<std::vector<std::pair<std::string, std::string>>*>(out);
  std::string_view line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {
    headers->clear();
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers->emplace_back(absl::AsciiStrToLower(std::string(line.substr(0, colon))),
                          std::string(value));
  }
  return size * n;
}

// The server's {"error": {"message": ...}}, or the body's start.
std::string ErrorMessage(const HttpResult& r) {
  if (r.status == 0) return r.error;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string()) {
    return absl::StrFormat("HTTP %d: %s", r.status, j["error"]["message"].get<std::string>());
  }
  return absl::StrFormat("HTTP %d: %s", r.status, r.body.substr(0, 200));
}

// 4xx other than timeout, throttling and refused credentials: sending the
// batch again cannot help. A batch whose credentials were refused (401, 403)
// waits in the spool: the server's auth file or clock may be put right.
bool RefusedForGood(long status) {
  return status >= 400 && status < 500 && status != 408 && status != 429 && status != 401 &&
         status != 403;
}

// Whether a health answer lists snappy among the bodies' content encodings.
bool ListsSnappy(const std::string& health) {
  nlohmann::json j = nlohmann::json::parse(health, nullptr, false);
  if (!j.is_object() || !j.contains("content_encodings") || !j["content_encodings"].is_array()) {
    return false;
  }
  for (const nlohmann::json& e : j["content_encodings"]) {
    if (e.is_string() && e.get<std::string>() == "snappy") return true;
  }
  return false;
}

absl::Status RefusalStatus(const HttpResult& r) {
  std::string message = ErrorMessage(r);
  switch (r.status) {
    case 409: return absl::AlreadyExistsError(message);
    case 404: return absl::NotFoundError(message);
    default: return absl::InvalidArgumentError(message);
  }
}

// libcurl, loaded the first time a request is made rather than linked: it and
// its two dozen dependencies (TLS, Kerberos, LDAP, IDN...) were 27 of the
// binary's 75 shared libraries, and every trainwatch command paid for them at
// start (`trainwatch version` on the 2-core reference machine: 44 ms and 1,250
// page faults linked, 32 ms and 940 loaded on use; BENCHMARKS.md), while only
// runs that talk to a server use it.
struct Curl {
  CURLcode (*global_init)(long flags) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL* curl, CURLoption option, ...) = nullptr;
  CURLcode (*easy_perform)(CURL* curl) = nullptr;
  void (*easy_reset)(CURL* curl) = nullptr;
  CURLcode (*easy_getinfo)(CURL* curl, CURLINFO info, ...) = nullptr;
  const char* (*easy_strerror)(CURLcode code) = nullptr;
  void (*easy_cleanup)(CURL* curl) = nullptr;
  curl_slist* (*slist_append)(curl_slist* list, const char* text) = nullptr;
  void (*slist_free_all)(curl_slist* list) = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
  std::unique_ptr<util::SharedLibrary> library;
};

constexpr char kCurlLibrary[] = "libcurl.so.4";

const Curl& LoadCurl() {
  static const Curl* curl = [] {
    auto* c = new Curl();  // for the process's lifetime, as the library stays loaded
    absl::StatusOr<std::unique_ptr<util::SharedLibrary>> library =
        util::SharedLibrary::Open(kCurlLibrary);
    if (!library.ok()) {
      c->error = absl::StrFormat(
          "cannot load %s (%s), which trainwatch needs to talk to a server; install it (Debian: "
          "apt-get install libcurl4)",
          kCurlLibrary, library.status().message());
      return c;
    }
    c->library = *std::move(library);
    std::string missing;
    auto bind = [&](auto* fn, const char* name) { c->library->Require(fn, name, &missing); };
    bind(&c->global_init, "curl_global_init");
    bind(&c->easy_init, "curl_easy_init");
    bind(&c->easy_setopt, "curl_easy_setopt");
    bind(&c->easy_perform, "curl_easy_perform");
    bind(&c->easy_reset, "curl_easy_reset");
    bind(&c->easy_getinfo, "curl_easy_getinfo");
    bind(&c->easy_strerror, "curl_easy_strerror");
    bind(&c->easy_cleanup, "curl_easy_cleanup");
    bind(&c->slist_append, "curl_slist_append");
    bind(&c->slist_free_all, "curl_slist_free_all");
    if (!missing.empty()) {
      c->error = absl::StrFormat("%s lacks functions that trainwatch needs:%s", kCurlLibrary,
                                 missing);
      return c;
    }
    c->global_init(CURL_GLOBAL_DEFAULT);
    return c;
  }();
  return *curl;
}

}  // namespace

std::string NewAgentName() {
  char host[256] = "host";
  if (::gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "host");
  std::random_device rd;
  return absl::StrFormat("%s-%d-%08x", host, ::getpid(), rd());
}

const std::string* HttpResult::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return &v;
  }
  return nullptr;
}

HttpClient::~HttpClient() {
  if (handle_ != nullptr) LoadCurl().easy_cleanup(static_cast<CURL*>(handle_));
}

HttpResult HttpClient::Call(const std::string& method, const std::string& url,
                            std::string_view body, int64_t connect_timeout_ms, int64_t timeout_ms,
                            std::string_view content_encoding) {
  Headers headers;
  headers.content_encoding = content_encoding;
  return Call(method, url, body, connect_timeout_ms, timeout_ms, headers);
}

HttpResult HttpClient::Call(const std::string& method, const std::string& url,
                            std::string_view body, int64_t connect_timeout_ms, int64_t timeout_ms,
                            const Headers& given) {
  HttpResult result;
  const Curl& lib = LoadCurl();
  if (!lib.error.empty()) {
    result.error = lib.error;
    return result;
  }
  if (handle_ == nullptr) handle_ = lib.easy_init();
  CURL* curl = static_cast<CURL*>(handle_);
  if (curl == nullptr) {
    result.error = "cannot start an HTTP client (curl_easy_init)";
    return result;
  }
  // Every option back to its default; the open connection stays.
  lib.easy_reset(curl);
  char error[CURL_ERROR_SIZE] = "";
  struct curl_slist* headers = lib.slist_append(
      nullptr, absl::StrFormat("Content-Type: %s", given.content_type).c_str());
  if (!given.content_encoding.empty()) {
    headers = lib.slist_append(
        headers, absl::StrFormat("Content-Encoding: %s", given.content_encoding).c_str());
  }
  for (const std::string& line : given.extra) headers = lib.slist_append(headers, line.c_str());
  if (given.sign) {
    for (const std::string& line :
         SigningHeaderLines(EnvironmentSigning(), "monitoring", method, url, body,
                            given.content_type)) {
      headers = lib.slist_append(headers, line.c_str());
    }
  }
  lib.easy_setopt(curl, CURLOPT_URL, url.c_str());
  lib.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  lib.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  lib.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout_ms));
  lib.easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  lib.easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, CollectBody);
  lib.easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  lib.easy_setopt(curl, CURLOPT_HEADERFUNCTION, CollectHeader);
  lib.easy_setopt(curl, CURLOPT_HEADERDATA, &result.headers);
  if (method == "POST" || method == "PUT") {
    lib.easy_setopt(curl, CURLOPT_POST, 1L);
    lib.easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    lib.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    if (method == "PUT") lib.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
  } else if (method == "HEAD") {
    lib.easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method == "DELETE") {
    lib.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
  }
  CURLcode code = lib.easy_perform(curl);
  if (code == CURLE_OK) {
    lib.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  } else {
    result.error = error[0] != '\0' ? std::string(error) : lib.easy_strerror(code);
  }
  // The error buffer and the header list are this call's.
  lib.easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  lib.easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  lib.slist_free_all(headers);
  return result;
}

HttpResult HttpCall(const std::string& method, const std::string& url, const std::string& body,
                    int64_t connect_timeout_ms, int64_t timeout_ms) {
  HttpClient client;
  return client.Call(method, url, body, connect_timeout_ms, timeout_ms);
}

namespace {

constexpr std::string_view kDataFolderServer = "server of this data folder";
constexpr std::string_view kOtherServer = "server named by --endpoint";

}  // namespace

std::optional<SpoolTarget> ReadSpoolTarget(const std::string& spool_dir) {
  std::ifstream in(spool_dir + "/target");
  SpoolTarget target;
  std::string kind;
  if (!std::getline(in, target.endpoint) || target.endpoint.empty()) return std::nullopt;
  std::getline(in, kind);
  target.server_of_data_folder = kind != kOtherServer;
  return target;
}

absl::StatusOr<std::unique_ptr<RemoteSink>> RemoteSink::Create(RemoteSinkOptions options) {
  while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
  absl::StatusOr<std::unique_ptr<Spool>> spool =
      Spool::Open(options.spool_dir, options.spool_max_bytes);
  if (!spool.ok()) return spool.status();
  {
    // Written once the spool is ours: where its batches go.
    std::ofstream target(options.spool_dir + "/target", std::ios::trunc);
    target << options.endpoint << "\n"
           << (options.server_of_data_folder ? kDataFolderServer : kOtherServer) << "\n";
    if (!target.flush()) {
      return absl::InternalError(absl::StrFormat("cannot write %s/target", options.spool_dir));
    }
  }
  std::unique_ptr<RemoteSink> sink(new RemoteSink(std::move(options), *std::move(spool)));
  sink->sender_ =
      std::jthread([s = sink.get()](std::stop_token stop) { s->SendLoop(std::move(stop)); });
  return sink;
}

RemoteSink::RemoteSink(RemoteSinkOptions options, std::unique_ptr<Spool> spool)
    : options_(std::move(options)), spool_(std::move(spool)) {
  delivered_seq_ = spool_->acked();
}

// sender_, the last member, is destroyed first: its request_stop() wakes the
// sender (SendLoop's stop_callback interrupts the spool), and it joins.
RemoteSink::~RemoteSink() = default;

absl::StatusOr<int64_t> RemoteSink::Enqueue(api::AgentBatch batch) {
  batch.agent = options_.agent;
  return spool_->Append([&batch](int64_t seq) {
    batch.seq = seq;
    return api::EncodeAgentBatch(batch);
  });
}

absl::Status RemoteSink::Put(const model::SampleBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  // A value the server would refuse is refused here, before the batch is
  // spooled: the server refuses a batch whole, and the writer puts the
  // series one by one after this answer, so that only that series is lost
  // (as with a store of its own).
  for (const model::SeriesSamples& s : batch.series) {
    if (!model::HasOnlyStorableValues(s)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "series %s: a value is NaN, infinite or beyond 2^360 in magnitude; only finite "
          "numbers up to that can be stored",
          s.key.ToString()));
    }
  }
  api::AgentBatch b;
  b.kind = api::AgentBatch::Kind::kSamples;
  b.samples = batch;
  return Enqueue(std::move(b)).status();
}

absl::Status RemoteSink::PutLogs(const model::LogBatch& batch) {
  if (batch.events.empty()) return absl::OkStatus();
  api::AgentBatch b;
  b.kind = api::AgentBatch::Kind::kLogs;
  b.logs = batch;
  return Enqueue(std::move(b)).status();
}

absl::Status RemoteSink::UpdateJob(const model::JobRecord& job) {
  api::AgentBatch b;
  b.kind = api::AgentBatch::Kind::kUpdateJob;
  b.job = job;
  return Enqueue(std::move(b)).status();
}

absl::Status RemoteSink::CreateJob(const model::JobRecord& job) {
  api::AgentBatch b;
  b.kind = api::AgentBatch::Kind::kCreateJob;
  b.job = job;
  absl::StatusOr<int64_t> seq = Enqueue(std::move(b));
  if (!seq.ok()) return seq.status();
  util::MutexLock lock(mu_);
  const bool done = lock.WaitFor(delivered_cv_,
                                 std::chrono::milliseconds(options_.create_timeout_ms),
                                 [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                                   return delivered_seq_ >= *seq || credentials_refused_;
                                 });
  if (delivered_seq_ < *seq && credentials_refused_) {
    return absl::UnauthenticatedError(
        absl::StrFormat("the server at %s refused the job record: %s", options_.endpoint,
                        last_error_));
  }
  if (!done) {
    return absl::UnavailableError(absl::StrFormat(
        "the server at %s did not take the job record within %d s (%s); is `trainwatch server` "
        "running?",
        options_.endpoint, options_.create_timeout_ms / 1000, last_error_));
  }
  auto refused = refused_.find(*seq);
  if (refused != refused_.end()) return refused->second;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<model::JobRecord>> RemoteSink::GetJob(std::string_view name) {
  HttpResult r = HttpCall("GET", options_.endpoint + "/api/v1/jobs/" + std::string(name), "",
                          options_.connect_timeout_ms, options_.request_timeout_ms);
  if (r.status == 404) return std::nullopt;
  if (r.status != 200) {
    return absl::UnavailableError(absl::StrFormat("asking the server at %s for job \"%s\": %s",
                                                  options_.endpoint, name, ErrorMessage(r)));
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  absl::StatusOr<model::JobRecord> job = api::JobRecordFromJson(j);
  if (!job.ok()) return job.status();
  return std::optional<model::JobRecord>(*std::move(job));
}

absl::StatusOr<bool> RemoteSink::Heartbeat(const std::string& job, int host,
                                           const model::RunnerIdentity& runner) {
  // Short: the next beat follows in a second, and the run's end waits for this one.
  util::MutexLock lock(heartbeat_mu_);
  HttpResult r = heartbeat_client_.Call("POST", options_.endpoint + "/api/v1/agent/heartbeat",
                                        api::EncodeAgentHeartbeat({job, host, runner}),
                                        options_.connect_timeout_ms,
                                        std::min<int64_t>(options_.request_timeout_ms, 5000));
  if (r.status != 200) {
    return absl::UnavailableError(absl::StrFormat("heartbeat to the server at %s: %s",
                                                  options_.endpoint, ErrorMessage(r)));
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("stop_requested") || !j["stop_requested"].is_boolean()) {
    return absl::UnavailableError(absl::StrFormat(
        "the server at %s answered a heartbeat with %s", options_.endpoint, r.body.substr(0, 200)));
  }
  return j["stop_requested"].get<bool>();
}

void RemoteSink::SendLoop(std::stop_token stop) {
  // A stop wakes a wait for the spool's next batch (Front) at once.
  std::stop_callback interrupt(stop, [this] { spool_->Interrupt(); });
  const std::string url = options_.endpoint + "/api/v1/agent/deliver";
  // One connection for every batch while the server keeps it open.
  HttpClient client;
  // Batches go snappy-compressed (about an eighth of their JSON) to a server
  // whose health lists snappy; older servers took only JSON. Asked again
  // after the server could not be reached, and after it refused a compressed
  // batch: it may be another build by then.
  enum class Snappy { kUnknown, kTaken, kNotTaken } server_snappy = Snappy::kUnknown;
  std::string compressed;
  // The front batch goes uncompressed: a compressed copy was refused.
  bool send_plain = false;
  int64_t backoff_ms = 100;
  while (!stop.stop_requested()) {
    absl::StatusOr<std::optional<Spool::Record>> front = spool_->Front(500);
    std::string error;
    bool credentials_refused = false;  // the server answered 401 or 403
    if (!front.ok()) {
      error = std::string(front.status().message());
    } else if (!front->has_value()) {
      continue;
    } else {
      const Spool::Record& record = **front;
      HttpResult r;
      const bool ask = options_.compress && !send_plain && server_snappy == Snappy::kUnknown;
      if (ask) {
        r = client.Call("GET", options_.endpoint + "/api/v1/health", "",
                        options_.connect_timeout_ms,
                        std::min<int64_t>(options_.request_timeout_ms, 5000));
        if (r.status != 0) {
          server_snappy =
              r.status == 200 && ListsSnappy(r.body) ? Snappy::kTaken : Snappy::kNotTaken;
        }
      }
      const bool compress =
          options_.compress && !send_plain && server_snappy == Snappy::kTaken;
      // Unreachable when asked: back off as for a batch (r says why).
      if (!ask || r.status != 0) {
        if (compress) compressed = api::SnappyCompress(record.payload);
        r = client.Call("POST", url, compress ? compressed : record.payload,
                        options_.connect_timeout_ms, options_.request_timeout_ms,
                        compress ? "snappy" : "");
      }
      if (r.status == 0) server_snappy = Snappy::kUnknown;
      if (compress && RefusedForGood(r.status)) {
        // A server that took them may have been replaced by one that does
        // not (an older build reads the body as JSON: 400): this batch goes
        // again uncompressed before any refusal counts, and the next one
        // asks the server again.
        util::LogOnce("remote-sink-compressed-refused",
                      absl::StrFormat("the server at %s refused a compressed batch (%s); "
                                      "sending it uncompressed",
                                      options_.endpoint, ErrorMessage(r)));
        send_plain = true;
        server_snappy = Snappy::kUnknown;
        continue;
      }
      send_plain = false;
      const bool refused = RefusedForGood(r.status);
      if (r.status == 200 || refused) {
        if (refused) {
          util::LogWarning(absl::StrFormat(
              "the server at %s refused batch %d for good (%s); it is dropped",
              options_.endpoint, record.seq, ErrorMessage(r)));
        }
        absl::Status acked = spool_->Ack(record.seq);
        util::MutexLock lock(mu_);
        credentials_refused_ = false;
        if (refused) refused_[record.seq] = RefusalStatus(r);
        if (!acked.ok()) last_error_ = std::string(acked.message());
        delivered_seq_ = record.seq;
        delivered_cv_.notify_all();
        backoff_ms = 100;
        continue;
      }
      error = ErrorMessage(r);
      credentials_refused = r.status == 401 || r.status == 403;
      if (credentials_refused) {
        error = absl::StrFormat(
            "%s; the server wants credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "to a key of its --auth file",
            error);
      }
    }
    {
      util::MutexLock lock(mu_);
      last_error_ = error;
      // CreateJob stops waiting: a run whose credentials are refused ends
      // before its command starts.
      credentials_refused_ = credentials_refused;
      if (credentials_refused_) delivered_cv_.notify_all();
    }
    util::LogOnce("remote-sink-retry",
                  absl::StrFormat("cannot deliver to the server at %s (%s); batches wait in %s "
                                  "and are sent when it answers",
                                  options_.endpoint, error, spool_->dir()));
    util::SleepFor(stop, std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 5000);
  }
}

bool RemoteSink::Drain(
    int64_t timeout_ms,
    const std::function<void(int64_t pending, const std::string& last_error)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto next_report = start + std::chrono::seconds(1);
  while (spool_->pending() > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now - start >= std::chrono::milliseconds(timeout_ms)) return false;
    if (now >= next_report && progress) {
      std::string error;
      {
        util::MutexLock lock(mu_);
        error = last_error_;
      }
      progress(spool_->pending(), error);
      next_report = now + std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

absl::StatusOr<int64_t> DeliverLeftoverSpool(const std::string& dir, const DeliverFn& deliver) {
  absl::StatusOr<std::unique_ptr<Spool>> spool = Spool::Open(dir, INT64_MAX);
  if (!spool.ok()) return spool.status();
  int64_t delivered = 0;
  while (true) {
    absl::StatusOr<std::optional<Spool::Record>> front = (*spool)->Front(0);
    if (!front.ok()) return front.status();
    if (!front->has_value()) break;
    absl::StatusOr<api::AgentBatch> batch = api::DecodeAgentBatch((*front)->payload, SIZE_MAX);
    absl::Status s = batch.ok() ? deliver(*batch).status() : batch.status();
    if (!s.ok()) {
      if (!absl::IsInvalidArgument(s) && !absl::IsAlreadyExists(s) && !absl::IsNotFound(s)) {
        return s;  // the store is in trouble: keep the spool for the next start
      }
      util::LogWarning(absl::StrFormat("spool %s: batch %d is refused (%s) and dropped", dir,
                                       (*front)->seq, s.message()));
    } else {
      ++delivered;
    }
    if (absl::Status acked = (*spool)->Ack((*front)->seq); !acked.ok()) return acked;
  }
  spool->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return delivered;
}

}  // namespace trainwatch::agent
