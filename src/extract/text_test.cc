#include "extract/text.h"

#include <string>

#include "gtest/gtest.h"

namespace trainwatch::extract {
namespace {

std::string Replaced(std::string_view in) {
  std::string out = "<";
  AppendWithInvalidUtf8Replaced(in, &out);
  return out;
}

constexpr char kFFFD[] = "\xEF\xBF\xBD";

TEST(Utf8Test, WellFormed) {
  for (std::string s :
       {std::string(""), std::string("ascii only, long enough for words"),
        std::string("NUL \0 inside", 12), std::string("\xC3\xA9poque"),
        std::string("\xE2\x96\x88\xE2\x96\x8C bars"),
        std::string("\xF0\x9F\x98\x80 emoji \xF4\x8F\xBF\xBF max"),
        std::string("\xED\x9F\xBF below surrogates"), std::string("\xEF\xBF\xBD")}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(Replaced(s), "<" + s);
  }
}

TEST(Utf8Test, IllFormed) {
  for (std::string s : {"\xFF", "\xFE\xFF", "\x80", "abcdefgh\xBF", "\xC0\xAF", "\xC1\xBF",
                        "\xE2\x82", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80",
                        "\xF0\x9F\x98", "caf\xE9", "\xE0\x80\x80"}) {
    EXPECT_FALSE(IsValidUtf8(s)) << s;
  }
}

TEST(Utf8Test, OneReplacementPerMaximalSubpart) {
  EXPECT_EQ(Replaced("a\xFF"
                     "b"),
            std::string("<a") + kFFFD + "b");
  EXPECT_EQ(Replaced("\xFF\xFE"), std::string("<") + kFFFD + kFFFD);
  // A truncated sequence is one subpart.
  EXPECT_EQ(Replaced("x\xE2\x82y"), std::string("<x") + kFFFD + "y");
  EXPECT_EQ(Replaced("x\xF0\x9F\x98"), std::string("<x") + kFFFD);
  // Overlong and surrogate forms: every byte is its own subpart.
  EXPECT_EQ(Replaced("\xC0\xAF"), std::string("<") + kFFFD + kFFFD);
  EXPECT_EQ(Replaced("\xED\xA0\x80"), std::string("<") + kFFFD + kFFFD + kFFFD);
  // Latin-1 e-acute.
  EXPECT_EQ(Replaced("donn\xE9"
                     "es"),
            std::string("<donn") + kFFFD + "es");
  // A lead byte followed by ASCII: the ASCII survives.
  EXPECT_EQ(Replaced("\xC3"
                     "A"),
            std::string("<") + kFFFD + "A");
}

TEST(EscapeTest, ControlCharactersAsHashOctal) {
  std::string out;
  AppendSageMakerEscaped(std::string("a\tb\rc\bd\x1b[0m\0e\x7f", 14), &out);
  EXPECT_EQ(out, "a#011b#015c#010d#033[0m#000e#177");
  EXPECT_TRUE(HasControlBytes("x\ty"));
  EXPECT_FALSE(HasControlBytes("#011 is text \xC3\xA9"));
  out.clear();
  AppendSageMakerEscaped("no controls, #011 stays", &out);
  EXPECT_EQ(out, "no controls, #011 stays");
}

TEST(CountCharactersTest, CodePoints) {
  EXPECT_EQ(CountCharacters(""), 0u);
  EXPECT_EQ(CountCharacters("abc"), 3u);
  EXPECT_EQ(CountCharacters("\xC3\xA9poque"), 6u);
  EXPECT_EQ(CountCharacters("\xF0\x9F\x98\x80"), 1u);
  EXPECT_EQ(CountCharacters("\xFF\xFE"), 2u);
}

TEST(QuoteForMessageTest, ControlBytesAndLength) {
  EXPECT_EQ(QuoteForMessage("a\tb\xFF"), "a\\x09b\\xff");
  EXPECT_EQ(QuoteForMessage("abcdef", 3), "abc...");
  EXPECT_EQ(QuoteForMessage("\xC3\xA9t\xC3\xA9", 2), "\xC3\xA9t...");
}

}  // namespace
}  // namespace trainwatch::extract
