#include "util/prom_text.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace trainwatch::util {

void Histogram::Observe(double seconds) {
  // The count first: a scrape between the two sees no bucket above +Inf.
  count_.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < kDefaultBounds.size(); ++i) {
    if (seconds <= kDefaultBounds[i]) {
      // Release, with CumulativeCount's acquire: a scrape that sees this
      // bucket's increment sees the count's too.
      buckets_[i].fetch_add(1, std::memory_order_release);
      break;
    }
  }
  const double micros = seconds > 0 ? seconds * 1e6 : 0;
  sum_micros_.fetch_add(static_cast<uint64_t>(micros), std::memory_order_relaxed);
}

uint64_t Histogram::CumulativeCount(size_t i) const {
  uint64_t n = 0;
  for (size_t k = 0; k <= i && k < buckets_.size(); ++k) n += buckets_[k].load(std::memory_order_acquire);
  return n;
}

namespace {

// Length of the valid UTF-8 sequence at the start of `v` (as Go's decoder
// takes it: no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t Utf8Length(std::string_view v) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(v[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (v.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  while (!v.empty()) {
    const size_t n = Utf8Length(v);
    if (n == 0) {
      // Prometheus refuses a whole scrape over one label value that is not
      // UTF-8 (nothing at ingest promises UTF-8): U+FFFD instead.
      out += "\xEF\xBF\xBD";
      v.remove_prefix(1);
      continue;
    }
    const char c = v[0];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"') {
      out += "\\\"";
    } else {
      out.append(v.substr(0, n));
    }
    v.remove_prefix(n);
  }
  return out;
}

namespace {

std::string EscapeHelp(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// Go's strconv formatting, which Prometheus parses: NaN, +Inf, -Inf, and
// the shortest text that reads back as the same double.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::string s = absl::StrFormat("%.15g", v);
  if (std::strtod(s.c_str(), nullptr) != v) s = absl::StrFormat("%.17g", v);
  return s;
}

void AppendLabels(const PromText::Labels& labels, std::string* out) {
  if (labels.empty()) return;
  out->push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out->push_back(',');
    first = false;
    out->append(k).append("=\"").append(EscapeLabelValue(v)).append("\"");
  }
  out->push_back('}');
}

}  // namespace

void PromText::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_.append("# HELP ").append(name).append(" ").append(EscapeHelp(help));
  out_.append("\n# TYPE ").append(name).append(" ").append(type).append("\n");
}

void PromText::Sample(std::string_view name, const Labels& labels, double value) {
  out_.append(name);
  AppendLabels(labels, &out_);
  out_.append(" ").append(FormatValue(value)).append("\n");
}

void PromText::Histogram(std::string_view name, std::string_view help, const util::Histogram& h,
                         const Labels& labels) {
  Family(name, "histogram", help);
  const std::string bucket = std::string(name) + "_bucket";
  const std::span<const double> bounds = h.bounds();
  for (size_t i = 0; i < bounds.size(); ++i) {
    Labels with_le = labels;
    with_le.emplace_back("le", absl::StrFormat("%g", bounds[i]));
    Sample(bucket, with_le, static_cast<double>(h.CumulativeCount(i)));
  }
  // The count is read once, so +Inf and _count agree.
  const double count = static_cast<double>(h.count());
  Labels inf = labels;
  inf.emplace_back("le", "+Inf");
  Sample(bucket, inf, count);
  Sample(std::string(name) + "_sum", labels, h.sum_seconds());
  Sample(std::string(name) + "_count", labels, count);
}

}  // namespace trainwatch::util
