#pragma once
// Raw chunks: the rows of one lane of one series over a time span, each
// column a codec chunk (codec/chunk.h: delta-of-delta timestamps, values XOR
// or exact decimal). Layout of the stored record: docs/format/store.md.
//
//   raw column family key:  series id (8, big-endian) | first t_ms (8, ordered) | seq (8)
//   value:                  u8 version=1 | u8 lane | varint rows | varint span_ms
//                           | per column: varint length, codec chunk bytes
//
// Chunks of one series may overlap in time (late data); readers aggregate
// every chunk that intersects their range, so overlaps are harmless.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "codec/chunk.h"
#include "store/lane.h"

namespace trainwatch::store {

// A chunk never spans more than this (first to last timestamp), so a reader
// of [start, end) finds every chunk it needs among keys >= start - this.
inline constexpr int64_t kMaxChunkSpanMs = 6 * 3'600'000LL;

// An open (growing) chunk of one lane. Rows must be appended in
// non-decreasing time order.
class LaneChunk {
 public:
  explicit LaneChunk(uint8_t lane);
  uint8_t lane() const { return lane_; }
  size_t size() const { return cols_[0].size(); }
  bool empty() const { return size() == 0; }
  int64_t first_t_ms() const { return cols_[0].first_t_ms(); }
  int64_t last_t_ms() const { return cols_[0].last_t_ms(); }
  size_t EstimatedBytes() const;
  // Heap bytes held: the codec keeps an open chunk's samples unencoded
  // (16 bytes per sample and column) until Finish().
  size_t MemoryBytes() const;
  void Append(const Row& row);
  // See codec::ChunkBuilder::PrefetchNextAppend.
  void PrefetchNextAppend() const {
    for (const codec::ChunkBuilder& c : cols_) c.PrefetchNextAppend();
  }
  // Row i as appended (i < size()).
  Row RowAt(size_t i) const;
  // The record value (see above).
  std::string EncodeRecord() const;
  void Clear();

 private:
  uint8_t lane_;
  // One column for plain values, the most common lane: inside the chunk, so
  // an append does not go through another pointer to reach it.
  absl::InlinedVector<codec::ChunkBuilder, 1> cols_;
};

namespace rawkeys {
std::string Key(uint64_t series_id, int64_t first_t_ms, uint64_t seq);
std::string SeriesPrefix(uint64_t series_id);
bool DecodeKey(std::string_view key, uint64_t* series_id, int64_t* first_t_ms);
}  // namespace rawkeys

// The record header, readable without decoding the columns.
struct RawChunkHeader {
  uint8_t lane = 0;
  uint64_t rows = 0;
  int64_t span_ms = 0;
};
bool DecodeRawHeader(std::string_view value, RawChunkHeader* header);

// Iterates the rows of a stored record. `value` must outlive the reader.
// Never undefined behaviour on damaged bytes: Open fails, or Next() stops
// and status() says why.
class RawChunkReader {
 public:
  static absl::StatusOr<RawChunkReader> Open(std::string_view value);
  const RawChunkHeader& header() const { return header_; }
  // The decimal places every value (c[0]) of the record has, known from its
  // encoding (Aggregate::AddRow's `value_places`), or -1.
  int value_places() const;
  bool Next(Row* row);
  absl::Status status() const { return status_; }

 private:
  RawChunkHeader header_;
  std::vector<codec::ChunkReader> cols_;
  uint64_t read_ = 0;
  absl::Status status_;
};

}  // namespace trainwatch::store
