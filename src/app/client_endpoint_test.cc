// The run's endpoint for its process's Python client, end to end: a real
// process finds it through the environment the run gives it, sends samples
// with a plain HTTP POST, and they reach the run's sink and its final metrics.

#include "app/client_endpoint.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "job/training_run.h"
#include "model/testing/memory_telemetry_sink.h"

namespace trainwatch::app {
namespace {

using model::testing::MemoryTelemetrySink;

// Whether something listens at "http://127.0.0.1:PORT".
bool Accepts(const std::string& url) {
  const int port = std::stoi(url.substr(url.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

// What the Python client does, without it: read the environment, POST.
constexpr char kSender[] = R"PY(
import json, os, time, urllib.request
job = os.environ["TRAINWATCH_JOB"]
assert os.environ["TRAINWATCH_HOST_INDEX"] == "1"
assert os.environ["TRAINWATCH_STEP_METRIC"] == "step"
now = int(time.time() * 1000)
def series(metric, values):
    return {"namespace": "/aws/sagemaker/TrainingJobs", "metric": metric,
            "dimensions": {"TrainingJobName": job},
            "t_ms": [now + i for i in range(len(values))], "values": values}
body = json.dumps({"series": [series("val:acc", [0.5, 0.75]), series("step", [1, 2]),
                              series("trainwatch:step_time_ms", [12.5])]}).encode()
request = urllib.request.Request(os.environ["TRAINWATCH_RUNNER_URL"] + "/api/v1/samples", body,
                                 {"Content-Type": "application/json"})
print(urllib.request.urlopen(request).read().decode(), flush=True)
print("loss=0.25")
)PY";

TEST(ClientEndpointTest, WhatTheProcessSendsReachesTheSinkAndItsFinalMetrics) {
  MemoryTelemetrySink sink;
  absl::StatusOr<std::unique_ptr<ClientEndpoint>> endpoint = ClientEndpoint::Start(&sink, "test");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  EXPECT_TRUE(absl::StartsWith((*endpoint)->url(), "http://127.0.0.1:"));

  job::RunSpec spec;
  spec.name = "client-job";
  spec.command = {"/usr/bin/python3", "-c", kSender};
  spec.metric_definitions = {{"train:loss", "loss=([0-9.]+)"}};
  spec.step_metric = "step";
  spec.profiling_interval_ms = 0;
  spec.stdout_fd = spec.stderr_fd = spec.stdin_fd = -1;
  spec.handle_signals = false;
  spec.drain_after_exit_ms = 200;
  spec.runner_environment = (*endpoint)->Environment("");
  auto run = job::TrainingRun::Create(spec, &sink);
  ASSERT_TRUE(run.ok()) << run.status();
  (*endpoint)->Attach(run->get());
  (*run)->AddObserver(endpoint->get());
  const std::string url = (*endpoint)->url();
  auto result = (*run)->Run();
  // Closed when the process exited, before the job's end was written: nothing
  // comes after the job's last record.
  EXPECT_FALSE(Accepts(url)) << url;
  endpoint->reset();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0) << "the sender failed; see its assertion";

  auto key = model::MakeSeriesKey("/aws/sagemaker/TrainingJobs", "val:acc",
                                  {{"TrainingJobName", "client-job"}}, "None");
  ASSERT_TRUE(key.ok());
  ASSERT_EQ(sink.Samples(*key).size(), 2u);
  EXPECT_EQ(sink.Samples(*key)[1].value, 0.75);
  // Its last values join those of the job's lines; not recorded as the job's
  // environment (which describes the job, not the runner).
  std::map<std::string, double> final_metrics;
  for (const model::FinalMetric& m : result->job.final_metrics) final_metrics[m.name] = m.value;
  EXPECT_EQ(final_metrics["val:acc"], 0.75);
  EXPECT_EQ(final_metrics["step"], 2);
  EXPECT_EQ(final_metrics["train:loss"], 0.25);
  EXPECT_EQ(final_metrics.count("trainwatch:step_time_ms"), 0u) << "an instrument, not a result";
  EXPECT_EQ(result->job.environment.count("TRAINWATCH_RUNNER_URL"), 0u);
}

TEST(ClientEndpointTest, PutsThePackageFirstOnPythonPath) {
  MemoryTelemetrySink sink;
  absl::StatusOr<std::unique_ptr<ClientEndpoint>> endpoint = ClientEndpoint::Start(&sink, "test");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  ::setenv("PYTHONPATH", "/elsewhere", 1);
  std::map<std::string, std::string> env = (*endpoint)->Environment("/pkg");
  ::unsetenv("PYTHONPATH");
  EXPECT_EQ(env["PYTHONPATH"], "/pkg:/elsewhere");
  EXPECT_EQ(env["TRAINWATCH_RUNNER_URL"], (*endpoint)->url());
  EXPECT_EQ((*endpoint)->Environment("").count("PYTHONPATH"), 0u);
}

}  // namespace
}  // namespace trainwatch::app
