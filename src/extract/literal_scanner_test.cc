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

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
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
  auto random_string = [&](size_t max_len) {
    std::string s;
    size_t n = rng() % max_len;
    for (size_t i = 0; i < n; ++i) s.push_back(alphabet[rng() % (sizeof(alphabet) - 1)]);
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> lits;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n; ++i) {
      std::string l = random_string(5);
      if (l.empty()) l = "a";
      lits.push_back(l);
    }
    LiteralScanner s(lits);
    for (int t = 0; t < 50; ++t) {
      std::string text = random_string(30);
      std::vector<bool> want;
      for (const std::string& l : lits)
        want.push_back(Lower(text).find(Lower(l)) != std::string::npos);
      ASSERT_EQ(Found(s, text), want) << "text " << text;
    }
  }
}

}  // namespace
}  // namespace trainwatch::extract
