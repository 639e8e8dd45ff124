// Fuzz target: agents' batch bodies (POST /api/v1/agent/deliver). Whatever
// decodes encodes back to a body that decodes to the same batch.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/native/agent_codec.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch;
  auto batch = api::DecodeAgentBatch(std::string_view(reinterpret_cast<const char*>(data), size),
                                     100000);
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
