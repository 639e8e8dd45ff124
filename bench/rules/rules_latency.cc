// Latency of a rule's verdict: from the ingest of the deciding datapoint to
// the rule's status visible where DescribeTrainingJob reads it.
//
// One process holds a real store (a temporary folder), an ingest::Ingest and
// app::LocalRules (the engine `trainwatch run` and `trainwatch server` run,
// subscribed to that ingest). Each sample: a fresh job with the default rule
// set (ExplodingTensor among them) is created and its initial statuses
// written; then t0, Ingest::Put of one NonFiniteMetricValues datapoint
// (`loss: nan`), and query::StoreReader::GetJob (DescribeTrainingJob's read)
// is polled every POLL_US until ExplodingTensor shows IssuesFound. A fresh
// job each time, as an issue latches its rule's status and repeats are
// quiet for 5 minutes.
//
// With "busy", another job's profiler (8 cores, 4 GPUs, every series the
// profiler publishes) and 10 lines a second of 20 log metrics are ingested
// beside it in real time, through the same ingest and engine.
//
//   cmake --build --preset release --target rules_latency
//   build/release/bench/rules/rules_latency [SAMPLES=300] [POLL_US=100] [busy]
//
// Prints p50, p90, p99 and max in milliseconds (target p99 <= 200 ms).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "app/local_rules.h"
#include "ingest/ingest.h"
#include "query/store_reader.h"
#include "rules_bench_data.h"
#include "store/db.h"

namespace {

using namespace trainwatch;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Percentile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return static_cast<double>(v[std::min(i, v.size() - 1)]) / 1000.0;
}

model::SampleBatch NanLoss(const std::string& job, int64_t t_ms) {
  model::SampleBatch b;
  b.series.push_back({bench::Key(model::kJobEventsNamespace, model::kNonFiniteMetricValues,
                                 {{std::string(model::kTrainingJobNameDim), job},
                                  {std::string(model::kMetricNameDim), "m0"},
                                  {std::string(model::kValueDim), "NaN"}},
                                 "Count"),
                      1,
                      {{t_ms, 1}},
                      {},
                      {}});
  return b;
}

// Another job, profiled every 100 ms and printing 10 lines a second.
void BusyJob(ingest::Ingest* ingest, std::atomic<bool>* stop) {
  const std::string name = "busy";
  const model::JobRecord job = bench::MakeJob(name, WallMs(), 100);
  if (!ingest->CreateJob(job).ok()) return;
  const std::vector<bench::ProfilerSeries> series = bench::HostSeries(name, 8, 4, true);
  const std::vector<model::SeriesKey> metrics = bench::MetricKeys(name);
  bench::Noise noise(7);
  int64_t line = 0;
  auto next = std::chrono::steady_clock::now();
  while (!stop->load()) {
    const int64_t t = WallMs();
    model::SampleBatch tick;
    for (const bench::ProfilerSeries& s : series) {
      tick.series.push_back({s.key, 1, {{t, bench::ProfilerValue(s, 8, noise)}}, {}, {}});
    }
    (void)ingest->Put(tick);
    model::SampleBatch lines;
    ++line;
    for (size_t i = 0; i < metrics.size(); ++i) {
      lines.series.push_back(
          {metrics[i], 1, {{t, bench::MetricValue(i, line, 0, noise)}}, {}, {}});
    }
    (void)ingest->Put(lines);
    (void)ingest->PutLogs({{std::string(model::kTrainingJobsLogGroup), job.log_stream},
                           {{t, "step " + std::to_string(line)}}});
    next += std::chrono::milliseconds(100);
    std::this_thread::sleep_until(next);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 300;
  const int poll_us = argc > 2 ? std::atoi(argv[2]) : 100;
  const bool busy = argc > 3 && std::string(argv[3]) == "busy";
  if (samples <= 0 || poll_us <= 0) {
    std::fprintf(stderr, "usage: rules_latency [SAMPLES=300] [POLL_US=100] [busy]\n");
    return 2;
  }
  char dir_template[] = "/tmp/tw-rules-latency-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  int rc = 0;
  {
    store::DbOptions options;
    options.data_dir = dir;
    options.mode = store::OpenMode::kWriter;
    absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
    if (!db.ok()) {
      std::fprintf(stderr, "%s\n", db.status().ToString().c_str());
      return 1;
    }
    ingest::Ingest ingest(db->get());
    app::LocalRules rules(&ingest, {});
    query::StoreReader reader(**db);
    std::atomic<bool> stop{false};
    std::jthread background;
    if (busy) background = std::jthread([&] { BusyJob(&ingest, &stop); });

    std::vector<int64_t> latencies;
    int64_t polls = 0;
    for (int i = 0; i < samples && rc == 0; ++i) {
      const std::string name = "latency-" + std::to_string(i);
      const model::JobRecord job = bench::MakeJob(name, WallMs(), 100);
      if (absl::Status s = ingest.CreateJob(job); !s.ok()) {
        std::fprintf(stderr, "CreateJob: %s\n", s.ToString().c_str());
        rc = 1;
        break;
      }
      rules.Flush();  // its InProgress statuses are written
      const int64_t t0 = NowUs();
      if (absl::Status s = ingest.Put(NanLoss(name, WallMs())); !s.ok()) {
        std::fprintf(stderr, "Put: %s\n", s.ToString().c_str());
        rc = 1;
        break;
      }
      while (true) {
        ++polls;
        absl::StatusOr<std::optional<model::JobRecord>> got = reader.GetJob(name);
        bool found = false;
        if (got.ok() && got->has_value()) {
          for (const model::RuleStatus& st : (*got)->rule_statuses) {
            found |= st.configuration_name == "ExplodingTensor" &&
                     st.status == model::RuleStatusKind::kIssuesFound;
          }
        }
        if (found) break;
        if (NowUs() - t0 > 10'000'000) {
          std::fprintf(stderr, "job %s: no IssuesFound after 10 s\n", name.c_str());
          rc = 1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(poll_us));
      }
      latencies.push_back(NowUs() - t0);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop = true;
    if (background.joinable()) background.join();
    rules.Flush();
    if (rc == 0) {
      std::printf("ingest to IssuesFound in GetJob (%s), %zu samples, polled every %d us "
                  "(%.1f polls a sample): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
                  busy ? "beside a job profiled at 100 ms" : "quiet", latencies.size(), poll_us,
                  static_cast<double>(polls) / static_cast<double>(latencies.size()),
                  Percentile(latencies, 0.5), Percentile(latencies, 0.9),
                  Percentile(latencies, 0.99),
                  static_cast<double>(*std::max_element(latencies.begin(), latencies.end())) /
                      1000.0);
    }
  }
  std::filesystem::remove_all(dir);
  return rc;
}
