#pragma once
// The series index: every series (namespace, metric, dimensions, unit) gets a
// persistent 64-bit id, and ListMetrics-style questions are answered from
// the index alone, never from samples.
//
// Keys in the index column family (docs/format/store.md):
//   "k" canonical key             -> id              lookup when writing
//   "i" id                        -> series key       id -> key
//   "n" ns metric dims.. \0\0 unit id -> ""          listing order
//   "l" id                        -> last sample      O(1) last value
// The "n" keys sort by namespace, metric name, then the dimension list
// (name, value pairs in name order; a list that is a prefix of another sorts
// first), then unit: ListMetrics' order.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "model/series.h"
#include "store/kv/kv.h"

namespace trainwatch::store {

using SeriesId = uint64_t;

// The newest sample of a series (greatest t_ms; among equal timestamps the
// one written last). For a weighted value, its value; for a statistic set,
// sum / count.
struct LastValue {
  int64_t t_ms = 0;
  double value = 0;
  friend bool operator==(const LastValue&, const LastValue&) = default;
};

namespace indexkeys {
std::string ByCanonical(const model::SeriesKey& key);
std::string ById(SeriesId id);
std::string Last(SeriesId id);
std::string Listing(const model::SeriesKey& key, SeriesId id);
// Prefix of the listing keys of a namespace; with a metric, of that metric;
// with dims too, of exactly those dimensions (any unit).
std::string ListingPrefix(std::string_view ns);
std::string ListingPrefix(std::string_view ns, std::string_view metric);
std::string ListingPrefix(std::string_view ns, std::string_view metric,
                          const std::vector<model::Dimension>& dims);
// The listing key without its unit and id: equal for the series that
// ListMetrics shows as one metric.
std::string_view MetricPart(std::string_view listing_key);
bool DecodeListing(std::string_view key, model::SeriesKey* series, SeriesId* id);
std::string EncodeSeriesKey(const model::SeriesKey& key);
bool DecodeSeriesKey(std::string_view bytes, model::SeriesKey* key);
std::string EncodeLast(const LastValue& last);
bool DecodeLast(std::string_view bytes, LastValue* last);
}  // namespace indexkeys

// The writer's in-memory map canonical key -> id, loaded at open. Not
// thread-safe (the Db's write leader uses it).
class SeriesRegistry {
 public:
  struct Entry {
    SeriesId id = 0;
    // The series' newest sample as the writer knows it (t_ms INT64_MIN: none
    // yet). Between seals it lives in the series' head records, not in its
    // "l" record (see head.h).
    LastValue last{INT64_MIN, 0};
  };
  explicit SeriesRegistry(kv::Kv* kv) : kv_(kv) {}
  absl::Status Load();
  // The entry of `key`; a new series gets the next id and its index records
  // are added to `batch`. `*created` tells which.
  Entry* Resolve(const model::SeriesKey& key, const std::string& canonical, kv::WriteBatch* batch,
                 bool* created);
  Entry* Find(const std::string& canonical);
  // Starts loading what looking `canonical` up will read (a hint, no effect
  // on the map).
  void Prefetch(const std::string& canonical) const { map_.prefetch(canonical); }
  size_t size() const { return map_.size(); }
  // Approximate heap bytes of the map (docs/store.md's per-series cost).
  size_t MemoryBytes() const;

 private:
  kv::Kv* kv_;
  SeriesId next_id_ = 1;
  absl::flat_hash_map<std::string, Entry> map_;
};

}  // namespace trainwatch::store
