#include "extract/simple_matcher.h"

#include <random>
#include <string>
#include <vector>

#include "extract/regex.h"
#include "extract/text.h"
#include "gtest/gtest.h"

namespace trainwatch::extract {
namespace {

TEST(SimpleMatcherTest, TakesTheCommonShapes) {
  for (const char* p :
       {"val_accuracy: ([0-9.]+)", "#011train-rmse:(\\S+)", "([0-9.]+)it/s",
        "throughput: ([0-9.]+) samples/s", "^\\[rank([0-9]+)\\]", "acc: (\\d*)$", "loss=([^,]+),",
        "Speed: ([0-9.]+) samples/sec", "v=(.+)", "x=(\\w+).*", "a\\.b\\[c\\]=([-+0-9.eE]+)",
        "\xC3\xA9poque ([0-9]+)", "loss: (\\S+).*$"}) {
    EXPECT_NE(SimpleMatcher::Compile(p), nullptr) << p;
  }
}

TEST(SimpleMatcherTest, LeavesOtherShapesToRe2) {
  for (const char* p : {"^\\s+\\d+/\\d+\\s+\\S+G\\s+([0-9.]+)",  // \S+ would swallow the G
                        ".*loss: ([0-9.]+)",
                        "loss: ([0-9.]+?)",
                        "loss: (.*?),",
                        "(?i)loss: ([0-9.]+)",
                        "lo?ss: ([0-9]+)",
                        "(a|b)",
                        "(?:x)([0-9]+)",
                        "x([0-9]+)+",
                        "x([0-9]+)(y)",
                        "l\\dss: ([0-9]+)",
                        "x=([0-9.]+)5",  // what follows starts inside the class
                        "x=\\d+(\\d+)",
                        "a([0-9]+):([0-9.]+)",
                        "x\\S+(\\d+)",
                        "x=(\\S+)=",
                        "x=([[:digit:]]+)",
                        "x=([^\xC3\xA9]+)",
                        "x=([\\t ]+)",
                        "x{2}=(\\d+)",
                        "a\\sb=(\\d+)",
                        "a(.*)b",
                        "([0-9]+(.|e\\-)[0-9]+)",
                        "\\bv=(\\d+)"}) {
    EXPECT_EQ(SimpleMatcher::Compile(p), nullptr) << p;
  }
}

std::string RandomText(std::mt19937& rng, const std::string& alphabet, size_t max_len) {
  std::string s;
  size_t n = rng() % max_len;
  for (size_t i = 0; i < n; ++i) s.push_back(alphabet[rng() % alphabet.size()]);
  return s;
}

// Random texts over a small alphabet hit every branch: several head
// occurrences, empty runs, runs that end at the tail or not, anchors.
TEST(SimpleMatcherTest, AgreesWithRe2) {
  const char* patterns[] = {
      "a:([0-9.]+)", "a:([0-9.]*)",   "([0-9]+)b",      "([0-9]*)b", "^a([0-9]+)", "^([0-9]+)",
      "a([0-9]+)$",  "([0-9.]+)$",    "a(\\S+)",        "(\\S+)",    "a(.+)",      "a(.*)",
      "aa([^a]+)a",  "a([0-9]+)b.*",  "a(\\d+)ba$",     "(\\w+)=",   "a:(\\s*)1",  "(\\D+)1",
      "a([^ab]*)b",  "^a:(\\S*) .*$", "\xC3\xA9(\\S+)", "a(\\W+)a",  "(.*)",       "^(.+)$",
  };
  const std::string alphabet = std::string("a:b.1 =9") + "\xC3\xA9" + "\t";
  std::mt19937 rng(42);
  for (const char* p : patterns) {
    auto m = SimpleMatcher::Compile(p);
    ASSERT_NE(m, nullptr) << p;
    auto re = CompileMetricRegex(p);
    ASSERT_TRUE(re.ok());
    for (int t = 0; t < 3000; ++t) {
      std::string raw = RandomText(rng, alphabet, 24);
      std::string text;
      AppendWithInvalidUtf8Replaced(raw, &text);  // the extractor's input is well-formed
      re2::StringPiece sub[2];
      bool want = (*re)->Match(text, 0, text.size(), RE2::UNANCHORED, sub, 2);
      std::string_view got_group;
      SimpleMatcher::Result r = m->Match(text, &got_group);
      ASSERT_NE(r, SimpleMatcher::Result::kGaveUp) << p << " on \"" << text << "\"";
      bool got = r == SimpleMatcher::Result::kMatch;
      ASSERT_EQ(got, want) << p << " on \"" << text << "\"";
      if (want) {
        ASSERT_EQ(got_group, std::string_view(sub[1].data(), sub[1].size()))
            << p << " on \"" << text << "\"";
        ASSERT_EQ(got_group.data(), sub[1].data()) << p << " on \"" << text << "\"";
      }
    }
  }
}

TEST(SimpleMatcherTest, LinearOnAdversarialText) {
  // Every position is a head occurrence inside one long run that never meets
  // the tail: a naive matcher would be quadratic (10^10 steps here).
  auto m = SimpleMatcher::Compile("a([a0-9]+)x");
  ASSERT_NE(m, nullptr);
  std::string text(100000, 'a');
  std::string_view g;
  EXPECT_EQ(m->Match(text, &g), SimpleMatcher::Result::kNoMatch);
  text += "x";
  ASSERT_EQ(m->Match(text, &g), SimpleMatcher::Result::kMatch);
  EXPECT_EQ(g.size(), 99999u);
}

TEST(SimpleMatcherTest, GivesUpRatherThanGoQuadratic) {
  // Every "a1b" starts an attempt whose [^x]* run walks to the end of the
  // text: quadratic (10^9 steps here) without the work budget.
  auto m = SimpleMatcher::Compile("a([0-9]+)b[^x]*x");
  ASSERT_NE(m, nullptr);
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "a1b";
  std::string_view g;
  EXPECT_EQ(m->Match(text, &g), SimpleMatcher::Result::kGaveUp);
  EXPECT_EQ(m->Match("a1b a2bx", &g), SimpleMatcher::Result::kMatch);
  EXPECT_EQ(g, "1");
}

}  // namespace
}  // namespace trainwatch::extract
