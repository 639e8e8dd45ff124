#include "model/series.h"

#include <gtest/gtest.h>

#include <random>

#include "absl/strings/str_cat.h"

namespace trainwatch::model {
namespace {

TEST(MakeSeriesKey, SortsDimensionsSoOrderDoesNotMatter) {
  auto a = MakeSeriesKey("ns", "loss", {{"b", "2"}, {"a", "1"}});
  auto b = MakeSeriesKey("ns", "loss", {{"a", "1"}, {"b", "2"}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->Canonical(), b->Canonical());
  EXPECT_EQ(a->dimensions.front().name, "a");
  EXPECT_EQ(a->unit, "None");
}

TEST(MakeSeriesKey, RefusesWhatCloudWatchRefuses) {
  EXPECT_FALSE(MakeSeriesKey("", "m", {}).ok());
  EXPECT_FALSE(MakeSeriesKey("ns", "", {}).ok());
  EXPECT_FALSE(MakeSeriesKey("ns", std::string(256, 'x'), {}).ok());
  auto dup = MakeSeriesKey("ns", "m", {{"a", "1"}, {"a", "2"}});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("\"a\" is given twice"), std::string::npos);
  std::vector<Dimension> many;
  for (int i = 0; i < 31; ++i) many.push_back({"d" + std::to_string(i), "v"});
  EXPECT_FALSE(MakeSeriesKey("ns", "m", many).ok());
  many.pop_back();
  EXPECT_TRUE(MakeSeriesKey("ns", "m", many).ok());
  EXPECT_FALSE(MakeSeriesKey("ns", "m", {{"a", ""}}).ok());
  // A unit is a name too: 255 bytes at most, and the message shows its start only.
  EXPECT_TRUE(MakeSeriesKey("ns", "m", {}, std::string(255, 'u')).ok());
  auto long_unit = MakeSeriesKey("ns", "m", {}, std::string(100000, 'u'));
  ASSERT_FALSE(long_unit.ok());
  EXPECT_EQ(long_unit.status().message(),
            absl::StrCat("metric \"m\": the unit (\"", std::string(40, 'u'),
                         "...\") is longer than 255 bytes"));
  SeriesKey key = *MakeSeriesKey("ns", "m", {});
  key.unit = std::string(256, 'u');
  EXPECT_EQ(CheckSeriesKey(key).message(), MakeSeriesKey("ns", "m", {}, key.unit).status().message());
}

TEST(SeriesKey, CanonicalFormIsUnambiguous) {
  // Without escaping these two would collide.
  auto a = MakeSeriesKey("ns", "m", {{"a", "1|b=2"}});
  auto b = MakeSeriesKey("ns", "m", {{"a", "1"}, {"b", "2"}});
  EXPECT_NE(a->Canonical(), b->Canonical());
  auto c = MakeSeriesKey("n|s", "m", {});
  auto d = MakeSeriesKey("n", "s|m", {});
  EXPECT_NE(c->Canonical(), d->Canonical());
}

TEST(SeriesKey, CheckSeriesKeyGivesMakeSeriesKeysVerdictWithoutCopying) {
  auto good = MakeSeriesKey("ns", "m", {{"b", "2"}, {"a", "1"}}, "Count");
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(CheckSeriesKey(*good).ok());
  SeriesKey unsorted = *good;
  std::swap(unsorted.dimensions[0], unsorted.dimensions[1]);
  EXPECT_EQ(CheckSeriesKey(unsorted).code(), absl::StatusCode::kInvalidArgument);
  SeriesKey no_unit = *good;
  no_unit.unit.clear();
  EXPECT_EQ(CheckSeriesKey(no_unit).code(), absl::StatusCode::kInvalidArgument);
  SeriesKey long_name = *good;
  long_name.dimensions[0].name = std::string(256, 'x');
  EXPECT_EQ(CheckSeriesKey(long_name).message(),
            MakeSeriesKey("ns", "m", long_name.dimensions, "Count").status().message());
  SeriesKey twice = *good;
  twice.dimensions[1].name = "a";
  EXPECT_EQ(CheckSeriesKey(twice).message(), "metric \"m\": dimension \"a\" is given twice");
}

TEST(SeriesKey, CanonicalBytesAreStable) {
  // The index stores these bytes: they must never change.
  auto k = MakeSeriesKey("n|s", "m=\\x", {{"a", "1|b=2"}, {"b", "plain"}}, "Count");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->Canonical(), "n\\|s|m\\=\\\\x|Count|a=1\\|b\\=2|b=plain");
}

TEST(SeriesKey, HasCanonicalAgreesWithCanonicalByteForByte) {
  for (const SeriesKey& k :
       {*MakeSeriesKey("n|s", "m=\\x", {{"a", "1|b=2\\"}, {"b", "plain"}}, "Count"),
        *MakeSeriesKey("ns", "m", {}), *MakeSeriesKey("ns", "m", {{"Host", "algo-1"}})}) {
    const std::string c = k.Canonical();
    EXPECT_TRUE(k.HasCanonical(c)) << c;
    // Every shorter, longer or changed form is another key's, or none.
    for (size_t i = 0; i < c.size(); ++i) {
      EXPECT_FALSE(k.HasCanonical(c.substr(0, i))) << c << " cut at " << i;
      std::string changed = c;
      changed[i] = changed[i] == 'x' ? 'y' : 'x';
      EXPECT_FALSE(k.HasCanonical(changed)) << changed;
    }
    EXPECT_FALSE(k.HasCanonical(c + "|"));
  }
  // Unescaped specials are not the canonical form, in any part.
  EXPECT_FALSE(MakeSeriesKey("n|s", "m", {})->HasCanonical("n|s|m|None"));
  EXPECT_FALSE(MakeSeriesKey("ns", "m=1", {})->HasCanonical("ns|m=1|None"));
  EXPECT_FALSE(MakeSeriesKey("ns", "m", {}, "C|x")->HasCanonical("ns|m|C|x"));
  EXPECT_FALSE(MakeSeriesKey("ns", "m", {{"a=b", "1"}})->HasCanonical("ns|m|None|a=b=1"));
  EXPECT_FALSE(MakeSeriesKey("ns", "m", {{"a", "1|2"}})->HasCanonical("ns|m|None|a=1|2"));
  // ... nor is another key's form that reads the same without escapes.
  EXPECT_FALSE(MakeSeriesKey("ns", "m", {{"a", "1|b=2"}})->HasCanonical("ns|m|None|a=1|b=2"));
  EXPECT_TRUE(MakeSeriesKey("ns", "m", {{"a", "1"}, {"b", "2"}})->HasCanonical("ns|m|None|a=1|b=2"));
  // A separator at any place of a long part (the check reads 8 bytes at a time).
  for (size_t at = 0; at < 20; ++at) {
    for (char special : {'|', '='}) {
      std::string value(20, 'v');
      value[at] = special;
      const SeriesKey k = *MakeSeriesKey("ns", "metric-name", {{"Host", value}});
      EXPECT_TRUE(k.HasCanonical(k.Canonical())) << value;
      EXPECT_FALSE(k.HasCanonical("ns|metric-name|None|Host=" + value)) << value;
    }
  }
}

TEST(SeriesKey, HasCanonicalIsCanonicalEqualityForAnyBytes) {
  // Parts and candidate forms from bytes that escape, separate, or look like
  // a separator to a careless 8-bytes-at-a-time check ('|' ^ 0x80, '=' ^ 0x80).
  const std::string alphabet = std::string("|=\\a") + '\0' + "\x80\xbd\xfc\xff";
  std::mt19937 rng(7);
  auto random_text = [&](size_t max_len) {
    std::string s(rng() % (max_len + 1), 'a');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int i = 0; i < 20000; ++i) {
    SeriesKey k;
    k.ns = "n" + random_text(10);
    k.metric = "m" + random_text(10);
    k.unit = "u" + random_text(3);
    for (int d = static_cast<int>(rng() % 3); d > 0; --d) {
      k.dimensions.push_back({"d" + std::to_string(d) + random_text(4), "v" + random_text(12)});
    }
    const std::string c = k.Canonical();
    ASSERT_TRUE(k.HasCanonical(c)) << c;
    // The parts joined without escapes, and random edits of the form.
    std::string plain = k.ns + "|" + k.metric + "|" + k.unit;
    for (const Dimension& d : k.dimensions) plain += "|" + d.name + "=" + d.value;
    EXPECT_EQ(k.HasCanonical(plain), plain == c) << plain;
    std::string edited = c;
    edited[rng() % edited.size()] = alphabet[rng() % alphabet.size()];
    EXPECT_EQ(k.HasCanonical(edited), edited == c) << edited;
  }
}

TEST(StatisticSet, IdenticalValuesRule) {
  EXPECT_TRUE((StatisticSet{0, 1, 5, 5, 5}).DescribesIdenticalValues());
  EXPECT_TRUE((StatisticSet{0, 3, 15, 5, 5}).DescribesIdenticalValues());
  EXPECT_FALSE((StatisticSet{0, 3, 15, 4, 6}).DescribesIdenticalValues());
}

}  // namespace
}  // namespace trainwatch::model
