// The samples format (POST /api/v1/samples, agents' "samples" batches):
// SamplesJson and the decoder. Declared in agent_codec.h.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/native/agent_codec.h"
#include "api/native/samples_codec_internal.h"
#include "api/series_key_cache.h"
#include "simdjson.h"
#include "util/status_macros.h"

namespace trainwatch::api {
namespace {

using OrderedJson = nlohmann::ordered_json;

// The samples format is the bulk of what the server decodes (HTTP ingest,
// agents): simdjson's DOM parser reads it at several hundred MB/s where
// nlohmann::json builds a tree of heap nodes first.
//
// The decoder checks the shape of a body, not the samples' values: those are
// validated once, by ingest::ValidateSamples, whoever sends them. Every
// number it reads is finite (JSON has no NaN or Infinity, and simdjson
// refuses a number beyond a double's range). Two checks of values stay:
// storage_resolution is 1 or 60, as the batch holds it in an int, and a count
// is >= 0, refused here naming the member (native_api_test expects that
// message; ingest refuses a negative count too).
using simdjson::dom::element;
using simdjson::dom::element_type;

}  // namespace

OrderedJson SamplesJson(const model::SampleBatch& batch) {
  OrderedJson series = OrderedJson::array();
  for (const model::SeriesSamples& s : batch.series) {
    OrderedJson head;
    head["namespace"] = s.key.ns;
    head["metric"] = s.key.metric;
    OrderedJson dims = OrderedJson::object();
    for (const model::Dimension& d : s.key.dimensions) dims[d.name] = d.value;
    head["dimensions"] = std::move(dims);
    head["unit"] = s.key.unit;
    head["storage_resolution"] = s.storage_resolution_s;
    if (!s.samples.empty()) {
      OrderedJson item = head, t = OrderedJson::array(), v = OrderedJson::array();
      for (const model::Sample& x : s.samples) {
        t.push_back(x.t_ms);
        v.push_back(x.value);
      }
      item["t_ms"] = std::move(t);
      item["values"] = std::move(v);
      series.push_back(std::move(item));
    }
    if (!s.weighted.empty()) {
      OrderedJson item = head, t = OrderedJson::array(), v = OrderedJson::array(),
                  c = OrderedJson::array();
      for (const model::WeightedSample& x : s.weighted) {
        t.push_back(x.t_ms);
        v.push_back(x.value);
        c.push_back(x.count);
      }
      item["t_ms"] = std::move(t);
      item["values"] = std::move(v);
      item["counts"] = std::move(c);
      series.push_back(std::move(item));
    }
    if (!s.statistic_sets.empty()) {
      OrderedJson item = head, sets = OrderedJson::array();
      for (const model::StatisticSet& x : s.statistic_sets) {
        sets.push_back({{"t_ms", x.t_ms}, {"sample_count", x.sample_count}, {"sum", x.sum},
                        {"minimum", x.minimum}, {"maximum", x.maximum}});
      }
      item["t_ms"] = OrderedJson::array();
      item["values"] = OrderedJson::array();
      item["statistic_sets"] = std::move(sets);
      series.push_back(std::move(item));
    }
  }
  return OrderedJson{{"series", std::move(series)}};
}

namespace samples_internal {

bool AsInt64(element e, int64_t* out) {
  if (e.type() != element_type::INT64) return false;
  *out = e.get_int64().value_unsafe();
  return true;
}

}  // namespace samples_internal

namespace {

absl::Status TooManySamples(size_t max_samples) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "more than %d samples in one request; send smaller batches", max_samples));
}

bool AsDouble(element e, double* out) {
  switch (e.type()) {
    case element_type::DOUBLE: *out = e.get_double().value_unsafe(); return true;
    case element_type::INT64: *out = static_cast<double>(e.get_int64().value_unsafe()); return true;
    case element_type::UINT64: *out = static_cast<double>(e.get_uint64().value_unsafe()); return true;
    default: return false;
  }
}

// The members of one series object that the samples format knows, found in
// one pass; others are ignored.
class SeriesMembers {
 public:
  enum Member {
    kNamespace, kMetric, kUnit, kDimensions, kStorageResolution,
    kTimes, kValues, kCounts, kStatisticSets, kMembers
  };

  void Take(std::string_view key, element value) {
    static constexpr std::string_view kNames[kMembers] = {
        "namespace", "metric", "unit", "dimensions", "storage_resolution",
        "t_ms", "values", "counts", "statistic_sets"};
    for (int k = 0; k < kMembers; ++k) {
      if (key == kNames[k]) {
        if (!(found_ & (1u << k))) {
          found_ |= 1u << k;
          values_[k] = value;
        }
        return;
      }
    }
  }
  const element* Find(Member k) const { return (found_ & (1u << k)) ? &values_[k] : nullptr; }

 private:
  uint32_t found_ = 0;
  element values_[kMembers];
};

// The identity bytes of a series as the body names it.
const std::string& IdentityOf(std::string_view ns, std::string_view metric, std::string_view unit,
                              const std::vector<std::pair<std::string_view, std::string_view>>& dims,
                              std::string* identity) {
  identity->clear();
  SeriesKeyCache::AppendPart(identity, ns);
  SeriesKeyCache::AppendPart(identity, metric);
  SeriesKeyCache::AppendPart(identity, unit);
  for (const auto& [k, v] : dims) {
    SeriesKeyCache::AppendPart(identity, k);
    SeriesKeyCache::AppendPart(identity, v);
  }
  return *identity;
}

// Whether `key` (a valid key, as a non-empty `canonical` shows, left in a
// reused slot by the last body) is the key these parts make: the same
// namespace, metric and unit, and each of its dimensions named exactly once
// by the body, in any order. A body that repeats a dimension never matches
// (MakeSeriesKey refuses it).
bool HoldsKeyOf(const model::SeriesKey& key, const std::string& canonical, std::string_view ns,
                std::string_view metric, std::string_view unit,
                const std::vector<std::pair<std::string_view, std::string_view>>& dims) {
  if (canonical.empty() || dims.size() != key.dimensions.size() || key.ns != ns ||
      key.metric != metric || key.unit != unit || dims.size() > 32) {
    return false;
  }
  uint32_t matched = 0;
  for (const auto& [k, v] : dims) {
    bool found = false;
    for (size_t j = 0; j < key.dimensions.size(); ++j) {
      const model::Dimension& d = key.dimensions[j];
      if (!(matched & (1u << j)) && d.name == k && d.value == v) {
        matched |= 1u << j;
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

SeriesKeyCache& ThreadSeriesKeys() {
  thread_local SeriesKeyCache keys;
  return keys;
}

}  // namespace

namespace samples_internal {

// Decodes into *batch's slots: slot i keeps its key when series i has the
// same key as last time (agents send the same series in the same order), and
// its sample buffers. The slots past the last series are dropped at the end.
absl::Status SamplesFromDom(element series, size_t max_samples, model::SampleBatch* batch) {
  simdjson::dom::array list;
  if (series.get_array().get(list) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("member \"series\" must be a list of series");
  }
  SeriesKeyCache& keys = ThreadSeriesKeys();
  std::string identity;
  std::vector<std::pair<std::string_view, std::string_view>> dim_views;
  std::vector<model::SeriesSamples>& slots = batch->series;
  std::vector<std::string>& canonical_keys = batch->canonical_keys;
  // A batch whose canonical keys were cleared (or never filled) has no key
  // that a slot could keep.
  if (canonical_keys.size() != slots.size()) {
    slots.clear();
    canonical_keys.clear();
  }
  // A body's count of series is what it claims (up to simdjson's 16.7
  // million): reserve no more than a batch keeps.
  slots.reserve(std::min<size_t>(list.size(), kMaxKeptDecodedSeries));
  canonical_keys.reserve(std::min<size_t>(list.size(), kMaxKeptDecodedSeries));
  size_t total = 0;
  size_t i = 0;
  for (element item : list) {
    auto where = [&](std::string_view what) {
      return absl::InvalidArgumentError(absl::StrFormat("series[%d]: %s", i, what));
    };
    simdjson::dom::object s;
    if (item.get_object().get(s) != simdjson::SUCCESS) return where("must be an object");
    // One pass over the members (this runs for every series of every write);
    // the first of a repeated member counts, as a lookup by name would find it.
    SeriesMembers m;
    for (simdjson::dom::key_value_pair field : s) m.Take(field.key, field.value);
    // The text of a string member (views into the parser, valid for this body).
    auto text = [&](const element* e, std::string_view fallback, std::string_view* out) {
      if (e == nullptr) {
        *out = fallback;
        return true;
      }
      return e->get_string().get(*out) == simdjson::SUCCESS;
    };
    std::string_view ns, metric, unit;
    if (!text(m.Find(SeriesMembers::kNamespace), "", &ns) ||
        !text(m.Find(SeriesMembers::kMetric), "", &metric) ||
        !text(m.Find(SeriesMembers::kUnit), "None", &unit)) {
      return where("namespace, metric and unit must be strings");
    }
    dim_views.clear();
    if (const element* d = m.Find(SeriesMembers::kDimensions)) {
      simdjson::dom::object o;
      if (d->get_object().get(o) != simdjson::SUCCESS) {
        return where("dimensions must be an object of strings");
      }
      for (auto [k, v] : o) {
        std::string_view value;
        if (v.get_string().get(value) != simdjson::SUCCESS) {
          return where(absl::StrFormat("dimension %s must be a string", k));
        }
        dim_views.emplace_back(k, value);
      }
    }
    if (i == slots.size()) {
      slots.emplace_back();
      canonical_keys.emplace_back();
    }
    model::SeriesSamples& out = slots[i];
    std::string& canonical = canonical_keys[i];
    out.storage_resolution_s = 1;
    out.samples.clear();
    out.weighted.clear();
    out.statistic_sets.clear();
    if (HoldsKeyOf(out.key, canonical, ns, metric, unit, dim_views)) {
      // The series this slot had last time: its key and canonical form stay.
    } else if (const SeriesKeyCache::Entry* cached =
                   keys.Find(IdentityOf(ns, metric, unit, dim_views, &identity))) {
      // Equal canonical forms are equal keys (the form is unambiguous).
      if (canonical != cached->canonical) {
        out.key = cached->key;
        canonical = cached->canonical;
      }
    } else {
      std::vector<model::Dimension> dims;
      dims.reserve(dim_views.size());
      for (const auto& [k, v] : dim_views) dims.push_back({std::string(k), std::string(v)});
      absl::StatusOr<model::SeriesKey> key = model::MakeSeriesKey(
          std::string(ns), std::string(metric), std::move(dims), std::string(unit));
      if (!key.ok()) return where(MessageOf(key.status()));
      SeriesKeyCache::Entry made{*std::move(key), ""};
      made.canonical = made.key.Canonical();
      keys.Insert(identity, made);
      out.key = std::move(made.key);
      canonical = std::move(made.canonical);
    }
    if (const element* r = m.Find(SeriesMembers::kStorageResolution)) {
      int64_t res = 0;
      if (!AsInt64(*r, &res) || (res != 1 && res != 60)) {
        return where("storage_resolution must be 1 or 60");
      }
      out.storage_resolution_s = static_cast<int>(res);
    }
    simdjson::dom::array t, v, c;
    const element* te = m.Find(SeriesMembers::kTimes);
    const element* ve = m.Find(SeriesMembers::kValues);
    const element* ce = m.Find(SeriesMembers::kCounts);
    const bool has_counts = ce != nullptr;
    if (te == nullptr || te->get_array().get(t) != simdjson::SUCCESS || ve == nullptr ||
        ve->get_array().get(v) != simdjson::SUCCESS || t.size() != v.size()) {
      return where("t_ms and values must be lists of the same length");
    }
    if (has_counts && (ce->get_array().get(c) != simdjson::SUCCESS || c.size() != v.size())) {
      return where("counts, when given, must be a list as long as values");
    }
    const size_t n = t.size();
    total += n;
    if (total > max_samples) return TooManySamples(max_samples);
    if (has_counts) {
      out.weighted.reserve(n);
    } else {
      out.samples.reserve(n);
    }
    auto tk = t.begin();
    auto vk = v.begin();
    auto ck = has_counts ? c.begin() : simdjson::dom::array::iterator();
    for (size_t k = 0; k < n; ++k, ++tk, ++vk) {
      int64_t t_ms;
      double value;
      if (!AsInt64(*tk, &t_ms) || !AsDouble(*vk, &value)) {
        return where(absl::StrFormat("sample %d: t_ms must be an integer and value a number", k));
      }
      if (has_counts) {
        double count;
        if (!AsDouble(*ck, &count) || !(count >= 0)) {
          return where(absl::StrFormat("sample %d: count must be a finite number >= 0", k));
        }
        ++ck;
        out.weighted.push_back({t_ms, value, count});
      } else {
        out.samples.push_back({t_ms, value});
      }
    }
    if (const element* sets_e = m.Find(SeriesMembers::kStatisticSets)) {
      simdjson::dom::array sets;
      if (sets_e->get_array().get(sets) != simdjson::SUCCESS) {
        return where("statistic_sets must be a list");
      }
      total += sets.size();
      if (total > max_samples) return TooManySamples(max_samples);
      size_t k = 0;
      for (element x : sets) {
        simdjson::dom::object o;
        const bool is_object = x.get_object().get(o) == simdjson::SUCCESS;
        auto num = [&](const char* name) -> std::optional<double> {
          element e;
          double d;
          if (!is_object || o.at_key(name).get(e) != simdjson::SUCCESS || !AsDouble(e, &d)) {
            return std::nullopt;
          }
          return d;
        };
        element tt;
        int64_t t_ms = 0;
        const bool has_t = is_object && o.at_key("t_ms").get(tt) == simdjson::SUCCESS &&
                           AsInt64(tt, &t_ms);
        std::optional<double> count = num("sample_count"), sum = num("sum"),
                              lo = num("minimum"), hi = num("maximum");
        if (!has_t || !count || !sum || !lo || !hi) {
          return where(absl::StrFormat(
              "statistic set %d needs t_ms and finite sample_count, sum, minimum, maximum", k));
        }
        out.statistic_sets.push_back({t_ms, *count, *sum, *lo, *hi});
        ++k;
      }
    }
    ++i;
  }
  slots.resize(i);
  canonical_keys.resize(i);
  return absl::OkStatus();
}

// Parses `body` with this thread's parser, which keeps its buffers for the
// next body (and *top is valid until then): InvalidArgument naming `shape`
// unless the body is a JSON object. The formats nest 5 deep at most
// (statistic sets in an agent batch); deeper input is refused while parsing,
// before any of it is built.
absl::Status ParseObject(std::string_view body, std::string_view shape,
                         simdjson::dom::object* top) {
  constexpr size_t kMaxDepth = 8;
  thread_local simdjson::dom::parser parser = [] {
    simdjson::dom::parser p;
    // Grows with larger bodies, keeping the depth. Should this first
    // allocation fail, parse() allocates again with simdjson's default depth
    // (1024, still safe): the formats' shape checks then refuse deep bodies
    // with their own messages.
    const simdjson::error_code allocated = p.allocate(64 << 10, kMaxDepth);
    (void)allocated;
    return p;
  }();
  // The parser keeps buffers as large as the largest body it read; a smaller
  // body after a large one gives the memory back.
  constexpr size_t kKeptCapacity = size_t{8} << 20;
  if (parser.capacity() > kKeptCapacity && body.size() <= kKeptCapacity) {
    // Should it fail, parse() below allocates what this body needs.
    const simdjson::error_code shrunk = parser.allocate(64 << 10, kMaxDepth);
    (void)shrunk;
  }
  // A UTF-8 byte order mark is not JSON; editors put one in front of files.
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  // Also keeps a null pointer (an empty view's) from simdjson's copy.
  if (body.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the body must be a JSON object %s, and is empty; see docs/api.md", shape));
  }
  element doc;
  const simdjson::error_code parsed = parser.parse(body.data(), body.size()).get(doc);
  if (parsed == simdjson::DEPTH_ERROR) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the body nests JSON deeper than the format %s allows", shape));
  }
  if (parsed != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the body must be a JSON object %s, and is not JSON (%s); see docs/api.md",
                        shape, simdjson::error_message(parsed)));
  }
  if (doc.get_object().get(*top) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the body must be a JSON object %s; see docs/api.md", shape));
  }
  return absl::OkStatus();
}

}  // namespace samples_internal

using samples_internal::ParseObject;
using samples_internal::SamplesFromDom;

absl::Status DecodeSamplesBodyInto(std::string_view body, size_t max_samples,
                                   model::SampleBatch* batch, std::string_view shape) {
  simdjson::dom::object top;
  TW_RETURN_IF_ERROR(ParseObject(body, shape, &top));
  element series;
  if (top.at_key("series").get(series) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("member \"series\" must be a list of series");
  }
  return SamplesFromDom(series, max_samples, batch);
}

absl::StatusOr<model::SampleBatch> DecodeSamplesBody(std::string_view body, size_t max_samples,
                                                     std::string_view shape) {
  model::SampleBatch batch;
  TW_RETURN_IF_ERROR(DecodeSamplesBodyInto(body, max_samples, &batch, shape));
  return batch;
}

void TrimDecodedSamples(model::SampleBatch* batch) {
  constexpr size_t kKeptSamplesPerSeries = 4096;
  if (batch->series.capacity() > kMaxKeptDecodedSeries ||
      batch->canonical_keys.capacity() > kMaxKeptDecodedSeries) {
    *batch = model::SampleBatch{};
    return;
  }
  size_t bytes = 0;
  for (size_t i = 0; i < batch->series.size(); ++i) {
    model::SeriesSamples& s = batch->series[i];
    if (s.samples.capacity() > kKeptSamplesPerSeries) std::vector<model::Sample>().swap(s.samples);
    if (s.weighted.capacity() > kKeptSamplesPerSeries) {
      std::vector<model::WeightedSample>().swap(s.weighted);
    }
    if (s.statistic_sets.capacity() > kKeptSamplesPerSeries) {
      std::vector<model::StatisticSet>().swap(s.statistic_sets);
    }
    // The key's parts take about as many bytes as its canonical form.
    const size_t key_bytes =
        i < batch->canonical_keys.size() ? 2 * batch->canonical_keys[i].capacity() : 0;
    bytes += sizeof(s) + key_bytes + s.samples.capacity() * sizeof(model::Sample) +
             s.weighted.capacity() * sizeof(model::WeightedSample) +
             s.statistic_sets.capacity() * sizeof(model::StatisticSet);
  }
  if (bytes > kMaxKeptDecodedBytes) *batch = model::SampleBatch{};
}

size_t DecodedSeriesKeysKeptForTest() { return ThreadSeriesKeys().size(); }

}  // namespace trainwatch::api
