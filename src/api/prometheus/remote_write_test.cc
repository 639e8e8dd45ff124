#include "api/prometheus/remote_write.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "api/snappy_body.h"
#include "api/testing/remote_write.h"
#include "gtest/gtest.h"

namespace trainwatch::api::prometheus {
namespace {

using testing::TimeSeries;

// The protobuf body of a WriteRequest (what Decode takes, after snappy).
std::string Body(const std::vector<std::string>& series) {
  std::string body;
  for (const std::string& ts : series) testing::PutField(&body, 1, ts);
  return body;
}

// Each series of the decoder's batch: "metric{dims} values", checking that
// its canonical key is its key's.
std::vector<std::string> Described(const WriteDecoder& d) {
  std::vector<std::string> out;
  const model::SampleBatch& b = d.batch();
  EXPECT_EQ(b.canonical_keys.size(), b.series.size());
  for (size_t i = 0; i < b.series.size(); ++i) {
    EXPECT_TRUE(b.series[i].key.HasCanonical(b.canonical_keys[i])) << b.series[i].key.ToString();
    std::string s = b.series[i].key.ToString();
    for (const model::Sample& x : b.series[i].samples) s += " " + std::to_string(x.value);
    out.push_back(s);
  }
  return out;
}

TEST(WriteDecoder, SlotsAndCachedKeysNeverGiveASeriesAnotherOnesKey) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto a = [](double v) { return TimeSeries({{"__name__", "a"}, {"job", "x"}}, {{v, 1000}}); };
  auto b = [](double v) { return TimeSeries({{"__name__", "b"}, {"job", "x"}}, {{v, 1000}}); };
  auto c = [](double v) { return TimeSeries({{"__name__", "c"}}, {{v, 1000}}); };
  WriteDecoder d;
  ASSERT_TRUE(d.Decode(Body({a(1), b(2), c(3)})).ok());
  const std::vector<std::string> first = Described(d);
  ASSERT_EQ(first.size(), 3u);
  // The same series in another order: each keeps its own key.
  ASSERT_TRUE(d.Decode(Body({b(2), a(1), c(3)})).ok());
  EXPECT_EQ(Described(d), (std::vector<std::string>{first[1], first[0], first[2]}));
  // A series of no finite value takes no slot; the next one is not given its key.
  ASSERT_TRUE(d.Decode(Body({a(nan), c(3), b(2)})).ok());
  EXPECT_EQ(Described(d), (std::vector<std::string>{first[2], first[1]}));
  // A refused series (no __name__) between known ones.
  ASSERT_TRUE(d.Decode(Body({a(1), TimeSeries({{"job", "x"}}, {{5, 1000}}), b(2)})).ok());
  EXPECT_EQ(Described(d), (std::vector<std::string>{first[0], first[1]}));
  EXPECT_EQ(d.refused(), 1u);
  EXPECT_EQ(d.first_refusal(), "a series without __name__");
  // The same name with another label value is another series.
  ASSERT_TRUE(d.Decode(Body({TimeSeries({{"__name__", "a"}, {"job", "y"}}, {{1, 1000}})})).ok());
  EXPECT_EQ(d.refused(), 0u);
  ASSERT_EQ(Described(d).size(), 1u);
  EXPECT_NE(Described(d)[0], first[0]);
  EXPECT_EQ(Described(d)[0], "Prometheus/a{job=\"y\"} 1.000000");
  // A malformed body leaves no series behind.
  EXPECT_FALSE(d.Decode(std::string("\x0a\x05" "ab", 4)).ok());
  EXPECT_TRUE(d.batch().series.empty());
  d.Trim();
  ASSERT_TRUE(d.Decode(Body({c(3), a(1)})).ok());
  EXPECT_EQ(Described(d), (std::vector<std::string>{first[2], first[0]}));
}

TEST(WriteDecoder, AMalformedLabelIsRefusedWhereverItIs) {
  WriteDecoder d;
  ASSERT_TRUE(d.Decode(Body({TimeSeries({{"__name__", "a"}}, {{1, 1000}})})).ok());
  // The same series, its label's value field claiming more bytes than it has.
  std::string label;
  testing::PutField(&label, 1, "__name__");
  label += std::string("\x12\x09" "a", 3);
  std::string series;
  testing::PutField(&series, 1, label);
  absl::Status s = d.Decode(Body({series}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "the body is not a remote-write WriteRequest: a field's length runs past the end at "
            "byte 15");
  EXPECT_TRUE(d.batch().series.empty());
}

TEST(WriteDecoder, NamesSeriesByTheNamingRule) {
  WriteDecoder d;
  ASSERT_TRUE(d.Decode(Body({TimeSeries({{"__name__", "gpu_util"}, {"namespace", "Hosts"},
                                         {"unit", "Percent"}, {"host", "h1"}},
                                        {{50, 1000}, {60, 2000}})}))
                  .ok());
  ASSERT_EQ(d.batch().series.size(), 1u);
  const model::SeriesKey& key = d.batch().series[0].key;
  EXPECT_EQ(key.ns, "Hosts");
  EXPECT_EQ(key.metric, "gpu_util");
  EXPECT_EQ(key.unit, "Percent");
  ASSERT_EQ(key.dimensions.size(), 1u);
  EXPECT_EQ(key.dimensions[0].name, "host");
  EXPECT_EQ(d.batch().series[0].samples.size(), 2u);
}

}  // namespace
}  // namespace trainwatch::api::prometheus
