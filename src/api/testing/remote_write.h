#pragma once
// Prometheus remote-write 1.0 requests for tests: a WriteRequest encoded as
// protocol buffers (TimeSeries of labels and samples), snappy-compressed, with
// the headers a Prometheus sends.
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/http.h"
#include "api/snappy_body.h"

namespace trainwatch::api::testing {

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
inline void PutField(std::string* out, int field, std::string_view bytes) {
  PutVarint(out, static_cast<uint64_t>(field) << 3 | 2);
  PutVarint(out, bytes.size());
  out->append(bytes);
}
inline std::string TimeSeries(std::vector<std::pair<std::string, std::string>> labels,
                       std::vector<std::pair<double, int64_t>> samples) {
  std::string ts;
  for (const auto& [name, value] : labels) {
    std::string label;
    PutField(&label, 1, name);
    PutField(&label, 2, value);
    PutField(&ts, 1, label);
  }
  for (const auto& [value, t] : samples) {
    std::string sample;
    sample.push_back(static_cast<char>(1 << 3 | 1));
    const uint64_t bits = std::bit_cast<uint64_t>(value);
    for (int i = 0; i < 8; ++i) sample.push_back(static_cast<char>(bits >> (8 * i)));
    PutVarint(&sample, static_cast<uint64_t>(2) << 3 | 0);
    PutVarint(&sample, static_cast<uint64_t>(t));
    PutField(&ts, 2, sample);
  }
  return ts;
}
inline HttpRequest RemoteWriteRequest(const std::vector<std::string>& series) {
  std::string body;
  for (const std::string& ts : series) PutField(&body, 1, ts);
  PutField(&body, 3, "metadata is skipped");
  HttpRequest r;
  r.method = "POST";
  r.target = "/api/v1/write";
  r.headers.Add("Content-Type", "application/x-protobuf");
  r.headers.Add("Content-Encoding", "snappy");
  r.headers.Add("X-Prometheus-Remote-Write-Version", "0.1.0");
  r.body = SnappyCompress(body);
  return r;
}

}  // namespace trainwatch::api::testing
