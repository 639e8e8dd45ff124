#include "store/series_index.h"

#include "store/coding.h"
#include "util/status_macros.h"

namespace trainwatch::store {
namespace indexkeys {
namespace {

// Ends the dimension list in a listing key: sorts before any dimension name
// (a name's first encoded byte is a non-zero byte or 0x00 0xff).
constexpr std::string_view kDimsEnd("\0\0", 2);

void AppendDims(std::string* k, const std::vector<model::Dimension>& dims) {
  for (const model::Dimension& d : dims) {
    coding::PutOrderedString(k, d.name);
    coding::PutOrderedString(k, d.value);
  }
  k->append(kDimsEnd);
}

}  // namespace

std::string ByCanonical(const model::SeriesKey& key) { return "k" + key.Canonical(); }

std::string ById(SeriesId id) {
  std::string k = "i";
  coding::PutBig64(&k, id);
  return k;
}

std::string Last(SeriesId id) {
  std::string k = "l";
  coding::PutBig64(&k, id);
  return k;
}

std::string ListingPrefix(std::string_view ns) {
  std::string k = "n";
  coding::PutOrderedString(&k, ns);
  return k;
}

std::string ListingPrefix(std::string_view ns, std::string_view metric) {
  std::string k = ListingPrefix(ns);
  coding::PutOrderedString(&k, metric);
  return k;
}

std::string ListingPrefix(std::string_view ns, std::string_view metric,
                          const std::vector<model::Dimension>& dims) {
  std::string k = ListingPrefix(ns, metric);
  AppendDims(&k, dims);
  return k;
}

std::string Listing(const model::SeriesKey& key, SeriesId id) {
  std::string k = ListingPrefix(key.ns, key.metric, key.dimensions);
  coding::PutOrderedString(&k, key.unit);
  coding::PutBig64(&k, id);
  return k;
}

bool DecodeListing(std::string_view key, model::SeriesKey* series, SeriesId* id) {
  if (key.empty() || key[0] != 'n') return false;
  key.remove_prefix(1);
  if (!coding::GetOrderedString(&key, &series->ns)) return false;
  if (!coding::GetOrderedString(&key, &series->metric)) return false;
  series->dimensions.clear();
  while (true) {
    if (key.substr(0, 2) == kDimsEnd) {
      key.remove_prefix(2);
      break;
    }
    model::Dimension d;
    if (!coding::GetOrderedString(&key, &d.name) || !coding::GetOrderedString(&key, &d.value)) {
      return false;
    }
    series->dimensions.push_back(std::move(d));
  }
  if (!coding::GetOrderedString(&key, &series->unit)) return false;
  if (key.size() != 8) return false;
  *id = coding::GetBig64(key.data());
  return true;
}

std::string_view MetricPart(std::string_view listing_key) {
  // Everything up to and including the dimension-list end marker.
  std::string_view k = listing_key.substr(1);
  std::string scratch;
  if (!coding::GetOrderedString(&k, &scratch) || !coding::GetOrderedString(&k, &scratch)) {
    return listing_key;
  }
  while (k.substr(0, 2) != kDimsEnd) {
    if (!coding::GetOrderedString(&k, &scratch) || !coding::GetOrderedString(&k, &scratch)) {
      return listing_key;
    }
  }
  return listing_key.substr(0, listing_key.size() - k.size() + 2);
}

std::string EncodeSeriesKey(const model::SeriesKey& key) {
  std::string v;
  coding::PutLengthPrefixed(&v, key.ns);
  coding::PutLengthPrefixed(&v, key.metric);
  coding::PutLengthPrefixed(&v, key.unit);
  coding::PutVarint64(&v, key.dimensions.size());
  for (const model::Dimension& d : key.dimensions) {
    coding::PutLengthPrefixed(&v, d.name);
    coding::PutLengthPrefixed(&v, d.value);
  }
  return v;
}

bool DecodeSeriesKey(std::string_view bytes, model::SeriesKey* key) {
  std::string_view ns, metric, unit;
  uint64_t n;
  if (!coding::GetLengthPrefixed(&bytes, &ns) || !coding::GetLengthPrefixed(&bytes, &metric) ||
      !coding::GetLengthPrefixed(&bytes, &unit) || !coding::GetVarint64(&bytes, &n) || n > 64) {
    return false;
  }
  key->ns.assign(ns);
  key->metric.assign(metric);
  key->unit.assign(unit);
  key->dimensions.clear();
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view name, value;
    if (!coding::GetLengthPrefixed(&bytes, &name) || !coding::GetLengthPrefixed(&bytes, &value)) {
      return false;
    }
    key->dimensions.push_back({std::string(name), std::string(value)});
  }
  return bytes.empty();
}

std::string EncodeLast(const LastValue& last) {
  std::string v;
  coding::PutVarintSigned(&v, last.t_ms);
  coding::PutDouble(&v, last.value);
  return v;
}

bool DecodeLast(std::string_view bytes, LastValue* last) {
  return coding::GetVarintSigned(&bytes, &last->t_ms) && coding::GetDouble(&bytes, &last->value);
}

}  // namespace indexkeys

absl::Status SeriesRegistry::Load() {
  map_.clear();
  next_id_ = 1;
  {
    kv::ReadOptions ro;
    ro.lower_bound = "k";
    ro.upper_bound = "l";
    ro.fill_cache = false;
    auto it = kv_->NewIterator(kv::Cf::kIndex, ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (it->value().size() != 8) {
        return absl::DataLossError("a series index record is damaged (id is not 8 bytes)");
      }
      SeriesId id = coding::GetBig64(it->value().data());
      map_[std::string(it->key().substr(1))].id = id;
      if (id >= next_id_) next_id_ = id + 1;
    }
    TW_RETURN_IF_ERROR(it->status());
  }
  // Last values, so the "l" records only move forward (the head's newer
  // ones are folded in when the writer replays it).
  absl::flat_hash_map<SeriesId, LastValue> last;
  {
    kv::ReadOptions ro;
    ro.lower_bound = "l";
    ro.upper_bound = "m";
    ro.fill_cache = false;
    auto it = kv_->NewIterator(kv::Cf::kIndex, ro);
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      LastValue lv;
      if (it->key().size() == 9 && indexkeys::DecodeLast(it->value(), &lv)) {
        last[coding::GetBig64(it->key().data() + 1)] = lv;
      }
    }
    TW_RETURN_IF_ERROR(it->status());
  }
  for (auto& [canonical, entry] : map_) {
    auto it = last.find(entry.id);
    if (it != last.end()) entry.last = it->second;
  }
  return absl::OkStatus();
}

SeriesRegistry::Entry* SeriesRegistry::Find(const std::string& canonical) {
  auto it = map_.find(canonical);
  return it == map_.end() ? nullptr : &it->second;
}

SeriesRegistry::Entry* SeriesRegistry::Resolve(const model::SeriesKey& key,
                                               const std::string& canonical,
                                               kv::WriteBatch* batch, bool* created) {
  auto [it, inserted] = map_.try_emplace(canonical);
  *created = inserted;
  if (inserted) {
    it->second.id = next_id_++;
    std::string id_bytes;
    coding::PutBig64(&id_bytes, it->second.id);
    batch->Put(kv::Cf::kIndex, "k" + canonical, id_bytes);
    batch->Put(kv::Cf::kIndex, indexkeys::ById(it->second.id), indexkeys::EncodeSeriesKey(key));
    batch->Put(kv::Cf::kIndex, indexkeys::Listing(key, it->second.id), "");
  }
  return &it->second;
}

size_t SeriesRegistry::MemoryBytes() const {
  size_t bytes = map_.capacity() * (sizeof(std::string) + sizeof(Entry) + 1);
  for (const auto& [k, v] : map_) {
    if (k.capacity() > 15) bytes += k.capacity() + 1;
  }
  return bytes;
}

}  // namespace trainwatch::store
