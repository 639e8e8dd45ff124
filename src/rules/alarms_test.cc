#include "rules/alarms.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/clock.h"

namespace trainwatch::rules {
namespace {

using model::AlarmState;
using model::MissingData;
using ::testing::HasSubstr;

constexpr int64_t kP = 60'000;

model::AlarmDefinition Def(int n, int m, MissingData missing = MissingData::kMissing) {
  model::AlarmDefinition d;
  d.name = "loss-high";
  d.ns = "/aws/sagemaker/TrainingJobs";
  d.metric = "train:loss";
  d.dimensions = {{"TrainingJobName", "job-1"}};
  d.statistic = "Maximum";
  d.period_s = 60;
  d.evaluation_periods = n;
  d.datapoints_to_alarm = m;
  d.threshold = 5;
  d.comparison = model::AlarmComparison::kGreaterThanThreshold;
  d.treat_missing_data = missing;
  return d;
}

// "0" a datapoint within the threshold, "X" one breaching it, "-" none;
// oldest first, as CloudWatch's documentation draws them.
std::vector<AlarmPeriod> Periods(std::string_view marks) {
  std::vector<AlarmPeriod> out;
  int64_t t = 0;
  for (char c : marks) {
    AlarmPeriod p{t, std::nullopt};
    if (c == '0') p.value = 1;
    if (c == 'X') p.value = 9;
    out.push_back(p);
    t += kP;
  }
  return out;
}

AlarmState Eval(std::string_view marks, MissingData missing, AlarmState current = AlarmState::kOk,
                int n = 3, int m = 3) {
  return EvaluateAlarm(Def(n, m, missing), current, Periods(marks), 0).state;
}

TEST(EvaluateAlarm, MOfNOverTheNewestDatapoints) {
  EXPECT_EQ(Eval("00XXX", MissingData::kMissing), AlarmState::kAlarm);
  EXPECT_EQ(Eval("XXXX0", MissingData::kMissing), AlarmState::kOk);
  EXPECT_EQ(Eval("000X0", MissingData::kMissing, AlarmState::kOk, 3, 1), AlarmState::kAlarm);
  EXPECT_EQ(Eval("00X0X", MissingData::kMissing, AlarmState::kOk, 3, 2), AlarmState::kAlarm);
  EXPECT_EQ(Eval("XX00X", MissingData::kMissing, AlarmState::kAlarm, 3, 2), AlarmState::kOk);
  // A missing period in the newest N: the newest N datapoints present decide.
  EXPECT_EQ(Eval("XX-XX", MissingData::kMissing), AlarmState::kAlarm);
  EXPECT_EQ(Eval("XX-XX", MissingData::kNotBreaching), AlarmState::kAlarm);
}

// CloudWatch's table for 3 out of 3 (its documentation, "Configuring how
// CloudWatch alarms treat missing data").
TEST(EvaluateAlarm, TreatMissingDataAsCloudWatchDocumentsIt) {
  for (MissingData m : {MissingData::kMissing, MissingData::kIgnore, MissingData::kBreaching,
                        MissingData::kNotBreaching}) {
    EXPECT_EQ(Eval("00000", m), AlarmState::kOk) << model::MissingDataName(m);
  }
  // Fewer than three datapoints, one within the threshold: 3 of 3 is out of reach.
  EXPECT_EQ(Eval("---0X", MissingData::kMissing), AlarmState::kOk);
  EXPECT_EQ(Eval("---0X", MissingData::kIgnore), AlarmState::kOk);
  EXPECT_EQ(Eval("---0X", MissingData::kBreaching), AlarmState::kOk);
  EXPECT_EQ(Eval("---0X", MissingData::kNotBreaching), AlarmState::kOk);
  // Nothing at all.
  EXPECT_EQ(Eval("-----", MissingData::kMissing), AlarmState::kInsufficientData);
  EXPECT_EQ(Eval("-----", MissingData::kIgnore, AlarmState::kAlarm), AlarmState::kAlarm);
  EXPECT_EQ(Eval("-----", MissingData::kIgnore, AlarmState::kOk), AlarmState::kOk);
  EXPECT_EQ(Eval("-----", MissingData::kBreaching), AlarmState::kAlarm);
  EXPECT_EQ(Eval("-----", MissingData::kNotBreaching, AlarmState::kAlarm), AlarmState::kOk);
  // Breaching datapoints and missing ones: only breaching reaches ALARM at
  // once; missing and ignore do not go early, they keep the state.
  EXPECT_EQ(Eval("---XX", MissingData::kBreaching), AlarmState::kAlarm);
  EXPECT_EQ(Eval("---XX", MissingData::kNotBreaching, AlarmState::kAlarm), AlarmState::kOk);
  EXPECT_EQ(Eval("---XX", MissingData::kMissing, AlarmState::kOk), AlarmState::kOk);
  EXPECT_EQ(Eval("---XX", MissingData::kIgnore, AlarmState::kInsufficientData),
            AlarmState::kInsufficientData);
  // Fewer than N present: those of the whole range count, the rest filled.
  EXPECT_EQ(Eval("XX---", MissingData::kNotBreaching, AlarmState::kOk, 3, 2), AlarmState::kAlarm);
  EXPECT_EQ(Eval("X0---", MissingData::kBreaching, AlarmState::kOk, 3, 3), AlarmState::kOk);
  // Enough breaching datapoints present decide, whatever is missing.
  EXPECT_EQ(Eval("---XX", MissingData::kMissing, AlarmState::kOk, 3, 2), AlarmState::kAlarm);
}

TEST(EvaluateAlarm, ReasonSaysWhatCrossedInCloudWatchsWords) {
  AlarmEvaluation e = EvaluateAlarm(Def(3, 2), AlarmState::kOk, Periods("00X0X"), 0);
  EXPECT_EQ(e.state, AlarmState::kAlarm);
  EXPECT_THAT(e.reason, HasSubstr("Threshold Crossed: 2 out of the last 3 datapoints [9 (01/01/70 "
                                  "00:04:00), 1 (01/01/70 00:03:00), 9 (01/01/70 00:02:00)] were "
                                  "greater than the threshold (5)"));
  EXPECT_THAT(e.reason, HasSubstr("(minimum 2 datapoints for OK -> ALARM transition)"));
  // OK: the datapoints that did not cross (a missing one is not one), and
  // the ALARM -> OK transition's minimum, N - M + 1.
  AlarmEvaluation ok = EvaluateAlarm(Def(5, 3), AlarmState::kAlarm, Periods("-0000"), 0);
  EXPECT_EQ(ok.state, AlarmState::kOk);
  EXPECT_THAT(ok.reason, HasSubstr("Threshold Crossed: 4 out of the last 5 datapoints [1 ("));
  EXPECT_THAT(ok.reason, HasSubstr("were not greater than the threshold (5) (minimum 3 "
                                   "datapoints for ALARM -> OK transition)."));
  ok = EvaluateAlarm(Def(3, 2, MissingData::kNotBreaching), AlarmState::kAlarm, Periods("-0"), 0);
  EXPECT_THAT(ok.reason, HasSubstr("3 out of the last 3 datapoints [1 (01/01/70 00:01:00)] were "
                                   "not greater than the threshold (5), 2 missing datapoints "
                                   "treated as notBreaching (minimum 2 datapoints for ALARM -> OK"));
  ok = EvaluateAlarm(Def(2, 1, MissingData::kNotBreaching), AlarmState::kAlarm, Periods("--"), 0);
  EXPECT_EQ(ok.state, AlarmState::kOk);
  EXPECT_EQ(ok.reason, "Threshold Crossed: no datapoints were received for 2 periods and 2 "
                       "missing datapoints were treated as [NonBreaching].");
  EXPECT_THAT(e.reason_data, HasSubstr("\"statistic\":\"Maximum\""));
  EXPECT_THAT(e.reason_data, HasSubstr("\"recentDatapoints\":[1.0,1.0,9.0,1.0,9.0]"));
}

TEST(JobOfAlarm, FromTheJobOrTheHostDimension) {
  model::AlarmDefinition d = Def(1, 1);
  EXPECT_EQ(JobOfAlarm(d), "job-1");
  d.dimensions = {{"Host", "job-2/algo-3"}};
  EXPECT_EQ(JobOfAlarm(d), "job-2");
  d.dimensions = {{"GPU", "0"}};
  EXPECT_EQ(JobOfAlarm(d), std::nullopt);
}

// A metrics reader over values per period start.
class FakeMetrics final : public query::MetricsReader {
 public:
  std::map<int64_t, double> values;
  // As the store answers: a period under a minute over a range that starts
  // before the raw tier's oldest sample gets nothing at all.
  int64_t raw_from_ms = INT64_MIN;
  absl::StatusOr<std::vector<query::StatisticsBucket>> GetStatistics(
      const query::StatisticsQuery& q) override {
    std::vector<query::StatisticsBucket> out;
    if (q.period_s < 60 && q.start_ms < raw_from_ms) return out;
    for (auto it = values.lower_bound(q.start_ms); it != values.end() && it->first < q.end_ms; ++it) {
      query::StatisticsBucket b;
      b.t_ms = it->first;
      b.values.push_back(it->second);
      out.push_back(b);
    }
    return out;
  }
  absl::StatusOr<std::vector<query::MetricId>> ListMetrics(const query::ListMetricsQuery&) override {
    return std::vector<query::MetricId>();
  }
  absl::StatusOr<std::optional<query::LastSample>> LastValue(const model::SeriesKey&) override {
    return std::optional<query::LastSample>();
  }
};

class MemorySink final : public AlarmSink {
 public:
  std::map<std::string, model::AlarmRecord> stored;
  absl::Status PutAlarm(const model::AlarmRecord& a) override {
    stored[a.definition.name] = a;
    return absl::OkStatus();
  }
  absl::Status DeleteAlarm(const std::string& name) override {
    stored.erase(name);
    return absl::OkStatus();
  }
};

class RecordingActions final : public ActionHandler {
 public:
  std::vector<ActionRequest> runs;
  void Run(const ActionRequest& r) override { runs.push_back(r); }
};

TEST(AlarmService, GoesToAlarmWhenAPeriodEndsRecordsHistoryAndRunsTheActions) {
  util::FakeClock clock(10 * kP + 30'000);  // half way through period 10
  FakeMetrics metrics;
  MemorySink sink;
  RecordingActions actions;
  AlarmService alarms(&metrics, &sink, &actions, {.clock = &clock});
  model::AlarmDefinition d = Def(2, 2);
  d.alarm_actions = {"StopTraining"};
  d.ok_actions = {"exec:/bin/true"};
  for (int i = 5; i < 10; ++i) metrics.values[i * kP] = 1;
  ASSERT_TRUE(alarms.Put(d).ok());
  ASSERT_EQ(sink.stored.count("loss-high"), 1u);
  EXPECT_EQ(sink.stored["loss-high"].state, AlarmState::kOk);
  EXPECT_EQ(sink.stored["loss-high"].arn, "arn:aws:cloudwatch:us-east-1:000000000000:alarm:loss-high");
  ASSERT_EQ(actions.runs.size(), 1u);  // INSUFFICIENT_DATA -> OK runs the OK actions
  EXPECT_EQ(actions.runs[0].action, "exec:/bin/true");

  // Period 10 breaches; it is evaluated only once it ended and settled.
  metrics.values[10 * kP] = 9;
  alarms.EvaluateDue();
  EXPECT_EQ(alarms.List()[0].state, AlarmState::kOk);
  clock.SetNowMs(11 * kP + 2'000);
  alarms.EvaluateDue();
  EXPECT_EQ(alarms.List()[0].state, AlarmState::kOk);  // 1 of 2
  metrics.values[11 * kP] = 9;
  clock.SetNowMs(12 * kP + 2'000);
  alarms.EvaluateDue();
  model::AlarmRecord a = alarms.List()[0];
  EXPECT_EQ(a.state, AlarmState::kAlarm);
  EXPECT_EQ(sink.stored["loss-high"].state, AlarmState::kAlarm);
  ASSERT_EQ(actions.runs.size(), 2u);
  EXPECT_EQ(actions.runs[1].action, "StopTraining");
  EXPECT_EQ(actions.runs[1].job, "job-1");
  EXPECT_THAT(actions.runs[1].finding.message, HasSubstr("went from OK to ALARM"));
  std::vector<std::string> types;
  for (const model::AlarmHistoryItem& h : a.history) {
    types.push_back(h.type + ": " + h.summary);
    EXPECT_EQ(h.seq, static_cast<int64_t>(types.size()));
  }
  EXPECT_THAT(types, ::testing::ElementsAre("ConfigurationUpdate: Alarm \"loss-high\" created",
                                            "StateUpdate: Alarm updated from INSUFFICIENT_DATA to OK",
                                            "Action: Started action exec:/bin/true",
                                            "StateUpdate: Alarm updated from OK to ALARM",
                                            "Action: Started action StopTraining"));

  // SetAlarmState holds until the next evaluation.
  ASSERT_TRUE(alarms.SetState("loss-high", AlarmState::kOk, "testing", "").ok());
  EXPECT_EQ(alarms.List()[0].state, AlarmState::kOk);
  EXPECT_EQ(alarms.List()[0].state_reason, "testing");
  clock.SetNowMs(13 * kP + 2'000);
  alarms.EvaluateDue();
  EXPECT_EQ(alarms.List()[0].state, AlarmState::kAlarm);

  EXPECT_EQ(alarms.Delete({"loss-high", "nope"}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(alarms.List().size(), 1u);
  ASSERT_TRUE(alarms.Delete({"loss-high"}).ok());
  EXPECT_TRUE(alarms.List().empty());
  EXPECT_TRUE(sink.stored.empty());
}

// A 10 s alarm over 5.5 h (CloudWatch takes up to a day): the raw tier keeps
// 3 h, and the newest periods still decide.
TEST(AlarmService, AHighResolutionAlarmOverMoreThanTheRawTierSeesItsNewestPeriods) {
  constexpr int64_t kNow = 1'000'000'000'000;
  util::FakeClock clock(kNow);
  FakeMetrics metrics;
  metrics.raw_from_ms = kNow - 3 * 3'600'000;
  MemorySink sink;
  RecordingActions actions;
  AlarmService alarms(&metrics, &sink, &actions, {.clock = &clock});
  model::AlarmDefinition d = Def(2000, 1, MissingData::kNotBreaching);
  d.period_s = 10;
  const int64_t newest = (kNow - 2'000) / 10'000 * 10'000 - 10'000;  // the last period ended and settled
  for (int64_t t = newest - 600'000; t < newest; t += 10'000) metrics.values[t] = 1;
  metrics.values[newest] = 9;
  ASSERT_TRUE(alarms.Put(d).ok());
  model::AlarmRecord a = alarms.List()[0];
  EXPECT_EQ(a.state, AlarmState::kAlarm) << a.state_reason;
  EXPECT_THAT(a.state_reason, HasSubstr("[9 ("));
}

TEST(AlarmService, RefusesActionsItCannotRun) {
  util::FakeClock clock;
  FakeMetrics metrics;
  MemorySink sink;
  AlarmService alarms(&metrics, &sink, nullptr, {.clock = &clock});
  model::AlarmDefinition d = Def(1, 1);
  d.alarm_actions = {"arn:aws:sns:us-east-1:123456789012:ops"};
  absl::Status s = alarms.Put(d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("not AWS ARNs"));
  EXPECT_THAT(s.message(), HasSubstr("alarm action \"arn:aws:sns:us-east-1:123456789012:ops\" is not"));
  d.alarm_actions = {"StopTraining"};
  d.dimensions = {{"GPU", "0"}};
  s = alarms.Put(d);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no TrainingJobName or Host dimension"));
  EXPECT_TRUE(sink.stored.empty());
}

TEST(AlarmRecord, RoundTripsThroughItsStoredForm) {
  model::AlarmRecord r;
  r.definition = Def(3, 2, MissingData::kBreaching);
  r.definition.unit = "Percent";
  r.definition.alarm_actions = {"StopTraining"};
  r.state = AlarmState::kAlarm;
  r.history.push_back({1, 5, "StateUpdate", "s", "{}"});
  absl::StatusOr<model::AlarmRecord> back = model::DecodeAlarmRecord(model::EncodeAlarmRecord(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(model::EncodeAlarmRecord(*back), model::EncodeAlarmRecord(r));
  EXPECT_EQ(back->definition.treat_missing_data, MissingData::kBreaching);
  EXPECT_EQ(model::DecodeAlarmRecord("not json").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace trainwatch::rules
