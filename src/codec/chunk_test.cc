#include "codec/chunk.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainwatch::codec {
namespace {

constexpr int64_t kStart = 1704067200000;  // 2024-01-01T00:00:00Z
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Samples {
  std::vector<int64_t> t;
  std::vector<double> v;
};

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

ChunkBuilder Build(const Samples& s) {
  ChunkBuilder b;
  for (size_t i = 0; i < s.t.size(); ++i) b.Append(s.t[i], s.v[i]);
  return b;
}

Samples Regular(const std::vector<double>& values, int64_t step_ms = 1000, int64_t start = kStart) {
  Samples s;
  for (size_t i = 0; i < values.size(); ++i) {
    s.t.push_back(start + static_cast<int64_t>(i) * step_ms);
    s.v.push_back(values[i]);
  }
  return s;
}

// Index of the first value whose bits differ, or -1.
long FirstBitDifference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return static_cast<long>(std::min(a.size(), b.size()));
  if (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0) return -1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Bits(a[i]) != Bits(b[i])) return static_cast<long>(i);
  }
  return -1;
}

// Decodes with both DecodeChunk and ChunkReader and checks every bit.
void ExpectDecodesTo(const std::string& chunk, const Samples& s) {
  std::vector<int64_t> t;
  std::vector<double> v;
  absl::Status status = DecodeChunk(chunk, &t, &v);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(t == s.t);
  const long diff = FirstBitDifference(v, s.v);
  ASSERT_EQ(diff, -1) << v[diff] << " vs " << s.v[diff];

  auto reader = ChunkReader::Open(chunk);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(reader->size(), s.t.size());
  if (!s.t.empty()) {
    EXPECT_EQ(reader->first_t_ms(), s.t.front());
    EXPECT_EQ(reader->last_t_ms(), s.t.back());
  }
  std::vector<int64_t> rt;
  std::vector<double> rv;
  int64_t t1;
  double v1;
  while (reader->Next(&t1, &v1)) {
    rt.push_back(t1);
    rv.push_back(v1);
  }
  EXPECT_TRUE(reader->status().ok()) << reader->status();
  EXPECT_TRUE(rt == s.t);
  EXPECT_EQ(FirstBitDifference(rv, s.v), -1);
  EXPECT_FALSE(reader->Next(&t1, &v1));  // stays at the end
}

void ExpectRoundTrip(const Samples& s) {
  const ChunkBuilder b = Build(s);
  ExpectDecodesTo(b.Finish(), s);
}

ValueEncoding ChosenEncoding(const Samples& s) {
  auto reader = ChunkReader::Open(Build(s).Finish());
  EXPECT_TRUE(reader.ok());
  return reader->value_encoding();
}

double BytesPerSample(const Samples& s) {
  return static_cast<double>(Build(s).Finish().size()) / static_cast<double>(s.t.size());
}

// ---- data shapes --------------------------------------------------------

std::vector<double> Percent1Decimal(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.5);
  std::vector<double> v(n);
  for (double& x : v) x = std::round((90.0 + noise(rng)) * 10) / 10;
  return v;
}

std::vector<double> FullPrecisionLoss(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = (0.3 + 2.0 * std::exp(-static_cast<double>(i) / 500.0)) * (1 + 0.06 * noise(rng));
  }
  return v;
}

std::vector<double> Float32Origin(size_t n, uint64_t seed) {
  std::vector<double> v = FullPrecisionLoss(n, seed);
  for (double& x : v) x = static_cast<double>(static_cast<float>(x));
  return v;
}

std::vector<double> RandomBitPatterns(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = std::bit_cast<double>(rng());
  return v;
}

std::vector<double> Oddities() {
  return {0.0,
          -0.0,
          kNaN,
          -kNaN,
          std::bit_cast<double>(uint64_t{0x7FF0000000000001}),  // signalling NaN payload
          std::bit_cast<double>(uint64_t{0xFFF8DEADBEEF0001}),  // negative NaN, payload
          kInf,
          -kInf,
          std::numeric_limits<double>::denorm_min(),
          -std::numeric_limits<double>::denorm_min(),
          std::numeric_limits<double>::min() / 3,
          std::numeric_limits<double>::max(),
          std::numeric_limits<double>::lowest(),
          std::numeric_limits<double>::epsilon(),
          0.1 + 0.2,
          -0.0,
          0.0,
          1.0};
}

// A cosine learning-rate schedule over `total` training steps, sampled every
// second while the job makes `steps_per_sample` steps a second (so the step
// moves by floor or ceil of it), after a linear warm-up when `warmup_steps` > 0.
std::vector<double> LearningRate(size_t n, double steps_per_sample, int64_t warmup_steps = 0,
                                 int64_t first_step = 40000, double total = 300000) {
  const double peak = 3e-4;
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    const auto step = static_cast<int64_t>(static_cast<double>(first_step) +
                                           steps_per_sample * static_cast<double>(i));
    if (step < warmup_steps) {
      v[i] = peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    } else {
      const double progress = static_cast<double>(step - warmup_steps) / (total - warmup_steps);
      v[i] = peak * 0.5 * (1.0 + std::cos(M_PI * progress));
    }
  }
  return v;
}

std::vector<std::vector<double>> ValueShapes() {
  std::vector<double> counter(700), steps(700, 0.8123), alternating(300);
  double c = 5e11;
  for (size_t i = 0; i < counter.size(); ++i)
    counter[i] = c += 1e8 + static_cast<double>(i % 17) * 1e6;
  for (size_t i = 300; i < steps.size(); ++i) steps[i] = 0.8456;
  for (size_t i = 0; i < alternating.size(); ++i) alternating[i] = i % 2 ? -(0.1 + 0.2) : 0.1 + 0.2;
  return {Percent1Decimal(500, 1),
          FullPrecisionLoss(500, 2),
          Float32Origin(500, 3),
          RandomBitPatterns(300, 4),
          Oddities(),
          counter,
          steps,
          alternating,
          std::vector<double>(100, -0.0),
          LearningRate(600, 5.37),
          {42.0}};
}

// ---- tests -----------------------------------------------------------------

TEST(Chunk, EmptyChunk) {
  ChunkBuilder b;
  EXPECT_EQ(b.size(), 0u);
  const std::string chunk = b.Finish();
  EXPECT_EQ(chunk.size(), 3u);
  ExpectDecodesTo(chunk, Samples{});
}

TEST(Chunk, SingleSamples) {
  for (double v : Oddities()) {
    for (int64_t t : {kMin, int64_t{-1}, int64_t{0}, kStart, kMax}) {
      Samples s{{t}, {v}};
      ExpectRoundTrip(s);
    }
  }
}

TEST(Chunk, EveryValueEncodingRoundTripsAndTheChoiceIsTheSmallest) {
  for (const std::vector<double>& values : ValueShapes()) {
    const Samples s = Regular(values);
    const ChunkBuilder b = Build(s);
    const std::string chosen = b.Finish();
    ExpectDecodesTo(chosen, s);
    for (ValueEncoding e : {ValueEncoding::kConstant, ValueEncoding::kXor, ValueEncoding::kDecimal,
                            ValueEncoding::kFloatBits, ValueEncoding::kRaw,
                            ValueEncoding::kStepped}) {
      std::optional<std::string> forced = b.FinishWithValueEncodingForTest(e);
      if (!forced.has_value()) continue;
      SCOPED_TRACE(static_cast<int>(e));
      ExpectDecodesTo(*forced, s);
      auto reader = ChunkReader::Open(*forced);
      ASSERT_TRUE(reader.ok());
      EXPECT_EQ(reader->value_encoding(), e);
      // Stepped is tried only on some float-bit chunks, and a trial may
      // decline it: LearningRateBetweenTrainingSteps... checks where it pays.
      if (e != ValueEncoding::kStepped) {
        EXPECT_LE(chosen.size(), forced->size()) << "first value " << values[0];
      }
    }
  }
}

TEST(Chunk, PicksTheEncodingThatFitsTheData) {
  EXPECT_EQ(ChosenEncoding(Regular(Percent1Decimal(500, 5))), ValueEncoding::kDecimal);
  EXPECT_EQ(ChosenEncoding(Regular(FullPrecisionLoss(500, 6))), ValueEncoding::kFloatBits);
  EXPECT_EQ(ChosenEncoding(Regular(RandomBitPatterns(500, 7))), ValueEncoding::kRaw);
  // One random mantissa bit flipped per value: a short XOR window each, but
  // deltas of any size.
  std::mt19937_64 rng(24);
  std::vector<double> flips(500);
  uint64_t bits = Bits(0.1 + 0.2);
  for (double& v : flips) v = std::bit_cast<double>(bits ^= uint64_t{1} << (rng() % 52));
  EXPECT_EQ(ChosenEncoding(Regular(flips)), ValueEncoding::kXor);
  // Short decimals are integers: 42.0 takes a byte or two, not 8.
  EXPECT_EQ(ChosenEncoding(Regular(std::vector<double>(100, 42.0))), ValueEncoding::kDecimal);
  // Float bits shift trailing zeros out; a NaN payload in the low bits leaves
  // none, and then the raw constant is smaller.
  const double payload_nan = std::bit_cast<double>(uint64_t{0x7FF8000000000001});
  EXPECT_EQ(ChosenEncoding(Regular(std::vector<double>(100, payload_nan))),
            ValueEncoding::kConstant);
  // A full-precision magnitude whose sign flips: float bits divide the jump out.
  std::vector<double> alternating(500);
  for (size_t i = 0; i < alternating.size(); ++i) alternating[i] = i % 2 ? -(0.1 + 0.2) : 0.1 + 0.2;
  EXPECT_LT(BytesPerSample(Regular(alternating)), 0.1);
}

TEST(Chunk, LearningRateBetweenTrainingStepsCodesSteppedAndSmall) {
  struct Case {
    double steps_per_sample;
    int64_t warmup_steps;
    int64_t first_step;
  };
  // Steps a second as jobs run them (k = 5, 1, 11, 50), and a warm-up ending
  // inside the chunk.
  for (const Case& c : {Case{5.37, 0, 40000}, Case{1.0, 0, 40000}, Case{11.83, 0, 40000},
                        Case{50.41, 0, 40000}, Case{7.5, 4000, 1000}}) {
    SCOPED_TRACE(c.steps_per_sample);
    const Samples s = Regular(LearningRate(1024, c.steps_per_sample, c.warmup_steps, c.first_step));
    const ChunkBuilder b = Build(s);
    const std::string chosen = b.Finish();
    ExpectDecodesTo(chosen, s);
    auto reader = ChunkReader::Open(chosen);
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ(reader->value_encoding(), ValueEncoding::kStepped);
    // Float bits pay 3 to 5 bytes for each such value; stepped about 1 or less.
    const double stepped = static_cast<double>(chosen.size()) / 1024;
    const double float_bits =
        static_cast<double>(b.FinishWithValueEncodingForTest(ValueEncoding::kFloatBits)->size()) /
        1024;
    EXPECT_LT(stepped, 1.2) << "float bits: " << float_bits;
    EXPECT_GT(float_bits, 3 * stepped);
  }
}

// docs/format/chunk.md's worked example, byte for byte: version 1 chunks are
// what older builds read, so their bytes must not change.
TEST(Chunk, WorkedExampleOfTheFormatDocument) {
  const std::string chunk = Build(Regular({45.1, 45.3, 45.2, 45.2, 47.0})).Finish();
  const std::string expected(
      "\x01\x08\x05\x80\xd0\x8f\xa5\x98\x63\xa0\x1f\x01\x86\x07\x01\x02\x04\x01\x03"
      "\x07\xd6\x19\x00",
      23);
  EXPECT_EQ(chunk, expected);
}

// A stepped chunk (version 2) byte for byte, and the values it holds: a round
// trip cannot notice an encoder and a decoder that change together, and every
// build must decode what another wrote. A cosine learning rate at 5.37 steps a
// second, 40 samples from 2024-01-01T00:00:00Z.
TEST(Chunk, SteppedChunkBytesAreFixed) {
  const std::string chunk(
      "\x02\x14\x28\x80\xd0\x8f\xa5\x98\x63\xd8\xb0\x02\x00\x05\xf6\xd6\xa5\xe2\x88\xe6"
      "\xe7\xb2\x7e\x02\x1d\x3e\x3a\x6e\x09\x8f\xd6\x14\xbe\xea\xe8\x02\x3b\xe3\x4f\xe6"
      "\xce\xe5\xbe\xcd\xb2\x87\x7e\x94\xff\x7f\x02\xfd\xe1\x08\xb8\x99\x48\x75\x37\xc0"
      "\x2a",
      61);
  static constexpr uint64_t kBits[40] = {
      0x3f32cf984624b5bb, 0x3f32cf8a8d8b6d46, 0x3f32cf7cd48866d0, 0x3f32cf6c5c5f9859,
      0x3f32cf5ea273f21a, 0x3f32cf50e81e8fe0, 0x3f32cf406e5fbc5a, 0x3f32cf32b321bec9,
      0x3f32cf24f77a0742, 0x3f32cf147c253672, 0x3f32cf06bf94e806, 0x3f32cef64328fd93,
      0x3f32cee885b01b52, 0x3f32cedac7cd8284, 0x3f32ceca49cba7e0, 0x3f32cebc8b007faf,
      0x3f32ceaecbcba2f8, 0x3f32ce9e4c33dfe7, 0x3f32ce908c167840, 0x3f32ce800b67a9e7,
      0x3f32ce724a61ba61, 0x3f32ce6488f219be, 0x3f32ce5406ad7016, 0x3f32ce4644554c08,
      0x3f32ce38819378e4, 0x3f32ce27fdb8fbb3, 0x3f32ce1a3a0ea998, 0x3f32ce0c75faaa6e,
      0x3f32cdfbf08a617b, 0x3f32cdee2b8de7d0, 0x3f32cddda506a74c, 0x3f32cdcfdf21b62f,
      0x3f32cdc218d31b6f, 0x3f32cdb190b61c4b, 0x3f32cda3c97f0e90, 0x3f32cd9601de5938,
      0x3f32cd85782ba33e, 0x3f32cd77afa27f61, 0x3f32cd6724d8e039, 0x3f32cd595b6750e9};
  std::vector<double> values;
  for (uint64_t bits : kBits) values.push_back(std::bit_cast<double>(bits));
  const Samples s = Regular(values);
  ExpectDecodesTo(chunk, s);
  EXPECT_EQ(Build(s).Finish(), chunk);
}

TEST(Chunk, SteppedChunksAreFormatVersion2AndOthersStay1) {
  const std::string stepped = Build(Regular(LearningRate(500, 5.37))).Finish();
  auto opened = ChunkReader::Open(stepped);
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ(opened->value_encoding(), ValueEncoding::kStepped);
  EXPECT_EQ(stepped[0], 2);
  EXPECT_EQ(Build(Regular(FullPrecisionLoss(500, 2))).Finish()[0], 1);
  EXPECT_EQ(Build(Regular(Percent1Decimal(500, 1))).Finish()[0], 1);
  // Version 1 never had stepped values.
  std::string mislabelled = stepped;
  mislabelled[0] = 1;
  EXPECT_EQ(ChunkReader::Open(mislabelled).status().code(), absl::StatusCode::kDataLoss);
  std::string newer = stepped;
  newer[0] = 3;
  auto reader = ChunkReader::Open(newer);
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("reads versions 1 to 2"), std::string_view::npos)
      << reader.status();
}

TEST(Chunk, CompressesTypicalShapes) {
  // Constant value at a regular interval: header and 8 bytes of value only.
  EXPECT_LT(Build(Regular(std::vector<double>(1000, 97.5))).Finish().size(), 24u);
  // A percentage with one decimal and noise of 15 tenths: about 6 bits.
  EXPECT_LT(BytesPerSample(Regular(Percent1Decimal(1024, 8))), 0.85);
  // Full-precision noise costs its mantissa, float32 values only their 24 bits.
  EXPECT_LT(BytesPerSample(Regular(FullPrecisionLoss(1024, 9))), 6.6);
  EXPECT_LT(BytesPerSample(Regular(Float32Origin(1024, 9))), 3.1);
  // Random bit patterns never cost more than raw doubles plus a header.
  EXPECT_LT(BytesPerSample(Regular(RandomBitPatterns(1024, 10))), 8.05);
}

TEST(Chunk, RegularTimestampsCostNothing) {
  for (int64_t step : {int64_t{1000}, int64_t{100}, int64_t{1}, int64_t{0}, int64_t{60000}}) {
    const Samples s = Regular(std::vector<double>(500, 1.0), step);
    const std::string chunk = Build(s).Finish();
    auto reader = ChunkReader::Open(chunk);
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ(reader->timestamp_encoding(), TimestampEncoding::kRegular) << step;
    EXPECT_LT(chunk.size(), 24u);
    ExpectDecodesTo(chunk, s);
  }
}

TEST(Chunk, IrregularTimestamps) {
  std::mt19937_64 rng(11);
  std::vector<Samples> cases(5);
  int64_t jitter_t = kStart, log_t = kStart, gap_t = kStart, burst_t = kStart;
  for (int i = 0; i < 1000; ++i) {
    // A 100 ms profiler tick with +-3 ms of scheduling jitter.
    cases[0].t.push_back(kStart + 100 * i + static_cast<int64_t>(rng() % 7) - 3);
    jitter_t = cases[0].t.back();
    // Log lines: steps of 50..450 ms.
    log_t += 50 + static_cast<int64_t>(rng() % 400);
    cases[1].t.push_back(log_t);
    // 1 s samples with occasional missing ones.
    gap_t += rng() % 50 == 0 ? 5000 : 1000;
    cases[2].t.push_back(gap_t);
    // Bursts of equal timestamps (several samples in one ms).
    burst_t += rng() % 4 == 0 ? 1 + static_cast<int64_t>(rng() % 1000) : 0;
    cases[3].t.push_back(burst_t);
  }
  (void)jitter_t;
  cases[4].t = {kMin, kMin, kMin + 1, -1, 0, 1, kMax - 1, kMax, kMax};
  for (size_t c = 0; c < cases.size(); ++c) {
    std::sort(cases[c].t.begin(), cases[c].t.end());
    cases[c].v = Percent1Decimal(cases[c].t.size(), c);
    SCOPED_TRACE(c);
    ExpectRoundTrip(cases[c]);
  }
  // Jittered ticks stay cheap: the jitter's few bits, not whole deltas.
  Samples ticks = cases[0];
  std::fill(ticks.v.begin(), ticks.v.end(), 1.0);
  EXPECT_LT(BytesPerSample(ticks), 0.6);
  // Regular but for a few gaps: almost free.
  Samples gaps = cases[2];
  std::fill(gaps.v.begin(), gaps.v.end(), 1.0);
  EXPECT_LT(BytesPerSample(gaps), 0.1);
}

TEST(Chunk, ExtremeTimestampsAndSpans) {
  ExpectRoundTrip(Samples{{kMin, kMax}, {1.0, 2.0}});
  ExpectRoundTrip(
      Samples{{kMin, 0, kMax}, {1.0, 2.0, 3.0}});  // irregular: steps of 2^63 - 1 and 2^63
  ExpectRoundTrip(Samples{{kMin, kMin, kMin}, {1.0, -0.0, kNaN}});
  ExpectRoundTrip(Samples{{kMax - 2, kMax - 1, kMax}, {1.0, 2.0, 3.0}});
  ExpectRoundTrip(Regular(Percent1Decimal(100, 1), 1000, -86400000));  // before 1970
}

TEST(Chunk, OddValuesSurviveEveryWhere) {
  std::mt19937_64 rng(12);
  std::vector<double> pool = Oddities();
  std::vector<double> values(2000);
  for (double& v : values) {
    v = rng() % 3 == 0 ? pool[rng() % pool.size()]
                       : std::round(1000.0 * static_cast<double>(rng() % 100000)) / 1000;
  }
  ExpectRoundTrip(Regular(values));
  // A decimal series with a single -0.0 must not come back as +0.0.
  std::vector<double> decimals = Percent1Decimal(300, 13);
  decimals[150] = -0.0;
  const Samples s = Regular(decimals);
  ExpectRoundTrip(s);
  EXPECT_NE(ChosenEncoding(s), ValueEncoding::kDecimal);
}

TEST(Chunk, MillionSampleChunk) {
  // Mostly predictable (so the test stays quick without optimisation), but with
  // rare irregular steps in both timestamps and values, so both go through
  // IntSequence and every block of the million.
  std::mt19937_64 rng(14);
  Samples s;
  s.t.reserve(1000000);
  s.v.reserve(1000000);
  int64_t t = kStart;
  double c = 0;
  for (int i = 0; i < 1000000; ++i) {
    t += rng() % 64 == 0 ? 100 + static_cast<int64_t>(rng() % 5) : 100;
    c += rng() % 64 == 0 ? static_cast<double>(rng() % 4096) : 4096;
    s.t.push_back(t);
    s.v.push_back(c);
  }
  const std::string chunk = Build(s).Finish();
  EXPECT_LT(static_cast<double>(chunk.size()) / 1e6, 0.5);
  auto reader = ChunkReader::Open(chunk);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->size(), 1000000u);
  EXPECT_EQ(reader->timestamp_encoding(), TimestampEncoding::kIntSequence);
  EXPECT_EQ(reader->value_encoding(), ValueEncoding::kDecimal);
  std::vector<int64_t> t_out;
  std::vector<double> v_out;
  ASSERT_TRUE(DecodeChunk(chunk, &t_out, &v_out).ok());
  EXPECT_TRUE(t_out == s.t);
  EXPECT_EQ(FirstBitDifference(v_out, s.v), -1);
}

TEST(Chunk, DecodeChunkAppendsAndLeavesVectorsAloneOnError) {
  const Samples s = Regular(Percent1Decimal(100, 15));
  const std::string chunk = Build(s).Finish();
  std::vector<int64_t> t = {7};
  std::vector<double> v = {8.0};
  ASSERT_TRUE(DecodeChunk(chunk, &t, &v).ok());
  ASSERT_EQ(t.size(), 101u);
  EXPECT_EQ(t[0], 7);
  EXPECT_EQ(t[1], s.t[0]);

  std::string damaged = chunk.substr(0, chunk.size() - 3);
  t = {7};
  v = {8.0};
  EXPECT_FALSE(DecodeChunk(damaged, &t, &v).ok());
  EXPECT_EQ(t, std::vector<int64_t>{7});
  EXPECT_EQ(v, std::vector<double>{8.0});
}

TEST(Chunk, RejectsForeignBytesWithAnExplanation) {
  std::string chunk = Build(Regular(Percent1Decimal(10, 16))).Finish();
  chunk[0] = 9;
  auto reader = ChunkReader::Open(chunk);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reader.status().message().find("version 9"), std::string_view::npos) << reader.status();

  EXPECT_EQ(ChunkReader::Open("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChunkReader::Open("\x01\xFF\x01").status().code(), absl::StatusCode::kDataLoss);
  // A count beyond kMaxChunkSamples is refused before anything is decoded.
  std::string huge = "\x01\x00";
  huge.push_back('\0');
  huge[1] = 0;
  huge.pop_back();
  const uint64_t too_many = kMaxChunkSamples + 1;
  for (uint64_t v = too_many; v >= 0x80; v >>= 7) huge.push_back(static_cast<char>(v | 0x80));
  huge.push_back(static_cast<char>(too_many >> (7 * 3)));
  EXPECT_EQ(ChunkReader::Open(huge).status().code(), absl::StatusCode::kDataLoss);
}

// A truncated chunk always fails with a status. A flipped bit fails or decodes
// to other samples (chunks carry no checksum: the store's RocksDB blocks do),
// but never misbehaves, and the reader agrees with DecodeChunk.
void ExpectDamageIsHarmless(const Samples& s, uint64_t seed) {
  const std::string chunk = Build(s).Finish();
  auto check = [&s](const std::string& bytes, bool truncated) {
    std::vector<int64_t> t;
    std::vector<double> v;
    absl::Status status = DecodeChunk(bytes, &t, &v);
    if (truncated) {
      EXPECT_FALSE(status.ok()) << bytes.size() << " bytes";
    }
    if (status.ok()) {
      EXPECT_EQ(t.size(), s.t.size());
      EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
    } else {
      EXPECT_TRUE(status.code() == absl::StatusCode::kDataLoss ||
                  status.code() == absl::StatusCode::kInvalidArgument)
          << status;
      EXPECT_TRUE(t.empty());
    }
    auto reader = ChunkReader::Open(bytes);
    if (reader.ok()) {
      int64_t rt;
      double rv;
      while (reader->Next(&rt, &rv)) {
      }
      EXPECT_EQ(reader->status().ok(), status.ok());
    }
  };
  for (size_t len = 0; len < chunk.size(); ++len) check(chunk.substr(0, len), true);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 400; ++trial) {
    std::string damaged = chunk;
    damaged[rng() % damaged.size()] ^= static_cast<char>(1 << (rng() % 8));
    check(damaged, false);
  }
}

TEST(Chunk, DamagedChunksFailCleanly) {
  Samples irregular = Regular(FullPrecisionLoss(200, 17));
  for (size_t i = 1; i < irregular.t.size(); ++i)
    irregular.t[i] = irregular.t[i - 1] + 37 * (i % 5);
  ExpectDamageIsHarmless(Regular(Percent1Decimal(200, 18)), 1);
  ExpectDamageIsHarmless(irregular, 2);
  ExpectDamageIsHarmless(Regular(Oddities()), 3);
  ExpectDamageIsHarmless(Regular(RandomBitPatterns(40, 19)), 4);
  const Samples stepped = Regular(LearningRate(200, 5.37));
  ASSERT_EQ(ChosenEncoding(stepped), ValueEncoding::kStepped);
  ExpectDamageIsHarmless(stepped, 5);
}

TEST(ChunkBuilder, TracksTimesSizeAndAnEstimate) {
  ChunkBuilder b;
  EXPECT_EQ(b.EstimatedBytes(), 3u);
  const std::vector<double> values = Percent1Decimal(1024, 20);
  for (size_t i = 0; i < values.size(); ++i)
    b.Append(kStart + 1000 * static_cast<int64_t>(i), values[i]);
  EXPECT_EQ(b.size(), 1024u);
  EXPECT_EQ(b.first_t_ms(), kStart);
  EXPECT_EQ(b.last_t_ms(), kStart + 1023 * 1000);
  const double actual = static_cast<double>(b.Finish().size());
  EXPECT_GT(static_cast<double>(b.EstimatedBytes()), 0.7 * actual);
  EXPECT_LT(static_cast<double>(b.EstimatedBytes()), 1.4 * actual);
  EXPECT_GE(b.MemoryBytes(), 1024u * 16);

  ChunkBuilder full = Build(Regular(FullPrecisionLoss(1024, 21)));
  const double full_actual = static_cast<double>(full.Finish().size());
  EXPECT_GT(static_cast<double>(full.EstimatedBytes()), 0.7 * full_actual);
  EXPECT_LT(static_cast<double>(full.EstimatedBytes()), 1.4 * full_actual);
}

TEST(ChunkBuilder, ClearStartsAfreshAndKeepsCapacity) {
  ChunkBuilder b = Build(Regular(FullPrecisionLoss(300, 22)));
  const size_t memory = b.MemoryBytes();
  b.Clear();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.MemoryBytes(), memory);
  const Samples s = Regular(Percent1Decimal(100, 23));
  for (size_t i = 0; i < s.t.size(); ++i) b.Append(s.t[i], s.v[i]);
  EXPECT_EQ(b.Finish(), Build(s).Finish());
  EXPECT_EQ(b.EstimatedBytes(), Build(s).EstimatedBytes());
}

TEST(ChunkBuilder, SamplesReadBackAcrossBlocksAndBlocksAreReused) {
  constexpr size_t kBlock = ChunkBuilder::kBlockRows;
  for (size_t n : {kBlock - 1, kBlock, kBlock + 1, 2 * kBlock, 2 * kBlock + 1, 4 * kBlock + 7}) {
    SCOPED_TRACE(n);
    const Samples s = Regular(FullPrecisionLoss(n, 24), 997);
    ChunkBuilder b = Build(s);
    ASSERT_EQ(b.size(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(b.t_ms(i), s.t[i]) << i;
      ASSERT_EQ(Bits(b.value(i)), Bits(s.v[i])) << i;
    }
    EXPECT_EQ(b.first_t_ms(), s.t.front());
    EXPECT_EQ(b.last_t_ms(), s.t.back());
    ExpectDecodesTo(b.Finish(), s);
    // Past the first block, memory grows a block at a time: at most a block
    // (and the block list) more than the samples take, where a vector that
    // doubles holds up to twice them.
    if (n > kBlock) {
      EXPECT_LE(b.MemoryBytes(), (n + kBlock) * 16 + 256);
    }

    // Cleared, it keeps its blocks and refills them, fewer or more samples than
    // before, to the same chunk as a new builder.
    const size_t memory = b.MemoryBytes();
    for (size_t refill : {n / 2, 2 * n}) {
      SCOPED_TRACE(refill);
      b.Clear();
      EXPECT_EQ(b.size(), 0u);
      EXPECT_EQ(b.MemoryBytes(), memory);
      const Samples again = Regular(Percent1Decimal(refill, 25), 1000, kStart + 7);
      for (size_t i = 0; i < refill; ++i) {
        b.PrefetchNextAppend();  // a hint: it must change nothing
        b.Append(again.t[i], again.v[i]);
      }
      EXPECT_EQ(b.size(), refill);
      EXPECT_EQ(b.first_t_ms(), again.t.front());
      EXPECT_EQ(b.last_t_ms(), again.t.back());
      for (size_t i = 0; i < refill; ++i) {
        ASSERT_EQ(b.t_ms(i), again.t[i]) << i;
      }
      EXPECT_EQ(b.Finish(), Build(again).Finish());
      EXPECT_EQ(b.EstimatedBytes(), Build(again).EstimatedBytes());
    }

    // Moved, the samples go along, appends continue where they stopped, and
    // the builder left behind is empty.
    const std::string chunk = b.Finish();
    ChunkBuilder moved = std::move(b);
    EXPECT_EQ(moved.Finish(), chunk);
    const Samples longer = Regular(Percent1Decimal(2 * n + 1, 25), 1000, kStart + 7);
    moved.PrefetchNextAppend();
    moved.Append(longer.t.back(), longer.v.back());
    EXPECT_EQ(moved.first_t_ms(), longer.t.front());
    EXPECT_EQ(moved.last_t_ms(), longer.t.back());
    EXPECT_EQ(moved.Finish(), Build(longer).Finish());
    EXPECT_EQ(moved.EstimatedBytes(), Build(longer).EstimatedBytes());
    EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move): what a move leaves
    b.Append(kStart, 1.5);
    EXPECT_EQ(b.Finish(), Build(Regular({1.5})).Finish());
  }
}

TEST(ChunkBuilderDeathTest, RefusesOutOfOrderTimestamps) {
  ChunkBuilder b;
  b.Append(1000, 1.0);
  b.Append(1000, 2.0);  // equal is fine
  EXPECT_DEATH(b.Append(999, 3.0), "invariant violated");
}

}  // namespace
}  // namespace trainwatch::codec
