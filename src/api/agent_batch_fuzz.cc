// Fuzz target: agents' bodies, batches (POST /api/v1/agent/deliver) and
// heartbeats (POST /api/v1/agent/heartbeat). Whatever decodes encodes back to a
// body that decodes to the same thing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/native/agent_codec.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  if (auto heartbeat = api::DecodeAgentHeartbeat(body); heartbeat.ok()) {
    auto again = api::DecodeAgentHeartbeat(api::EncodeAgentHeartbeat(*heartbeat));
    TW_CHECK(again.ok());
    TW_CHECK(again->job == heartbeat->job && again->host == heartbeat->host &&
             again->runner == heartbeat->runner);
  }
  auto batch = api::DecodeAgentBatch(body, 100000);
  if (batch.ok()) {
    auto again = api::DecodeAgentBatch(api::EncodeAgentBatch(*batch), 100000);
    TW_CHECK(again.ok());
    TW_CHECK(again->agent == batch->agent && again->seq == batch->seq &&
             again->kind == batch->kind && again->logs.events == batch->logs.events &&
             again->job == batch->job &&
             again->samples.SampleCount() == batch->samples.SampleCount());
  }
  return 0;
}
