#pragma once
// CBOR (RFC 8949) for Smithy RPC v2 CBOR, the protocol CBOR-first SDKs pick
// for CloudWatch (spec/aws-api.md §2.4):
//   DecodeCbor: a request body as the JSON tree the JSON 1.0 path reads
//     (timestamps, tag 1, become epoch seconds as JSON 1.0 sends them), with
//     Debian's libcbor as the parser;
//   CborWriter: the answers, written straight out (a GetMetricData answer
//     may hold 100,800 datapoints).

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace trainwatch::api {

// The items of one CBOR data item, as JSON: maps with text keys become
// objects, arrays arrays, text strings strings, integers and floats numbers,
// booleans and null (and undefined) themselves; tag 1 (a timestamp) its
// number. InvalidArgument, saying what and where (the byte offset), for bytes
// that are not exactly one well-formed item, byte strings and other tags
// (no CloudWatch input has them), non-text map keys, and nesting deeper than
// `max_depth`. An empty body is an empty object (an operation without input).
absl::StatusOr<nlohmann::json> DecodeCbor(std::string_view bytes, size_t max_depth = 64);

class CborWriter {
 public:
  void MapHeader(uint64_t pairs) { Head(5, pairs); }
  void ArrayHeader(uint64_t items) { Head(4, items); }
  void Text(std::string_view text) {
    Head(3, text.size());
    out_.append(text);
  }
  void Double(double value) {
    out_.push_back(static_cast<char>(0xfb));
    const uint64_t bits = std::bit_cast<uint64_t>(value);
    for (int s = 56; s >= 0; s -= 8) out_.push_back(static_cast<char>(bits >> s));
  }
  // A timestamp as Smithy writes one: tag 1, epoch seconds as a double.
  void Timestamp(int64_t t_ms) {
    Head(6, 1);
    Double(static_cast<double>(t_ms) / 1000.0);
  }
  void Bool(bool value) { out_.push_back(static_cast<char>(value ? 0xf5 : 0xf4)); }
  // An integer: major type 0, or 1 for a negative one (-1 - n).
  void Int(int64_t value) {
    if (value >= 0) {
      Head(0, static_cast<uint64_t>(value));
    } else {
      Head(1, static_cast<uint64_t>(-(value + 1)));
    }
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
