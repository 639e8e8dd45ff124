// Head records: what a writer of any version left behind must read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <tuple>

#include "store/head.h"

namespace trainwatch::store {
namespace {

std::vector<LaneRows> Lanes() {
  LaneRows plain{MakeLane(SampleKind::kPlain, false), {}};
  plain.rows.push_back({1000, {0.5, 0, 0, 0}});
  plain.rows.push_back({900, {-1e300, 0, 0, 0}});  // late rows keep their order
  LaneRows sets{MakeLane(SampleKind::kStatSet, true), {}};
  sets.rows.push_back({60'000, {3, 6, 1, 3}});
  return {plain, sets};
}

void ExpectSameRows(const std::vector<LaneRows>& a, const std::vector<LaneRows>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].lane, b[i].lane);
    ASSERT_EQ(a[i].rows.size(), b[i].rows.size());
    for (size_t k = 0; k < a[i].rows.size(); ++k) {
      EXPECT_EQ(a[i].rows[k].t_ms, b[i].rows[k].t_ms);
      for (int c = 0; c < 4; ++c) EXPECT_EQ(a[i].rows[k].c[c], b[i].rows[k].c[c]);
    }
  }
}

TEST(HeadRecordTest, RowsAndTheLastValueRoundTrip) {
  const LastValue last{-5, 2.25};  // negative times too (zigzag)
  std::vector<LaneRows> rows;
  std::optional<LastValue> got;
  ASSERT_TRUE(DecodeHeadRecord(EncodeHeadRecord(Lanes(), &last), &rows, &got).ok());
  ExpectSameRows(rows, Lanes());
  EXPECT_EQ(got, last);

  // A record of only a last value (no open rows) is valid too.
  rows.clear();
  got.reset();
  ASSERT_TRUE(DecodeHeadRecord(EncodeHeadRecord({}, &last), &rows, &got).ok());
  EXPECT_TRUE(rows.empty());
  EXPECT_EQ(got, last);
}

TEST(HeadRecordTest, RecordsWithoutALastValueStillRead) {
  // What writers before the last value was carried wrote: rows only.
  std::vector<LaneRows> rows;
  std::optional<LastValue> got;
  ASSERT_TRUE(DecodeHeadRecord(EncodeHeadRecord(Lanes(), nullptr), &rows, &got).ok());
  ExpectSameRows(rows, Lanes());
  EXPECT_FALSE(got.has_value());
}

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

// Rows of one lane with the given values at t = 1000, 2000, ...; decoded
// back and compared bit for bit. Returns the record's size.
size_t RoundTripBitForBit(uint8_t lane, const std::vector<std::array<double, 4>>& values) {
  LaneRows in{lane, {}};
  for (size_t i = 0; i < values.size(); ++i) {
    Row r{static_cast<int64_t>(1000 * (i + 1)), {}};
    for (int c = 0; c < 4; ++c) r.c[c] = values[i][c];
    in.rows.push_back(r);
  }
  const std::string record = EncodeHeadRecord({in}, nullptr);
  std::vector<LaneRows> out;
  const absl::Status s = DecodeHeadRecord(record, &out);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok() || out.size() != 1) return record.size();
  EXPECT_EQ(out[0].lane, lane);
  EXPECT_EQ(out[0].rows.size(), in.rows.size());
  for (size_t i = 0; i < std::min(in.rows.size(), out[0].rows.size()); ++i) {
    EXPECT_EQ(out[0].rows[i].t_ms, in.rows[i].t_ms);
    for (int c = 0; c < LaneColumns(lane); ++c) {
      EXPECT_EQ(Bits(out[0].rows[i].c[c]), Bits(in.rows[i].c[c]))
          << "row " << i << " column " << c << ": " << in.rows[i].c[c];
    }
  }
  return record.size();
}

// Values that are decimals (counters, percentages, accuracies) are stored as
// small integers: a couple of bytes a row instead of nine, and every value
// comes back with its exact bits; anything else is stored as it is.
TEST(HeadRecordTest, DecimalValuesTakeAFewBytesAndEveryValueReadsBackBitForBit) {
  const uint8_t plain = MakeLane(SampleKind::kPlain, false);
  std::vector<std::array<double, 4>> percent;
  for (int i = 0; i < 100; ++i) percent.push_back({37.25 + 0.01 * (i % 7), 0, 0, 0});
  const size_t decimal_bytes = RoundTripBitForBit(plain, percent);
  EXPECT_LT(decimal_bytes, 100u * 4);  // their 8-byte doubles alone would be 800
  std::vector<std::array<double, 4>> counter;
  for (int i = 0; i < 100; ++i) counter.push_back({1e6 + 64.0 * i, 0, 0, 0});
  EXPECT_LT(RoundTripBitForBit(plain, counter), 100u * 5);
  // Nine decimals are the most a section tries; one value of more (or none
  // at all) keeps the whole section's values as they are.
  RoundTripBitForBit(plain, {{1e-9, 0, 0, 0}, {2.5, 0, 0, 0}});
  for (double odd : {0.1 + 0.2, std::nan(""), -0.0, 1e-10, HUGE_VAL, -HUGE_VAL, 1e300,
                     4503599627370497.0 /* 2^52 + 1 */, -4503599627370495.5, 5e-324}) {
    RoundTripBitForBit(plain, {{odd, 0, 0, 0}});
    RoundTripBitForBit(plain, {{2.5, 0, 0, 0}, {odd, 0, 0, 0}, {3, 0, 0, 0}});
  }
  // Every column of a statistic set, each at its own scale.
  const uint8_t sets = MakeLane(SampleKind::kStatSet, true);
  EXPECT_LT(RoundTripBitForBit(sets, {{60, 3012.5, 1.25, 99}, {60, 2999.75, 0.5, 98}}),
            2u * 4 * 9);
  RoundTripBitForBit(sets, {{60, 3012.5, 0.1 + 0.2, 99}, {60, -0.0, 0.5, 98}});
}

TEST(HeadRecordTest, RecordsOfDataFormatOneStillRead) {
  // Bytes as format 1 wrote them: lane 0, one row, zigzag varint t = 1000,
  // the value's 8 bytes; then the last value.
  std::string record("\x00\x01\xd0\x0f", 4);
  const double v = 37.25;
  record.append(reinterpret_cast<const char*>(&v), 8);
  std::vector<LaneRows> rows;
  ASSERT_TRUE(DecodeHeadRecord(record, &rows).ok());
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_EQ(rows[0].rows.size(), 1u);
  EXPECT_EQ(rows[0].rows[0].t_ms, 1000);
  EXPECT_EQ(rows[0].rows[0].c[0], 37.25);

  // A head log record of format 1: no base, entries framed the same.
  std::string log_record("\x07", 1);
  log_record.push_back(static_cast<char>(record.size()));
  log_record += record;
  std::vector<uint64_t> ids;
  ASSERT_TRUE(DecodeHeadLogRecord(log_record, [&](uint64_t id, std::vector<LaneRows>&& lanes,
                                                  std::optional<LastValue>) {
                ids.push_back(id);
                ASSERT_EQ(lanes.size(), 1u);
                ASSERT_EQ(lanes[0].rows.size(), 1u);
                EXPECT_EQ(lanes[0].rows[0].t_ms, 1000);
              }).ok());
  EXPECT_EQ(ids, (std::vector<uint64_t>{7}));
}

TEST(HeadRecordTest, DamagedDecimalSectionsAreDataLoss) {
  LaneRows in{MakeLane(SampleKind::kPlain, false), {{1000, {2.5, 0, 0, 0}}, {2000, {3, 0, 0, 0}}}};
  const std::string good = EncodeHeadRecord({in}, nullptr);
  ASSERT_EQ(static_cast<uint8_t>(good[0]) & 0x40, 0x40) << "not a decimal section";
  std::string big_scale = good;
  big_scale[2] = 10;  // beyond the nine decimals a section may have
  std::vector<LaneRows> rows;
  for (const std::string& bad : {good.substr(0, good.size() - 1), good.substr(0, 3), big_scale}) {
    rows.clear();
    absl::Status s = DecodeHeadRecord(bad, &rows);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
}

// A checkpoint writes each series' rows since the last one, read from its
// open chunks: every row exactly once, in-order and late ones alike, and a
// head cleared by a seal starts over.
TEST(SeriesHeadTest, RowsSinceCheckpointAreTakenOnce) {
  const HeadOptions options;
  const uint8_t plain = MakeLane(SampleKind::kPlain, false);
  auto row = [](int64_t t, double v) { return Row{t, {v, 0, 0, 0}}; };
  auto take = [plain](SeriesHead& head) {
    std::string record;
    head.TakeRowsSinceCheckpoint(&record);
    std::vector<LaneRows> lanes;
    EXPECT_TRUE(DecodeHeadRecord(record, &lanes).ok());
    std::vector<std::pair<int64_t, double>> rows;
    for (const LaneRows& l : lanes) {
      EXPECT_EQ(l.lane, plain);
      for (const Row& r : l.rows) rows.emplace_back(r.t_ms, r.c[0]);
    }
    return rows;
  };
  using Rows = std::vector<std::pair<int64_t, double>>;
  SeriesHead head;
  ASSERT_TRUE(head.TryAppend(plain, row(1000, 1), options));
  ASSERT_TRUE(head.TryAppend(plain, row(2000, 2), options));
  EXPECT_EQ(take(head), (Rows{{1000, 1}, {2000, 2}}));
  EXPECT_EQ(take(head), Rows{});  // nothing new
  ASSERT_TRUE(head.TryAppend(plain, row(3000, 3), options));
  ASSERT_TRUE(head.TryAppend(plain, row(1500, 1.5), options));  // late
  ASSERT_TRUE(head.TryAppend(plain, row(1600, 1.6), options));  // late
  EXPECT_EQ(take(head), (Rows{{3000, 3}, {1500, 1.5}, {1600, 1.6}}));  // main, then late
  ASSERT_TRUE(head.TryAppend(plain, row(1700, 1.7), options));
  EXPECT_EQ(take(head), (Rows{{1700, 1.7}}));
  // A second lane takes the first out of the head's inline room: the
  // counts go with it.
  const uint8_t standard = MakeLane(SampleKind::kPlain, true);
  ASSERT_TRUE(head.TryAppend(standard, row(60'000, 6), options));
  ASSERT_TRUE(head.TryAppend(plain, row(4000, 4), options));
  std::string record;
  head.TakeRowsSinceCheckpoint(&record);
  std::vector<LaneRows> lanes;
  ASSERT_TRUE(DecodeHeadRecord(record, &lanes).ok());
  ASSERT_EQ(lanes.size(), 2u);
  EXPECT_EQ(lanes[0].lane, plain);
  ASSERT_EQ(lanes[0].rows.size(), 1u);
  EXPECT_EQ(lanes[0].rows[0].t_ms, 4000);
  EXPECT_EQ(lanes[1].lane, standard);
  ASSERT_EQ(lanes[1].rows.size(), 1u);
  EXPECT_EQ(lanes[1].rows[0].t_ms, 60'000);
  EXPECT_EQ(take(head), Rows{});
  // A head moved away (a seal detaches it) leaves a fresh one behind.
  SeriesHead detached = std::move(head);
  head = SeriesHead();
  ASSERT_TRUE(head.TryAppend(plain, row(5000, 5), options));
  EXPECT_EQ(take(head), (Rows{{5000, 5}}));
  head.Clear();
  ASSERT_TRUE(head.TryAppend(plain, row(9000, 9), options));
  EXPECT_EQ(take(head), (Rows{{9000, 9}}));
}

// Most log entries' last value is their last row: one byte says so instead
// of repeating it, for every lane kind.
TEST(HeadLogRecordTest, ALastValueThatIsTheLastRowTakesOneByte) {
  const LastValue is_last_row{60'000, 2};  // Lanes()' last row: Sum 6 / SampleCount 3
  const LastValue other{60'000, 2.5};
  std::string short_entry, long_entry;
  AppendHeadLogEntry(7, Lanes(), &is_last_row, &short_entry);
  AppendHeadLogEntry(7, Lanes(), &other, &long_entry);
  EXPECT_EQ(long_entry.size() - short_entry.size(), EncodeHeadRecord({}, &other).size() - 1);
  std::vector<std::optional<LastValue>> lasts;
  for (const std::string& entry : {short_entry, long_entry}) {
    ASSERT_TRUE(DecodeHeadLogRecord(entry, [&](uint64_t, std::vector<LaneRows>&& lanes,
                                               std::optional<LastValue> l) {
                  ExpectSameRows(lanes, Lanes());
                  lasts.push_back(l);
                }).ok());
  }
  EXPECT_EQ(lasts, (std::vector<std::optional<LastValue>>{is_last_row, other}));
  // A plain and a weighted value's last row (the value, not the count), and
  // a row whose value is -0.0 where the last is 0.0 (not the same value:
  // written out).
  const LaneRows plain{MakeLane(SampleKind::kPlain, true), {{5, {-0.0, 0, 0, 0}}}};
  const LaneRows weighted{MakeLane(SampleKind::kWeighted, false), {{5, {-0.0, 4, 0, 0}}}};
  for (const LaneRows& lane : {plain, weighted}) {
    for (const LastValue& last : {LastValue{5, -0.0}, LastValue{5, 0.0}}) {
      std::string entry;
      AppendHeadLogEntry(1, {lane}, &last, &entry);
      const bool one_byte = std::signbit(last.value);
      EXPECT_EQ(entry.back() == '\xfe', one_byte) << static_cast<int>(lane.lane);
      std::optional<LastValue> got;
      ASSERT_TRUE(DecodeHeadLogRecord(entry, [&](uint64_t, std::vector<LaneRows>&&,
                                                 std::optional<LastValue> l) { got = l; }).ok());
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(got->t_ms, 5);
      EXPECT_EQ(got->value, 0.0);
      EXPECT_EQ(std::signbit(got->value), std::signbit(last.value));
    }
  }
  // The byte needs a row before it, and ends the record.
  std::vector<LaneRows> rows;
  EXPECT_EQ(DecodeHeadRecord(std::string(1, '\xfe'), &rows).code(), absl::StatusCode::kDataLoss);
  std::string record = EncodeHeadRecord(Lanes(), nullptr) + "\xfe";
  EXPECT_TRUE(DecodeHeadRecord(record, &rows).ok());
  EXPECT_EQ(DecodeHeadRecord(record + "\x01", &rows).code(), absl::StatusCode::kDataLoss);
}

TEST(HeadRecordTest, DamagedRecordsAreDataLoss) {
  const LastValue last{1000, 1};
  const std::string good = EncodeHeadRecord(Lanes(), &last);
  std::vector<LaneRows> rows;
  // Cut inside the last section, or trailing bytes after it.
  for (const std::string& bad : {good.substr(0, good.size() - 3), good + "x",
                                 std::string(1, '\x07')}) {
    absl::Status s = DecodeHeadRecord(bad, &rows);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
}

TEST(HeadLogRecordTest, EntriesOfSeveralSeriesRoundTripInOrder) {
  const LastValue last{1000, 0.5};
  std::string record;
  AppendHeadLogEntry(7, Lanes(), &last, &record);
  AppendHeadLogEntry(3, Lanes(), nullptr, &record);
  AppendHeadLogEntry(1ull << 40, {}, &last, &record);  // only a last value
  std::vector<uint64_t> ids;
  std::vector<std::optional<LastValue>> lasts;
  ASSERT_TRUE(DecodeHeadLogRecord(record, [&](uint64_t id, std::vector<LaneRows>&& lanes,
                                              std::optional<LastValue> l) {
                ids.push_back(id);
                lasts.push_back(l);
                if (id != 1ull << 40) ExpectSameRows(lanes, Lanes());
              }).ok());
  EXPECT_EQ(ids, (std::vector<uint64_t>{7, 3, 1ull << 40}));
  EXPECT_EQ(lasts, (std::vector<std::optional<LastValue>>{last, std::nullopt, last}));
}

TEST(HeadLogRecordTest, DamagedRecordsAreDataLoss) {
  const LastValue last{1000, 1};
  std::string good;
  AppendHeadLogEntry(7, Lanes(), &last, &good);
  std::string reserved_id;  // the log's own key space is no series
  AppendHeadLogEntry(headkeys::kLogSeries, Lanes(), &last, &reserved_id);
  std::string bad_entry;  // a damaged head record inside a well-framed entry
  bad_entry.push_back(7);
  bad_entry.push_back(1);
  bad_entry.push_back('\x07');
  for (const std::string& bad :
       {good.substr(0, good.size() - 1), good + "\x01", reserved_id, bad_entry}) {
    absl::Status s = DecodeHeadLogRecord(bad, [](uint64_t, std::vector<LaneRows>&&,
                                                 std::optional<LastValue>) {});
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
}

// Readers index the log by its framing and decode only the entries of the
// series they read: each entry's bytes must be exactly one head record, its
// times counted from the record's base (its first row's time), so that the
// rows of a commit, all near one time, do not each spell it out.
TEST(HeadLogRecordTest, EntriesAreFramedWithoutDecodingThem) {
  const LastValue last{1000, 0.5};
  std::string record;
  AppendHeadLogEntry(7, Lanes(), &last, &record);
  AppendHeadLogEntry(3, {}, &last, &record);
  std::vector<std::tuple<uint64_t, std::string, int64_t>> entries;
  ASSERT_TRUE(ForEachHeadLogEntry(record, [&](uint64_t id, std::string_view entry, int64_t base) {
                entries.emplace_back(id, entry, base);
              }).ok());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(std::get<0>(entries[0]), 7u);
  EXPECT_EQ(std::get<2>(entries[0]), 1000);  // Lanes()' first row
  std::vector<LaneRows> rows;
  std::optional<LastValue> got;
  ASSERT_TRUE(DecodeHeadRecord(std::get<1>(entries[0]), &rows, &got, 1000).ok());
  ExpectSameRows(rows, Lanes());
  EXPECT_EQ(got, last);
  EXPECT_EQ(std::get<0>(entries[1]), 3u);
  EXPECT_EQ(std::get<1>(entries[1]), EncodeHeadRecord({}, &last));
  // Framing damage is DataLoss; an entry's own bytes are the decoder's to check.
  for (const std::string& bad : {record.substr(0, record.size() - 1), record + "\x01",
                                 record.substr(0, 1)}) {
    EXPECT_EQ(ForEachHeadLogEntry(bad, [](uint64_t, std::string_view, int64_t) {}).code(),
              absl::StatusCode::kDataLoss);
  }
  // A row at a real time: the entry spells its time in one byte.
  const LaneRows now{MakeLane(SampleKind::kPlain, false), {{1'764'979'200'123, {97.5, 0, 0, 0}}}};
  std::string one;
  AppendHeadLogEntry(7, {now}, nullptr, &one);
  AppendHeadLogEntry(8, {now}, nullptr, &one);
  std::vector<size_t> sizes;
  ASSERT_TRUE(ForEachHeadLogEntry(one, [&](uint64_t, std::string_view entry, int64_t base) {
                sizes.push_back(entry.size());
                std::vector<LaneRows> lanes;
                ASSERT_TRUE(DecodeHeadRecord(entry, &lanes, nullptr, base).ok());
                ExpectSameRows(lanes, {now});
              }).ok());
  EXPECT_EQ(sizes, (std::vector<size_t>{6, 6}));  // lane, n, mode, time, value (2)
  EXPECT_EQ(EncodeHeadRecord({now}, nullptr).size(), sizes[0] + 5);  // the time from 0
}

TEST(HeadLogRecordTest, LogKeysSortAfterEverySeriesAndInsideTheLogRange) {
  const std::string first = headkeys::LogKey(0), later = headkeys::LogKey(1ull << 50);
  EXPECT_LT(headkeys::Key(headkeys::kLogSeries - 1, UINT64_MAX), first);
  EXPECT_LE(headkeys::LogPrefix(), first);
  EXPECT_LT(first, later);
  EXPECT_LT(later, headkeys::LogEnd());
  EXPECT_EQ(headkeys::LogPrefix().size(), 8u);  // can start a range delete
}

// Range deletes that go on from where a series' last one ended start here:
// between the series' records at `seq - 1` and `seq`, so that a delete that
// ends at Key(series, seq) and the next one overlap where no key can be; and
// long enough that no memtable insert hint applies to it.
TEST(HeadKeysTest, ARangeStartSortsBetweenARecordAndTheOneBelow) {
  for (uint64_t seq : {uint64_t{1}, uint64_t{255}, uint64_t{256}, uint64_t{1} << 40}) {
    const std::string start = headkeys::RangeStart(7, seq);
    EXPECT_EQ(start.size(), 17u);
    EXPECT_LT(start, headkeys::Key(7, seq)) << seq;
    EXPECT_GT(start, headkeys::Key(7, seq - 1)) << seq;
    EXPECT_GT(start, headkeys::SeriesPrefix(7)) << seq;
  }
  EXPECT_LT(headkeys::RangeStart(7, UINT64_MAX), headkeys::SeriesEnd(7));
  EXPECT_GT(headkeys::RangeStart(headkeys::kLogSeries, 5), headkeys::LogKey(4));
  EXPECT_LT(headkeys::RangeStart(headkeys::kLogSeries, 5), headkeys::LogKey(5));
}

}  // namespace
}  // namespace trainwatch::store
