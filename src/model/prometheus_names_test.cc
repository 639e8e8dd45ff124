#include "model/prometheus_names.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace trainwatch::model {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

TEST(PrometheusNamesTest, MetricNamesKeepColonsAndReplaceTheRest) {
  EXPECT_EQ(PrometheusMetricName("train:loss"), "train:loss");
  EXPECT_EQ(PrometheusMetricName("val-acc top/1"), "val_acc_top_1");
  EXPECT_EQ(PrometheusMetricName("1cycle"), "_1cycle");
  EXPECT_EQ(PrometheusMetricName(""), "_");
  EXPECT_EQ(PrometheusMetricName("épreuve"), "__preuve");  // each UTF-8 byte is one '_'
}

TEST(PrometheusNamesTest, SeriesBecomeANameAndLabels) {
  SeriesKey key;
  key.ns = "/aws/sagemaker/TrainingJobs";
  key.metric = "validation:accuracy";
  key.dimensions = {{"Host", "j/algo-1"}, {"TrainingJobName", "j"}};
  PrometheusSeries p = ToPrometheus(key);
  EXPECT_EQ(p.name, "validation:accuracy");
  EXPECT_EQ(p.labels, (Labels{{"namespace", "/aws/sagemaker/TrainingJobs"},
                              {"Host", "j/algo-1"},
                              {"TrainingJobName", "j"}}));
  key.unit = "Percent";
  EXPECT_EQ(ToPrometheus(key).labels.back(), (std::pair<std::string, std::string>{"unit", "Percent"}));
}

TEST(PrometheusNamesTest, LabelNamesNeverCollideWithReservedOrEachOther) {
  SeriesKey key;
  key.ns = "ns";
  key.metric = "m";
  key.dimensions = {{"__name__", "x"}, {"a-b", "1"}, {"a_b", "2"}, {"a.b", "3"}, {"namespace", "n"},
                    {"unit", "u"}, {"9lives", "c"}};
  EXPECT_EQ(ToPrometheus(key).labels,
            (Labels{{"namespace", "ns"},
                    {"dim___name__", "x"},
                    {"a_b", "1"},
                    {"a_b_2", "2"},
                    {"a_b_3", "3"},
                    {"dim_namespace", "n"},
                    {"dim_unit", "u"},
                    {"_9lives", "c"}}));
}

}  // namespace
}  // namespace trainwatch::model
