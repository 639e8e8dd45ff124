// Fuzz target: every decoder of stored records must reject damaged bytes
// cleanly (a Status or false), never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/head.h"
#include "store/job_codec.h"
#include "store/log_store.h"
#include "store/raw_chunk.h"
#include "store/rollup.h"
#include "store/series_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainwatch::store;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  {
    std::vector<LaneRows> lanes;
    (void)DecodeHeadRecord(bytes, &lanes);
    size_t rows = 0;
    (void)DecodeHeadLogRecord(bytes, [&](uint64_t, std::vector<LaneRows>&& entry,
                                         std::optional<LastValue>) {
      for (const LaneRows& l : entry) rows += l.rows.size();
    });
  }
  {
    absl::StatusOr<RawChunkReader> r = RawChunkReader::Open(bytes);
    if (r.ok()) {
      Row row;
      size_t n = 0;
      while (r->Next(&row) && n < (1 << 22)) ++n;
    }
  }
  {
    std::vector<RollupBucket> buckets;
    (void)DecodeRollupRecord(bytes, true, &buckets);
    buckets.clear();
    (void)DecodeRollupRecord(bytes, false, &buckets, kMaxColumn);
  }
  {
    trainwatch::model::SeriesKey key;
    SeriesId id;
    (void)indexkeys::DecodeListing(bytes, &key, &id);
    (void)indexkeys::DecodeSeriesKey(bytes, &key);
    (void)indexkeys::MetricPart(bytes.empty() ? std::string_view("n") : bytes);
    LastValue last;
    (void)indexkeys::DecodeLast(bytes, &last);
  }
  {
    LogStreamInfo info;
    const size_t half = size / 2;
    (void)logkeys::DecodeStream(bytes.substr(0, half), bytes.substr(half), &info);
    StoredLogEvent event;
    (void)logkeys::DecodeEvent(bytes.substr(0, half), bytes.substr(half), &event);
  }
  (void)DecodeJob(bytes);
  return 0;
}
