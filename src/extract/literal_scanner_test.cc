#include "extract/literal_scanner.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainwatch::extract {
namespace {

std::vector<bool> Found(const LiteralScanner& s, std::string_view text) {
  std::vector<uint64_t> words(s.words(), 0);
  s.Scan(text, words.data());
  std::vector<bool> out;
  for (size_t i = 0; i < s.literal_count(); ++i) out.push_back((words[i / 64] >> (i % 64)) & 1);
  return out;
}

// The scanner's notion of equal bytes: equal once bit 0x20 is set.
std::string Fold(std::string s) {
  for (char& c : s) c = static_cast<char>(c | 0x20);
  return s;
}

TEST(LiteralScannerTest, FindsOverlappingAndNestedLiterals) {
  LiteralScanner s({"he", "she", "his", "hers", "loss: ", "s"});
  EXPECT_EQ(Found(s, "ushers"), (std::vector<bool>{true, true, false, true, false, true}));
  EXPECT_EQ(Found(s, "val_loss: 1"), (std::vector<bool>{false, false, false, false, true, true}));
  EXPECT_EQ(Found(s, ""), (std::vector<bool>(6, false)));
}

TEST(LiteralScannerTest, AsciiLettersIgnoreCase) {
  LiteralScanner s({"loss: ", "#011train-rmse:"});
  EXPECT_EQ(Found(s, "LOSS: 1"), (std::vector<bool>{true, false}));
  EXPECT_EQ(Found(s, "[1]#011TRAIN-rmse:0.5"), (std::vector<bool>{false, true}));
  EXPECT_EQ(Found(s, "los s: "), (std::vector<bool>{false, false}));
}

TEST(LiteralScannerTest, ManyLiteralsUseSeveralWords) {
  std::vector<std::string> lits;
  for (int i = 0; i < 130; ++i) lits.push_back("k" + std::to_string(i) + "=");
  LiteralScanner s(lits);
  EXPECT_EQ(s.words(), 3u);
  std::vector<bool> f = Found(s, "k129= k7= k64=");
  for (int i = 0; i < 130; ++i) EXPECT_EQ(f[i], i == 129 || i == 7 || i == 64) << i;
}

TEST(LiteralScannerTest, AgreesWithNaiveSearch) {
  std::mt19937 rng(7);
  const char alphabet[] = "abAB:- \xC3\xA9\0";
  auto random_string = [&](size_t min_len, size_t max_len) {
    std::string s;
    size_t n = min_len + rng() % (max_len - min_len + 1);
    for (size_t i = 0; i < n; ++i) s.push_back(alphabet[rng() % (sizeof(alphabet) - 1)]);
    return s;
  };
  std::vector<size_t> strides_seen(5, 0);
  for (int round = 0; round < 400; ++round) {
    // Some rounds only long literals (stride 2 to 4), some all lengths.
    size_t min_len = round % 2 == 0 ? 1 : 5 + round % 4;
    std::vector<std::string> lits;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n; ++i) {
      lits.push_back(random_string(min_len, min_len + 6));
    }
    LiteralScanner s(lits);
    ++strides_seen[s.stride()];
    for (int t = 0; t < 40; ++t) {
      std::string text = random_string(0, 40);
      std::vector<bool> want;
      for (const std::string& l : lits) {
        want.push_back(Fold(text).find(Fold(l)) != std::string::npos);
      }
      ASSERT_EQ(Found(s, text), want) << "text " << text;
    }
  }
  for (size_t stride = 1; stride <= 4; ++stride) EXPECT_GT(strides_seen[stride], 0u) << stride;
}

TEST(LiteralScannerTest, StrideFromTheShortestLongLiteral) {
  EXPECT_EQ(LiteralScanner({"loss: ", "val_accuracy: "}).stride(), 3u);
  EXPECT_EQ(LiteralScanner({" lr: ", "'learning_rate': "}).stride(), 2u);
  EXPECT_EQ(LiteralScanner({"abcd", "'learning_rate': "}).stride(), 1u);
  EXPECT_EQ(LiteralScanner({"'learning_rate': "}).stride(), 4u);
  // A literal at any offset is found whatever the stride.
  LiteralScanner s({"'learning_rate': "});
  for (size_t pad = 0; pad < 9; ++pad) {
    std::string text = std::string(pad, 'x') + "{'learning_rate': 3e-4}";
    EXPECT_EQ(Found(s, text), std::vector<bool>{true}) << pad;
    EXPECT_EQ(Found(s, text.substr(0, text.size() - 8)), std::vector<bool>{false}) << pad;
  }
}

}  // namespace
}  // namespace trainwatch::extract
