#include "query/logs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "query/errors.h"
#include "store/db.h"
#include "store/test_util.h"

namespace trainwatch::query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGroup[] = "/aws/sagemaker/TrainingJobs";
constexpr char kStream[] = "job-1/algo-1-1736942400";

class LogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::DbOptions o;
    o.data_dir = dir_.Sub("data");
    o.clock = &clock_;
    o.background_thread = false;
    auto db = store::Db::Open(o);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
  }
  void Put(const std::string& stream, std::vector<model::LogEvent> events) {
    ASSERT_TRUE(db_->PutLogs({{kGroup, stream}, std::move(events)}).ok());
  }
  // Ten lines "line 0" .. "line 9" at t = 1000, 1001, ...
  void PutTen() {
    std::vector<model::LogEvent> events;
    for (int i = 0; i < 10; ++i) events.push_back({1000 + i, absl::StrFormat("line %d", i)});
    Put(kStream, events);
  }
  store::ReadView View() { return std::move(db_->View().value()); }
  static std::vector<std::string> Messages(const GetLogEventsResponse& r) {
    std::vector<std::string> out;
    for (const auto& e : r.events) out.push_back(e.message);
    return out;
  }

  store::testing::TempDir dir_;
  util::FakeClock clock_{1736942400000};
  std::unique_ptr<store::Db> db_;
};

TEST_F(LogsTest, MissingGroupOrStreamIsResourceNotFoundWithAwsText) {
  PutTen();
  GetLogEventsRequest r{.group = "nope", .stream = kStream};
  auto a = GetLogEvents(View(), r);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "The specified log group does not exist.");
  EXPECT_EQ(GetErrorKind(a.status()), ErrorKind::kResourceNotFound);
  r.group = kGroup;
  r.stream = "nope";
  auto b = GetLogEvents(View(), r);
  EXPECT_EQ(b.status().message(), "The specified log stream does not exist.");
  EXPECT_TRUE(absl::IsNotFound(b.status()));
}

TEST_F(LogsTest, FromHeadPagesForwardUntilTheTokenComesBack) {
  PutTen();
  GetLogEventsRequest r{.group = kGroup, .stream = kStream, .limit = 4, .start_from_head = true};
  auto p1 = GetLogEvents(View(), r);
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_THAT(Messages(*p1), ElementsAre("line 0", "line 1", "line 2", "line 3"));
  EXPECT_EQ(p1->next_forward_token.substr(0, 2), "f/");
  EXPECT_EQ(p1->next_forward_token.size(), 58u);
  r.next_token = p1->next_forward_token;
  auto p2 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p2), ElementsAre("line 4", "line 5", "line 6", "line 7"));
  r.next_token = p2->next_forward_token;
  auto p3 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p3), ElementsAre("line 8", "line 9"));
  r.next_token = p3->next_forward_token;
  auto p4 = GetLogEvents(View(), r);
  EXPECT_TRUE(p4->events.empty());
  EXPECT_EQ(p4->next_forward_token, r.next_token);  // the SDK's loop ends here

  // New lines appear behind the same token (logs --follow).
  Put(kStream, {{2000, "late line"}});
  auto p5 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p5), ElementsAre("late line"));
}

TEST_F(LogsTest, WithoutHeadTheNewestPageComesInAscendingOrderAndPagesBack) {
  PutTen();
  GetLogEventsRequest r{.group = kGroup, .stream = kStream, .limit = 3};
  auto p1 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p1), ElementsAre("line 7", "line 8", "line 9"));
  r.next_token = p1->next_backward_token;
  auto p2 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p2), ElementsAre("line 4", "line 5", "line 6"));
  r.next_token = p2->next_forward_token;  // forward again from there
  auto p3 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p3), ElementsAre("line 7", "line 8", "line 9"));
  // Backwards to the very start, then the backward token repeats.
  r.next_token = p2->next_backward_token;
  auto p4 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p4), ElementsAre("line 1", "line 2", "line 3"));
  r.next_token = p4->next_backward_token;
  auto p5 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p5), ElementsAre("line 0"));
  r.next_token = p5->next_backward_token;
  auto p6 = GetLogEvents(View(), r);
  EXPECT_TRUE(p6->events.empty());
  EXPECT_EQ(p6->next_backward_token, r.next_token);
}

TEST_F(LogsTest, TimeWindowIsStartInclusiveEndExclusive) {
  PutTen();
  GetLogEventsRequest r{.group = kGroup, .stream = kStream, .start_ms = 1003, .end_ms = 1006,
                        .start_from_head = true};
  EXPECT_THAT(Messages(*GetLogEvents(View(), r)), ElementsAre("line 3", "line 4", "line 5"));
  r.start_from_head = false;
  EXPECT_THAT(Messages(*GetLogEvents(View(), r)), ElementsAre("line 3", "line 4", "line 5"));
}

TEST_F(LogsTest, EqualTimestampsKeepArrivalOrderAcrossPages) {
  Put(kStream, {{5, "a"}, {5, "b"}, {5, "c"}});
  GetLogEventsRequest r{.group = kGroup, .stream = kStream, .limit = 2, .start_from_head = true};
  auto p1 = GetLogEvents(View(), r);
  EXPECT_THAT(Messages(*p1), ElementsAre("a", "b"));
  r.next_token = p1->next_forward_token;
  EXPECT_THAT(Messages(*GetLogEvents(View(), r)), ElementsAre("c"));
}

TEST_F(LogsTest, PagesStopAtOneMegabyte) {
  std::string big(300'000, 'x');
  Put(kStream, {{1, big}, {2, big}, {3, big}, {4, big}});
  GetLogEventsRequest r{.group = kGroup, .stream = kStream, .start_from_head = true};
  auto p = GetLogEvents(View(), r);
  EXPECT_EQ(p->events.size(), 3u);
}

TEST_F(LogsTest, BadLimitAndTokenAreInvalidParameter) {
  PutTen();
  GetLogEventsRequest r{.group = kGroup, .stream = kStream, .limit = 0};
  auto a = GetLogEvents(View(), r);
  EXPECT_EQ(GetErrorKind(a.status()), ErrorKind::kInvalidParameterException);
  r.limit = 10;
  r.next_token = "f/123";
  auto b = GetLogEvents(View(), r);
  EXPECT_EQ(GetErrorKind(b.status()), ErrorKind::kInvalidParameterException);
  EXPECT_THAT(b.status().message(), HasSubstr("nextToken"));
}

TEST_F(LogsTest, FilterMergesStreamsByTimeThenArrival) {
  Put("job-1/algo-1-1", {{10, "ERROR one"}, {30, "INFO three"}, {30, "ERROR four"}});
  Put("job-1/algo-2-1", {{20, "ERROR two"}, {30, "ERROR five"}});
  Put("job-2/algo-1-1", {{15, "ERROR other job"}});
  FilterLogEventsRequest r{.group = kGroup, .stream_prefix = "job-1/", .filter_pattern = "ERROR"};
  auto out = FilterLogEvents(View(), r);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::string> got;
  for (const auto& e : out->events) got.push_back(e.stream + " " + e.message);
  EXPECT_THAT(got, ElementsAre("job-1/algo-1-1 ERROR one", "job-1/algo-2-1 ERROR two",
                               "job-1/algo-1-1 ERROR four", "job-1/algo-2-1 ERROR five"));
  EXPECT_TRUE(out->next_token.empty());
  EXPECT_EQ(out->events[0].event_id.size(), 56u);
  EXPECT_NE(out->events[0].event_id, out->events[1].event_id);
}

TEST_F(LogsTest, FilterPagesWithTokensAndInclusiveEnd) {
  PutTen();
  FilterLogEventsRequest r{.group = kGroup, .start_ms = 1002, .end_ms = 1008, .limit = 3};
  std::vector<std::string> all;
  int pages = 0;
  do {
    auto out = FilterLogEvents(View(), r);
    ASSERT_TRUE(out.ok()) << out.status();
    for (const auto& e : out->events) all.push_back(e.message);
    r.next_token = out->next_token;
    ASSERT_LT(++pages, 10);
  } while (!r.next_token.empty());
  EXPECT_THAT(all, ElementsAre("line 2", "line 3", "line 4", "line 5", "line 6", "line 7",
                               "line 8"));
}

TEST_F(LogsTest, FilterScanBudgetReturnsATokenForTheRest) {
  PutTen();
  FilterLogEventsRequest r{.group = kGroup, .filter_pattern = "\"line 9\"", .scan_budget = 4};
  auto p1 = FilterLogEvents(View(), r);
  EXPECT_TRUE(p1->events.empty());
  ASSERT_FALSE(p1->next_token.empty());
  r.next_token = p1->next_token;
  r.scan_budget = 100;
  auto p2 = FilterLogEvents(View(), r);
  ASSERT_EQ(p2->events.size(), 1u);
  EXPECT_EQ(p2->events[0].message, "line 9");
}

TEST_F(LogsTest, FilterRejectsNamesWithPrefixAndBadPatterns) {
  PutTen();
  FilterLogEventsRequest r{.group = kGroup, .stream_names = {kStream}, .stream_prefix = "job"};
  EXPECT_EQ(GetErrorKind(FilterLogEvents(View(), r).status()),
            ErrorKind::kInvalidParameterException);
  FilterLogEventsRequest p{.group = kGroup, .filter_pattern = "\"open"};
  auto s = FilterLogEvents(View(), p).status();
  EXPECT_THAT(s.message(), HasSubstr("Invalid filter pattern"));
}

TEST_F(LogsTest, DescribeStreamsByNameWithPrefixAndTokens) {
  for (int i = 0; i < 5; ++i) Put(absl::StrFormat("job-1/algo-%d-1", i), {{i, "x"}});
  Put("job-2/algo-1-1", {{100, "x"}});
  DescribeLogStreamsRequest r{.group = kGroup, .prefix = "job-1/", .limit = 2};
  std::vector<std::string> names;
  int pages = 0;
  do {
    auto out = DescribeLogStreams(View(), r);
    ASSERT_TRUE(out.ok()) << out.status();
    for (const auto& s : out->streams) names.push_back(s.stream);
    r.next_token = out->next_token;
    ASSERT_LT(++pages, 10);
  } while (!r.next_token.empty());
  EXPECT_THAT(names, ElementsAre("job-1/algo-0-1", "job-1/algo-1-1", "job-1/algo-2-1",
                                 "job-1/algo-3-1", "job-1/algo-4-1"));
  EXPECT_EQ(pages, 3);
}

TEST_F(LogsTest, DescribeStreamsByLastEventTimeDescending) {
  Put("a", {{30, "x"}});
  Put("b", {{10, "x"}});
  Put("c", {{20, "x"}});
  DescribeLogStreamsRequest r{.group = kGroup, .order_by = LogStreamOrder::kLastEventTime,
                              .descending = true, .limit = 2};
  auto p1 = DescribeLogStreams(View(), r);
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->streams.size(), 2u);
  EXPECT_EQ(p1->streams[0].stream, "a");
  EXPECT_EQ(p1->streams[1].stream, "c");
  EXPECT_EQ(p1->streams[0].last_event_ms, 30);
  r.next_token = p1->next_token;
  auto p2 = DescribeLogStreams(View(), r);
  ASSERT_EQ(p2->streams.size(), 1u);
  EXPECT_EQ(p2->streams[0].stream, "b");
  EXPECT_TRUE(p2->next_token.empty());

  DescribeLogStreamsRequest bad{.group = kGroup, .prefix = "a",
                                .order_by = LogStreamOrder::kLastEventTime};
  EXPECT_EQ(GetErrorKind(DescribeLogStreams(View(), bad).status()),
            ErrorKind::kInvalidParameterException);
  DescribeLogStreamsRequest limit{.group = kGroup, .limit = 51};
  EXPECT_FALSE(DescribeLogStreams(View(), limit).ok());
}

}  // namespace
}  // namespace trainwatch::query
