#pragma once
// Chunks: one compressed run of one series' (t_ms, value) samples.
//
// Timestamps are regular (no bytes at all) or an IntSequence (delta-of-delta,
// delta-minus-median and grid predictors, adaptive range coding). Values take,
// per chunk, the smallest of: constant, Gorilla XOR, exact decimal integers
// (counters, percentages, accuracies) or ordered float bits (the last two
// through IntSequence), float bits stepped (a learning rate, smooth in the
// training step: codec/stepped_values.h), or raw when nothing beats 8 bytes. Lossless always:
// every timestamp and every value bit pattern round-trips (-0.0, subnormals,
// NaN payloads included).
//
// Recommended chunk size: 1024 samples (1.303 bytes/sample on gen_metrics data,
// 1.335 at 512, 1.287 at 2048; BENCHMARKS.md). A builder holds 16 bytes per
// sample until Finish(): the first kBlockRows in two vectors that grow as
// vectors do, the rest in blocks of kBlockRows that never move, so appending
// to a long chunk copies nothing and leaves at most a block unused (Clear()
// keeps the blocks for the next samples).
// Byte layout: docs/format/chunk.md.
//
// Thread safety: a ChunkBuilder is one writer's; const methods may run
// concurrently with each other. A ChunkReader is single-threaded; many readers
// may share the same bytes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/int_sequence.h"
#include "codec/stepped_values.h"
#include "codec/timestamps.h"
#include "codec/xor_values.h"

namespace trainwatch::codec {

// Chunk format versions. Version 2 added the stepped value encoding; a chunk
// that does not use it is written as version 1, which older builds read.
inline constexpr uint8_t kChunkFormatVersionPlain = 1;
inline constexpr uint8_t kChunkFormatVersionStepped = 2;
// The newest version this build reads.
inline constexpr uint8_t kChunkFormatVersion = kChunkFormatVersionStepped;
// Upper bound on samples per chunk, checked by Append and by readers (garbage
// cannot make a reader produce more). Far above any sensible chunk size.
inline constexpr size_t kMaxChunkSamples = size_t{1} << 22;

enum class ValueEncoding : uint8_t {
  kConstant = 0,   // one raw 8-byte bit pattern
  kXor = 1,        // Gorilla XOR bit stream
  kDecimal = 2,    // scale k, then IntSequence of the integers d (value = d / 10^k)
  kFloatBits = 3,  // shift, then IntSequence of the ordered float bits
  kRaw = 4,        // 8 bytes per value: incompressible data costs no more than raw
  kStepped = 5,    // shift, then the ordered float bits as a smooth function of a
                   // hidden counter (codec/stepped_values.h); format version 2
};

// Builds one compressed chunk of one series' samples, in timestamp order.
class ChunkBuilder {
 public:
  ChunkBuilder() = default;
  // The samples move with the builder; the one moved from is empty.
  ChunkBuilder(ChunkBuilder&& other) noexcept;
  ChunkBuilder& operator=(ChunkBuilder&& other) noexcept;

  // t_ms must be >= the previous t_ms (equal allowed: several samples in one ms);
  // the caller sorts (TW_CHECK on violation, and on more than kMaxChunkSamples).
  // Every double bit pattern is kept exactly.
  void Append(int64_t t_ms, double value);

  size_t size() const { return size_; }               // samples appended
  int64_t first_t_ms() const { return first_t_ms_; }  // valid when size() > 0
  int64_t last_t_ms() const { return last_t_ms_; }
  // The samples appended so far, unencoded (i < size()).
  int64_t t_ms(size_t i) const {
    return i < kBlockRows ? t_ms_[i] : blocks_[i / kBlockRows - 1]->t_ms[i % kBlockRows];
  }
  double value(size_t i) const {
    return i < kBlockRows ? values_[i] : blocks_[i / kBlockRows - 1]->values[i % kBlockRows];
  }
  // Cheap running estimate of Finish().size(), to decide when to cut a chunk:
  // within about 15 % for series whose values change every sample; it may
  // underestimate rarely changing ones by half, whose chunks are small anyway,
  // and overestimates stepped ones (a learning rate) about 6 times, whose
  // chunks are then cut by size a little before the live head's 4,096 rows,
  // and by rows on import (bench/codec/chunk_size_report.cc prints it per
  // metric).
  size_t EstimatedBytes() const;
  // Encodes all appended samples; picks the smallest value encoding per chunk:
  // the smallest of constant, XOR, raw and the IntSequence codings it tries,
  // which are decimal when every value is decimal (plus float bits when the
  // scale is 10 or more, or all values are equal), float bits otherwise, and
  // float bits stepped where float bits take 1 to 7 bytes a value.
  std::string Finish() const;
  // Same, appending to *out.
  void FinishTo(std::string* out) const;
  // Forgets the samples, keeping the allocated capacity.
  void Clear();
  // Starts loading the memory the next Append writes to: a hint for writers
  // of many series at once, whose appends each miss the cache otherwise.
  void PrefetchNextAppend() const;
  // Heap bytes held (16 per sample of capacity).
  size_t MemoryBytes() const;

  // Samples per block (see the top of this file): 8 KiB a block.
  static constexpr size_t kBlockRows = 512;

  // The chunk with its values in `encoding`, or nullopt where that encoding
  // cannot hold them (kConstant for varying values, kDecimal for non-decimals).
  std::optional<std::string> FinishWithValueEncodingForTest(ValueEncoding encoding) const;

 private:
  struct Block {
    int64_t t_ms[kBlockRows];
    double values[kBlockRows];
  };

  bool EncodeChunk(std::optional<ValueEncoding> forced, std::string* out) const;
  // The encoders take the values as one array: values_ itself while it holds
  // every sample, else a copy (Finish runs off the write path: the sealer's).
  void EncodeValues(const double* values, std::string* out, ValueEncoding* encoding) const;
  bool EncodeValuesAs(const double* values, ValueEncoding encoding, std::string* out) const;
  // The stepped section, unless a trial says it takes size_to_beat bytes or more.
  bool EncodeSteppedAs(const double* values, size_t size_to_beat, std::string* out) const;

  size_t size_ = 0;
  std::vector<int64_t> t_ms_;  // samples [0, kBlockRows)
  std::vector<double> values_;
  std::vector<std::unique_ptr<Block>> blocks_;  // samples kBlockRows on; kept by Clear()
  Block* tail_block_ = nullptr;                 // the block of sample size_ - 1, if any
  // The newest samples' times and value, kept here as well: an append (and
  // the head's checks before it) then reads nothing from the samples' memory,
  // a cache miss per series with thousands of series written at once.
  int64_t first_t_ms_ = 0;
  int64_t last_t_ms_ = 0;
  uint64_t last_t_delta_ = 0;  // last_t_ms_ minus the time before it
  double last_value_ = 0;
  // Running state behind EstimatedBytes() and the decimal choice.
  int decimal_scale_ = 0;  // smallest scale every value so far is decimal at; -1: none
  bool all_same_ = true;   // beside the int, in its padding (a builder per open chunk)
  int64_t last_decimal_ = 0;
  uint64_t max_abs_decimal_ = 0;  // at decimal_scale_, saturating
  uint64_t last_step_ = 0;        // last value delta, as decimal integers or float bits
  uint64_t changed_values_ = 0;
  uint64_t estimated_bits_ = 0;
};

// Reads a chunk produced by ChunkBuilder::Finish. `bytes` must outlive the reader.
class ChunkReader {
 public:
  // InvalidArgument / DataLoss for bytes that are not a valid chunk: never UB,
  // never a crash.
  static absl::StatusOr<ChunkReader> Open(std::string_view bytes);

  size_t size() const { return n_; }
  int64_t first_t_ms() const { return first_t_ms_; }  // valid when size() > 0
  int64_t last_t_ms() const { return last_t_ms_; }
  TimestampEncoding timestamp_encoding() const { return ts_encoding_; }
  ValueEncoding value_encoding() const { return value_encoding_; }
  // k of the decimal encoding (every value is the double nearest to some
  // integer / 10^k); -1 for the other encodings.
  int decimal_scale() const {
    return value_encoding_ == ValueEncoding::kDecimal ? value_param_ : -1;
  }

  // Next sample in order; false at the end or on corrupt data (then status()
  // says why). Corruption may surface only at the last block, after earlier
  // samples were returned; DecodeChunk checks the whole chunk before it returns.
  bool Next(int64_t* t_ms, double* value) {
    if (pos_ == len_ && !Refill()) return false;
    *t_ms = t_buf_[pos_];
    *value = v_buf_[pos_];
    ++pos_;
    return true;
  }
  absl::Status status() const { return status_; }

 private:
  friend absl::Status DecodeChunk(std::string_view, std::vector<int64_t>*, std::vector<double>*);
  static constexpr size_t kBlock = 64;

  ChunkReader() = default;
  absl::Status Init(std::string_view bytes);
  // Decodes the next block into the buffers; false at the end or on error.
  bool Refill();
  bool Fail(absl::Status status);

  size_t n_ = 0;
  int64_t first_t_ms_ = 0;
  int64_t last_t_ms_ = 0;
  TimestampEncoding ts_encoding_ = TimestampEncoding::kRegular;
  ValueEncoding value_encoding_ = ValueEncoding::kConstant;
  int value_param_ = 0;  // decimal scale or float-bits shift (plain or stepped)
  uint64_t constant_bits_ = 0;
  std::string_view raw_values_;
  size_t decoded_ = 0;  // samples decoded into buffers so far
  int64_t previous_t_ms_ = 0;
  TimestampDecoder timestamps_;
  XorDecoder xor_;
  IntSequenceDecoder sequence_;
  // Only for stepped chunks: it holds 2.5 KiB of models that every other
  // reader would otherwise construct and move.
  std::unique_ptr<SteppedDecoder> stepped_;
  size_t pos_ = 0;
  size_t len_ = 0;
  int64_t t_buf_[kBlock] = {};
  double v_buf_[kBlock] = {};
  uint64_t u_buf_[kBlock] = {};
  absl::Status status_;
};

// Decodes a whole chunk, appending to the vectors. On error the vectors are left
// as they were.
absl::Status DecodeChunk(std::string_view bytes, std::vector<int64_t>* t_ms,
                         std::vector<double>* values);

}  // namespace trainwatch::codec
