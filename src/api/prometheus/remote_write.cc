#include "api/prometheus/remote_write.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "api/native/agent_codec.h"

namespace trainwatch::api::prometheus {
namespace {

// Protocol buffers' wire format, as far as remote write needs it.
class Reader {
 public:
  Reader(std::string_view bytes, size_t base) : bytes_(bytes), base_(base) {}
  bool done() const { return pos_ >= bytes_.size(); }
  size_t offset() const { return base_ + pos_; }

  absl::Status Varint(uint64_t* out) {
    // Tags and lengths are nearly all one byte.
    if (pos_ < bytes_.size() && static_cast<uint8_t>(bytes_[pos_]) < 0x80) {
      *out = static_cast<uint8_t>(bytes_[pos_++]);
      return absl::OkStatus();
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) return Error("a varint runs past the end");
      const uint8_t b = static_cast<uint8_t>(bytes_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return absl::OkStatus();
      }
    }
    return Error("a varint longer than 10 bytes");
  }
  absl::Status Fixed64(uint64_t* out) {
    if (bytes_.size() - pos_ < 8) return Error("a 64-bit field runs past the end");
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes_[pos_ + i]);
    pos_ += 8;
    *out = v;
    return absl::OkStatus();
  }
  // A length-delimited field's bytes, and the offset they start at.
  absl::Status Bytes(std::string_view* out, size_t* at) {
    const size_t length_at = offset();
    uint64_t n;
    if (absl::Status s = Varint(&n); !s.ok()) return s;
    if (n > bytes_.size() - pos_) return ErrorAt(length_at, "a field's length runs past the end");
    *at = offset();
    *out = bytes_.substr(pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status Skip(uint64_t wire_type) {
    uint64_t ignored;
    std::string_view unused;
    size_t at;
    switch (wire_type) {
      case 0: return Varint(&ignored);
      case 1: return Fixed64(&ignored);
      case 2: return Bytes(&unused, &at);
      case 5:
        if (bytes_.size() - pos_ < 4) return Error("a 32-bit field runs past the end");
        pos_ += 4;
        return absl::OkStatus();
      default:
        return Error(absl::StrFormat("wire type %d (not in remote write)", wire_type));
    }
  }
  absl::Status Error(std::string_view what) const { return ErrorAt(offset(), what); }
  static absl::Status ErrorAt(size_t at, std::string_view what) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the body is not a remote-write WriteRequest: %s at byte %d", what, at));
  }

 private:
  std::string_view bytes_;
  size_t base_;
  size_t pos_ = 0;
};

// Calls fn(field, wire_type, reader) for each field of a message.
template <typename Fn>
absl::Status ForEachField(std::string_view message, size_t base, Fn fn) {
  Reader r(message, base);
  while (!r.done()) {
    uint64_t tag = 0;
    if (absl::Status s = r.Varint(&tag); !s.ok()) return s;
    if (absl::Status s = fn(tag >> 3, tag & 7, r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Appends a Label message's bytes, length-prefixed, to the series'
// identity. Its fields are read (and checked) only when the identity is new
// (WriteDecoder::ResolveKey): bytes equal to those of a key made before were
// well formed then.
absl::Status AppendLabel(std::string_view message, size_t base, std::string* identity) {
  if (message.size() > UINT32_MAX) return Reader::ErrorAt(base, "a label longer than 4 GiB");
  const uint32_t n = static_cast<uint32_t>(message.size());
  identity->append(reinterpret_cast<const char*>(&n), sizeof(n));
  identity->append(message);
  return absl::OkStatus();
}

// Decodes a Sample message; a finite value goes to `series`.
absl::Status AppendSample(std::string_view message, size_t base, model::SeriesSamples* series) {
  double value = 0;
  int64_t t_ms = 0;
  absl::Status s = ForEachField(message, base, [&](uint64_t field, uint64_t type, Reader& r) {
    if (field == 1 && type == 1) {
      uint64_t bits = 0;
      if (absl::Status e = r.Fixed64(&bits); !e.ok()) return e;
      value = std::bit_cast<double>(bits);
      return absl::OkStatus();
    }
    if (field == 2 && type == 0) {
      uint64_t t = 0;
      if (absl::Status e = r.Varint(&t); !e.ok()) return e;
      t_ms = static_cast<int64_t>(t);
      return absl::OkStatus();
    }
    return r.Skip(type);
  });
  if (!s.ok()) return s;
  if (std::isfinite(value)) series->samples.push_back({t_ms, value});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> WriteDecoder::ResolveKey(size_t slot) {
  std::string& canonical = batch_.canonical_keys[slot];
  if (!canonical.empty() && slot_labels_[slot] == identity_) return true;  // as last time
  if (const SeriesKeyCache::Entry* cached = keys_.Find(identity_)) {
    batch_.series[slot].key = cached->key;
    canonical = cached->canonical;
    slot_labels_[slot] = identity_;
    return true;
  }
  // The labels, by the naming rule; a repeated label's last value counts.
  std::string metric, ns(kDefaultNamespace), unit = "None";
  std::vector<model::Dimension> dims;
  std::string_view rest = identity_;
  for (size_t k = 0; !rest.empty(); ++k) {
    uint32_t n;
    std::memcpy(&n, rest.data(), sizeof(n));
    const std::string_view label = rest.substr(sizeof(n), n);
    rest.remove_prefix(sizeof(n) + n);
    std::string name, value;
    absl::Status read = ForEachField(label, label_at_[k], [&](uint64_t field, uint64_t type, Reader& r) {
      if ((field == 1 || field == 2) && type == 2) {
        std::string_view text;
        size_t at;
        if (absl::Status e = r.Bytes(&text, &at); !e.ok()) return e;
        (field == 1 ? name : value) = std::string(text);
        return absl::OkStatus();
      }
      return r.Skip(type);
    });
    if (!read.ok()) return read;
    if (name == "__name__") {
      metric = std::move(value);
    } else if (name == "namespace") {
      ns = std::move(value);
    } else if (name == "unit") {
      unit = std::move(value);
    } else {
      dims.push_back({std::move(name), std::move(value)});
    }
  }
  absl::StatusOr<model::SeriesKey> key =
      metric.empty() ? absl::InvalidArgumentError("a series without __name__")
                     : model::MakeSeriesKey(std::move(ns), std::move(metric), std::move(dims),
                                            std::move(unit));
  if (!key.ok()) {
    if (refused_++ == 0) first_refusal_ = std::string(key.status().message());
    canonical.clear();  // the slot's key is no longer that of slot_labels_
    return false;
  }
  SeriesKeyCache::Entry made{*std::move(key), ""};
  made.canonical = made.key.Canonical();
  batch_.series[slot].key = made.key;
  canonical = made.canonical;
  slot_labels_[slot] = identity_;
  keys_.Insert(identity_, std::move(made));
  return true;
}

absl::Status WriteDecoder::Decode(std::string_view protobuf) {
  refused_ = 0;
  first_refusal_.clear();
  // Slots keep a key only with its canonical form and identity beside it.
  if (batch_.canonical_keys.size() != batch_.series.size() ||
      slot_labels_.size() != batch_.series.size()) {
    batch_ = {};
    slot_labels_.clear();
  }
  size_t used = 0;  // slots filled by this request
  absl::Status s = ForEachField(protobuf, 0, [&](uint64_t field, uint64_t type, Reader& r) {
    if (field != 1 || type != 2) return r.Skip(type);  // metadata (3) and the like
    std::string_view message;
    size_t at;
    if (absl::Status e = r.Bytes(&message, &at); !e.ok()) return e;
    if (used == batch_.series.size()) {
      batch_.series.emplace_back();
      batch_.canonical_keys.emplace_back();
      slot_labels_.emplace_back();
    }
    model::SeriesSamples& slot = batch_.series[used];
    slot.samples.clear();
    identity_.clear();
    label_at_.clear();
    absl::Status e = ForEachField(message, at, [&](uint64_t f, uint64_t t, Reader& inner) {
      if ((f == 1 || f == 2) && t == 2) {
        std::string_view part;
        size_t part_at = 0;
        if (absl::Status p = inner.Bytes(&part, &part_at); !p.ok()) return p;
        if (f == 2) return AppendSample(part, part_at, &slot);
        label_at_.push_back(part_at);
        return AppendLabel(part, part_at, &identity_);
      }
      return inner.Skip(t);  // exemplars (3), histograms (4)
    });
    if (!e.ok()) return e;
    // A series of no finite value is stored as nothing, but its labels
    // count: a refused one is refused whatever its values.
    absl::StatusOr<bool> resolved = ResolveKey(used);
    if (!resolved.ok()) return resolved.status();
    if (*resolved && !slot.samples.empty()) ++used;
    return absl::OkStatus();
  });
  if (!s.ok()) used = 0;
  batch_.series.resize(used);
  batch_.canonical_keys.resize(used);
  slot_labels_.resize(used);
  return s;
}

void WriteDecoder::Trim() {
  TrimDecodedSamples(&batch_);
  if (batch_.series.size() != slot_labels_.size()) slot_labels_.clear();
  // Labels may carry fields of any size that still make a key: a slot keeps
  // at most an identity the cache would keep, and the scratch buffers what
  // a usual series needs.
  for (size_t i = 0; i < slot_labels_.size(); ++i) {
    if (slot_labels_[i].size() > SeriesKeyCache::kMaxIdentityBytes) {
      std::string().swap(slot_labels_[i]);
      batch_.canonical_keys[i].clear();  // no key matches the slot now
    }
  }
  if (identity_.capacity() > SeriesKeyCache::kMaxIdentityBytes) std::string().swap(identity_);
  if (label_at_.capacity() > 1024) std::vector<size_t>().swap(label_at_);
}

}  // namespace trainwatch::api::prometheus
