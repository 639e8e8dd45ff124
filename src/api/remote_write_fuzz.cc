// Fuzz target: Prometheus remote-write bodies (after snappy). Whatever the
// bytes, the decoder answers series or an error; each series has its
// canonical key and finite samples only, also when decoded a second time on
// the slots of the first.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/prometheus/remote_write.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One decoder for every input, as a server thread keeps one: slots and
  // cached keys of earlier inputs must not leak into this one's batch.
  static trainwatch::api::prometheus::WriteDecoder decoder;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (int pass = 0; pass < 2; ++pass) {  // the second reuses the first's slots
    absl::Status s = decoder.Decode(body);
    if (!s.ok()) {
      TW_CHECK(!s.message().empty());
      TW_CHECK(decoder.batch().series.empty());
      return 0;
    }
    const auto& batch = decoder.batch();
    TW_CHECK(batch.canonical_keys.size() == batch.series.size());
    for (size_t i = 0; i < batch.series.size(); ++i) {
      TW_CHECK(batch.series[i].key.HasCanonical(batch.canonical_keys[i]));
      TW_CHECK(!batch.series[i].samples.empty());
      for (const auto& sample : batch.series[i].samples) TW_CHECK(std::isfinite(sample.value));
    }
    decoder.Trim();
  }
  return 0;
}
