// Fuzz target: Prometheus remote-write bodies (after snappy). Whatever the
// bytes, the decoder answers series or an error, and the conversion keeps
// only finite samples.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/prometheus/remote_write.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto series = trainwatch::api::prometheus::DecodeWriteRequest(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!series.ok()) {
    TW_CHECK(!series.status().message().empty());
    return 0;
  }
  auto converted = trainwatch::api::prometheus::ToSampleBatch(*std::move(series));
  for (const auto& s : converted.batch.series) {
    for (const auto& sample : s.samples) TW_CHECK(std::isfinite(sample.value));
  }
  return 0;
}
