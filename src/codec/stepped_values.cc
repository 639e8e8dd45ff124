#include "codec/stepped_values.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/varint.h"

namespace trainwatch::codec {
namespace {

__extension__ typedef __int128 Int128;

using stepped_internal::History;
// The first size per step comes from the smallest of this many first deltas.
constexpr size_t kFirstDeltas = 8;
// The encoder picks k on this many first samples, after a quick trial on fewer.
constexpr size_t kTrialSamples = 128;
constexpr size_t kQuickTrialSamples = 32;

// a / b rounded to the nearest integer, halves up; b != 0.
Int128 RoundedDiv(Int128 a, Int128 b) {
  if (b < 0) {
    a = -a;
    b = -b;
  }
  const Int128 num = 2 * a + b;
  const Int128 den = 2 * b;
  Int128 q = num / den;
  if (num % den < 0) --q;  // floor
  return q;
}

// The polynomial through the `points` (1..4) samples before the next one,
// previous[0] the latest, evaluated at the next sample, which lies u[j] steps
// after previous[j] (u increasing, u[0] >= 1): Lagrange's form, relative to
// previous[0]. Each term is rounded on its own; the sum wraps modulo 2^64.
// |previous[j] - previous[0]| < 2^64 and each product of three distances
// is at most 1024^3 = 2^30 (k <= 255), so nothing overflows 128 bits.
uint64_t PredictNext(const int64_t* previous, const int* u, int points) {
  Int128 prediction = previous[0];
  for (int j = 1; j < points; ++j) {
    int64_t num = 1;
    int64_t den = 1;
    for (int l = 0; l < points; ++l) {
      if (l == j) continue;
      num *= u[l];
      den *= u[l] - u[j];
    }
    prediction +=
        RoundedDiv((static_cast<Int128>(previous[j]) - previous[0]) * num, static_cast<Int128>(den));
  }
  return static_cast<uint64_t>(prediction);
}

// The same polynomial in doubles, for the encoder's trials only (it is about
// ten times cheaper than the 128-bit divisions): exact enough to tell a good
// k from a bad one, never written.
uint64_t ApproximateNext(const int64_t* previous, const int* u, int points) {
  double delta = 0;
  for (int j = 1; j < points; ++j) {
    double weight = 1;
    for (int l = 0; l < points; ++l) {
      if (l != j) weight *= static_cast<double>(u[l]) / static_cast<double>(u[l] - u[j]);
    }
    const uint64_t difference =
        static_cast<uint64_t>(previous[j]) - static_cast<uint64_t>(previous[0]);
    delta += static_cast<double>(static_cast<int64_t>(difference)) * weight;
  }
  // Deltas of noise may not fit an int64; any large residual will do there.
  delta = std::clamp(delta, -9e18, 9e18);
  return static_cast<uint64_t>(previous[0]) + static_cast<uint64_t>(std::llround(delta));
}

// Runs the model over y[0..n) with steps k and k + 1 and calls emit(bit,
// residual) for every sample after the first (bit 1: the counter moved k + 1).
//
// The step of a sample is told by the size of its delta, not by which step
// predicts it better: a greedy choice that goes wrong once misplaces the
// points every later prediction rests on, and can stay wrong for good. Deltas
// are near a * k or a * (k + 1), with a (the delta per step) drifting slowly;
// each is classed against the midpoint a * (k + 1/2), a taken from the previous
// delta. A misclassified sample (a jump, a binade boundary of the float bits)
// costs a large residual and leaves the cubic's window four samples later.
// The encoder alone classifies, in doubles; the decoder reads the bits.
// kExact: the coder's own prediction; false: ApproximateNext, for trials.
template <bool kExact, typename Emit>
void RunModel(const uint64_t* y, size_t n, int k, Emit&& emit) {
  // The first per-step size: the smallest of the first deltas, taken as a k step.
  double per_step = 0;
  for (size_t i = 1; i < std::min(n, kFirstDeltas + 1); ++i) {
    const double d = std::fabs(static_cast<double>(static_cast<int64_t>(y[i] - y[i - 1])));
    if (d > 0 && (per_step == 0 || d < per_step)) per_step = d;
  }
  per_step /= k;
  History h;
  h.Start(y[0], k);
  for (size_t i = 1; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(static_cast<int64_t>(y[i] - y[i - 1])));
    const int bit = d > per_step * (k + 0.5) ? 1 : 0;
    const int step = k + bit;
    if (d > 0) per_step = d / step;
    emit(bit, y[i] - (kExact ? h.Predict(step) : h.PredictApproximately(step)));
    h.Push(y[i], step);
  }
}

// Bits a trial of k costs on y[0..n), roughly as the coder would spend them.
uint64_t TrialBits(const uint64_t* y, size_t n, int k) {
  uint64_t bits = 0;
  // The step bit about 1, the residual its length plus about 2.
  RunModel<false>(y, n, k, [&bits](int, uint64_t r) { bits += ResidualLength(r) + 3; });
  return bits;
}

// Candidates for k from the deltas. Where the counter moved k + 1 after k,
// the delta grew by about (k + 1) / k; where it moved k after k + 1, it shrank
// by as much. The drift of the per-step size biases the first estimates one
// way and the second the other, so their midpoint in 1/k is a candidate too;
// a few quantiles of each cover chunks where pairs of equal steps, whose
// ratio is the drift alone, outnumber them. Appends to *out, 1 always first.
void CandidateKs(const uint64_t* y, size_t n, std::vector<int>* out) {
  std::vector<double> up;    // k estimates from growing deltas
  std::vector<double> down;  // from shrinking ones
  for (size_t i = 2; i < n; ++i) {
    const auto d1 = static_cast<double>(static_cast<int64_t>(y[i] - y[i - 1]));
    const auto d0 = static_cast<double>(static_cast<int64_t>(y[i - 1] - y[i - 2]));
    if (d0 == 0 || d1 == 0 || (d0 < 0) != (d1 < 0)) continue;
    const double ratio = d1 / d0;
    const double k = ratio > 1 ? 1 / (ratio - 1) : 1 / (1 / ratio - 1);
    if (ratio != 1 && k >= 0.5 && k < kMaxSteppedK + 0.5) (ratio > 1 ? up : down).push_back(k);
  }
  std::sort(up.begin(), up.end());
  std::sort(down.begin(), down.end());
  auto add = [out](double k) {
    const int rounded = static_cast<int>(std::lround(k));
    if (rounded >= 1 && rounded <= kMaxSteppedK &&
        std::find(out->begin(), out->end(), rounded) == out->end()) {
      out->push_back(rounded);
    }
  };
  add(1);
  for (const double q : {0.5, 0.25, 0.75}) {
    const double ku = up.empty() ? 0 : up[static_cast<size_t>(q * static_cast<double>(up.size() - 1))];
    const double kd =
        down.empty() ? 0 : down[static_cast<size_t>(q * static_cast<double>(down.size() - 1))];
    if (ku > 0 && kd > 0) add(2 / (1 / ku + 1 / kd));
    if (ku > 0) add(ku);
    if (kd > 0) add(kd);
  }
}

// Header bytes beyond the coded streams, for the trial's estimate.
constexpr size_t kSectionOverhead = 14;

}  // namespace

namespace stepped_internal {

void History::Start(uint64_t first, int k) {
  previous[0] = static_cast<int64_t>(first);
  std::fill(std::begin(steps), std::end(steps), k);
  seen = 1;
}

// Calls predict(previous, u, points) with u[j] the steps from previous[j] to
// the next sample, if the counter moves `step`.
template <typename Predictor>
uint64_t PredictWith(const History& h, int step, Predictor predict) {
  int u[History::kPoints];
  u[0] = step;
  for (int j = 1; j < History::kPoints; ++j) u[j] = u[j - 1] + h.steps[j - 1];
  return predict(h.previous, u, static_cast<int>(std::min<size_t>(h.seen, History::kPoints)));
}

uint64_t History::Predict(int step) const { return PredictWith(*this, step, PredictNext); }

uint64_t History::PredictApproximately(int step) const {
  return PredictWith(*this, step, ApproximateNext);
}

void History::Push(uint64_t y, int step) {
  for (int j = kPoints - 1; j > 0; --j) previous[j] = previous[j - 1];
  previous[0] = static_cast<int64_t>(y);
  for (int j = kPoints - 2; j > 0; --j) steps[j] = steps[j - 1];
  steps[0] = step;
  ++seen;
}

}  // namespace stepped_internal

bool EncodeSteppedValues(const uint64_t* y, size_t n, size_t size_to_beat, std::string* out) {
  if (n < 2) return false;
  std::vector<int> candidates;
  CandidateKs(y, std::min(n, kTrialSamples), &candidates);
  // The best candidate on the first `samples`, and the section size that suggests.
  int best_k = 1;
  auto trial = [&](size_t samples) {
    uint64_t best_bits = ~uint64_t{0};
    for (int k : candidates) {
      const uint64_t bits = TrialBits(y, samples, k);
      if (bits < best_bits) {
        best_bits = bits;
        best_k = k;
      }
    }
    return static_cast<double>(best_bits) / static_cast<double>(samples - 1) *
               static_cast<double>(n - 1) / 8 +
           kSectionOverhead;
  };
  // A short trial first turns noise away at a quarter of the cost; its first
  // samples, predicted from fewer points, make it err on the large side.
  const auto limit = static_cast<double>(size_to_beat);
  if (trial(std::min(n, kQuickTrialSamples)) >= limit) return false;
  if (n > kQuickTrialSamples && trial(std::min(n, kTrialSamples)) >= limit) return false;

  std::vector<uint64_t> residuals;
  std::vector<int8_t> bits;
  residuals.reserve(n - 1);
  bits.reserve(n - 1);
  uint32_t length_counts[65] = {};
  RunModel<true>(y, n, best_k, [&](int bit, uint64_t r) {
    residuals.push_back(r);
    bits.push_back(static_cast<int8_t>(bit));
    ++length_counts[ResidualLength(r)];
  });
  const int base_length = MedianResidualLength(length_counts);

  out->push_back(static_cast<char>(best_k));
  PutSignedVarint(static_cast<int64_t>(y[0]), out);
  out->push_back(static_cast<char>(base_length));
  std::string coded;
  std::string raw;
  ResidualEncoder enc(&coded, &raw, base_length);
  AdaptiveBit step_bits[4];
  int context = 0;
  for (size_t i = 0; i < residuals.size(); ++i) {
    enc.EncodeBit(&step_bits[context], bits[i]);
    context = ((context << 1) | bits[i]) & 3;
    enc.Encode(residuals[i]);
  }
  enc.Finish();
  PutVarint(coded.size(), out);
  out->append(coded);
  out->append(raw);
  return true;
}

absl::Status SteppedDecoder::Init(std::string_view section, size_t n) {
  n_ = n;
  i_ = 0;
  failed_ = false;
  step_context_ = 0;
  model_ = ResidualModel();
  std::fill(std::begin(step_bits_), std::end(step_bits_), AdaptiveBit());
  if (n < 2) {
    return absl::DataLossError(
        absl::StrFormat("chunk values: stepped values need at least 2 samples, not %d", n));
  }
  std::string_view in = section;
  if (in.empty()) return absl::DataLossError("chunk values: truncated stepped header");
  k_ = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  int64_t first;
  if (!GetSignedVarint(&in, &first) || in.empty()) {
    return absl::DataLossError("chunk values: truncated stepped header");
  }
  if (k_ < 1) return absl::DataLossError("chunk values: stepped values with a step of 0");
  base_length_ = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  if (base_length_ < 1 || base_length_ > 64) {
    return absl::DataLossError(absl::StrFormat(
        "chunk values: typical residual length %d is not in 1..64", base_length_));
  }
  uint64_t coded_size;
  if (!GetVarint(&in, &coded_size) || coded_size > in.size()) {
    return absl::DataLossError("chunk values: stepped coded stream missing or past the end");
  }
  if (!rc_.Init(in.substr(0, coded_size))) {
    return absl::DataLossError("chunk values: stepped coded stream does not start validly");
  }
  raw_ = BitReader(in.substr(coded_size));
  history_ = History();
  history_.Start(static_cast<uint64_t>(first), k_);
  return absl::OkStatus();
}

size_t SteppedDecoder::Next(uint64_t* out, size_t max) {
  if (failed_) return 0;
  size_t produced = 0;
  if (i_ == 0 && max > 0) {
    out[produced++] = static_cast<uint64_t>(history_.previous[0]);
    i_ = 1;
  }
  RangeDecoder rc = rc_;
  BitReader raw = raw_;
  for (; produced < max && i_ < n_; ++i_) {
    const int bit = rc.Decode(&step_bits_[step_context_]);
    step_context_ = ((step_context_ << 1) | bit) & 3;
    const int step = k_ + bit;
    const uint64_t r = DecodeResidual(model_, base_length_, rc, raw, &failed_);
    if (failed_) return 0;  // the values of this call are garbage; report none
    const uint64_t y = history_.Predict(step) + r;
    history_.Push(y, step);
    out[produced++] = y;
  }
  rc_ = rc;
  raw_ = raw;
  return produced;
}

absl::Status SteppedDecoder::CheckEnd() const {
  if (failed_) {
    return absl::DataLossError(absl::StrFormat(
        "chunk values: stepped residual stream is damaged before value %d of %d", i_, n_));
  }
  if (i_ != n_) {
    return absl::DataLossError(absl::StrFormat("chunk values: %d of %d values decoded", i_, n_));
  }
  if (!rc_.Consistent()) {
    return absl::DataLossError("chunk values: stepped coded stream is not consumed exactly");
  }
  if (raw_.BitsLeft() >= 8) {
    return absl::DataLossError(absl::StrFormat(
        "chunk values: %d raw bits of stepped values left over", raw_.BitsLeft()));
  }
  return absl::OkStatus();
}

}  // namespace trainwatch::codec
