#include "codec/int_sequence.h"

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainwatch::codec {
namespace {

std::string Encode(const std::vector<uint64_t>& x, bool first_known) {
  std::string out;
  EncodeIntSequence(x.data(), x.size(), first_known, &out);
  return out;
}

// Decodes in uneven pieces, so block boundaries fall everywhere.
std::vector<uint64_t> Decode(const std::string& bytes, size_t n, bool first_known, uint64_t first,
                             absl::Status* status) {
  IntSequenceDecoder dec;
  *status = dec.Init(bytes, n, first_known, first, "test");
  std::vector<uint64_t> out;
  if (!status->ok()) return out;
  uint64_t buf[64];
  size_t step = 1;
  while (true) {
    const size_t got = dec.Next(buf, step);
    if (got == 0) break;
    out.insert(out.end(), buf, buf + got);
    step = step % 50 + 7;
  }
  *status = dec.CheckEnd();
  return out;
}

void ExpectRoundTrip(const std::vector<uint64_t>& x) {
  for (bool first_known : {false, true}) {
    const std::string bytes = Encode(x, first_known);
    absl::Status status;
    const std::vector<uint64_t> got = Decode(bytes, x.size(), first_known, x[0], &status);
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(got, x);
  }
}

std::vector<uint64_t> Signed(const std::vector<int64_t>& v) {
  return std::vector<uint64_t>(v.begin(), v.end());
}

TEST(IntSequence, RoundTripsShapes) {
  std::mt19937_64 rng(1);
  ExpectRoundTrip({42});
  ExpectRoundTrip({5, 5});
  ExpectRoundTrip({5, 6});
  ExpectRoundTrip(std::vector<uint64_t>(1000, 77));  // constant
  for (size_t n : {2, 3, 31, 32, 33, 64, 65, 1000}) {
    std::vector<uint64_t> random(n), walk(n), counter(n), sparse(n);
    int64_t w = 0, c = 1000000000000, s = 3;
    for (size_t i = 0; i < n; ++i) {
      random[i] = rng();
      w += static_cast<int64_t>(rng() % 201) - 100;
      walk[i] = static_cast<uint64_t>(w);
      c += 100000000 + static_cast<int64_t>(rng() % 20000000);
      counter[i] = static_cast<uint64_t>(c);
      if (rng() % 100 == 0) s += static_cast<int64_t>(rng() % 9) - 4;
      sparse[i] = static_cast<uint64_t>(s);
    }
    ExpectRoundTrip(random);
    ExpectRoundTrip(walk);
    ExpectRoundTrip(counter);
    ExpectRoundTrip(sparse);
  }
}

TEST(IntSequence, RoundTripsExtremesAndWrapping) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ExpectRoundTrip(Signed({kMin, kMax}));
  ExpectRoundTrip(Signed({kMax, kMin, kMax, kMin, 0, -1, 1}));
  ExpectRoundTrip(Signed({kMin, kMin, kMin + 1, kMax - 1, kMax, kMax}));
  ExpectRoundTrip(Signed({0, kMin, 0, kMin}));  // differences of exactly -2^63
  ExpectRoundTrip(Signed({-5, -5, -4, kMin / 2, kMax / 2}));
  std::vector<uint64_t> all_ones(100, std::numeric_limits<uint64_t>::max());
  all_ones[50] = 0;
  ExpectRoundTrip(all_ones);
}

TEST(IntSequence, DividesOutACommonFactor) {
  std::mt19937_64 rng(2);
  std::vector<uint64_t> seconds(1000), fine(1000);
  int64_t t = -1700000000000;
  for (size_t i = 0; i < seconds.size(); ++i) {
    t += 1000 * static_cast<int64_t>(1 + rng() % 30);  // irregular, but whole seconds
    seconds[i] = static_cast<uint64_t>(t);
    fine[i] = static_cast<uint64_t>(t + static_cast<int64_t>(i % 2));  // breaks the factor
  }
  ExpectRoundTrip(seconds);
  ExpectRoundTrip(fine);
  // Dividing by 1000 saves about log2(1000) = 10 bits per value.
  EXPECT_LT(Encode(seconds, false).size() + 1000 * 8 / 8, Encode(fine, false).size());
  ExpectRoundTrip(Signed({0, 6, -12, 18, std::numeric_limits<int64_t>::min() / 3 * 3}));
}

TEST(IntSequence, CodesNoiseNearItsEntropy) {
  // Gaussian noise of sigma 1000 around a level: entropy about log2(1000) + 2.05 bits.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0.0, 1000.0);
  std::vector<uint64_t> x(4096);
  for (uint64_t& v : x)
    v = static_cast<uint64_t>(1000000 + static_cast<int64_t>(std::llround(noise(rng))));
  const double bits_per_value = 8.0 * static_cast<double>(Encode(x, false).size()) / 4096.0;
  EXPECT_LT(bits_per_value, 12.3);  // entropy 12.0
  ExpectRoundTrip(x);
}

TEST(IntSequence, RejectsDamagedInputWithoutMisbehaving) {
  std::mt19937_64 rng(4);
  std::vector<uint64_t> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1000 * i + rng() % 50;
  const std::string bytes = Encode(x, false);
  for (size_t len = 0; len < bytes.size(); ++len) {
    absl::Status status;
    const std::vector<uint64_t> got = Decode(bytes.substr(0, len), x.size(), false, 0, &status);
    if (status.ok()) {
      EXPECT_EQ(got, x) << "truncated to " << len << " of " << bytes.size();
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    }
  }
  for (int trial = 0; trial < 300; ++trial) {
    std::string damaged = bytes;
    damaged[rng() % damaged.size()] ^= static_cast<char>(1 << (rng() % 8));
    absl::Status status;
    Decode(damaged, x.size(), false, 0, &status);  // any outcome but a crash
  }
  absl::Status status;
  Decode(bytes, 1, false, 0, &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace trainwatch::codec
