// Fuzz target: query-protocol form bodies, through the decoder and then every
// CloudWatch operation's validation (the first byte picks the Action).
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/api.h"
#include "api/form.h"
#include "api/testing/fake_backend.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch;
  std::string body(reinterpret_cast<const char*>(data), size);
  (void)api::DecodeForm(body);

  static const char* const kActions[] = {"PutMetricData", "GetMetricStatistics", "GetMetricData",
                                         "ListMetrics"};
  util::FakeClock clock(1736942700000);
  api::testing::FakeBackend fake(clock);
  api::Api handler(api::ApiOptions{}, fake.backends(), clock);
  api::HttpRequest request;
  request.headers.Add("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
  // Captured bodies carry their own Action; otherwise prepend one.
  request.body = body.rfind("Action=", 0) == 0
                     ? body
                     : std::string("Action=") + kActions[size % 4] + "&" + body;
  api::HttpResponse response = handler.Handle(request);
  TW_CHECK(response.headers.Has("x-amzn-RequestId"));
  TW_CHECK(response.status == 200 || response.status == 400 || response.status == 413 ||
           response.status == 503);
  return 0;
}
