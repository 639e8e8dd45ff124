#pragma once
// LocalJobs: SageMaker CreateTrainingJob run by `trainwatch server` as a local
// process, as spec/aws-api.md §7.2a says (no container runtime):
//
// - the command is ContainerEntrypoint + ContainerArguments, then each
//   hyperparameter as `--key value` (script mode's convention);
// - it runs in the job's own folder, <data>/jobs/<name>/, laid out like /opt/ml:
//   input/config/{hyperparameters,resourceconfig,inputdataconfig}.json,
//   input/data/<channel>/ (a file:// channel is a link to it), model/, output/,
//   output/data/, checkpoints/;
// - with script mode's SM_* environment pointing there, plus the job's Environment;
// - when it ends, model/ is packed into <S3OutputPath>/<name>/output/model.tar.gz
//   when S3OutputPath is a file:// URI.
//
// Each job runs on a thread of the server as a TrainingRun (the same wiring
// as `trainwatch run`: job/training_run.h), writing to the server's own
// ingest (the server holds the data folder), with the profiler at
// ProfilerConfig's interval (500 ms when that is not one the profiler
// takes). Thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "job/training_job_spec.h"
#include "model/job_record.h"
#include "model/sinks.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace trainwatch::job {

class LocalJobs {
 public:
  // `sink` (the server's ingest) and `clock` must outlive this.
  LocalJobs(std::string data_dir, model::TelemetrySink* sink, const util::Clock* clock);
  // Stops the jobs still running (as StopTrainingJob does) and waits for them.
  ~LocalJobs();

  // Starts the job and returns its record once stored (Starting or later).
  // InvalidArgument without ContainerEntrypoint; AlreadyExists for a name taken.
  absl::StatusOr<model::JobRecord> Start(const TrainingJobSpec& spec);
  // True when `name` runs here; it is then being stopped (`message`, when
  // not empty, is its Stopped status's message).
  bool Stop(const std::string& name, std::string message = "");
  // Sends `signo` to the training process of `name`; NotFound when it does
  // not run here.
  absl::Status Signal(const std::string& name, int signo);

  // Added to the environment of every job started from now on, unrecorded
  // (RunSpec::runner_environment): where the Python client sends what the
  // script logs (the server's own URL) and its PYTHONPATH.
  void SetRunnerEnvironment(std::map<std::string, std::string> env);

  // The job's folder: <data>/jobs/<name>.
  std::string JobDir(const std::string& name) const;

 private:
  struct Running;
  void Reap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string data_dir_;
  model::TelemetrySink* sink_;
  const util::Clock* clock_;
  util::Mutex mu_;
  std::map<std::string, std::shared_ptr<Running>> running_ ABSL_GUARDED_BY(mu_);  // by lower-cased name
  std::map<std::string, std::string> runner_environment_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainwatch::job
