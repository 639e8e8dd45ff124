// The rules of spec/extraction.md "Matching and values", "Lines" (as far as a
// single line goes) and "SageMaker-escaped text", each checked with the fast
// paths on and with plain RE2 (the reference).
#include "extract/extractor.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::extract {
namespace {

using model::MetricDefinition;
using Points = std::vector<std::pair<size_t, double>>;

class ExtractorTest : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Extractor> Make(std::vector<MetricDefinition> defs, bool escaped = false) {
    ExtractOptions options;
    options.sagemaker_escaped = escaped;
    options.reference_for_test = GetParam();
    auto x = Extractor::Create(std::move(defs), options);
    EXPECT_TRUE(x.ok()) << x.status();
    return x.ok() ? *std::move(x) : nullptr;
  }
  static Points Run(Extractor& x, std::string_view line) {
    Points points;
    x.ExtractLine(line, [&](size_t i, double v) { points.emplace_back(i, v); });
    return points;
  }
  // Values of a single definition `regex` over `line`.
  std::vector<double> Values(const std::string& regex, std::string_view line,
                             bool escaped = false) {
    auto x = Make({{"m", regex}}, escaped);
    std::vector<double> out;
    for (auto [i, v] : Run(*x, line)) out.push_back(v);
    return out;
  }
};

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_P(ExtractorTest, SearchesRatherThanFullMatch) {
  EXPECT_THAT(Values("loss: ([0-9.]+)", "epoch 3 - loss: 0.25 - acc: 0.9"), ElementsAre(0.25));
  EXPECT_THAT(Values("^loss: ([0-9.]+)$", "epoch 3 - loss: 0.25"), IsEmpty());
  EXPECT_THAT(Values("^loss: ([0-9.]+)$", "loss: 0.25"), ElementsAre(0.25));
}

TEST_P(ExtractorTest, NonFiniteMatchesAreReportedNotExtracted) {
  auto x = Make({{"loss", "loss: (\\S+)"}, {"acc", "acc=([0-9.]+)"}});
  EXPECT_THAT(Run(*x, "loss: nan acc=0.5"), ElementsAre(std::make_pair(size_t{1}, 0.5)));
  ASSERT_EQ(x->non_finite().size(), 1u);
  EXPECT_EQ(x->non_finite()[0].definition, 0u);
  EXPECT_TRUE(std::isnan(x->non_finite()[0].value));
  EXPECT_EQ(x->rejected(0), 1u);  // still a rejected value, as spec/extraction.md says
  EXPECT_THAT(Run(*x, "loss: -inf"), IsEmpty());
  ASSERT_EQ(x->non_finite().size(), 1u);
  EXPECT_EQ(x->non_finite()[0].value, -std::numeric_limits<double>::infinity());
  EXPECT_THAT(Run(*x, "loss: 0.25"), ElementsAre(std::make_pair(size_t{0}, 0.25)));
  EXPECT_TRUE(x->non_finite().empty());
  EXPECT_THAT(Run(*x, "loss: abc"), IsEmpty());
  EXPECT_TRUE(x->non_finite().empty());
}

TEST_P(ExtractorTest, NonFiniteValuesAreFoundEvenWhenTheGroupCannotHoldThem) {
  auto x = Make({{"loss", "step=\\d+ loss=([0-9.]+)"}, {"acc", "acc=([0-9.]+)"}});
  EXPECT_THAT(Run(*x, "step=3 loss=nan acc=0.5"), ElementsAre(std::make_pair(size_t{1}, 0.5)));
  ASSERT_EQ(x->non_finite().size(), 1u);
  EXPECT_EQ(x->non_finite()[0].definition, 0u);
  EXPECT_TRUE(std::isnan(x->non_finite()[0].value));
  EXPECT_EQ(x->matched(0), 0u);  // no match, no datapoint: only the rules hear of it
  EXPECT_THAT(Run(*x, "step=4 loss=Infinity"), IsEmpty());
  ASSERT_EQ(x->non_finite().size(), 1u);
  EXPECT_EQ(x->non_finite()[0].value, std::numeric_limits<double>::infinity());
  // The rest of the pattern must still match.
  EXPECT_THAT(Run(*x, "loss=nan"), IsEmpty());
  EXPECT_TRUE(x->non_finite().empty());
  EXPECT_THAT(Run(*x, "INFO step=5 loss=0.25"), ElementsAre(std::make_pair(size_t{0}, 0.25)));
  EXPECT_TRUE(x->non_finite().empty());
}

TEST_P(ExtractorTest, FirstMatchOnlyInALine) {
  EXPECT_THAT(Values("v=([0-9]+)", "v=1 v=2 v=3"), ElementsAre(1.0));
  // The first match counts even when its value is rejected; later ones are ignored.
  auto x = Make({{"m", "v=(\\S+)"}});
  EXPECT_THAT(Run(*x, "v=abc v=2"), IsEmpty());
  EXPECT_EQ(x->matched(0), 1u);
  EXPECT_EQ(x->rejected(0), 1u);
  ASSERT_TRUE(x->has_rejected_sample(0));
  EXPECT_EQ(x->rejected_sample(0), "abc");
  x->ClearRejectedSamples();
  EXPECT_FALSE(x->has_rejected_sample(0));
  EXPECT_THAT(Run(*x, "v=7"), ElementsAre(std::pair<size_t, double>(0, 7.0)));
  EXPECT_EQ(x->matched(0), 2u);
  EXPECT_EQ(x->rejected(0), 1u);
}

TEST_P(ExtractorTest, ValueIsCaptureGroupOne) {
  EXPECT_THAT(Values("([0-9]+)/([0-9]+)", "step 3/400"), ElementsAre(3.0));
  EXPECT_THAT(Values("(step) ([0-9]+)", "step 3"), IsEmpty());  // group 1 is "step"
  // Hugging Face's regex: group 1 holds group 2; "2.5e-05" yields its first "2.5".
  EXPECT_THAT(Values("'loss': ([0-9]+(.|e\\-)[0-9]+),?", "{'loss': 2.5e-05}"), ElementsAre(2.5));
  EXPECT_THAT(Values("'loss': ([0-9]+(.|e\\-)[0-9]+),?", "{'loss': 1e-05}"), ElementsAre(1e-05));
  EXPECT_THAT(Values("'loss': ([0-9]+(.|e\\-)[0-9]+),?", "{'loss': 0.6931, 'lr': 1}"),
              ElementsAre(0.6931));
  // A group that did not take part in the match is rejected, but counted.
  auto x = Make({{"m", "(?:x=([0-9]+)|y=[0-9]+)"}});
  EXPECT_THAT(Run(*x, "y=5"), IsEmpty());
  EXPECT_EQ(x->matched(0), 1u);
  EXPECT_EQ(x->rejected(0), 1u);
}

TEST_P(ExtractorTest, StripsAsciiWhiteSpaceFromTheCapture) {
  EXPECT_THAT(Values("loss:(.*)\\|", "loss: \t 1.5 \t|"), ElementsAre(1.5));
  EXPECT_THAT(Values("loss:(.*)", "loss:\v\f2.5"), ElementsAre(2.5));
  EXPECT_THAT(Values("loss:(.*)",
                     "loss:\xC2\xA0"
                     "2.5"),
              IsEmpty());  // NO-BREAK SPACE stays
}

TEST_P(ExtractorTest, NumberGrammarRejectsButCounts) {
  auto x = Make({{"m", "v=(\\S*)"}});
  const char* rejected[] = {"v=",      "v=nan",   "v=inf", "v=1,234.5", "v=0x1p-3",
                            "v=1_000", "v=1e999", "v=-",   "v=.",       "v=1e"};
  for (const char* line : rejected) EXPECT_THAT(Run(*x, line), IsEmpty()) << line;
  EXPECT_EQ(x->matched(0), std::size(rejected));
  EXPECT_EQ(x->rejected(0), std::size(rejected));
  EXPECT_THAT(Run(*x, "v=+1.e2"), ElementsAre(std::pair<size_t, double>(0, 100.0)));
  EXPECT_THAT(Run(*x, "v=4.9406564584124654e-324"),
              ElementsAre(std::pair<size_t, double>(0, 4.9406564584124654e-324)));
}

TEST_P(ExtractorTest, LineOrderThenDefinitionOrder) {
  // Definition order, whatever the order of the text.
  auto x = Make({{"b", "b=([0-9])"}, {"a", "a=([0-9])"}, {"a again", "a=([0-9])"}});
  EXPECT_THAT(Run(*x, "a=1 b=2"),
              ElementsAre(std::pair<size_t, double>(0, 2.0), std::pair<size_t, double>(1, 1.0),
                          std::pair<size_t, double>(2, 1.0)));
  EXPECT_THAT(Run(*x, "nothing"), IsEmpty());
}

TEST_P(ExtractorTest, InvalidUtf8BecomesReplacementCharacters) {
  // '.' and \S match what was an invalid byte, one character per maximal subpart.
  EXPECT_THAT(Values("x.y=([0-9]+)", "x\xFFy=5"), ElementsAre(5.0));
  EXPECT_THAT(Values("v\\S=([0-9]+)", "v\xFE=3"), ElementsAre(3.0));
  EXPECT_THAT(Values("x.y=([0-9]+)", "x\xE2\x82y=7"), ElementsAre(7.0));   // truncated: one
  EXPECT_THAT(Values("x..y=([0-9]+)", "x\xC0\xAFy=8"), ElementsAre(8.0));  // overlong: two
  EXPECT_THAT(Values("x.y=([0-9]+)", "x\xC0\xAFy=8"), IsEmpty());
  EXPECT_THAT(Values("^.poque ([0-9]+)", "\xE9poque 2"), ElementsAre(2.0));      // Latin-1
  EXPECT_THAT(Values("^.poque ([0-9]+)", "\xC3\xA9poque 3"), ElementsAre(3.0));  // UTF-8
  EXPECT_THAT(Values("\xEF\xBF\xBD(\\d)",
                     "a\x80"
                     "9"),
              ElementsAre(9.0));
  // Matching does not stop at invalid bytes.
  EXPECT_THAT(Values("loss = ([0-9.]+)", "\xFF\xFEINFO loss = 2.29, step"), ElementsAre(2.29));
}

TEST_P(ExtractorTest, NulIsAnOrdinaryCharacter) {
  using namespace std::string_literals;
  EXPECT_THAT(Values("loss: ([0-9.]+)", "\0loss: 2.5\0 more"s), ElementsAre(2.5));
  EXPECT_THAT(Values("a.b=([0-9])", "a\0b=1"s), ElementsAre(1.0));
  EXPECT_THAT(Values("a\\x00b=([0-9])", "a\0b=4"s), ElementsAre(4.0));
}

TEST_P(ExtractorTest, AnsiEscapesAndBackspacesStayInTheLine) {
  EXPECT_THAT(Values("loss: ([0-9.]+)", "\x1b[32mloss: 1.5\x1b[0m"), ElementsAre(1.5));
  // What a terminal shows is not what the regex sees.
  EXPECT_THAT(Values("([0-9]+)s [0-9]+ms/step", "3s \x1b[1m5ms/step"), IsEmpty());
  EXPECT_THAT(Values("loss: ([0-9.]*?) ", "loss: 0.5\b\b\b"), IsEmpty());
  EXPECT_THAT(Values("\\x1b\\[32m([0-9]+)", "\x1b[32m42"), ElementsAre(42.0));
  EXPECT_THAT(Values("acc: ([0-9.]+)\\x08", "acc: 0.75\b\b"), ElementsAre(0.75));
}

TEST_P(ExtractorTest, MegabyteLine) {
  std::string line(1 << 20, 'x');
  line += " loss: 3.25";
  EXPECT_THAT(Values("loss: ([0-9.]+)", line), ElementsAre(3.25));
  EXPECT_THAT(Values("^x*.*loss: ([0-9.]+)$", line), ElementsAre(3.25));
  std::string mid = "loss: 1.5" + std::string(1 << 20, ' ') + "end";
  EXPECT_THAT(Values("loss: ([0-9.]+)\\s*end", mid), ElementsAre(1.5));
}

TEST_P(ExtractorTest, PerlClassesAreAsciiOnly) {
  EXPECT_THAT(Values("v=(\\d+)", "v=\xD9\xA1\xD9\xA2"), IsEmpty());  // Arabic-Indic digits
  EXPECT_THAT(Values("perte\\s*:\\s*([0-9.]+)", "perte\xE2\x80\xAF: 0.4"), IsEmpty());
  EXPECT_THAT(Values("perte\\s*:\\s*([0-9.]+)", "perte : 0.4"), ElementsAre(0.4));
  EXPECT_THAT(Values("x(\\w)=", "x\xC3\xA9=1"), IsEmpty());
  // \b sees only ASCII word characters: an accented letter is not one.
  EXPECT_THAT(Values("\\bx=(\\d)", "\xC3\xA9x=1"), ElementsAre(1.0));
  EXPECT_THAT(Values("\\bx=(\\d)", "ax=1"), IsEmpty());
}

TEST_P(ExtractorTest, CaseSensitive) {
  EXPECT_THAT(Values("Loss: ([0-9.]+)", "Average loss: 0.5"), IsEmpty());
  EXPECT_THAT(Values("loss: ([0-9.]+)", "LOSS: 0.5"), IsEmpty());
  EXPECT_THAT(Values("(?i)loss: ([0-9.]+)", "LOSS: 0.5"), ElementsAre(0.5));
  EXPECT_THAT(Values("(?i)k=([0-9])", "\xE2\x84\xAA=3"),
              ElementsAre(3.0));  // KELVIN SIGN folds to k
}

TEST_P(ExtractorTest, EscapedModeOffByDefault) {
  EXPECT_THAT(Values("#011loss:([0-9.]+)", "[1]\tloss:0.5"), IsEmpty());
  EXPECT_THAT(Values("#011loss:([0-9.]+)", "[1]#011loss:0.5"), ElementsAre(0.5));  // plain text
  EXPECT_THAT(Values("\\tloss:([0-9.]+)", "[1]\tloss:0.5"), ElementsAre(0.5));
}

TEST_P(ExtractorTest, EscapedModeMatchesCloudWatchText) {
  EXPECT_THAT(Values("#011loss:([0-9.]+)", "[1]\tloss:0.5", true), ElementsAre(0.5));
  EXPECT_THAT(Values("#011loss:([0-9.]+)", "[1]#011loss:0.5", true), ElementsAre(0.5));
  EXPECT_THAT(Values("\\tloss:([0-9.]+)", "[1]\tloss:0.5", true), IsEmpty());
  EXPECT_THAT(Values("#033\\[32m([0-9]+)", "\x1b[32m42", true), ElementsAre(42.0));
  EXPECT_THAT(Values("acc: ([0-9.]+)#010", "acc: 0.75\b\b", true), ElementsAre(0.75));
  // The value's own white space is escaped text now, so a tab after it is no longer stripped.
  EXPECT_THAT(Values("v=([^ ]+)", "v=1.5\t", true), IsEmpty());
  EXPECT_THAT(Values("v=([^ ]+)", "v=1.5\t", false), ElementsAre(1.5));
}

TEST_P(ExtractorTest, NoDefinitions) {
  auto x = Make({});
  EXPECT_THAT(Run(*x, "loss: 1"), IsEmpty());
  EXPECT_TRUE(x->definitions().empty());
}

TEST(ExtractorCreateTest, ValidatesDefinitions) {
  auto x = Extractor::Create({{"loss", "loss: [0-9.]+"}});
  ASSERT_FALSE(x.ok());
  EXPECT_THAT(std::string(x.status().message()), ::testing::HasSubstr("no capture group"));
  EXPECT_FALSE(Extractor::Create({{"a", "(?=x)(x)"}}).ok());
}

INSTANTIATE_TEST_SUITE_P(FastAndReference, ExtractorTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Reference" : "Fast"; });

// The fast paths must give exactly what plain RE2 gives, on lines built from
// pieces of the real formats plus random bytes.
TEST(ExtractorAgreementTest, FastEqualsReference) {
  std::vector<MetricDefinition> defs = {
      {"loss", "step [0-9]+ loss: ([0-9.]+)"},
      {"lr", " lr: ([0-9.eE+-]+)"},
      {"tp", "throughput: ([0-9.]+) samples/s"},
      {"hf", "'loss': ([0-9.eE+-]+)"},
      {"hf2", "'loss': ([0-9]+(.|e\\-)[0-9]+),?"},
      {"keras", " - loss: ([0-9.]+)"},
      {"keras2", ".*loss: ([0-9\\.]+) - accuracy: [0-9\\.]+.*"},
      {"val", "val_accuracy: ([0-9.]+)"},
      {"xgb", "#011train-rmse:([0-9.]+)"},
      {"xgb2", ".*\\[[0-9]+\\].*#011validation-error:(\\S+)"},
      {"any", "(\\S+)"},
      {"star", "v=([0-9]*)x"},
      {"tail", "([0-9.]+)it/s"},
      {"anch", "^\\[rank([0-9]+)\\]"},
      {"dollar", "acc: ([0-9.]+)$"},
      {"neg", "loss=([^,]+),"},
      {"dot", "l.ss: (.+)"},
      {"ci", "(?i)LOSS: ([0-9.]+)"},
      {"utf", "\xC3\xA9poque ([0-9]+)"},
      {"alt", "(?:acc|loss)=([0-9.]+)"},
      {"lazy", "Loss: (.*?)"},
      {"word", "\\bval=(\\d+)\\b"},
      {"runs", "\\| epoch \\d+:\\s+\\d+ / \\d+ loss=([0-9.]+),"},
      {"budget", "v=([0-9]+)x[^|]*\\|"},
  };
  const char* pieces[] = {"| epoch 3:  ",
                          " / 9 loss=",
                          "| epoch ",
                          "step ",
                          "12",
                          " loss: ",
                          "0.5",
                          " lr: ",
                          "3e-4",
                          "throughput: ",
                          " samples/s",
                          "'loss': ",
                          "2.5e-05",
                          ", ",
                          " - loss: ",
                          " - accuracy: ",
                          "val_accuracy: ",
                          "#011",
                          "train-rmse:",
                          "validation-error:",
                          "[3]",
                          "it/s",
                          "v=",
                          "x",
                          "[rank0]",
                          "acc: ",
                          "loss=",
                          "LoSs: ",
                          "\xC3\xA9poque ",
                          "acc=",
                          "Loss: ",
                          "val=",
                          "1.",
                          "..",
                          "e",
                          "-",
                          " ",
                          "\t",
                          "\xFF",
                          "\xE2\x82",
                          "\xC3\xA9",
                          "\x1b[0m",
                          "\b",
                          "\0",
                          "9",
                          ".7",
                          "|",
                          ","};
  ExtractOptions fast_options;
  ExtractOptions ref_options;
  ref_options.reference_for_test = true;
  for (bool escaped : {false, true}) {
    fast_options.sagemaker_escaped = ref_options.sagemaker_escaped = escaped;
    auto fast = *Extractor::Create(defs, fast_options);
    auto ref = *Extractor::Create(defs, ref_options);
    std::mt19937 rng(20240101);
    for (int n = 0; n < 4000; ++n) {
      std::string line;
      int parts = static_cast<int>(rng() % 12);
      for (int k = 0; k < parts; ++k) {
        if (rng() % 8 == 0) {
          line.push_back(static_cast<char>(rng() % 256));
        } else {
          const char* piece = pieces[rng() % std::size(pieces)];
          line.append(piece, piece[0] == '\0' ? 1 : std::strlen(piece));
        }
      }
      Points a, b;
      fast->ExtractLine(line, [&](size_t i, double v) { a.emplace_back(i, v); });
      ref->ExtractLine(line, [&](size_t i, double v) { b.emplace_back(i, v); });
      ASSERT_EQ(a, b) << "line: " << line;
    }
    for (size_t i = 0; i < defs.size(); ++i) {
      EXPECT_EQ(fast->matched(i), ref->matched(i)) << defs[i].name;
      EXPECT_EQ(fast->rejected(i), ref->rejected(i)) << defs[i].name;
    }
    // The common shapes do take the fast path.
    EXPECT_TRUE(fast->uses_simple_matcher(1));
    EXPECT_TRUE(fast->uses_simple_matcher(7));
    EXPECT_TRUE(fast->uses_simple_matcher(0));
    EXPECT_FALSE(fast->uses_simple_matcher(6));
  }
}

}  // namespace
}  // namespace trainwatch::extract
