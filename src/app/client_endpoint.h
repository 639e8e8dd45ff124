#pragma once
// The run's endpoint for the training process itself. The Python client
// (python/trainwatch, docs/python.md) finds it through the environment and
// sends its metrics and tensor statistics to it as `POST /api/v1/samples`
// (docs/api.md), on loopback, while the job runs. What it accepts goes to the
// run's sink, the one way in (this run's ingest, or the server the run sends
// its data to, through the same spool), so the store and the rules see it as
// they see the metrics of the job's lines; the job's last values of its own
// metrics join its FinalMetricDataList (job::TrainingRun::NoteSentMetrics).
//
//   auto endpoint = ClientEndpoint::Start(sink, version);
//   spec.runner_environment = (*endpoint)->Environment(python_dir);
//   auto run = job::TrainingRun::Create(spec, sink);
//   (*endpoint)->Attach(run->get());
//   (*run)->AddObserver(endpoint->get());   // closes when the process exits
//   (*run)->Run();
//   endpoint->reset();   // before the run is destroyed
//
// As the run's observer it closes when the process exits, after answering
// the requests in flight: what the process sent is stored before the job's
// end is written, so the rules and the final metrics have all of it.
//
// Put is thread-safe; Start, Attach, OnTrainingExited (the run) and the
// destructor come from the thread that runs the job.

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "app/serve.h"
#include "job/training_run.h"
#include "model/sinks.h"

namespace trainwatch::app {

class ClientEndpoint final : public model::SampleSink, public job::JobObserver {
 public:
  // Listens on 127.0.0.1, on a free port. `sink` must outlive the endpoint.
  static absl::StatusOr<std::unique_ptr<ClientEndpoint>> Start(model::SampleSink* sink,
                                                               const std::string& version);
  ~ClientEndpoint() override;

  // "http://127.0.0.1:PORT" (a run's stops listening when its process exits)
  const std::string& url() const { return url_; }
  // For the training process: TRAINWATCH_RUNNER_URL, and PYTHONPATH with
  // `python_dir` (where the client package is; empty: left as it is) first.
  std::map<std::string, std::string> Environment(const std::string& python_dir) const;
  // The run whose final metrics take what its process sends (null: none).
  // It must stay alive until it is detached or the endpoint is destroyed.
  void Attach(job::TrainingRun* run) { run_.store(run); }

  absl::Status Put(const model::SampleBatch& batch) override;
  void OnTrainingExited(const model::JobRecord& job, const capture::ExitStatus& status) override;

 private:
  explicit ClientEndpoint(model::SampleSink* sink) : sink_(sink) {}

  model::SampleSink* const sink_;
  std::atomic<job::TrainingRun*> run_{nullptr};
  std::string url_;
  std::unique_ptr<Serving> serving_;  // last: stopped first
};

}  // namespace trainwatch::app
