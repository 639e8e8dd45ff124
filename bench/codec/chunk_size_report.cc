// chunk_size_report: bytes/sample of the chunk codec on real-shaped data.
//
//   chunk_size_report FILE.jsonl [CHUNK_SAMPLES...]
//
// FILE is gen_metrics.py output in series order (see BENCHMARKS.md):
//   python3 ../shared/bench/gen_metrics.py --scale small --format jsonl --order series --out F
// For each chunk size (default 120 240 512 1024 2048) every series is cut into
// chunks of that many samples; the report gives encoded bytes/sample per metric
// name and overall, the value encodings chosen, what a zstd pass over each chunk
// would save, how close ChunkBuilder::EstimatedBytes() came, and encode/decode
// throughput. Every chunk is decoded and compared bit for bit.
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "codec/chunk.h"

namespace {

using trainwatch::codec::ChunkBuilder;
using trainwatch::codec::ChunkReader;
using trainwatch::codec::DecodeChunk;
using trainwatch::codec::ValueEncoding;

struct Series {
  std::string metric;
  std::vector<int64_t> t_ms;
  std::vector<double> values;
};

bool ParseLine(const std::string& line, std::string* key, std::string* metric, int64_t* t,
               double* v) {
  const size_t m = line.find("\"metric\":\"");
  const size_t ts = line.find("\"timestamp_ms\":");
  const size_t val = line.find("\"value\":");
  if (m == std::string::npos || ts == std::string::npos || val == std::string::npos) return false;
  const size_t m_end = line.find('"', m + 10);
  *metric = line.substr(m + 10, m_end - m - 10);
  *key = line.substr(0, ts);
  const char* end = line.data() + line.size();
  if (std::from_chars(line.data() + ts + 15, end, *t).ec != std::errc()) return false;
  const char* vp = line.data() + val + 8;
  if (std::from_chars(vp, end, *v).ec != std::errc()) return false;
  return true;
}

struct Totals {
  uint64_t samples = 0;
  uint64_t bytes = 0;
  uint64_t zstd_bytes = 0;  // per chunk: min(chunk, zstd(chunk))
  uint64_t chunks = 0;
  uint64_t estimated_bytes = 0;
  std::map<ValueEncoding, uint64_t> encodings;
};

const char* EncodingName(ValueEncoding e) {
  switch (e) {
    case ValueEncoding::kConstant:
      return "const";
    case ValueEncoding::kXor:
      return "xor";
    case ValueEncoding::kDecimal:
      return "dec";
    case ValueEncoding::kFloatBits:
      return "fbits";
    case ValueEncoding::kRaw:
      return "raw";
    case ValueEncoding::kStepped:
      return "stepped";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE.jsonl [CHUNK_SAMPLES...]\n", argv[0]);
    return 2;
  }
  std::vector<size_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(std::strtoul(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {120, 240, 512, 1024, 2048};

  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  std::vector<Series> series;
  std::string line, key, last_key, metric;
  while (std::getline(in, line)) {
    int64_t t;
    double v;
    if (!ParseLine(line, &key, &metric, &t, &v)) {
      std::fprintf(stderr, "unparsable line: %s\n", line.c_str());
      return 1;
    }
    if (series.empty() || key != last_key) {
      series.push_back(Series{metric, {}, {}});
      last_key = key;
    }
    series.back().t_ms.push_back(t);
    series.back().values.push_back(v);
  }
  uint64_t total_samples = 0;
  for (const Series& s : series) total_samples += s.t_ms.size();
  std::printf("%zu series, %llu samples\n", series.size(),
              static_cast<unsigned long long>(total_samples));

  ZSTD_CCtx* zctx = ZSTD_createCCtx();
  std::string zbuf;
  for (size_t chunk_samples : sizes) {
    std::map<std::string, Totals> per_metric;
    Totals all;
    double encode_s = 0, decode_s = 0;
    double estimate_error_sum = 0, estimate_error_max = 0;
    ChunkBuilder builder;
    std::vector<int64_t> t_out;
    std::vector<double> v_out;
    for (const Series& s : series) {
      for (size_t begin = 0; begin < s.t_ms.size(); begin += chunk_samples) {
        const size_t end = std::min(s.t_ms.size(), begin + chunk_samples);
        auto t0 = std::chrono::steady_clock::now();
        builder.Clear();
        for (size_t i = begin; i < end; ++i) builder.Append(s.t_ms[i], s.values[i]);
        const std::string chunk = builder.Finish();
        auto t1 = std::chrono::steady_clock::now();
        t_out.clear();
        v_out.clear();
        absl::Status st = DecodeChunk(chunk, &t_out, &v_out);
        auto t2 = std::chrono::steady_clock::now();
        encode_s += std::chrono::duration<double>(t1 - t0).count();
        decode_s += std::chrono::duration<double>(t2 - t1).count();
        if (!st.ok() || t_out.size() != end - begin) {
          std::fprintf(stderr, "decode failed: %s\n", st.ToString().c_str());
          return 1;
        }
        for (size_t i = begin; i < end; ++i) {
          if (t_out[i - begin] != s.t_ms[i] ||
              std::bit_cast<uint64_t>(v_out[i - begin]) != std::bit_cast<uint64_t>(s.values[i])) {
            std::fprintf(stderr, "round trip mismatch in %s at sample %zu\n", s.metric.c_str(), i);
            return 1;
          }
        }
        const double estimate = static_cast<double>(builder.EstimatedBytes());
        const double err = (estimate - chunk.size()) / chunk.size();
        estimate_error_sum += std::abs(err);
        estimate_error_max = std::max(estimate_error_max, std::abs(err));
        zbuf.resize(ZSTD_compressBound(chunk.size()));
        const size_t z =
            ZSTD_compressCCtx(zctx, zbuf.data(), zbuf.size(), chunk.data(), chunk.size(), 3);
        const uint64_t zsize = ZSTD_isError(z) ? chunk.size() : std::min(chunk.size(), z + 1);
        auto reader = ChunkReader::Open(chunk);
        for (Totals* tot : {&per_metric[s.metric], &all}) {
          tot->samples += end - begin;
          tot->bytes += chunk.size();
          tot->zstd_bytes += zsize;
          tot->estimated_bytes += builder.EstimatedBytes();
          tot->chunks += 1;
          tot->encodings[reader->value_encoding()] += 1;
        }
      }
    }
    std::printf("\nchunk size %zu samples\n", chunk_samples);
    std::printf("  %-28s %12s %14s %9s  %s\n", "metric", "bytes/sample", "with zstd pass",
                "estimate", "value encodings (chunks)");
    for (const auto& [name, tot] : per_metric) {
      std::string encs;
      for (const auto& [e, count] : tot.encodings) {
        encs += std::string(EncodingName(e)) + ":" + std::to_string(count) + " ";
      }
      std::printf("  %-28s %12.3f %14.3f %8.0f%%  %s\n", name.c_str(),
                  double(tot.bytes) / tot.samples, double(tot.zstd_bytes) / tot.samples,
                  100.0 * tot.estimated_bytes / tot.bytes, encs.c_str());
    }
    std::printf("  %-28s %12.4f %14.4f\n", "ALL", double(all.bytes) / all.samples,
                double(all.zstd_bytes) / all.samples);
    std::printf("  EstimatedBytes error: mean %.1f %%, max %.1f %%\n",
                100 * estimate_error_sum / all.chunks, 100 * estimate_error_max);
    std::printf(
        "  encode %.1f M samples/s, decode %.1f M samples/s (one core, incl. verification copy)\n",
        all.samples / encode_s / 1e6, all.samples / decode_s / 1e6);
  }
  ZSTD_freeCCtx(zctx);
  return 0;
}
