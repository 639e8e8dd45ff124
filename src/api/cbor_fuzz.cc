// Fuzz target: Smithy RPC v2 CBOR request bodies. Whatever the bytes, the
// decoder answers a tree or an error; a tree is never deeper than the limit.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/cbor.h"
#include "util/check.h"

namespace {

size_t Depth(const nlohmann::json& j) {
  size_t deepest = 0;
  if (j.is_structured()) {
    for (const auto& item : j) deepest = std::max(deepest, Depth(item));
    return deepest + 1;
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxDepth = 16;
  auto tree = trainwatch::api::DecodeCbor(
      std::string_view(reinterpret_cast<const char*>(data), size), kMaxDepth);
  if (tree.ok()) {
    TW_CHECK(Depth(*tree) <= kMaxDepth);
    (void)tree->dump();
  } else {
    TW_CHECK(!tree.status().message().empty());
  }
  return 0;
}
