#include "store/coding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace trainwatch::store::coding {
namespace {

TEST(Coding, OrderedIntegersSortLikeNumbers) {
  std::vector<int64_t> values = {std::numeric_limits<int64_t>::min(), -5, -1, 0, 1, 1700000000000,
                                 std::numeric_limits<int64_t>::max()};
  std::vector<std::string> keys;
  for (int64_t v : values) {
    std::string k;
    PutOrderedI64(&k, v);
    EXPECT_EQ(GetOrderedI64(k.data()), v);
    keys.push_back(k);
  }
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

TEST(Coding, OrderedStringsSortLikeTuples) {
  // (a, b) pairs: byte order of the encodings must equal tuple order.
  std::vector<std::pair<std::string, std::string>> tuples = {
      {"a", "z"}, {"a", ""}, {std::string("a\0", 2), "x"}, {"ab", ""}, {"", "q"}, {"a\xff", ""}};
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> enc;
  for (const auto& t : tuples) {
    std::string k;
    PutOrderedString(&k, t.first);
    PutOrderedString(&k, t.second);
    enc.push_back({k, t});
    std::string_view in = k;
    std::string a, b;
    ASSERT_TRUE(GetOrderedString(&in, &a));
    ASSERT_TRUE(GetOrderedString(&in, &b));
    EXPECT_EQ(a, t.first);
    EXPECT_EQ(b, t.second);
    EXPECT_TRUE(in.empty());
  }
  std::sort(enc.begin(), enc.end());
  for (size_t i = 1; i < enc.size(); ++i) EXPECT_LT(enc[i - 1].second, enc[i].second);
}

TEST(Coding, MalformedOrderedStringIsRejected) {
  std::string_view in("abc", 3);  // no terminator
  std::string out;
  EXPECT_FALSE(GetOrderedString(&in, &out));
  std::string bad("a\0\x05", 3);
  std::string_view in2 = bad;
  EXPECT_FALSE(GetOrderedString(&in2, &out));
}

TEST(Coding, VarintsRoundTripAndRejectTruncation) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    int64_t v = static_cast<int64_t>(rng()) >> (rng() % 64);
    std::string s;
    PutVarintSigned(&s, v);
    std::string_view in = s;
    int64_t back;
    ASSERT_TRUE(GetVarintSigned(&in, &back));
    EXPECT_EQ(back, v);
    std::string_view cut = std::string_view(s).substr(0, s.size() - 1);
    if (!cut.empty()) {
      uint64_t u;
      std::string_view c = cut;
      EXPECT_FALSE(GetVarint64(&c, &u));
    }
  }
}

TEST(Coding, DoublesAreBitExact) {
  for (double d : {0.0, -0.0, 1.5, std::nan(""), std::numeric_limits<double>::denorm_min()}) {
    std::string s;
    PutDouble(&s, d);
    std::string_view in = s;
    double back;
    ASSERT_TRUE(GetDouble(&in, &back));
    EXPECT_EQ(std::memcmp(&back, &d, 8), 0);
  }
}

TEST(Coding, PrefixSuccessor) {
  EXPECT_EQ(PrefixSuccessor("ab"), "ac");
  EXPECT_EQ(PrefixSuccessor(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixSuccessor(std::string("\xff\xff", 2)), "");
}

}  // namespace
}  // namespace trainwatch::store::coding
