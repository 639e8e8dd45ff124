#include "codec/int_sequence.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/varint.h"

namespace trainwatch::codec {
namespace {

constexpr int kPredictors = 4;
constexpr int kInitialPredictor = 1;
// Centers are medians of at most this many evenly spaced samples: as good as
// the exact median for coding, at a fraction of the cost.
constexpr size_t kMedianSamples = 63;

// Residual of y[i] (i >= 1) under predictor P; y[0] == 0 by construction.
//   P0: y - c0   P1: y - y[-1] - c1   P2: y - 2 y[-1] + y[-2]   P3: y - i c1
// P2 at i == 1 falls back to P1 (there is no y[-2]).
template <int P>
inline uint64_t Residual(const uint64_t* y, size_t i, uint64_t c0, uint64_t c1) {
  if constexpr (P == 0) return y[i] - c0;
  if constexpr (P == 1) return y[i] - y[i - 1] - c1;
  if constexpr (P == 2) return i >= 2 ? y[i] - 2 * y[i - 1] + y[i - 2] : y[i] - y[i - 1] - c1;
  if constexpr (P == 3) return y[i] - static_cast<uint64_t>(i) * c1;
}

template <int P>
inline uint64_t Predict(uint64_t y1, uint64_t y2, size_t i, uint64_t c0, uint64_t c1) {
  if constexpr (P == 0) return c0;
  if constexpr (P == 1) return y1 + c1;
  if constexpr (P == 2) return i >= 2 ? 2 * y1 - y2 : y1 + c1;
  if constexpr (P == 3) return static_cast<uint64_t>(i) * c1;
}

// Calls f with predictor p as a compile-time constant, so the per-value loops
// inside f are specialised.
template <typename F>
void WithPredictor(int p, F&& f) {
  switch (p) {
    case 0:
      return f(std::integral_constant<int, 0>());
    case 1:
      return f(std::integral_constant<int, 1>());
    case 2:
      return f(std::integral_constant<int, 2>());
    default:
      return f(std::integral_constant<int, 3>());
  }
}

// Cost proxy of a block under P: the sum of the zigzagged residuals' bit lengths.
template <int P>
int BlockBits(const uint64_t* y, size_t begin, size_t end, uint64_t c0, uint64_t c1) {
  int bits = 0;
  for (size_t i = begin; i < end; ++i) {
    bits += ZigZagBits(static_cast<int64_t>(Residual<P>(y, i, c0, c1)));
  }
  return bits;
}

int BlockBits(int p, const uint64_t* y, size_t begin, size_t end, uint64_t c0, uint64_t c1) {
  int bits = 0;
  WithPredictor(p, [&](auto kP) { bits = BlockBits<kP()>(y, begin, end, c0, c1); });
  return bits;
}

// Median of `count` values get(0..count), sampled evenly when there are many.
template <typename Get>
int64_t SampledMedian(size_t count, Get get) {
  int64_t sample[kMedianSamples];
  const size_t m = std::min(count, kMedianSamples);
  for (size_t j = 0; j < m; ++j) sample[j] = get(j * count / m);
  std::nth_element(sample, sample + m / 2, sample + m);
  return sample[m / 2];
}

template <int P>
void EncodeRun(const uint64_t* y, size_t begin, size_t end, uint64_t c0, uint64_t c1,
               ResidualEncoder* enc) {
  for (size_t i = begin; i < end; ++i) enc->Encode(Residual<P>(y, i, c0, c1));
}

template <int P>
void CountLengths(const uint64_t* y, size_t begin, size_t end, uint64_t c0, uint64_t c1,
                  uint32_t* counts) {
  for (size_t i = begin; i < end; ++i) ++counts[ResidualLength(Residual<P>(y, i, c0, c1))];
}

// Exact division by g of values known to be multiples of g: an arithmetic shift
// for the power of two, then a multiply by the odd part's inverse modulo 2^64.
struct ExactDivider {
  explicit ExactDivider(uint64_t g) : shift(std::countr_zero(g)) {
    const uint64_t odd = g >> shift;
    inverse = odd;  // Newton's iteration doubles the correct low bits each step
    for (int i = 0; i < 5; ++i) inverse *= 2 - odd * inverse;
  }
  uint64_t Divide(uint64_t multiple) const {
    return static_cast<uint64_t>(static_cast<int64_t>(multiple) >> shift) * inverse;
  }
  int shift;
  uint64_t inverse;
};

}  // namespace

void EncodeIntSequence(const uint64_t* x, size_t n, bool first_known, std::string* out) {
  const uint64_t x0 = x[0];
  if (!first_known) PutSignedVarint(static_cast<int64_t>(x0), out);

  // The differences x[i] - x0, read as signed, are exact multiples of g, so
  // x0 + g * ((x[i] - x0) / g) restores x[i] modulo 2^64 whatever wrapped.
  uint64_t g = 0;
  for (size_t i = 1; i < n && g != 1; ++i) {
    const uint64_t d = x[i] - x0;
    g = std::gcd(g, static_cast<int64_t>(d) < 0 ? 0 - d : d);
  }
  PutVarint(g, out);
  if (g == 0) return;  // every value equals x0

  std::vector<uint64_t> y(n);
  if (g == 1) {
    for (size_t i = 0; i < n; ++i) y[i] = x[i] - x0;
  } else {
    const ExactDivider divider(g);
    for (size_t i = 0; i < n; ++i) y[i] = divider.Divide(x[i] - x0);
  }
  const uint64_t* yp = y.data();
  const uint64_t c0 = static_cast<uint64_t>(
      SampledMedian(n, [yp](size_t i) { return static_cast<int64_t>(yp[i]); }));
  const uint64_t c1 = static_cast<uint64_t>(
      SampledMedian(n - 1, [yp](size_t i) { return static_cast<int64_t>(yp[i + 1] - yp[i]); }));
  PutSignedVarint(static_cast<int64_t>(c0), out);
  PutSignedVarint(static_cast<int64_t>(c1), out);

  // Pass 1: a predictor per block. Pass 2: the median length of the residuals
  // that will be coded, around which lengths are coded cheaply. Pass 3: code.
  std::vector<uint8_t> predictors((n - 1 + kIntSequenceBlock - 1) / kIntSequenceBlock);
  uint32_t length_counts[65] = {};
  int previous = kInitialPredictor;
  for (size_t begin = 1, block = 0; begin < n; begin += kIntSequenceBlock, ++block) {
    const size_t end = std::min(n, begin + kIntSequenceBlock);
    int best = previous;
    int best_bits = BlockBits(previous, yp, begin, end, c0, c1);
    for (int p = 0; p < kPredictors && best_bits > 0; ++p) {
      if (p == previous) continue;
      const int bits = BlockBits(p, yp, begin, end, c0, c1);
      if (bits < best_bits) {
        best = p;
        best_bits = bits;
      }
    }
    predictors[block] = static_cast<uint8_t>(best);
    previous = best;
    WithPredictor(best,
                  [&](auto kP) { CountLengths<kP()>(yp, begin, end, c0, c1, length_counts); });
  }
  const int base_length = MedianResidualLength(length_counts);
  out->push_back(static_cast<char>(base_length));

  std::string coded;
  std::string raw;
  ResidualEncoder enc(&coded, &raw, base_length);
  previous = kInitialPredictor;
  for (size_t begin = 1, block = 0; begin < n; begin += kIntSequenceBlock, ++block) {
    const size_t end = std::min(n, begin + kIntSequenceBlock);
    const int p = predictors[block];
    enc.EncodePredictor(previous, p);
    previous = p;
    WithPredictor(p, [&](auto kP) { EncodeRun<kP()>(yp, begin, end, c0, c1, &enc); });
  }
  enc.Finish();
  PutVarint(coded.size(), out);
  out->append(coded);
  out->append(raw);
}

absl::Status IntSequenceDecoder::Init(std::string_view section, size_t n, bool first_known,
                                      uint64_t first, const char* what) {
  what_ = what;
  n_ = n;
  i_ = 0;
  failed_ = false;
  model_ = ResidualModel();
  predictor_ = kInitialPredictor;
  y1_ = y2_ = 0;
  std::string_view in = section;
  if (first_known) {
    x0_ = first;
  } else {
    int64_t x0;
    if (!GetSignedVarint(&in, &x0)) {
      return absl::DataLossError(absl::StrFormat("chunk %s: truncated first value", what));
    }
    x0_ = static_cast<uint64_t>(x0);
  }
  if (!GetVarint(&in, &g_)) {
    return absl::DataLossError(absl::StrFormat("chunk %s: truncated divisor", what));
  }
  if (g_ == 0) {
    if (!in.empty()) {
      return absl::DataLossError(absl::StrFormat(
          "chunk %s: %d unexpected bytes after a constant sequence", what, in.size()));
    }
    return absl::OkStatus();
  }
  if (n < 2) {
    return absl::DataLossError(
        absl::StrFormat("chunk %s: a single value cannot have a divisor (%d)", what, g_));
  }
  int64_t c0, c1;
  uint64_t coded_size;
  if (!GetSignedVarint(&in, &c0) || !GetSignedVarint(&in, &c1) || in.empty()) {
    return absl::DataLossError(absl::StrFormat("chunk %s: truncated sequence header", what));
  }
  const uint8_t base_length = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  if (!GetVarint(&in, &coded_size)) {
    return absl::DataLossError(absl::StrFormat("chunk %s: truncated sequence header", what));
  }
  if (coded_size > in.size()) {
    return absl::DataLossError(absl::StrFormat(
        "chunk %s: coded stream of %d bytes, but only %d bytes left", what, coded_size, in.size()));
  }
  c0_ = static_cast<uint64_t>(c0);
  c1_ = static_cast<uint64_t>(c1);
  base_length_ = base_length;
  if (base_length_ < 1 || base_length_ > 64) {
    return absl::DataLossError(absl::StrFormat(
        "chunk %s: typical residual length %d is not in 1..64", what, base_length_));
  }
  if (!rc_.Init(in.substr(0, coded_size))) {
    return absl::DataLossError(
        absl::StrFormat("chunk %s: coded stream does not start validly", what));
  }
  raw_ = BitReader(in.substr(coded_size));
  return absl::OkStatus();
}

template <int P>
void IntSequenceDecoder::DecodeRun(uint64_t* out, size_t count) {
  RangeDecoder rc = rc_;
  BitReader raw = raw_;
  for (size_t k = 0; k < count; ++k) {
    const uint64_t r = DecodeResidual(model_, base_length_, rc, raw, &failed_);
    const uint64_t y = Predict<P>(y1_, y2_, i_, c0_, c1_) + r;
    y2_ = y1_;
    y1_ = y;
    out[k] = x0_ + g_ * y;
    ++i_;
  }
  rc_ = rc;
  raw_ = raw;
}

size_t IntSequenceDecoder::Next(uint64_t* out, size_t max) {
  size_t produced = 0;
  if (failed_) return 0;
  if (i_ == 0 && n_ > 0 && max > 0) {
    out[produced++] = x0_;
    i_ = 1;
  }
  if (g_ == 0) {  // constant
    while (produced < max && i_ < n_) {
      out[produced++] = x0_;
      ++i_;
    }
    return produced;
  }
  while (produced < max && i_ < n_) {
    const size_t in_block = (i_ - 1) % kIntSequenceBlock;
    if (in_block == 0) {
      const int b1 = rc_.Decode(&model_.predictor[predictor_][1]);
      const int b0 = rc_.Decode(&model_.predictor[predictor_][2 + b1]);
      predictor_ = 2 * b1 + b0;
    }
    const size_t count = std::min({max - produced, n_ - i_, kIntSequenceBlock - in_block});
    WithPredictor(predictor_, [&](auto kP) { DecodeRun<kP()>(out + produced, count); });
    if (failed_) {
      // The values of the failed run are garbage; report none of them.
      return 0;
    }
    produced += count;
  }
  return produced;
}

absl::Status IntSequenceDecoder::CheckEnd() const {
  if (failed_) {
    return absl::DataLossError(
        absl::StrFormat("chunk %s: raw bit stream ends before value %d of %d", what_, i_, n_));
  }
  if (i_ != n_) {
    return absl::DataLossError(absl::StrFormat("chunk %s: %d of %d values decoded", what_, i_, n_));
  }
  if (g_ != 0 && (!rc_.Consistent() || raw_.BitsLeft() >= 8)) {
    return absl::DataLossError(
        absl::StrFormat("chunk %s: coded streams are not consumed exactly (%d raw bits left over)",
                        what_, raw_.BitsLeft()));
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::codec
