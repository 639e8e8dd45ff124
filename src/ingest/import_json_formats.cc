// The JSON import formats, jsonl and vmimport (docs/import.md), over a
// small JSON reader of their own.
#include <charconv>
#include <cmath>

#include "absl/strings/str_format.h"
#include "ingest/import_formats_internal.h"
#include "util/time_parse.h"

namespace trainwatch::ingest::import_internal {
namespace {

// Appends the UTF-8 encoding of a code point.
void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A small, strict JSON reader over one line: just what the import formats
// need, fast on the common path (strings without escapes, plain numbers).
class Json {
 public:
  explicit Json(std::string_view s) : begin_(s.data()), p_(s.data()), end_(s.data() + s.size()) {}

  void Ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool Eat(char c) {
    Ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    Ws();
    return p_ >= end_;
  }
  size_t column() const { return static_cast<size_t>(p_ - begin_) + 1; }
  std::string Found() const {
    if (p_ >= end_) return "the end of the line";
    return absl::StrFormat("'%c'", *p_);
  }
  const char* pos() const { return p_; }

  bool String(std::string* out) {
    Ws();
    if (p_ >= end_ || *p_ != '"') return false;
    ++p_;
    out->clear();
    const char* start = p_;
    while (p_ < end_ && *p_ != '"' && *p_ != '\\') ++p_;
    out->append(start, p_);
    while (p_ < end_ && *p_ != '"') {
      if (*p_ != '\\') {
        out->push_back(*p_++);
        continue;
      }
      if (++p_ >= end_) return false;
      char e = *p_++;
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
            p_ += 2;
            uint32_t lo = 0;
            if (!Hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          return false;
      }
    }
    if (p_ >= end_) return false;
    ++p_;  // closing quote
    return true;
  }

  bool Double(double* v) {
    Ws();
    auto r = std::from_chars(p_, end_, *v);
    if (r.ec != std::errc() || r.ptr == p_) return false;
    p_ = r.ptr;
    return true;
  }

  bool Int64(int64_t* v) {
    Ws();
    // Fast path: up to 18 plain digits (epoch milliseconds are 13).
    {
      const char* q = p_;
      uint64_t acc = 0;
      while (q < end_ && q - p_ < 18 && *q >= '0' && *q <= '9') acc = acc * 10 + (*q++ - '0');
      if (q > p_ && (q >= end_ || (*q != '.' && *q != 'e' && *q != 'E' && !(*q >= '0' && *q <= '9')))) {
        *v = static_cast<int64_t>(acc);
        p_ = q;
        return true;
      }
    }
    auto r = std::from_chars(p_, end_, *v);
    if (r.ec != std::errc() || r.ptr == p_) return false;
    if (r.ptr < end_ && (*r.ptr == '.' || *r.ptr == 'e' || *r.ptr == 'E')) {
      // A float where an integer is expected: accept whole values (1.7e12).
      double d;
      auto f = std::from_chars(p_, end_, d);
      if (f.ec != std::errc() || d != std::floor(d) || std::abs(d) > 9.0e18) return false;
      *v = static_cast<int64_t>(d);
      p_ = f.ptr;
      return true;
    }
    p_ = r.ptr;
    return true;
  }

  // Skips any value; false on malformed JSON.
  bool Skip(int depth = 0) {
    Ws();
    if (p_ >= end_ || depth > 64) return false;
    char c = *p_;
    if (c == '"') {
      std::string s;
      return String(&s);
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++p_;
      if (Eat(close)) return true;
      while (true) {
        if (c == '{') {
          std::string k;
          if (!String(&k) || !Eat(':')) return false;
        }
        if (!Skip(depth + 1)) return false;
        if (Eat(close)) return true;
        if (!Eat(',')) return false;
      }
    }
    // number, true, false, null
    const char* start = p_;
    while (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && *p_ != ' ' && *p_ != '\t') ++p_;
    return p_ > start;
  }

 private:
  bool Hex4(uint32_t* cp) {
    if (end_ - p_ < 4) return false;
    for (int i = 0; i < 4; ++i) {
      char h = *p_++;
      *cp <<= 4;
      if (h >= '0' && h <= '9') {
        *cp |= h - '0';
      } else if (h >= 'a' && h <= 'f') {
        *cp |= h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        *cp |= h - 'A' + 10;
      } else {
        return false;
      }
    }
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
};

absl::Status JsonError(int64_t line, const Json& j, std::string_view expected) {
  return LineError(line, absl::StrFormat("column %d: expected %s, found %s", j.column(), expected,
                                         j.Found()));
}

// ---- jsonl ----------------------------------------------------------------

class JsonlParser final : public FormatParser {
 public:
  explicit JsonlParser(std::string default_ns) : default_ns_(std::move(default_ns)) {}

  absl::Status ParseBlock(std::string_view block, int64_t first_line,
                          std::vector<SeriesRun>* out) override {
    RunBuilder runs(out);
    return ForEachLine(block, first_line, [&](std::string_view line, int64_t n) -> absl::Status {
      Json j(line);
      if (!j.Eat('{')) return JsonError(n, j, "a JSON object '{'");
      ns_.clear();
      metric_.clear();
      unit_.clear();
      std::string_view dims_raw;
      bool have_t = false, have_v = false, have_metric = false;
      int64_t t = 0;
      double v = 0;
      if (!j.Eat('}')) {
        while (true) {
          if (!j.String(&key_)) return JsonError(n, j, "a quoted key");
          if (!j.Eat(':')) return JsonError(n, j, "':' after a key");
          if (key_ == "namespace") {
            if (!j.String(&ns_)) return JsonError(n, j, "a string for \"namespace\"");
          } else if (key_ == "metric") {
            if (!j.String(&metric_)) return JsonError(n, j, "a string for \"metric\"");
            have_metric = true;
          } else if (key_ == "unit") {
            if (!j.String(&unit_)) return JsonError(n, j, "a string for \"unit\"");
          } else if (key_ == "dimensions") {
            j.Ws();
            const char* start = j.pos();
            if (!j.Skip()) return JsonError(n, j, "an object for \"dimensions\"");
            dims_raw = std::string_view(start, j.pos() - start);
          } else if (key_ == "timestamp_ms") {
            if (!j.Int64(&t)) return JsonError(n, j, "integer milliseconds for \"timestamp_ms\"");
            TW_RETURN_IF_ERROR(CheckTimeMs(n, "\"timestamp_ms\"", t));
            have_t = true;
          } else if (key_ == "timestamp") {
            TW_RETURN_IF_ERROR(ParseTimestamp(&j, n, &t));
            have_t = true;
          } else if (key_ == "value") {
            if (!j.Double(&v)) return JsonError(n, j, "a number for \"value\"");
            have_v = true;
          } else if (!j.Skip()) {
            return JsonError(n, j, absl::StrFormat("a value for \"%s\"", key_));
          }
          if (j.Eat('}')) break;
          if (!j.Eat(',')) return JsonError(n, j, "',' or '}'");
        }
      }
      if (!j.AtEnd()) return JsonError(n, j, "the end of the line after the object");
      if (!have_metric || !have_t || !have_v) {
        return LineError(n, absl::StrFormat(
                                "missing %s; each line needs \"metric\", \"timestamp_ms\" (or "
                                "\"timestamp\") and \"value\"",
                                !have_metric ? "\"metric\"" : !have_t ? "a timestamp" : "\"value\""));
      }
      TW_RETURN_IF_ERROR(CheckFinite(n, v));
      signature_.clear();
      signature_.append(ns_).push_back('\x1f');
      signature_.append(metric_).push_back('\x1f');
      signature_.append(unit_).push_back('\x1f');
      signature_.append(dims_raw);
      auto it = keys_.find(signature_);
      if (it == keys_.end()) {
        std::vector<model::Dimension> dims;
        if (!dims_raw.empty()) {
          Json d(dims_raw);
          if (!d.Eat('{')) return LineError(n, "\"dimensions\" must be an object of strings");
          if (!d.Eat('}')) {
            while (true) {
              model::Dimension dim;
              if (!d.String(&dim.name) || !d.Eat(':') || !d.String(&dim.value)) {
                return LineError(n, "\"dimensions\" must map names to string values");
              }
              dims.push_back(std::move(dim));
              if (d.Eat('}')) break;
              if (!d.Eat(',')) return LineError(n, "\"dimensions\": expected ',' or '}'");
            }
          }
        }
        TW_ASSIGN_OR_RETURN(auto key, MakeKey(n, ns_.empty() ? default_ns_ : ns_, metric_,
                                              std::move(dims), unit_));
        it = keys_.emplace(signature_, std::move(key)).first;
      }
      runs.Add(it->second, t, v);
      return absl::OkStatus();
    });
  }

 private:
  static absl::Status ParseTimestamp(Json* j, int64_t n, int64_t* t) {
    j->Ws();
    std::string text;
    if (j->String(&text)) {
      absl::StatusOr<int64_t> ms = util::ParseTimeMs(text, 0);
      if (!ms.ok() || text.find("now") != std::string::npos) {
        return LineError(n, absl::StrFormat("\"timestamp\" \"%s\" is not an ISO-8601 time such as "
                                            "2024-01-01T00:00:00Z",
                                            text));
      }
      *t = *ms;
      return CheckTimeMs(n, "\"timestamp\"", *t);
    }
    double s;
    if (!j->Double(&s) || !std::isfinite(s)) {
      return JsonError(n, *j, "epoch seconds or an ISO-8601 string for \"timestamp\"");
    }
    return SecondsToMs(n, "\"timestamp\"", s, t);
  }

  std::string default_ns_;
  std::string key_, ns_, metric_, unit_, signature_;
  absl::flat_hash_map<std::string, std::shared_ptr<const model::SeriesKey>> keys_;
};

// ---- vmimport ---------------------------------------------------------------

class VmImportParser final : public FormatParser {
 public:
  explicit VmImportParser(std::string default_ns) : default_ns_(std::move(default_ns)) {}

  absl::Status ParseBlock(std::string_view block, int64_t first_line,
                          std::vector<SeriesRun>* out) override {
    return ForEachLine(block, first_line, [&](std::string_view line, int64_t n) -> absl::Status {
      Json j(line);
      if (!j.Eat('{')) return JsonError(n, j, "a JSON object '{'");
      SeriesRun run;
      bool have_metric = false, have_values = false, have_times = false;
      if (!j.Eat('}')) {
        while (true) {
          if (!j.String(&key_)) return JsonError(n, j, "a quoted key");
          if (!j.Eat(':')) return JsonError(n, j, "':' after a key");
          if (key_ == "metric") {
            j.Ws();
            const char* start = j.pos();
            if (!j.Skip()) return JsonError(n, j, "an object of labels for \"metric\"");
            TW_ASSIGN_OR_RETURN(run.key, KeyOf(std::string_view(start, j.pos() - start), n));
            have_metric = true;
          } else if (key_ == "values") {
            if (!j.Eat('[')) return JsonError(n, j, "an array for \"values\"");
            if (!j.Eat(']')) {
              while (true) {
                double v;
                if (!j.Double(&v)) return JsonError(n, j, "a number in \"values\"");
                TW_RETURN_IF_ERROR(CheckFinite(n, v));
                run.values.push_back(v);
                if (j.Eat(']')) break;
                if (!j.Eat(',')) return JsonError(n, j, "',' or ']' in \"values\"");
              }
            }
            have_values = true;
          } else if (key_ == "timestamps") {
            if (!j.Eat('[')) return JsonError(n, j, "an array for \"timestamps\"");
            if (!j.Eat(']')) {
              while (true) {
                int64_t t;
                if (!j.Int64(&t)) {
                  return JsonError(n, j, "integer milliseconds in \"timestamps\"");
                }
                TW_RETURN_IF_ERROR(CheckTimeMs(n, "a time in \"timestamps\"", t));
                run.t_ms.push_back(t);
                if (j.Eat(']')) break;
                if (!j.Eat(',')) return JsonError(n, j, "',' or ']' in \"timestamps\"");
              }
            }
            have_times = true;
          } else if (!j.Skip()) {
            return JsonError(n, j, absl::StrFormat("a value for \"%s\"", key_));
          }
          if (j.Eat('}')) break;
          if (!j.Eat(',')) return JsonError(n, j, "',' or '}'");
        }
      }
      if (!j.AtEnd()) return JsonError(n, j, "the end of the line after the object");
      if (!have_metric || !have_values || !have_times) {
        return LineError(n, "each line needs \"metric\", \"values\" and \"timestamps\" "
                            "(VictoriaMetrics' JSON line format)");
      }
      if (run.values.size() != run.t_ms.size()) {
        return LineError(n, absl::StrFormat("%d values but %d timestamps; the arrays must have "
                                            "the same length",
                                            run.values.size(), run.t_ms.size()));
      }
      if (!run.values.empty()) out->push_back(std::move(run));
      return absl::OkStatus();
    });
  }

 private:
  absl::StatusOr<std::shared_ptr<const model::SeriesKey>> KeyOf(std::string_view raw, int64_t n) {
    // Lines of one series repeat the same label object: parse it once.
    if (last_raw_ == raw && last_key_) return last_key_;
    auto it = keys_.find(std::string(raw));
    if (it != keys_.end()) {
      last_raw_.assign(raw);
      last_key_ = it->second;
      return last_key_;
    }
    Json j(raw);
    std::string metric, ns = default_ns_;
    std::vector<model::Dimension> dims;
    bool named = false;
    if (!j.Eat('{')) return JsonError(n, j, "an object of labels");
    if (!j.Eat('}')) {
      while (true) {
        std::string name, value;
        if (!j.String(&name) || !j.Eat(':') || !j.String(&value)) {
          return LineError(n, "\"metric\" must map label names to string values");
        }
        if (name == "__name__") {
          metric = std::move(value);
          named = true;
        } else if (name == "namespace") {
          ns = std::move(value);
        } else if (!value.empty()) {
          dims.push_back({std::move(name), std::move(value)});
        }
        if (j.Eat('}')) break;
        if (!j.Eat(',')) return LineError(n, "\"metric\": expected ',' or '}'");
      }
    }
    if (!named) return LineError(n, "the labels have no \"__name__\" (the metric name)");
    TW_ASSIGN_OR_RETURN(auto key, MakeKey(n, std::move(ns), std::move(metric), std::move(dims), ""));
    keys_.emplace(std::string(raw), key);
    last_raw_.assign(raw);
    last_key_ = key;
    return key;
  }

  std::string default_ns_;
  std::string key_;
  std::string last_raw_;
  std::shared_ptr<const model::SeriesKey> last_key_;
  absl::flat_hash_map<std::string, std::shared_ptr<const model::SeriesKey>> keys_;
};

}  // namespace

std::unique_ptr<FormatParser> MakeJsonlParser(std::string default_ns) {
  return std::make_unique<JsonlParser>(std::move(default_ns));
}

std::unique_ptr<FormatParser> MakeVmImportParser(std::string default_ns) {
  return std::make_unique<VmImportParser>(std::move(default_ns));
}

}  // namespace trainwatch::ingest::import_internal
