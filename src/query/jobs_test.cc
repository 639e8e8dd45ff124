#include "query/jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "query/errors.h"

namespace trainwatch::query {
namespace {

using ::testing::ElementsAre;

class JobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // name, created, modified, status
    Add("Bravo-1", 200, 900, model::JobStatus::kCompleted);
    Add("alpha-2", 100, 300, model::JobStatus::kInProgress);
    Add("charlie-3", 300, 400, model::JobStatus::kFailed);
    Add("alpha-4", 400, 500, model::JobStatus::kCompleted);
  }
  void Add(const std::string& name, int64_t created, int64_t modified, model::JobStatus status) {
    model::JobRecord j;
    j.name = name;
    j.creation_ms = created;
    j.last_modified_ms = modified;
    j.status = status;
    jobs_.push_back(j);
  }
  std::vector<std::string> Names(const ListJobsRequest& r) {
    auto out = ListJobs(jobs_, r);
    EXPECT_TRUE(out.ok()) << out.status();
    std::vector<std::string> names;
    if (out.ok()) {
      for (const auto& j : out->jobs) names.push_back(j.name);
    }
    return names;
  }

  std::vector<model::JobRecord> jobs_;
};

TEST_F(JobsTest, DefaultIsCreationTimeAscending) {
  EXPECT_THAT(Names({}), ElementsAre("alpha-2", "Bravo-1", "charlie-3", "alpha-4"));
}

TEST_F(JobsTest, SortByNameAndByStatusDescending) {
  ListJobsRequest r;
  r.sort_by = JobSortBy::kName;
  EXPECT_THAT(Names(r), ElementsAre("Bravo-1", "alpha-2", "alpha-4", "charlie-3"));
  r.sort_by = JobSortBy::kStatus;
  r.descending = true;
  // InProgress > Failed > Completed; ties by name, descending too.
  EXPECT_THAT(Names(r), ElementsAre("alpha-2", "charlie-3", "Bravo-1", "alpha-4"));
}

TEST_F(JobsTest, FiltersApplyBeforePaging) {
  ListJobsRequest r;
  r.name_contains = "ALPHA";
  EXPECT_THAT(Names(r), ElementsAre("alpha-2", "alpha-4"));
  r = {};
  r.status = model::JobStatus::kCompleted;
  r.max_results = 1;
  EXPECT_THAT(Names(r), ElementsAre("Bravo-1"));
  r = {};
  r.creation_after_ms = 100;   // strictly after
  r.creation_before_ms = 400;  // strictly before
  EXPECT_THAT(Names(r), ElementsAre("Bravo-1", "charlie-3"));
  r = {};
  r.modified_after_ms = 450;
  EXPECT_THAT(Names(r), ElementsAre("Bravo-1", "alpha-4"));
}

TEST_F(JobsTest, TokensWalkEveryPageOnce) {
  ListJobsRequest r;
  r.max_results = 3;
  r.descending = true;
  auto p1 = ListJobs(jobs_, r);
  ASSERT_TRUE(p1.ok());
  ASSERT_EQ(p1->jobs.size(), 3u);
  ASSERT_FALSE(p1->next_token.empty());
  r.next_token = p1->next_token;
  auto p2 = ListJobs(jobs_, r);
  ASSERT_TRUE(p2.ok()) << p2.status();
  ASSERT_EQ(p2->jobs.size(), 1u);
  EXPECT_EQ(p2->jobs[0].name, "alpha-2");
  EXPECT_TRUE(p2->next_token.empty());
}

TEST_F(JobsTest, ATokenIsRefusedWithAnotherListingOrWhenAltered) {
  ListJobsRequest r;
  r.max_results = 1;
  auto p1 = ListJobs(jobs_, r);
  ASSERT_TRUE(p1.ok());
  ASSERT_FALSE(p1->next_token.empty());
  ListJobsRequest other = r;
  other.name_contains = "alpha";
  other.next_token = p1->next_token;
  auto reused = ListJobs(jobs_, other);
  EXPECT_EQ(GetErrorKind(reused.status()), ErrorKind::kInvalidCursor);
  EXPECT_THAT(std::string(reused.status().message()),
              ::testing::HasSubstr("issued for a request with other parameters"));
  ListJobsRequest sorted = r;
  sorted.sort_by = JobSortBy::kName;
  sorted.next_token = p1->next_token;
  EXPECT_EQ(GetErrorKind(ListJobs(jobs_, sorted).status()), ErrorKind::kInvalidCursor);
  ListJobsRequest altered = r;
  altered.next_token = p1->next_token;
  altered.next_token[altered.next_token.size() / 2] ^= 1;
  EXPECT_EQ(GetErrorKind(ListJobs(jobs_, altered).status()), ErrorKind::kInvalidCursor);
}

TEST_F(JobsTest, BadMaxResultsIsAValidationExceptionAndABadTokenAnInvalidToken) {
  ListJobsRequest r;
  r.max_results = 101;
  EXPECT_EQ(GetErrorKind(ListJobs(jobs_, r).status()), ErrorKind::kInvalidValue);
  r.max_results = 5;
  r.next_token = "!!!";
  EXPECT_EQ(GetErrorKind(ListJobs(jobs_, r).status()), ErrorKind::kInvalidCursor);
}

TEST_F(JobsTest, UnboundedTakesEveryMatchingJob) {
  ListJobsRequest r;
  r.unbounded = true;
  r.descending = true;
  EXPECT_THAT(Names(r), ElementsAre("alpha-4", "charlie-3", "Bravo-1", "alpha-2"));
}

}  // namespace
}  // namespace trainwatch::query
