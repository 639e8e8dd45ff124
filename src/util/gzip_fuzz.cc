// Fuzz target: gzip request bodies. Output never exceeds the limit.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "util/gzip.h"
#include "util/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kLimit = 1 << 20;
  auto out = trainwatch::util::Gunzip(
      std::string_view(reinterpret_cast<const char*>(data), size), kLimit);
  if (out.ok()) {
    TW_CHECK(out->size() <= kLimit);
    // Round trip: what we compress, we read back.
    auto again = trainwatch::util::Gunzip(trainwatch::util::Gzip(*out), kLimit);
    TW_CHECK(again.ok() && *again == *out);
  }
  return 0;
}
