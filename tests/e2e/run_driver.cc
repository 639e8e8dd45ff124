// tw_run_driver: `trainwatch run` without the store, for process-level tests of the
// runner (exit status, passthrough, Ctrl-C and SIGTERM to the runner process, kill -9).
// Telemetry goes to an in-memory sink; the final record is summarised in --record FILE.
//
//   tw_run_driver [--name N] [--metric NAME=REGEX]... [--max-runtime S] [--grace-ms MS]
//                 [--record FILE] -- COMMAND [ARGS...]
//
// Exits with the command's status, or 2 (one line on stderr) when the job cannot run.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "extract/definitions.h"
#include "job/job_runner.h"
#include "model/testing/memory_telemetry_sink.h"

namespace {

using namespace trainwatch;

int Fail(const std::string& message) {
  std::fprintf(stderr, "tw_run_driver: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  job::RunSpec spec;
  spec.stop_grace_ms = 2000;
  spec.drain_after_exit_ms = 200;
  std::string record_path;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--") {
      ++i;
      break;
    } else if (arg == "--name") {
      spec.name = value();
    } else if (arg == "--metric") {
      auto def = extract::ParseMetricFlag(value());
      if (!def.ok()) return Fail(std::string(def.status().message()));
      spec.metric_definitions.push_back(*def);
    } else if (arg == "--max-runtime") {
      spec.max_runtime_s = std::atoll(value().c_str());
    } else if (arg == "--grace-ms") {
      spec.stop_grace_ms = std::atoll(value().c_str());
    } else if (arg == "--record") {
      record_path = value();
    } else {
      return Fail("unknown option " + arg);
    }
  }
  for (; i < argc; ++i) spec.command.push_back(argv[i]);

  model::testing::MemoryTelemetrySink sink;
  auto runner = job::JobRunner::Create(spec, &sink);
  if (!runner.ok()) return Fail(std::string(runner.status().message()));
  auto result = (*runner)->Run();
  if (!result.ok()) return Fail(std::string(result.status().message()));

  if (!record_path.empty()) {
    const model::JobRecord& job = result->job;
    std::vector<std::string> transitions;
    for (const auto& t : job.transitions) {
      transitions.emplace_back(model::SecondaryStatusName(t.status));
    }
    std::ofstream out(record_path);
    out << "status=" << model::JobStatusName(job.status) << "\n"
        << "secondary=" << model::SecondaryStatusName(job.secondary_status) << "\n"
        << "transitions=" << absl::StrJoin(transitions, ",") << "\n"
        << "events=" << sink.Events({"/aws/sagemaker/TrainingJobs", job.log_stream}).size()
        << "\n";
    for (const auto& m : job.final_metrics) out << "final " << m.name << "=" << m.value << "\n";
  }
  return result->exit_code;
}
