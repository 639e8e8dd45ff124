#include "store/raw_chunk.h"

#include "absl/strings/str_format.h"
#include "store/coding.h"

namespace trainwatch::store {

LaneChunk::LaneChunk(uint8_t lane) : lane_(lane), cols_(LaneColumns(lane)) {}

size_t LaneChunk::EstimatedBytes() const {
  size_t n = 0;
  for (const auto& c : cols_) n += c.EstimatedBytes();
  return n;
}

size_t LaneChunk::MemoryBytes() const {
  // Columns past the first are on the heap.
  size_t n = cols_.capacity() > 1 ? cols_.capacity() * sizeof(codec::ChunkBuilder) : 0;
  for (const auto& c : cols_) n += c.MemoryBytes();
  return n;
}

void LaneChunk::Append(const Row& row) {
  for (size_t i = 0; i < cols_.size(); ++i) cols_[i].Append(row.t_ms, row.c[i]);
}

Row LaneChunk::RowAt(size_t i) const {
  Row row;
  row.t_ms = cols_[0].t_ms(i);
  for (size_t c = 0; c < cols_.size(); ++c) row.c[c] = cols_[c].value(i);
  return row;
}

std::string LaneChunk::EncodeRecord() const {
  std::string v;
  v.reserve(EstimatedBytes() + 16);
  v.push_back(1);  // version
  v.push_back(static_cast<char>(lane_));
  coding::PutVarint64(&v, size());
  coding::PutVarint64(&v, static_cast<uint64_t>(last_t_ms() - first_t_ms()));
  for (const auto& c : cols_) coding::PutLengthPrefixed(&v, c.Finish());
  return v;
}

void LaneChunk::Clear() {
  for (auto& c : cols_) c.Clear();
}

namespace rawkeys {

std::string SeriesPrefix(uint64_t series_id) {
  std::string k;
  coding::PutBig64(&k, series_id);
  return k;
}

std::string Key(uint64_t series_id, int64_t first_t_ms, uint64_t seq) {
  std::string k;
  k.reserve(24);
  coding::PutBig64(&k, series_id);
  coding::PutOrderedI64(&k, first_t_ms);
  coding::PutBig64(&k, seq);
  return k;
}

bool DecodeKey(std::string_view key, uint64_t* series_id, int64_t* first_t_ms) {
  if (key.size() != 24) return false;
  *series_id = coding::GetBig64(key.data());
  *first_t_ms = coding::GetOrderedI64(key.data() + 8);
  return true;
}

}  // namespace rawkeys

bool DecodeRawHeader(std::string_view value, RawChunkHeader* header) {
  if (value.size() < 2 || value[0] != 1) return false;
  header->lane = static_cast<uint8_t>(value[1]);
  if (!IsValidLane(header->lane)) return false;
  value.remove_prefix(2);
  uint64_t span;
  if (!coding::GetVarint64(&value, &header->rows) || !coding::GetVarint64(&value, &span)) {
    return false;
  }
  if (span > static_cast<uint64_t>(kMaxChunkSpanMs)) return false;
  header->span_ms = static_cast<int64_t>(span);
  return true;
}

absl::StatusOr<RawChunkReader> RawChunkReader::Open(std::string_view value) {
  RawChunkReader r;
  if (!DecodeRawHeader(value, &r.header_)) {
    return absl::DataLossError("a raw chunk record has a damaged header");
  }
  std::string_view in = value.substr(2);
  uint64_t skip;
  coding::GetVarint64(&in, &skip);
  coding::GetVarint64(&in, &skip);
  const int columns = LaneColumns(r.header_.lane);
  for (int i = 0; i < columns; ++i) {
    std::string_view bytes;
    if (!coding::GetLengthPrefixed(&in, &bytes)) {
      return absl::DataLossError(absl::StrFormat("a raw chunk record lacks column %d", i));
    }
    absl::StatusOr<codec::ChunkReader> col = codec::ChunkReader::Open(bytes);
    if (!col.ok()) {
      return absl::DataLossError(
          absl::StrFormat("a raw chunk record's column %d is damaged: %s", i,
                          std::string(col.status().message())));
    }
    if (col->size() != r.header_.rows) {
      return absl::DataLossError(absl::StrFormat(
          "a raw chunk record's column %d holds %d rows, the header says %d", i, col->size(),
          r.header_.rows));
    }
    r.cols_.push_back(std::move(*col));
  }
  return r;
}

int RawChunkReader::value_places() const {
  return cols_.empty() ? -1 : cols_[0].decimal_scale();
}

bool RawChunkReader::Next(Row* row) {
  if (read_ >= header_.rows || !status_.ok()) return false;
  for (size_t i = 0; i < cols_.size(); ++i) {
    int64_t t;
    if (!cols_[i].Next(&t, &row->c[i])) {
      status_ = cols_[i].status().ok()
                    ? absl::DataLossError("a raw chunk record ended early")
                    : absl::Status(cols_[i].status().code(),
                                   absl::StrFormat("raw chunk column %d: %s", i,
                                                   std::string(cols_[i].status().message())));
      return false;
    }
    if (i == 0) {
      row->t_ms = t;
    } else if (t != row->t_ms) {
      status_ = absl::DataLossError("a raw chunk record's columns disagree on timestamps");
      return false;
    }
  }
  ++read_;
  return true;
}

}  // namespace trainwatch::store
