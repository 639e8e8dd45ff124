// Fuzz target: AWS JSON request bodies for every operation (the first byte
// picks the X-Amz-Target), through parsing, validation and the fake backend.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/api.h"
#include "api/testing/fake_backend.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch;
  static const char* const kTargets[] = {
      "GraniteServiceVersion20100801.PutMetricData",
      "GraniteServiceVersion20100801.GetMetricStatistics",
      "GraniteServiceVersion20100801.GetMetricData",
      "GraniteServiceVersion20100801.ListMetrics",
      "Logs_20140328.DescribeLogGroups",
      "Logs_20140328.DescribeLogStreams",
      "Logs_20140328.GetLogEvents",
      "Logs_20140328.FilterLogEvents",
      "Logs_20140328.PutLogEvents",
      "Logs_20140328.CreateLogGroup",
      "Logs_20140328.CreateLogStream",
      "SageMaker.CreateTrainingJob",
      "SageMaker.DescribeTrainingJob",
      "SageMaker.ListTrainingJobs",
      "SageMaker.StopTrainingJob",
  };
  constexpr size_t kCount = sizeof(kTargets) / sizeof(kTargets[0]);
  if (size == 0) return 0;
  const char* target = kTargets[data[0] % kCount];
  util::FakeClock clock(1736942700000);
  api::testing::FakeBackend fake(clock);
  // Something to find, so reads get past "not found".
  (void)fake.CreateLogGroup("/aws/sagemaker/TrainingJobs", clock.NowMs());
  (void)fake.CreateLogStream({"/aws/sagemaker/TrainingJobs", "tw-demo-job-001/algo-1-1736942400"},
                             clock.NowMs());
  api::Api handler(api::ApiOptions{}, fake.backends(), clock);
  api::HttpRequest request;
  request.headers.Add("X-Amz-Target", target);
  request.headers.Add("Content-Type", std::string(target).rfind("Granite", 0) == 0
                                          ? "application/x-amz-json-1.0"
                                          : "application/x-amz-json-1.1");
  request.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  api::HttpResponse response = handler.Handle(request);
  TW_CHECK(response.headers.Has("x-amzn-RequestId"));
  TW_CHECK(response.status == 200 || (response.status >= 400 && response.status < 600));
  // A second request sees what the first stored (state paths).
  api::HttpResponse again = handler.Handle(request);
  TW_CHECK(again.headers.Has("x-amzn-RequestId"));
  return 0;
}
