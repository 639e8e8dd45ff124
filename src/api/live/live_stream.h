#pragma once
// GET /api/v1/live: the dashboard's live updates as Server-Sent Events
// (docs/api.md, "Dashboard"), read from a LiveHub.
//
//   retry: 1000
//
//   id: 5f0c...e1.42
//   event: samples
//   data: {"job":"mnist-7","series":[{"namespace":..,"t":[..],"v":[..]}]}
//
// Events: `samples` (new points of the job's series), `logs` (new events of
// one of its log streams), `job` (the record as GET /api/v1/jobs/NAME answers
// it, whenever it changed), `reset` (the reader's position is unknown or no
// longer held, or it fell too far behind: refetch, then go on). Each carries
// an `id:`: a reconnect with Last-Event-ID resumes right after it.
// What one Pull finds is sent coalesced: consecutive entries of one job and
// kind (and log stream) as one event (id: the last entry's), one `job` event
// per job.

#include <memory>
#include <optional>
#include <string>

#include "api/backend.h"
#include "api/http.h"
#include "api/live/live_hub.h"
#include "util/mutex.h"

namespace trainwatch::api::live {

// The most `job` parameters one stream may name.
inline constexpr size_t kMaxLiveJobs = 100;

class LiveApi {
 public:
  // `hub` must outlive the LiveApi and its streams; `jobs` (null: `job`
  // events carry {"name"} only) too.
  LiveApi(LiveHub* hub, JobsBackend* jobs) : hub_(hub), jobs_(jobs) {}

  static bool Serves(const HttpRequest& request) { return request.Path() == "/api/v1/live"; }
  // A streaming response, or 400/405 in the native API's error shape.
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  LiveHub* hub_;
  JobsBackend* jobs_;
};

// One client's stream (ResponseStream): its filter and position in the hub.
class LiveStream final : public ResponseStream {
 public:
  // `last_event_id`: the client's Last-Event-ID, if it sent one.
  LiveStream(LiveHub* hub, JobsBackend* jobs, LiveHub::Filter filter,
             std::optional<std::string> last_event_id);
  ~LiveStream() override;

  void Start(std::function<void()> wake) override;
  std::string Pull(size_t max_bytes) override;
  std::string Heartbeat() override { return ": ping\n\n"; }
  void Close() override;

 private:
  std::string EventId(uint64_t seq) const;
  std::string Render(const LiveHub::Read& read);

  LiveHub* const hub_;
  JobsBackend* const jobs_;
  const LiveHub::Filter filter_;
  const std::optional<std::string> last_event_id_;
  util::Mutex mu_;
  std::optional<uint64_t> waiter_ ABSL_GUARDED_BY(mu_);
  bool started_ = false;     // retry sent, position set
  std::string start_reset_;  // a reset owed from Start (unknown Last-Event-ID)
  uint64_t position_ = 0;
};

}  // namespace trainwatch::api::live
