// Replay speed: `trainwatch rules replay` of a stored 24-hour job profiled
// every 100 ms (target <= 10 s).
//
// Writes HOURS of one finished job into a fresh store with store::BulkLoader:
// every series the profiler publishes for one host of CORES cores and GPUS
// GPUs at 100 ms (5 per core, 26 per host, 10 per GPU: rules_bench_data.h),
// 20 log metrics and the step at 1 s, and one output line a second; the job
// record carries the default rule set. Raw data is kept for every namespace
// (the default keeps job metrics raw for 3 h only, so replay would see just
// the last 3 h of them). Then reopens the folder as a reader, as the command
// does, and times rules::ReplayJob over query::StoreReader.
//
//   cmake --build --preset release --target rules_replay_speed
//   build/release/bench/rules/rules_replay_speed [HOURS=24] [CORES=8] [GPUS=2] [RUNS=1]
//
// Every 2 hours from the second on, the job is starved of input for 10
// minutes (cores busy, GPUs idle), so that rules fire. Prints the load time,
// then per run the replay's wall and CPU seconds, inputs and inputs/s, and the
// statuses; with TW_REPLAY_FINDINGS=FILE, writes the first run's findings and
// statuses there (to compare the verdicts of two builds).

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "query/store_reader.h"
#include "rules/replay.h"
#include "rules_bench_data.h"
#include "store/bulk_loader.h"
#include "store/db.h"
#include "util/status_macros.h"

namespace {

using namespace trainwatch;

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double CpuS() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Raw data kept for every namespace.
store::DbOptions Options(const std::string& dir, store::OpenMode mode) {
  store::DbOptions options;
  options.data_dir = dir;
  options.mode = mode;
  options.retention = store::RetentionPolicy();
  (void)options.retention->AddRule("*", "raw=forever");
  return options;
}

absl::Status Load(const std::string& dir, const model::JobRecord& job, int cores, int gpus,
                  int64_t span_ms, uint64_t* samples, int64_t* lines) {
  store::DbOptions options = Options(dir, store::OpenMode::kWriter);
  options.bulk_load = true;
  TW_ASSIGN_OR_RETURN(std::unique_ptr<store::Db> db, store::Db::Open(options));
  TW_RETURN_IF_ERROR(db->CreateJob(job));
  TW_ASSIGN_OR_RETURN(std::unique_ptr<store::BulkLoader> loader, store::BulkLoader::Create(db.get()));
  bench::Noise noise(3);
  const std::vector<bench::ProfilerSeries> series = bench::HostSeries(job.name, cores, gpus, true);
  constexpr int64_t kPiece = 3'600'000;  // an hour of a series per Add
  std::vector<int64_t> t;
  std::vector<double> v;
  for (int64_t from = 0; from < span_ms; from += kPiece) {
    const int64_t to = std::min(span_ms, from + kPiece);
    for (const bench::ProfilerSeries& s : series) {
      t.clear();
      v.clear();
      for (int64_t ms = from + 100; ms <= to; ms += 100) {
        t.push_back(job.creation_ms + ms);
        // Every 2 hours from the second on, 10 minutes starved of input.
        const bool starved = ms >= 3'600'000 && ms % 7'200'000 < 600'000;
        v.push_back(bench::ProfilerValue(s, cores, noise, starved));
      }
      TW_RETURN_IF_ERROR(loader->Add(s.key, t, v));
    }
    const std::vector<model::SeriesKey> metrics = bench::MetricKeys(job.name);
    for (size_t i = 0; i < metrics.size(); ++i) {
      t.clear();
      v.clear();
      for (int64_t ms = from + 1000; ms <= to; ms += 1000) {
        t.push_back(job.creation_ms + ms);
        v.push_back(bench::MetricValue(i, ms / 1000, static_cast<double>(ms) / 1000, noise));
      }
      TW_RETURN_IF_ERROR(loader->Add(metrics[i], t, v));
    }
    model::LogBatch batch{{std::string(model::kTrainingJobsLogGroup), job.log_stream}, {}};
    for (int64_t ms = from + 1000; ms <= to; ms += 1000) {
      batch.events.push_back({job.creation_ms + ms, "step " + std::to_string(ms / 1000) +
                                                        " m0=0.5 m1=1.5 m2=2.5 ..."});
      if (batch.events.size() == 1000) {
        TW_RETURN_IF_ERROR(db->PutLogs(batch));
        *lines += static_cast<int64_t>(batch.events.size());
        batch.events.clear();
      }
    }
    if (!batch.events.empty()) {
      TW_RETURN_IF_ERROR(db->PutLogs(batch));
      *lines += static_cast<int64_t>(batch.events.size());
    }
  }
  TW_RETURN_IF_ERROR(loader->Finish());
  *samples = loader->samples();
  return absl::OkStatus();
}

const char* StatusName(model::RuleStatusKind k) {
  switch (k) {
    case model::RuleStatusKind::kInProgress: return "InProgress";
    case model::RuleStatusKind::kNoIssuesFound: return "NoIssuesFound";
    case model::RuleStatusKind::kIssuesFound: return "IssuesFound";
    default: return "other";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double hours = argc > 1 ? std::atof(argv[1]) : 24;
  const int cores = argc > 2 ? std::atoi(argv[2]) : 8;
  const int gpus = argc > 3 ? std::atoi(argv[3]) : 2;
  const int runs = argc > 4 ? std::atoi(argv[4]) : 1;
  if (hours <= 0 || cores <= 0 || gpus < 0 || runs <= 0) {
    std::fprintf(stderr, "usage: rules_replay_speed [HOURS=24] [CORES=8] [GPUS=2] [RUNS=1]\n");
    return 2;
  }
  char dir_template[] = "/tmp/tw-rules-replay-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  const int64_t span_ms = static_cast<int64_t>(hours * 3'600'000);
  // Recent data (ended an hour ago), as a job replayed the day after.
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  model::JobRecord job = bench::MakeJob("replay-24h", now_ms - 3'600'000 - span_ms, 100);
  job.status = model::JobStatus::kCompleted;
  job.training_end_ms = job.creation_ms + span_ms;
  job.last_modified_ms = *job.training_end_ms;
  int rc = 0;
  uint64_t samples = 0;
  int64_t lines = 0;
  const double load0 = NowS();
  if (absl::Status s = Load(dir, job, cores, gpus, span_ms, &samples, &lines); !s.ok()) {
    std::fprintf(stderr, "load: %s\n", s.ToString().c_str());
    rc = 1;
  } else {
    std::printf("loaded %.1f h: %d cores, %d GPUs, %llu samples, %lld lines in %.1f s\n", hours,
                cores, gpus, static_cast<unsigned long long>(samples),
                static_cast<long long>(lines), NowS() - load0);
    std::fflush(stdout);
  }
  for (int run = 0; run < runs && rc == 0; ++run) {
    absl::StatusOr<std::unique_ptr<store::Db>> db =
        store::Db::Open(Options(dir, store::OpenMode::kReader));
    if (!db.ok()) {
      std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
      rc = 1;
      break;
    }
    query::StoreReader reader(**db);
    absl::StatusOr<std::optional<model::JobRecord>> stored = reader.GetJob(job.name);
    if (!stored.ok() || !stored->has_value()) {
      std::fprintf(stderr, "the job is not in the store\n");
      rc = 1;
      break;
    }
    const double w0 = NowS();
    const double c0 = CpuS();
    absl::StatusOr<rules::ReplayResult> result =
        rules::ReplayJob(**stored, reader, reader, rules::ReplayOptions{});
    const double wall = NowS() - w0;
    const double cpu = CpuS() - c0;
    if (!result.ok()) {
      std::fprintf(stderr, "replay: %s\n", result.status().ToString().c_str());
      rc = 1;
      break;
    }
    std::printf("replay %d: %.2f s wall, %.2f s CPU, %lld inputs, %.0f inputs/s, %zu findings\n",
                run + 1, wall, cpu, static_cast<long long>(result->inputs),
                static_cast<double>(result->inputs) / wall, result->findings.size());
    if (const char* path = std::getenv("TW_REPLAY_FINDINGS"); path != nullptr && run == 0) {
      // Everything replay concluded, to compare two builds' verdicts.
      if (FILE* f = std::fopen(path, "w")) {
        for (const model::RuleFinding& x : result->findings) {
          std::fprintf(f, "%s %s %s +%lld ms %lld %.17g %.17g %s\n", x.rule.c_str(), x.reason.c_str(),
                       x.subject.c_str(), static_cast<long long>(x.t_ms - job.creation_ms),
                       static_cast<long long>(x.step), x.observed, x.threshold, x.message.c_str());
        }
        for (const model::RuleStatus& st : result->statuses) {
          std::fprintf(f, "%s %s %lld %s\n", st.configuration_name.c_str(),
                       StatusName(st.status), static_cast<long long>(st.findings_total),
                       st.details.c_str());
        }
        std::fclose(f);
      }
    }
    for (const model::RuleStatus& st : result->statuses) {
      std::printf("  %-22s %-13s %lld findings\n", st.configuration_name.c_str(),
                  StatusName(st.status), static_cast<long long>(st.findings_total));
    }
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);
  return rc;
}
