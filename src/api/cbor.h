#pragma once
// CborWriter: just enough CBOR (RFC 8949) to answer a Smithy RPC v2 CBOR
// client with an error map (spec/aws-api.md §2.4). Decoding CBOR requests is
// LATER: the api answers them with the "not implemented" error.

#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::api {

class CborWriter {
 public:
  void MapHeader(uint64_t pairs) { Head(5, pairs); }
  void Text(std::string_view text) {
    Head(3, text.size());
    out_.append(text);
  }
  std::string Take() { return std::move(out_); }

 private:
  void Head(uint8_t major, uint64_t value) {
    uint8_t m = static_cast<uint8_t>(major << 5);
    if (value < 24) {
      out_.push_back(static_cast<char>(m | value));
    } else if (value <= 0xFF) {
      out_.push_back(static_cast<char>(m | 24));
      out_.push_back(static_cast<char>(value));
    } else if (value <= 0xFFFF) {
      out_.push_back(static_cast<char>(m | 25));
      for (int s = 8; s >= 0; s -= 8) out_.push_back(static_cast<char>(value >> s));
    } else if (value <= 0xFFFFFFFFULL) {
      out_.push_back(static_cast<char>(m | 26));
      for (int s = 24; s >= 0; s -= 8) out_.push_back(static_cast<char>(value >> s));
    } else {
      out_.push_back(static_cast<char>(m | 27));
      for (int s = 56; s >= 0; s -= 8) out_.push_back(static_cast<char>(value >> s));
    }
  }
  std::string out_;
};

}  // namespace trainwatch::api
