// GET /metrics (api/prometheus/metrics_page.h) over the fake backend: the
// health writers in order, a job's latest metrics named as
// model/prometheus_names.h says, and the errors.
#include "api/prometheus/metrics_page.h"

#include <string>
#include <vector>

#include "api/testing/fake_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::api {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kNow = 1736942700000;
constexpr char kNs[] = "/aws/sagemaker/TrainingJobs";

class MetricsPageTest : public ::testing::Test {
 protected:
  MetricsPageTest()
      : clock_(kNow),
        fake_(clock_),
        page_(fake_.backends(), {[](util::PromText* t) {
                                  t->Family("trainwatch_part_total", "counter", "A part.");
                                  t->Sample("trainwatch_part_total", {}, 7);
                                }}) {
    model::JobRecord job;
    job.name = "j1";
    job.creation_ms = kNow - 3600000;
    fake_.SetJob(job);
  }

  HttpResponse Get(const std::string& target) {
    HttpRequest r;
    r.method = "GET";
    r.target = target;
    EXPECT_TRUE(MetricsPage::Serves(r));
    return page_.Handle(r, [](util::PromText* t) {
      t->Family("trainwatch_first", "gauge", "Written first.");
      t->Sample("trainwatch_first", {}, 1);
    });
  }
  void Put(const std::string& ns, const std::string& metric, std::vector<model::Dimension> dims,
           std::vector<model::Sample> samples, const std::string& unit = "None") {
    ASSERT_TRUE(fake_.PutSeries(ns, metric, std::move(dims), std::move(samples), unit).ok());
  }

  util::FakeClock clock_;
  testing::FakeBackend fake_;
  MetricsPage page_;
};

TEST_F(MetricsPageTest, HealthIsTheFirstWriterThenEachPart) {
  HttpResponse r = Get("/metrics");
  EXPECT_EQ(r.status, 200);
  ASSERT_TRUE(r.headers.Has("Content-Type"));
  EXPECT_EQ(*r.headers.Find("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.body,
            "# HELP trainwatch_first Written first.\n# TYPE trainwatch_first gauge\ntrainwatch_first 1\n"
            "# HELP trainwatch_part_total A part.\n# TYPE trainwatch_part_total counter\n"
            "trainwatch_part_total 7\n");
}

TEST_F(MetricsPageTest, AJobsLatestValuesByTheNamingRule) {
  Put(kNs, "train:loss", {{"TrainingJobName", "j1"}}, {{kNow - 2000, 0.5}, {kNow - 1000, 0.25}});
  Put(kNs, "val-acc", {{"TrainingJobName", "j1"}}, {{kNow - 1000, 91.5}});
  Put("trainwatch/Profiler", "CPUUtilization", {{"Core", "0"}, {"Host", "j1/algo-1"}},
      {{kNow - 500, 80}}, "Percent");
  Put(kNs, "train:loss", {{"TrainingJobName", "j10"}}, {{kNow, 9}});  // another job
  HttpResponse r = Get("/metrics?job=j1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("trainwatch_job_info{training_job=\"j1\",status=\"InProgress\"} 1\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE train:loss gauge\n"
                                "train:loss{namespace=\"/aws/sagemaker/TrainingJobs\","
                                "TrainingJobName=\"j1\"} 0.25\n"));
  EXPECT_THAT(r.body, HasSubstr("val_acc{namespace=\"/aws/sagemaker/TrainingJobs\","
                                "TrainingJobName=\"j1\"} 91.5\n"));
  EXPECT_THAT(r.body, HasSubstr("CPUUtilization{namespace=\"trainwatch/Profiler\",Core=\"0\","
                                "Host=\"j1/algo-1\",unit=\"Percent\"} 80\n"));
  EXPECT_THAT(r.body, Not(HasSubstr("j10")));
  EXPECT_THAT(r.body, Not(HasSubstr("trainwatch_first")));  // health is not on a job's page
}

TEST_F(MetricsPageTest, SeriesThatNameAlikeGiveOneSampleTheNewest) {
  Put(kNs, "a-b", {{"TrainingJobName", "j1"}}, {{kNow - 2000, 1}});
  Put(kNs, "a_b", {{"TrainingJobName", "j1"}}, {{kNow - 1000, 2}});
  HttpResponse r = Get("/metrics?job=j1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("a_b{namespace=\"/aws/sagemaker/TrainingJobs\",TrainingJobName=\"j1\"} 2\n"));
  EXPECT_THAT(r.body, Not(HasSubstr("TrainingJobName=\"j1\"} 1\n")));
  // Renamed dimensions can give one label set in two orders: still one sample.
  Put(kNs, "m", {{"TrainingJobName", "j1"}, {"a-b", "1"}, {"a_b", "2"}}, {{kNow - 500, 5}});
  Put(kNs, "m", {{"TrainingJobName", "j1"}, {"a-b-2", "2"}, {"a_b", "1"}}, {{kNow - 400, 6}});
  r = Get("/metrics?job=j1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("m{namespace=\"/aws/sagemaker/TrainingJobs\",TrainingJobName=\"j1\","
                                "a_b_2=\"2\",a_b=\"1\"} 6\n"));  // the newer series' labels
  EXPECT_THAT(r.body, Not(HasSubstr("} 5\n")));
}

TEST_F(MetricsPageTest, ErrorsSayWhatToDo) {
  HttpResponse r = Get("/metrics?job=nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("no training job of that name"));
  r = Get("/metrics?job=");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("name the job"));
  r = Get("/metrics?job=j1&job=j2");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("one job=NAME"));
  r = Get("/metrics?jbo=j1");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("unknown query parameter \"jbo\""));
  r = Get("/metrics?job=%zz");
  EXPECT_EQ(r.status, 400);
  MetricsPage bare(Backends{}, {});
  HttpRequest q;
  q.method = "GET";
  q.target = "/metrics?job=j1";
  EXPECT_EQ(bare.Handle(q, {}).status, 501);
}

}  // namespace
}  // namespace trainwatch::api
