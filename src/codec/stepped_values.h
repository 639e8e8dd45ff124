#pragma once
// Stepped values: a sequence of integers (ordered float bits) that is a smooth
// function of a hidden counter advancing by k or k + 1 per sample.
//
// A learning rate is a function of the training step. Sampled once a second
// while the job runs, say, 5.4 steps a second, it moves 5 steps in some seconds
// and 6 in others, so its deltas jump between two sizes and no predictor in
// time does well (30 to 40 bits a sample for a cosine schedule in doubles). In
// steps it is smooth: a cubic through the last four samples, placed at their
// step positions, predicts the next to a few units in the last place. The coder
// names k once per chunk, then per sample one adaptive bit (did the counter
// move k or k + 1?) and the cubic's residual with the residual coder of
// IntSequence: 3 to 8 bits a sample on such series (BENCHMARKS.md, "Codec").
// With every step k the model is a cubic in time, which also suits smooth
// curves sampled regularly.
//
// The arithmetic is on integers (128-bit intermediates, fixed rounding), so
// every build decodes every chunk alike. Byte layout: docs/format/chunk.md
// ("Stepped").

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "codec/bit_reader.h"
#include "codec/range_coder.h"
#include "codec/residual_coder.h"

namespace trainwatch::codec {

inline constexpr int kMaxSteppedK = 255;

namespace stepped_internal {

// The model's state between samples, shared by encoder and decoder: the last
// values and the counter's steps to them.
struct History {
  static constexpr int kPoints = 4;  // a cubic through the last four samples
  int64_t previous[kPoints] = {};    // y[i-1], y[i-2], ...
  int steps[kPoints - 1] = {};       // steps of samples i-1, i-2, i-3
  size_t seen = 0;                   // samples so far

  void Start(uint64_t first, int k);
  // The prediction of the next sample if the counter moves `step`.
  uint64_t Predict(int step) const;
  // Close to Predict(step), in doubles: for the encoder's trials.
  uint64_t PredictApproximately(int step) const;
  void Push(uint64_t y, int step);
};

}  // namespace stepped_internal

// Appends the stepped coding of y[0..n) (n >= 2) to *out and returns true,
// unless a quick trial on the first samples says it would take `size_to_beat`
// bytes or more; then it appends nothing and returns false.
bool EncodeSteppedValues(const uint64_t* y, size_t n, size_t size_to_beat, std::string* out);

class SteppedDecoder {
 public:
  // `section` is exactly what EncodeSteppedValues appended (it must outlive the
  // decoder), `n` the number of values (>= 2).
  absl::Status Init(std::string_view section, size_t n);
  // Decodes up to `max` next values; returns how many (0 at the end or once the
  // input proved corrupt, see CheckEnd()).
  size_t Next(uint64_t* out, size_t max);
  // After the last value: OK when the input was consumed exactly as written.
  absl::Status CheckEnd() const;

 private:
  size_t n_ = 0;
  size_t i_ = 0;
  int k_ = 1;
  int base_length_ = 1;
  stepped_internal::History history_;
  int step_context_ = 0;
  bool failed_ = false;
  RangeDecoder rc_;
  BitReader raw_;
  ResidualModel model_;
  AdaptiveBit step_bits_[4];
};

}  // namespace trainwatch::codec
