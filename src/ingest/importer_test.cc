#include "ingest/importer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_format.h"
#include "store/test_util.h"

namespace trainwatch::ingest {
namespace {

using ::testing::HasSubstr;

class ImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::DbOptions o;
    o.data_dir = dir_.Sub("data");
    o.background_thread = false;
    auto db = store::Db::Open(o);
    ASSERT_TRUE(db.ok());
    db_ = std::move(*db);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_.Sub(name);
    std::ofstream(path) << text;
    return path;
  }
  // Rows of one series, sorted.
  std::vector<std::pair<int64_t, double>> Rows(const model::SeriesKey& k) {
    auto view = db_->View();
    std::vector<store::SeriesRef> refs;
    EXPECT_TRUE(view->FindSeries(k.ns, k.metric, k.dimensions, &k.unit, &refs).ok());
    std::vector<std::pair<int64_t, double>> out;
    if (refs.size() != 1) return out;
    EXPECT_TRUE(view->ScanRows(refs[0].id, INT64_MIN, INT64_MAX, [&](uint8_t, const store::Row& r) {
                      out.emplace_back(r.t_ms, r.c[0]);
                    }).ok());
    std::sort(out.begin(), out.end());
    return out;
  }
  store::testing::TempDir dir_;
  std::unique_ptr<store::Db> db_;
};

TEST_F(ImporterTest, SmallBlocksAndThreadsKeepEverySampleInOrder) {
  std::string text;
  for (int s = 0; s < 7; ++s) {
    for (int c = 0; c < 5; ++c) {
      text += absl::StrFormat("{\"metric\":{\"__name__\":\"m\",\"s\":\"%d\"},\"values\":[", s);
      for (int i = 0; i < 100; ++i) text += absl::StrFormat("%s%d.25", i ? "," : "", c * 100 + i);
      text += "],\"timestamps\":[";
      for (int i = 0; i < 100; ++i) {
        text += absl::StrFormat("%s%d", i ? "," : "", 1704067200000LL + (c * 100 + i) * 1000);
      }
      text += "]}\n";
    }
  }
  ImportOptions o;
  o.parse_threads = 3;
  o.block_bytes = 1000;  // many blocks, lines cut across reads
  int progress_calls = 0;
  o.progress = [&](const ImportProgress& p) {
    ++progress_calls;
    EXPECT_LE(p.bytes_read, p.bytes_total);
  };
  o.progress_interval_ms = 0;
  auto r = ImportFile(db_.get(), Write("in.vmimport", text), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->format, ImportFormat::kVmImport);
  EXPECT_EQ(r->samples, 7u * 500);
  EXPECT_EQ(r->series, 7u);
  EXPECT_GT(progress_calls, 2);
  auto rows = Rows(*model::MakeSeriesKey("trainwatch/Imported", "m", {{"s", "3"}}));
  ASSERT_EQ(rows.size(), 500u);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(rows[i].first, 1704067200000LL + i * 1000);
    EXPECT_EQ(rows[i].second, i + 0.25);
  }
  // History this old is kept only with a retention rule; the import's data
  // was written anyway and is readable until a compaction drops it.
}

TEST_F(ImporterTest, BadLineIsReportedWithPathAndLine) {
  std::string path = Write("bad.csv",
                           "# exported\n"
                           "timestamp_ms,metric,value\n"
                           "1704067200000,m,1\n"
                           "1704067201000,m,oops\n"
                           "1704067202000,m,3\n");
  auto r = ImportFile(db_.get(), path, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(path + ":4: value \"oops\" is not a number"));
  EXPECT_THAT(r.status().message(),
              HasSubstr("the 1 samples of the lines before it are loaded: fix line 4 and import "
                        "the file again with --from-line 4 to load the rest"));
}

TEST_F(ImporterTest, AfterABadLineIsFixedTheRestLoadsFromItsLineEachSampleOnce) {
  // Lines cut across blocks, the bad one deep in the file, read by threads.
  std::string text = "timestamp_ms,metric,value\n";
  constexpr int kRows = 2000, kBad = 1234;  // kBad: the row's index, on line kBad + 2
  for (int i = 0; i < kRows; ++i) {
    text += absl::StrFormat("%d,m,%s\n", 1704067200000LL + i * 1000,
                            i == kBad ? "oops" : std::to_string(i));
  }
  ImportOptions o;
  o.keep_ms = store::kForever;
  o.parse_threads = 3;
  o.block_bytes = 700;
  const std::string path = Write("big.csv", text);
  auto r = ImportFile(db_.get(), path, o);
  ASSERT_FALSE(r.ok());
  const std::string line = std::to_string(kBad + 2);
  EXPECT_THAT(r.status().message(), HasSubstr(path + ":" + line + ": value \"oops\""));
  EXPECT_THAT(r.status().message(), HasSubstr("--from-line " + line + " to load the rest"));
  EXPECT_EQ(Rows(*model::MakeSeriesKey("trainwatch/Imported", "m", {})).size(), size_t{kBad});

  const size_t at = text.find("oops");
  text.replace(at, 4, std::to_string(kBad));
  Write("big.csv", text);
  o.from_line = kBad + 2;
  r = ImportFile(db_.get(), path, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->samples, size_t{kRows - kBad});
  auto rows = Rows(*model::MakeSeriesKey("trainwatch/Imported", "m", {}));
  ASSERT_EQ(rows.size(), size_t{kRows});
  for (int i = 0; i < kRows; ++i) {
    EXPECT_EQ(rows[i].first, int64_t{1704067200000} + i * 1000) << i;
    EXPECT_EQ(rows[i].second, double(i)) << i;
  }

  // A line past the end is an error that says how long the file is.
  o.from_line = kRows + 3;
  r = ImportFile(db_.get(), path, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr(absl::StrFormat("line %d is past the end of the file, which has %d lines",
                                        kRows + 3, kRows + 1)));
  o.from_line = kRows + 1;  // the last line
  r = ImportFile(db_.get(), Write("last.csv", text.substr(0, text.size() - 1)), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->samples, 1u) << "the last line, without its newline";
}

TEST_F(ImporterTest, KeepAddsRetentionRulesForImportedNamespaces) {
  ImportOptions o;
  o.keep_ms = store::kForever;
  o.default_namespace = "history/x";
  auto r = ImportFile(db_.get(),
                      Write("h.jsonl", "{\"metric\":\"m\",\"timestamp_ms\":1000,\"value\":1}\n"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(db_->retention()->For("history/x").Get(store::Tier::kRaw), store::kForever);
  ASSERT_TRUE(db_->CompactAll().ok());
  EXPECT_EQ(Rows(*model::MakeSeriesKey("history/x", "m", {})).size(), 1u);
  std::ifstream conf(dir_.Sub("data") + "/retention.conf");
  std::string text((std::istreambuf_iterator<char>(conf)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("history/x raw=forever"));
}

TEST_F(ImporterTest, AFileOfAHeaderOnlyOrNothingImportsNothing) {
  // Each used to hang: the reader numbered an empty block it never queued.
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"header.csv", "timestamp,metric,value\n"},
           {"header-no-newline.csv", "timestamp,metric,value"},
           {"empty.jsonl", ""},
           {"empty.csv", ""},
           {"no-extension", "\n# exported by hand\n"},
           {"comments.jsonl", "\n\n"}}) {
    auto r = ImportFile(db_.get(), Write(name, text), {});
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    EXPECT_EQ(r->samples, 0u) << name;
  }
}

TEST_F(ImporterTest, TimesOutsideTheYears1970To9999AreRefusedWithTheirLine) {
  struct Case {
    std::string name, text, want;
  };
  for (const Case& c : std::vector<Case>{
           // epoch milliseconds in a seconds column: the year 55970
           {"ms-as-s.csv", "timestamp,metric,value\n1704067200000,m,1\n",
            ":2: timestamp 1704067200000 s is not between 1970-01-01 and 9999-12-31"},
           {"huge.csv", "timestamp,metric,value\n1e300,m,1\n", ":2: timestamp 1e+300 s"},
           {"before.csv", "timestamp_ms,metric,value\n-5,m,1\n", ":2: timestamp_ms -5 ms"},
           {"huge.jsonl", "{\"metric\":\"m\",\"timestamp\":1e300,\"value\":1}\n",
            ":1: \"timestamp\" 1e+300 s"},
           {"low.vmimport",
            "{\"metric\":{\"__name__\":\"m\"},\"values\":[1],\"timestamps\":[-9223372036854775807]}\n",
            ":1: a time in \"timestamps\" -9223372036854775807 ms"}}) {
    auto r = ImportFile(db_.get(), Write(c.name, c.text), {});
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want)) << c.name;
    EXPECT_THAT(r.status().message(), HasSubstr("epoch milliseconds in \"timestamp_ms\""));
  }
}

TEST_F(ImporterTest, CsvCellsAreTrimmedAndAByteOrderMarkIsNoData) {
  auto r = ImportFile(db_.get(),
                      Write("spaced.csv",
                            "\xEF\xBB\xBFHost, timestamp, metric, value\n"
                            " h1, 2024-01-01T00:00:00Z, loss, 0.5\n"
                            "h1,2024-01-01T00:00:01Z,loss,0.25\n"
                            "\"h2,b\" , 2024-01-01T00:00:00Z, \" padded \", 1\n"),
                      {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->series, 2u);
  EXPECT_EQ(Rows(*model::MakeSeriesKey("trainwatch/Imported", "loss", {{"Host", "h1"}})),
            (std::vector<std::pair<int64_t, double>>{{1704067200000, 0.5}, {1704067201000, 0.25}}));
  // Quoted: the comma and the spaces inside are the cell's.
  EXPECT_EQ(Rows(*model::MakeSeriesKey("trainwatch/Imported", " padded ", {{"Host", "h2,b"}})).size(),
            1u);
  auto jsonl = ImportFile(
      db_.get(), Write("bom.jsonl", "\xEF\xBB\xBF{\"metric\":\"m\",\"timestamp_ms\":1000,\"value\":1}\n"),
      {});
  ASSERT_TRUE(jsonl.ok()) << jsonl.status();
  EXPECT_EQ(jsonl->samples, 1u);
}

TEST_F(ImporterTest, AVictoriaMetricsExportOfAnyNameIsVmImport) {
  // VictoriaMetrics writes "values" before "timestamps", and a line of many
  // samples runs past what format detection reads.
  std::string line = "{\"metric\":{\"__name__\":\"m\"},\"values\":[";
  std::string times = "],\"timestamps\":[";
  for (int i = 0; i < 20000; ++i) {
    line += absl::StrFormat("%s%d", i ? "," : "", i);
    times += absl::StrFormat("%s%d", i ? "," : "", 1704067200000LL + i * 1000);
  }
  line += times + "]}\n";
  ASSERT_GT(line.size(), 64u << 10);
  auto r = ImportFile(db_.get(), Write("export.json", line), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->format, ImportFormat::kVmImport);
  EXPECT_EQ(r->samples, 20000u);
}

TEST_F(ImporterTest, SamplesOlderThanTheirRawRetentionAreNamedUnlessKept) {
  const std::string text = "{\"metric\":\"m\",\"timestamp_ms\":1704067200000,\"value\":1}\n";
  auto r = ImportFile(db_.get(), Write("old.jsonl", text), {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->beyond_retention.size(), 1u);
  EXPECT_EQ(r->beyond_retention[0].ns, "trainwatch/Imported");
  EXPECT_EQ(r->beyond_retention[0].oldest_ms, 1704067200000);
  EXPECT_EQ(r->beyond_retention[0].raw_keep_ms, 3 * 3'600'000);
  ImportOptions kept;
  kept.keep_ms = store::kForever;
  auto k = ImportFile(db_.get(), Write("kept.jsonl", text), kept);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(k->beyond_retention.empty());
}

TEST_F(ImporterTest, ALineLongerThanTheLimitIsRefusedWithItsNumber) {
  ImportOptions o;
  o.block_bytes = 1000;
  o.max_line_bytes = 5000;
  std::string array = "[";  // one JSON document, not a line per sample
  for (int i = 0; i < 400; ++i) {
    array += absl::StrFormat("%s{\"metric\":\"m\",\"timestamp_ms\":%d,\"value\":1}", i ? "," : "",
                             1000 + i);
  }
  auto r = ImportFile(db_.get(),
                      Write("doc.jsonl", "{\"metric\":\"m\",\"timestamp_ms\":1,\"value\":1}\n" +
                                             array + "]\n"),
                      o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("doc.jsonl:2: a line longer than 5000 bytes"));
  // Lines of many blocks each, under the limit, load whole.
  o.max_line_bytes = size_t{1} << 20;
  std::string line = "{\"metric\":{\"__name__\":\"long\"},\"values\":[";
  std::string times = "],\"timestamps\":[";
  for (int i = 0; i < 3000; ++i) {
    line += absl::StrFormat("%s%d", i ? "," : "", i);
    times += absl::StrFormat("%s%d", i ? "," : "", 1704067200000LL + i);
  }
  auto ok = ImportFile(db_.get(), Write("long.vmimport", line + times + "]}\n" + line + times + "]}\n"), o);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->samples, 6000u);
}

TEST_F(ImporterTest, MissingFileIsNotFound) {
  auto r = ImportFile(db_.get(), dir_.Sub("nope.csv"), {});
  EXPECT_TRUE(absl::IsNotFound(r.status()));
}

// The benchmark generator's tiny data set, in all three formats it writes,
// loads completely and identically (skipped without the shared folder).
TEST_F(ImporterTest, GeneratorFormatsLoadTheSameSamples) {
  const std::string gen = std::string(TW_SHARED_DIR) + "/bench/gen_metrics.py";
  if (!std::filesystem::exists(gen)) GTEST_SKIP() << "no " << gen;
  for (const char* fmt : {"vmimport", "jsonl"}) {
    std::string out = dir_.Sub(std::string("tiny.") + fmt);
    std::string cmd = absl::StrFormat("/usr/bin/python3 %s --scale tiny --duration 120 --format %s "
                                      "--out %s 2>/dev/null",
                                      gen, fmt, out);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    store::testing::TempDir folder;
    store::DbOptions o;
    o.data_dir = folder.Sub("data");
    o.background_thread = false;
    auto db = store::Db::Open(o);
    ASSERT_TRUE(db.ok());
    ImportOptions io;
    io.keep_ms = store::kForever;
    auto r = ImportFile(db->get(), out, io);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->samples, 20u * 120) << fmt;
    EXPECT_EQ(r->series, 20u) << fmt;
  }
}

}  // namespace
}  // namespace trainwatch::ingest
