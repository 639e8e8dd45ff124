#include "ingest/import_formats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::ingest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<SeriesRun> Parse(ImportFormat f, std::string_view text, std::string_view header = {},
                             absl::Status* status = nullptr, int64_t first_line = 1) {
  auto parser = MakeParser(f, "trainwatch/Imported", header);
  EXPECT_TRUE(parser.ok()) << parser.status();
  std::vector<SeriesRun> runs;
  absl::Status s = (*parser)->ParseBlock(text, first_line, &runs);
  if (status != nullptr) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << s;
  }
  return runs;
}

TEST(Jsonl, GeneratorLinesGroupBySeries) {
  std::string text =
      "{\"namespace\":\"trainwatch/TrainingJobs\",\"metric\":\"train_loss\",\"dimensions\":"
      "{\"TrainingJobName\":\"job-0000\",\"Host\":\"algo-1\"},\"timestamp_ms\":1704067200000,"
      "\"value\":2.5}\n"
      "{\"namespace\":\"trainwatch/Hosts\",\"metric\":\"CPUUtilization\",\"dimensions\":"
      "{\"TrainingJobName\":\"job-0000\",\"Host\":\"algo-1\"},\"timestamp_ms\":1704067200000,"
      "\"value\":51.25}\n"
      "\n"
      "{\"namespace\":\"trainwatch/TrainingJobs\",\"metric\":\"train_loss\",\"dimensions\":"
      "{\"TrainingJobName\":\"job-0000\",\"Host\":\"algo-1\"},\"timestamp_ms\":1704067201000,"
      "\"value\":1e-06}\n";
  auto runs = Parse(ImportFormat::kJsonl, text);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].key->ToString(),
            "trainwatch/TrainingJobs/train_loss{Host=\"algo-1\",TrainingJobName=\"job-0000\"}");
  EXPECT_THAT(runs[0].t_ms, ElementsAre(1704067200000, 1704067201000));
  EXPECT_THAT(runs[0].values, ElementsAre(2.5, 1e-06));
  EXPECT_EQ(runs[1].key->metric, "CPUUtilization");
}

TEST(Jsonl, OptionalFieldsEscapesAndIsoTimes) {
  auto runs = Parse(ImportFormat::kJsonl,
                    "{ \"metric\" : \"a\\\"b\\u00e9\", \"unit\": \"Percent\", \"timestamp\": "
                    "\"2024-01-01T00:00:01.5Z\", \"value\": -3, \"extra\": [1, {\"x\": null}] }\n"
                    "{\"metric\":\"a\\\"b\\u00e9\",\"unit\":\"Percent\",\"timestamp\":1704067202,"
                    "\"value\":4}");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].key->metric, "a\"b\xC3\xA9");
  EXPECT_EQ(runs[0].key->ns, "trainwatch/Imported");
  EXPECT_EQ(runs[0].key->unit, "Percent");
  EXPECT_THAT(runs[0].t_ms, ElementsAre(1704067201500, 1704067202000));
}

TEST(Jsonl, ErrorsNameTheLineAndWhatIsExpected) {
  absl::Status s;
  Parse(ImportFormat::kJsonl, "{\"metric\":\"a\",\"timestamp_ms\":1,\"value\":1}\n"
                              "{\"metric\":\"a\",\"timestamp_ms\":1,\"value\":NaN}\n",
        {}, &s, 10);
  EXPECT_THAT(s.message(), HasSubstr("line 11"));
  EXPECT_THAT(s.message(), HasSubstr("not a finite number"));
  Parse(ImportFormat::kJsonl, "{\"metric\":\"a\",\"value\":1}", {}, &s);
  EXPECT_THAT(s.message(), HasSubstr("missing a timestamp"));
  Parse(ImportFormat::kJsonl, "{\"metric\":\"a\",\"timestamp_ms\":\"x\",\"value\":1}", {}, &s);
  EXPECT_THAT(s.message(), HasSubstr("integer milliseconds"));
  Parse(ImportFormat::kJsonl, "{\"metric\":\"a\",\"timestamp_ms\":1,\"value\":1e999}", {}, &s);
  EXPECT_FALSE(s.ok());
  Parse(ImportFormat::kJsonl, "{\"metric\":\"a\",\"timestamp_ms\":1,\"value\":1} trailing", {}, &s);
  EXPECT_THAT(s.message(), HasSubstr("end of the line"));
}

TEST(VmImport, LinesAreSeriesWithNamespaceLabel) {
  std::string text =
      "{\"metric\":{\"__name__\":\"train_loss\",\"namespace\":\"trainwatch/TrainingJobs\","
      "\"TrainingJobName\":\"job-0000\",\"Host\":\"algo-1\"},\"values\":[0.5,0.25,1e-06],"
      "\"timestamps\":[1704067200000,1704067201000,1704067202000]}\n"
      "{\"metric\":{\"__name__\":\"up\"},\"values\":[1],\"timestamps\":[1704067200000]}\n";
  auto runs = Parse(ImportFormat::kVmImport, text);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].key->ns, "trainwatch/TrainingJobs");
  EXPECT_EQ(runs[0].key->dimensions.size(), 2u);
  EXPECT_THAT(runs[0].values, ElementsAre(0.5, 0.25, 1e-06));
  EXPECT_EQ(runs[1].key->ns, "trainwatch/Imported");
  absl::Status s;
  Parse(ImportFormat::kVmImport,
        "{\"metric\":{\"a\":\"b\"},\"values\":[1],\"timestamps\":[1]}", {}, &s);
  EXPECT_THAT(s.message(), HasSubstr("__name__"));
  Parse(ImportFormat::kVmImport,
        "{\"metric\":{\"__name__\":\"b\"},\"values\":[1,2],\"timestamps\":[1]}", {}, &s);
  EXPECT_THAT(s.message(), HasSubstr("2 values but 1 timestamps"));
}

TEST(Csv, HeaderNamesColumnsOthersAreDimensions) {
  auto runs = Parse(ImportFormat::kCsv,
                    "2024-01-01T00:00:00Z,train_loss,0.5,job-1,\"a,b\"\n"
                    "# a comment\n"
                    "1704067201.25,train_loss,0.25,job-1,\"a,b\"\n"
                    "1704067201,train_loss,7,job-2,\n",
                    "timestamp,metric,value,TrainingJobName,Host");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_THAT(runs[0].t_ms, ElementsAre(1704067200000, 1704067201250));
  EXPECT_EQ(*runs[0].key->FindDimension("Host"), "a,b");
  EXPECT_EQ(runs[1].key->FindDimension("Host"), nullptr);  // empty cell: no dimension
}

TEST(Csv, HeaderAndLineErrors) {
  EXPECT_FALSE(MakeParser(ImportFormat::kCsv, "ns", "time,metric,value").ok());
  absl::Status s;
  Parse(ImportFormat::kCsv, "1,m,1,extra\n", "timestamp_ms,metric,value", &s);
  EXPECT_THAT(s.message(), HasSubstr("4 fields, but the header has 3"));
  Parse(ImportFormat::kCsv, "yesterday,m,1\n", "timestamp,metric,value", &s);
  EXPECT_THAT(s.message(), HasSubstr("ISO-8601"));
  Parse(ImportFormat::kCsv, "1,m,nan\n", "timestamp_ms,metric,value", &s);
  EXPECT_THAT(s.message(), HasSubstr("not a finite number"));
  Parse(ImportFormat::kCsv, "1,m,abc\n", "timestamp_ms,metric,value", &s);
  EXPECT_THAT(s.message(), HasSubstr("\"abc\" is not a number"));
}

TEST(DetectFormat, ByNameThenContent) {
  EXPECT_EQ(DetectFormat("x.csv", "{"), ImportFormat::kCsv);
  EXPECT_EQ(DetectFormat("x.jsonl", "{\"metric\":{},\"values\":[],\"timestamps\":[]}"),
            ImportFormat::kVmImport);
  EXPECT_EQ(DetectFormat("x", "{\"metric\":\"a\"}"), ImportFormat::kJsonl);
  EXPECT_EQ(DetectFormat("x.txt", "timestamp,metric,value"), ImportFormat::kCsv);
}

}  // namespace
}  // namespace trainwatch::ingest
