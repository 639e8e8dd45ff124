#include "job/local_jobs.h"

#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stop_token>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "job/training_run.h"
#include "nlohmann/json.hpp"
#include "profiler/profiler_options.h"
#include "util/log.h"
#include "util/mutex.h"

extern char** environ;

namespace trainwatch::job {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// SM_HP_<NAME>, SM_CHANNEL_<NAME>: upper case, anything but letters and digits as '_'.
std::string EnvSuffix(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : '_';
  return out;
}

absl::Status WriteJson(const fs::path& path, const Json& j) {
  std::ofstream out(path, std::ios::trunc);
  out << j.dump(2) << "\n";
  if (!out) return absl::UnavailableError(absl::StrFormat("cannot write \"%s\"", path.string()));
  return absl::OkStatus();
}

int CountGpus() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        std::isdigit(static_cast<unsigned char>(name[6]))) {
      ++n;
    }
  }
  return n;
}

// tar -czf OUT -C DIR . ; the model's archive as SageMaker uploads it.
absl::Status PackModel(const fs::path& model_dir, const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out.parent_path(), ec);
  if (ec) return absl::UnavailableError(absl::StrFormat("cannot create \"%s\": %s", out.parent_path().string(), ec.message()));
  std::vector<std::string> args = {"tar", "-czf", out.string(), "-C", model_dir.string(), "."};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, "tar", nullptr, nullptr, argv.data(), environ) != 0) {
    return absl::UnavailableError("cannot run tar to pack the model");
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(absl::StrFormat("tar could not pack %s", model_dir.string()));
  }
  return absl::OkStatus();
}

}  // namespace

struct LocalJobs::Running {
  std::unique_ptr<TrainingRun> runner;
  std::atomic<bool> done{false};
  absl::Status error;  // Run's own failure (before the job could run); set before done
  // Last: joined before the runner it uses is destroyed. A stop requested on
  // it asks the run to stop (TrainingRun::RequestStop).
  std::jthread thread;
};

LocalJobs::LocalJobs(std::string data_dir, model::TelemetrySink* sink, const util::Clock* clock)
    : data_dir_(std::move(data_dir)), sink_(sink), clock_(clock) {}

LocalJobs::~LocalJobs() {
  util::MutexLock lock(mu_);
  for (auto& [name, r] : running_) r->thread.request_stop();
  for (auto& [name, r] : running_) {
    if (r->thread.joinable()) r->thread.join();
  }
}

void LocalJobs::SetRunnerEnvironment(std::map<std::string, std::string> env) {
  util::MutexLock lock(mu_);
  runner_environment_ = std::move(env);
}

std::string LocalJobs::JobDir(const std::string& name) const {
  return data_dir_ + "/jobs/" + name;
}

void LocalJobs::Reap() {
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->second->done) {
      if (it->second->thread.joinable()) it->second->thread.join();
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

bool LocalJobs::Stop(const std::string& name, std::string message) {
  util::MutexLock lock(mu_);
  auto it = running_.find(absl::AsciiStrToLower(name));
  if (it == running_.end() || it->second->done) return false;
  it->second->runner->RequestStop(std::move(message));
  return true;
}

absl::Status LocalJobs::Signal(const std::string& name, int signo) {
  util::MutexLock lock(mu_);
  auto it = running_.find(absl::AsciiStrToLower(name));
  if (it == running_.end() || it->second->done) {
    return absl::NotFoundError(absl::StrFormat("job %s does not run in this server", name));
  }
  return it->second->runner->Signal(signo);
}

absl::StatusOr<model::JobRecord> LocalJobs::Start(const TrainingJobSpec& spec) {
  if (spec.entrypoint.empty()) {
    return absl::InvalidArgumentError(
        "ContainerEntrypoint is required when no container runtime is configured");
  }
  absl::StatusOr<std::optional<model::JobRecord>> existing = sink_->GetJob(spec.name);
  if (!existing.ok()) return existing.status();
  if (existing->has_value()) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "Training job names must be unique within an AWS account and region, and a training "
        "job with this name already exists (%s)",
        (*existing)->arn));
  }

  // The folder, laid out like /opt/ml.
  const fs::path dir = JobDir(spec.name);
  std::error_code ec;
  for (const char* sub : {"input/config", "input/data", "model", "output/data", "checkpoints"}) {
    fs::create_directories(dir / sub, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrFormat("cannot create \"%s\": %s",
                                                    (dir / sub).string(), ec.message()));
    }
  }
  const std::string host = "algo-1";
  Json hps = Json::object();
  for (const auto& [k, v] : spec.hyperparameters) hps[k] = v;
  Json resource = {{"current_host", host}, {"hosts", {host}}, {"network_interface_name", "eth0"}};
  Json input_config = Json::object();
  Json channel_dirs = Json::object();
  Json channel_names = Json::array();
  std::map<std::string, std::string> env;
  for (const TrainingJobSpec::Channel& c : spec.channels) {
    const fs::path channel_dir = dir / "input/data" / c.name;
    fs::remove_all(channel_dir, ec);
    if (c.uri.rfind("file://", 0) == 0) {
      fs::create_directory_symlink(c.uri.substr(7), channel_dir, ec);
    } else {
      // An s3:// channel is not fetched: the folder is there, empty.
      fs::create_directories(channel_dir, ec);
      util::LogWarning(absl::StrFormat(
          "job %s: channel %s (%s) is not downloaded (no object storage configured); use a "
          "file:// URI to give a local folder",
          spec.name, c.name, c.uri));
    }
    Json ic = {{"TrainingInputMode", spec.input_mode},
               {"S3DistributionType", "FullyReplicated"},
               {"RecordWrapperType", "None"}};
    if (!c.content_type.empty()) ic["ContentType"] = c.content_type;
    input_config[c.name] = ic;
    channel_dirs[c.name] = channel_dir.string();
    channel_names.push_back(c.name);
    env["SM_CHANNEL_" + EnvSuffix(c.name)] = channel_dir.string();
  }
  for (const auto& [file, j] : std::initializer_list<std::pair<const char*, Json>>{
           {"hyperparameters.json", hps},
           {"resourceconfig.json", resource},
           {"inputdataconfig.json", input_config}}) {
    if (absl::Status s = WriteJson(dir / "input/config" / file, j); !s.ok()) return s;
  }

  // Script mode's environment.
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int gpus = CountGpus();
  env["SM_MODEL_DIR"] = (dir / "model").string();
  env["SM_OUTPUT_DIR"] = (dir / "output").string();
  env["SM_OUTPUT_DATA_DIR"] = (dir / "output/data").string();
  env["SM_INPUT_DIR"] = (dir / "input").string();
  env["SM_INPUT_CONFIG_DIR"] = (dir / "input/config").string();
  env["SM_CHANNELS"] = channel_names.dump();
  env["SM_HPS"] = hps.dump();
  for (const auto& [k, v] : spec.hyperparameters) env["SM_HP_" + EnvSuffix(k)] = v;
  env["SM_CURRENT_HOST"] = host;
  env["SM_HOSTS"] = Json::array({host}).dump();
  env["SM_NUM_CPUS"] = std::to_string(cpus);
  env["SM_NUM_GPUS"] = std::to_string(gpus);
  env["SM_TRAINING_ENV"] = Json{{"job_name", spec.name},
                                {"current_host", host},
                                {"hosts", {host}},
                                {"hyperparameters", hps},
                                {"channel_input_dirs", channel_dirs},
                                {"input_data_config", input_config},
                                {"resource_config", resource},
                                {"input_dir", env["SM_INPUT_DIR"]},
                                {"input_config_dir", env["SM_INPUT_CONFIG_DIR"]},
                                {"model_dir", env["SM_MODEL_DIR"]},
                                {"output_dir", env["SM_OUTPUT_DIR"]},
                                {"output_data_dir", env["SM_OUTPUT_DATA_DIR"]},
                                {"num_cpus", cpus},
                                {"num_gpus", gpus}}
                               .dump();
  for (const auto& [k, v] : spec.environment) env[k] = v;  // the job's own win

  RunSpec run;
  run.name = spec.name;
  run.command = spec.entrypoint;
  run.command.insert(run.command.end(), spec.arguments.begin(), spec.arguments.end());
  for (const auto& [k, v] : spec.hyperparameters) {
    run.command.push_back("--" + k);
    run.command.push_back(v);
  }
  run.metric_definitions = spec.metric_definitions;
  run.max_runtime_s = spec.max_runtime_s;
  run.working_dir = dir.string();
  run.environment = env;
  run.hyperparameters = spec.hyperparameters;
  run.request_json = spec.request_json;
  run.rule_configurations = spec.rule_configurations;
  run.step_metric = spec.step_metric;
  {
    util::MutexLock lock(mu_);
    run.runner_environment = runner_environment_;
  }
  run.stdout_fd = -1;  // the output is in the job's log stream
  run.stderr_fd = -1;
  run.stdin_fd = -1;
  run.handle_signals = false;  // signals are the server's
  int64_t interval_ms = spec.profiling_interval_ms;
  if (interval_ms > 0 && !profiler::ValidateProfileInterval(interval_ms).ok()) interval_ms = 500;
  run.profiling_interval_ms = interval_ms;

  JobRunnerOptions options;
  options.clock = clock_;
  absl::StatusOr<std::unique_ptr<TrainingRun>> runner =
      TrainingRun::Create(std::move(run), sink_, options);
  if (!runner.ok()) return runner.status();
  auto r = std::make_shared<Running>();
  r->runner = *std::move(runner);
  std::shared_ptr<Running> raw = r;
  const std::string output_path = spec.output_path;
  const std::string name = spec.name;
  {
    util::MutexLock lock(mu_);
    Reap();
    running_[absl::AsciiStrToLower(name)] = r;
    raw->thread = std::jthread([job = raw.get(), dir, output_path, name](std::stop_token stop) {
      absl::StatusOr<RunResult> result = [&] {
        // Only while the run runs: a stop after it has nothing to stop.
        std::stop_callback on_stop(stop, [job] { job->runner->RequestStop(); });
        return job->runner->Run();
      }();
      if (!result.ok()) {
        job->error = result.status();
      } else if (output_path.rfind("file://", 0) == 0) {
        const fs::path out = fs::path(output_path.substr(7)) / name / "output/model.tar.gz";
        if (absl::Status s = PackModel(dir / "model", out); !s.ok()) {
          util::LogWarning(absl::StrFormat("job %s: %s", name, s.message()));
        }
      }
      job->done = true;
    });
  }

  // Answer once the record is stored, as SageMaker's does.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<std::optional<model::JobRecord>> job = sink_->GetJob(name);
    if (job.ok() && job->has_value()) return **job;
    if (raw->done) {
      return raw->error.ok() ? absl::InternalError("the job ended before it was recorded")
                             : raw->error;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return absl::UnavailableError(absl::StrFormat("job %s was not recorded within 30 s", name));
}

}  // namespace trainwatch::job
