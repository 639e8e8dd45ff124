#include "store/head.h"

#include <bit>
#include <cmath>

#include "absl/strings/str_format.h"
#include "codec/decimal.h"
#include "store/coding.h"
#include "store/rollup.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace trainwatch::store {
namespace {

// Not a lane: the record's last section (the series' last value) follows.
constexpr uint8_t kLastValueMarker = 0xff;
static_assert(!IsValidLane(kLastValueMarker));
// Not a lane either, and the record's end: the series' last value is the
// record's last row (head log entries, where it nearly always is: most of an
// entry of a few rows would otherwise be the last value again).
constexpr uint8_t kLastIsLastRowMarker = 0xfe;
static_assert(!IsValidLane(kLastIsLastRowMarker));

// The value a row stands for as a series' last value.
LastValue LastValueOfRow(uint8_t lane, const Row& r) {
  return {r.t_ms, LaneKind(lane) == SampleKind::kStatSet ? r.c[1] / r.c[0] : r.c[0]};
}

// Set in a lane section's first byte (the lane): a section of data format 2
// (docs/format/store.md). Its times are delta-of-delta coded from a base
// (0 in head records, the record's base in head log records), and each
// column says how its values are kept: as decimals (integers d at a scale k,
// value = d / 10^k exactly, as differences from the row before) or as their
// 8 bytes. Counters and values with a few decimals (most of what jobs log),
// at a steady interval, then take two or three bytes a row instead of nine
// or more, which is most of what the head writes to the disk.
constexpr uint8_t kFormat2Section = 0x40;
static_assert(kLaneCount <= kFormat2Section);
// A column's mode byte: a decimal scale 0..kMaxSectionScale, or raw.
constexpr int kMaxSectionScale = 9;
constexpr uint8_t kRawColumn = 0x80;

// `v` is d / 10^k bit for bit (ToDecimalInline takes -0.0 for 0: not here).
bool DecimalAt(double v, int k, int64_t* d) {
  return codec::ToDecimalInline(v, k, d) && !(v == 0 && std::signbit(v));
}

// The smallest scale at which column `col` of every row is decimal, or
// kRawColumn. A value decimal at k is decimal at every larger k (below
// 2^52), so the scale only grows as the rows go by.
template <typename RowAt>
uint8_t ColumnMode(size_t n, int col, RowAt row_at) {
  int k = 0;
  int64_t d;
  for (size_t i = 0; i < n; ++i) {
    const double v = row_at(i).c[col];
    while (!DecimalAt(v, k, &d)) {
      if (++k > kMaxSectionScale) return kRawColumn;
    }
  }
  return static_cast<uint8_t>(k);
}

// a + b and a - b without undefined behaviour on damaged bytes or extreme
// times (they wrap, and decoding wraps back).
int64_t AddWrapping(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t SubWrapping(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

// One lane section of a head record (format 2): n rows, row_at(i) giving
// each; times from `t_base`. Layout: u8 40+lane | varint n | a mode byte per
// column | n rows of (zigzag time difference: from the base, from the row
// before, then of the differences) and, per column, a zigzag varint
// difference of d (decimal) or the 8-byte double (raw).
template <typename RowAt>
void AppendLaneSection(uint8_t lane, size_t n, RowAt row_at, std::string* out,
                       int64_t t_base = 0) {
  if (n == 0) return;
  const int cols = LaneColumns(lane);
  const size_t start = out->size();
  uint8_t mode[4] = {kRawColumn, kRawColumn, kRawColumn, kRawColumn};
  for (int c = 0; c < cols; ++c) mode[c] = ColumnMode(n, c, row_at);
  for (;;) {
    out->push_back(static_cast<char>(lane | kFormat2Section));
    coding::PutVarint64(out, n);
    for (int c = 0; c < cols; ++c) out->push_back(static_cast<char>(mode[c]));
    int64_t prev_t = t_base, prev_delta = 0;
    int64_t prev_d[4] = {0, 0, 0, 0};
    int failed = -1;  // a column that turned out not decimal at its scale
    for (size_t i = 0; i < n && failed < 0; ++i) {
      const Row r = row_at(i);
      const int64_t delta = SubWrapping(r.t_ms, prev_t);
      coding::PutVarintSigned(out, i < 2 ? delta : SubWrapping(delta, prev_delta));
      prev_t = r.t_ms;
      prev_delta = delta;
      for (int c = 0; c < cols; ++c) {
        if (mode[c] == kRawColumn) {
          coding::PutDouble(out, r.c[c]);
          continue;
        }
        int64_t d;
        // Near 2^52 a larger scale can fail where a smaller one held.
        if (!DecimalAt(r.c[c], mode[c], &d)) {
          failed = c;
          break;
        }
        coding::PutVarintSigned(out, d - prev_d[c]);
        prev_d[c] = d;
      }
    }
    if (failed < 0) return;
    mode[failed] = kRawColumn;
    out->resize(start);
  }
}

// A format 1 section: the lane, varint n, n rows of a zigzag varint time
// difference (from 0, then from the row before) and 8-byte doubles.
absl::Status DecodeFormat1Section(std::string_view* value, LaneRows* l) {
  uint64_t n;
  if (!coding::GetVarint64(value, &n) || n > value->size()) {
    return absl::DataLossError("a head record is damaged");
  }
  const int cols = LaneColumns(l->lane);
  l->rows.resize(n);
  int64_t prev = 0;
  for (uint64_t i = 0; i < n; ++i) {
    int64_t delta;
    if (!coding::GetVarintSigned(value, &delta)) return absl::DataLossError("a head record is damaged");
    prev = AddWrapping(prev, delta);
    l->rows[i].t_ms = prev;
    for (int c = 0; c < cols; ++c) {
      if (!coding::GetDouble(value, &l->rows[i].c[c])) {
        return absl::DataLossError("a head record is damaged");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeFormat2Section(std::string_view* value, int64_t t_base, LaneRows* l) {
  uint64_t n;
  const int cols = LaneColumns(l->lane);
  if (!coding::GetVarint64(value, &n) || n > value->size() ||
      value->size() < static_cast<size_t>(cols)) {
    return absl::DataLossError("a head record is damaged");
  }
  uint8_t mode[4] = {kRawColumn, kRawColumn, kRawColumn, kRawColumn};
  for (int c = 0; c < cols; ++c) {
    mode[c] = static_cast<uint8_t>((*value)[c]);
    if (mode[c] > kMaxSectionScale && mode[c] != kRawColumn) {
      return absl::DataLossError("a head record is damaged");
    }
  }
  value->remove_prefix(cols);
  l->rows.resize(n);
  int64_t prev_t = t_base, prev_delta = 0;
  int64_t prev_d[4] = {0, 0, 0, 0};
  for (uint64_t i = 0; i < n; ++i) {
    int64_t v;
    if (!coding::GetVarintSigned(value, &v)) return absl::DataLossError("a head record is damaged");
    const int64_t delta = i < 2 ? v : AddWrapping(prev_delta, v);
    prev_t = AddWrapping(prev_t, delta);
    prev_delta = delta;
    l->rows[i].t_ms = prev_t;
    for (int c = 0; c < cols; ++c) {
      if (mode[c] == kRawColumn) {
        if (!coding::GetDouble(value, &l->rows[i].c[c])) {
          return absl::DataLossError("a head record is damaged");
        }
        continue;
      }
      if (!coding::GetVarintSigned(value, &v)) return absl::DataLossError("a head record is damaged");
      prev_d[c] = AddWrapping(prev_d[c], v);
      l->rows[i].c[c] = codec::FromDecimal(prev_d[c], mode[c]);
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool SeriesHead::Fits(const LaneChunk& c, const Row& row, const HeadOptions& o) {
  if (c.empty()) return true;
  if (row.t_ms < c.last_t_ms()) return false;
  if (c.size() >= o.max_chunk_rows || c.EstimatedBytes() >= o.max_chunk_bytes) return false;
  return row.t_ms - c.first_t_ms() <= std::min(o.max_chunk_span_ms, kMaxChunkSpanMs);
}

bool SeriesHead::TryAppend(uint8_t lane, const Row& row, const HeadOptions& options) {
  LaneState* st = nullptr;
  for (LaneState& l : lanes_) {
    if (l.main.lane() == lane) st = &l;
  }
  if (st == nullptr) st = &lanes_.emplace_back(lane);
  if (st->main.empty() || row.t_ms >= st->main.last_t_ms()) {
    if (!Fits(st->main, row, options)) return false;
    st->main.Append(row);
    return true;
  }
  if (!Fits(st->late, row, options)) return false;
  st->late.Append(row);
  return true;
}

bool SeriesHead::empty() const {
  for (const LaneState& l : lanes_) {
    if (!l.main.empty() || !l.late.empty()) return false;
  }
  return true;
}

size_t SeriesHead::rows() const {
  size_t n = 0;
  for (const LaneState& l : lanes_) n += l.main.size() + l.late.size();
  return n;
}

size_t SeriesHead::EstimatedBytes() const {
  size_t n = 0;
  for (const LaneState& l : lanes_) n += l.main.EstimatedBytes() + l.late.EstimatedBytes();
  return n;
}

size_t SeriesHead::MemoryBytes() const {
  // Lanes past the first are on the heap.
  size_t n = sizeof(*this) + (lanes_.capacity() > 1 ? lanes_.capacity() * sizeof(LaneState) : 0);
  for (const LaneState& l : lanes_) n += l.main.MemoryBytes() + l.late.MemoryBytes();
  return n;
}

void SeriesHead::ForEachChunk(const std::function<void(const LaneChunk&)>& fn) const {
  for (const LaneState& l : lanes_) {
    if (!l.main.empty()) fn(l.main);
    if (!l.late.empty()) fn(l.late);
  }
}

void SeriesHead::TakeRowsSinceCheckpoint(std::string* out) {
  for (LaneState& l : lanes_) {
    for (auto [chunk, taken] : {std::pair{&l.main, &l.main_taken}, std::pair{&l.late, &l.late_taken}}) {
      const size_t from = *taken;
      AppendLaneSection(chunk->lane(), chunk->size() - from,
                        [&, lane_chunk = chunk](size_t i) { return lane_chunk->RowAt(from + i); },
                        out);
      *taken = chunk->size();
    }
  }
}

void SeriesHead::Clear() {
  // Drop the lane states too: an idle series then costs nothing here.
  lanes_.clear();
  opened_ms = 0;
  last_append_ms = 0;
}

SealedRecords EncodeSeal(const TierRetention& retention, const SeriesHead& head) {
  SealedRecords out;
  RollupBuilder rollups(retention);
  head.ForEachChunk([&](const LaneChunk& chunk) {
    std::string record = chunk.EncodeRecord();
    // The head holds the rows unencoded (the codec is lossless, so they are
    // the values the record holds). Aggregating them here rather than as
    // they arrive keeps that work off the write path and the minutes out
    // of the head's memory.
    for (size_t i = 0; i < chunk.size(); ++i) rollups.Add(chunk.lane(), chunk.RowAt(i));
    out.records.push_back({kv::Cf::kRaw, chunk.first_t_ms(), std::move(record)});
  });
  rollups.Finish([&](Tier tier, int64_t window_start, std::string value) {
    out.records.push_back({TierCf(tier), window_start, std::move(value)});
  });
  return out;
}

void PutSealed(uint64_t series_id, SealedRecords sealed, const std::function<uint64_t()>& next_seq,
               kv::WriteBatch* batch) {
  for (SealedRecords::Record& r : sealed.records) {
    const uint64_t seq = next_seq();
    batch->Put(r.cf,
               r.cf == kv::Cf::kRaw ? rawkeys::Key(series_id, r.t_ms, seq)
                                    : rollupkeys::Key(series_id, r.t_ms, seq),
               r.value);
  }
}

void SealChunks(uint64_t series_id, const TierRetention& retention, SeriesHead* head,
                const std::function<uint64_t()>& next_seq, kv::WriteBatch* batch) {
  PutSealed(series_id, EncodeSeal(retention, *head), next_seq, batch);
  head->Clear();
}

namespace headkeys {

std::string SeriesPrefix(uint64_t series_id) {
  std::string k;
  coding::PutBig64(&k, series_id);
  return k;
}

std::string SeriesEnd(uint64_t series_id) { return SeriesPrefix(series_id + 1); }

std::string Key(uint64_t series_id, uint64_t seq) {
  std::string k;
  coding::PutBig64(&k, series_id);
  coding::PutBig64(&k, seq);
  return k;
}

std::string RangeStart(uint64_t series_id, uint64_t seq) {
  TW_CHECK(seq >= 1);
  std::string k = Key(series_id, seq - 1);
  k.push_back('\0');
  return k;
}

bool DecodeKey(std::string_view key, uint64_t* series_id, uint64_t* seq) {
  if (key.size() != 16) return false;
  *series_id = coding::GetBig64(key.data());
  *seq = coding::GetBig64(key.data() + 8);
  return true;
}

std::string LogKey(uint64_t seq) { return Key(kLogSeries, seq); }

std::string LogPrefix() { return SeriesPrefix(kLogSeries); }

// Sequence numbers stay far below 2^56, so every log key's ninth byte is
// under 0xff.
std::string LogEnd() { return std::string(9, '\xff'); }

}  // namespace headkeys

namespace {

void AppendHeadRecord(const std::vector<LaneRows>& lanes, const LastValue* last,
                      std::string* out, int64_t t_base = 0) {
  for (const LaneRows& l : lanes) {
    AppendLaneSection(l.lane, l.rows.size(), [&](size_t i) { return l.rows[i]; }, out, t_base);
  }
  if (last != nullptr) AppendHeadRecordLast(*last, out);
}

}  // namespace

void AppendHeadRecordLast(const LastValue& last, std::string* out) {
  out->push_back(static_cast<char>(kLastValueMarker));
  *out += indexkeys::EncodeLast(last);
}

std::string EncodeHeadRecord(const std::vector<LaneRows>& lanes, const LastValue* last) {
  std::string v;
  AppendHeadRecord(lanes, last, &v);
  return v;
}

absl::Status DecodeHeadRecord(std::string_view value, std::vector<LaneRows>* lanes,
                              std::optional<LastValue>* last, int64_t t_base) {
  std::optional<LastValue> last_row;  // of this record
  while (!value.empty()) {
    LaneRows l;
    l.lane = static_cast<uint8_t>(value[0]);
    value.remove_prefix(1);
    if (l.lane == kLastIsLastRowMarker) {
      if (!value.empty() || !last_row) return absl::DataLossError("a head record is damaged");
      if (last != nullptr) *last = last_row;
      return absl::OkStatus();
    }
    if (l.lane == kLastValueMarker) {  // the last section ends the record
      LastValue lv;
      if (!coding::GetVarintSigned(&value, &lv.t_ms) || !coding::GetDouble(&value, &lv.value) ||
          !value.empty()) {
        return absl::DataLossError("a head record is damaged");
      }
      if (last != nullptr) *last = lv;
      return absl::OkStatus();
    }
    const bool format2 = (l.lane & kFormat2Section) != 0;
    l.lane &= static_cast<uint8_t>(~kFormat2Section);
    if (!IsValidLane(l.lane)) return absl::DataLossError("a head record is damaged");
    TW_RETURN_IF_ERROR(format2 ? DecodeFormat2Section(&value, t_base, &l)
                               : DecodeFormat1Section(&value, &l));
    const size_t n = l.rows.size();
    if (n > 0) last_row = LastValueOfRow(l.lane, l.rows.back());
    lanes->push_back(std::move(l));
  }
  return absl::OkStatus();
}

namespace {

// A head log record of format 2 starts with this byte and its time base (a
// zigzag varint); its entries' sections count time from the base. (An entry
// starts with its series id, which is never 0.)
constexpr char kLogRecordBase = '\0';

// The record's base, after writing its header when it is empty.
int64_t LogRecordBase(const std::vector<LaneRows>& lanes, std::string* record) {
  if (record->empty()) {
    int64_t base = 0;
    for (const LaneRows& l : lanes) {
      if (!l.rows.empty()) {
        base = l.rows.front().t_ms;
        break;
      }
    }
    record->push_back(kLogRecordBase);
    coding::PutVarintSigned(record, base);
    return base;
  }
  std::string_view header(*record);
  header.remove_prefix(1);
  int64_t base = 0;
  TW_CHECK(coding::GetVarintSigned(&header, &base));
  return base;
}

}  // namespace

void AppendHeadLogEntry(uint64_t series_id, const std::vector<LaneRows>& lanes,
                        const LastValue* last, std::string* record) {
  const int64_t base = LogRecordBase(lanes, record);
  // Encoded straight onto the record, then its id and length put in front
  // of it: no buffer of its own (this runs for every series of every write).
  const size_t start = record->size();
  const LaneRows* last_section = nullptr;
  for (const LaneRows& l : lanes) {
    if (!l.rows.empty()) last_section = &l;
  }
  bool last_is_last_row = false;
  if (last != nullptr && last_section != nullptr) {
    const LastValue row = LastValueOfRow(last_section->lane, last_section->rows.back());
    last_is_last_row = row.t_ms == last->t_ms &&
                       std::bit_cast<uint64_t>(row.value) == std::bit_cast<uint64_t>(last->value);
  }
  if (last_is_last_row) {
    AppendHeadRecord(lanes, nullptr, record, base);
    record->push_back(static_cast<char>(kLastIsLastRowMarker));
  } else {
    AppendHeadRecord(lanes, last, record, base);
  }
  std::string prefix;
  coding::PutVarint64(&prefix, series_id);
  coding::PutVarint64(&prefix, record->size() - start);
  record->insert(start, prefix);
}

absl::Status ForEachHeadLogEntry(
    std::string_view value,
    const std::function<void(uint64_t series_id, std::string_view entry, int64_t t_base)>& fn) {
  int64_t base = 0;  // format 1 records have no header: their times count from 0
  if (!value.empty() && value[0] == kLogRecordBase) {
    value.remove_prefix(1);
    if (!coding::GetVarintSigned(&value, &base)) {
      return absl::DataLossError("a head log record is damaged");
    }
  }
  while (!value.empty()) {
    uint64_t id, size;
    if (!coding::GetVarint64(&value, &id) || !coding::GetVarint64(&value, &size) ||
        size > value.size() || id == headkeys::kLogSeries || id == 0) {
      return absl::DataLossError("a head log record is damaged");
    }
    fn(id, value.substr(0, size), base);
    value.remove_prefix(size);
  }
  return absl::OkStatus();
}

absl::Status DecodeHeadLogRecord(
    std::string_view value,
    const std::function<void(uint64_t series_id, std::vector<LaneRows>&& lanes,
                             std::optional<LastValue> last)>& fn) {
  absl::Status damaged;
  TW_RETURN_IF_ERROR(
      ForEachHeadLogEntry(value, [&](uint64_t id, std::string_view entry, int64_t t_base) {
        if (!damaged.ok()) return;
        std::vector<LaneRows> lanes;
        std::optional<LastValue> last;
        if (!DecodeHeadRecord(entry, &lanes, &last, t_base).ok()) {
          damaged = absl::DataLossError("a head log record is damaged");
          return;
        }
        fn(id, std::move(lanes), last);
      }));
  return damaged;
}

}  // namespace trainwatch::store
