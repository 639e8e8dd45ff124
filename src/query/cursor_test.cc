#include "query/cursor.h"

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "query/errors.h"

namespace trainwatch::query {
namespace {

using ::testing::HasSubstr;

CursorBinding Listing(std::string_view ns) {
  return CursorBinding().Add(ns).Add("CPUUtilization").Add(int64_t{3});
}

std::string MessageOf(const absl::Status& s) { return std::string(s.message()); }

TEST(Cursor, RoundTripsItsPositionAndIsDeterministic) {
  nlohmann::json position = {{"t", 1736942400000}, {"s", 42}, {"n", "job-a"}};
  std::string text = EncodeCursor(CursorKind::kLogEvents, Listing("A"), position);
  EXPECT_EQ(text, EncodeCursor(CursorKind::kLogEvents, Listing("A"), position));
  EXPECT_EQ(text.find_first_not_of(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            std::string::npos)
      << "URL-safe, no padding: " << text;
  absl::StatusOr<nlohmann::json> back = DecodeCursor(CursorKind::kLogEvents, Listing("A"), text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, position);
}

TEST(Cursor, AnAlteredCursorIsRefused) {
  std::string text = EncodeCursor(CursorKind::kJobs, Listing("A"), {{"n", "job-a"}, {"i", 7}});
  // Every single-character edit, in every position, is caught.
  for (size_t i = 0; i < text.size(); ++i) {
    std::string edited = text;
    edited[i] = edited[i] == 'A' ? 'B' : 'A';
    absl::StatusOr<nlohmann::json> got = DecodeCursor(CursorKind::kJobs, Listing("A"), edited);
    ASSERT_FALSE(got.ok()) << "edit at " << i << " accepted: " << edited;
    EXPECT_EQ(GetErrorKind(got.status()), ErrorKind::kInvalidCursor);
  }
  absl::StatusOr<nlohmann::json> cut =
      DecodeCursor(CursorKind::kJobs, Listing("A"), text.substr(0, text.size() - 3));
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(MessageOf(cut.status()), HasSubstr("not a token this trainwatch issued"));
  EXPECT_FALSE(DecodeCursor(CursorKind::kJobs, Listing("A"), "").ok());
  EXPECT_FALSE(DecodeCursor(CursorKind::kJobs, Listing("A"), "not base64!").ok());
  // A well-formed token of the old api format (base64url JSON) is not a cursor.
  std::string old;
  absl::WebSafeBase64Escape(R"({"v":1,"g":"x"})", &old);
  EXPECT_FALSE(DecodeCursor(CursorKind::kLogGroups, Listing("A"), old).ok());
}

TEST(Cursor, ACursorOfAnotherKindOfAnswerIsRefused) {
  std::string text = EncodeCursor(CursorKind::kListMetrics, Listing("A"), {{"a", 1}});
  absl::StatusOr<nlohmann::json> got = DecodeCursor(CursorKind::kJobs, Listing("A"), text);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(MessageOf(got.status()), HasSubstr("a token of ListMetrics, not of ListTrainingJobs"));
}

TEST(Cursor, ACursorReusedWithAnotherQueryIsRefused) {
  std::string text = EncodeCursor(CursorKind::kListMetrics, Listing("A"), {{"a", 1}});
  absl::StatusOr<nlohmann::json> got = DecodeCursor(CursorKind::kListMetrics, Listing("B"), text);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(MessageOf(got.status()), HasSubstr("issued for a request with other parameters"));
  // Parts are length-prefixed: moving a character between two parts is another query.
  CursorBinding ab = CursorBinding().Add("ab").Add("c");
  CursorBinding a_bc = CursorBinding().Add("a").Add("bc");
  EXPECT_FALSE(DecodeCursor(CursorKind::kListMetrics, a_bc,
                            EncodeCursor(CursorKind::kListMetrics, ab, {{"a", 1}}))
                   .ok());
}

TEST(Cursor, ACursorOfAnotherFormatVersionSaysSo) {
  std::string text = EncodeCursor(CursorKind::kJobs, Listing("A"), {{"n", "x"}});
  std::string raw;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(text, &raw));
  raw[2] = 9;
  std::string v9;
  absl::WebSafeBase64Escape(raw, &v9);
  absl::StatusOr<nlohmann::json> got = DecodeCursor(CursorKind::kJobs, Listing("A"), v9);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(MessageOf(got.status()), HasSubstr("format version 9"));
  EXPECT_THAT(MessageOf(got.status()), HasSubstr("reads version 1"));
}

TEST(Cursor, ALongerCursorThanTheLimitIsRefused) {
  std::string text = EncodeCursor(CursorKind::kJobs, Listing("A"), {{"n", std::string(600, 'x')}});
  EXPECT_TRUE(DecodeCursor(CursorKind::kJobs, Listing("A"), text, 8192).ok());
  EXPECT_FALSE(DecodeCursor(CursorKind::kJobs, Listing("A"), text, 100).ok());
}

}  // namespace
}  // namespace trainwatch::query
