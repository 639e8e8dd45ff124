#include "api/cbor.h"

#include <cbor.h>

#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "simdjson.h"

namespace trainwatch::api {
namespace {

// libcbor's streaming decoder reads one item head per call and calls back;
// the tree is built here, on a stack of the open containers. Declared sizes
// are only counted down (nothing is allocated by them), so a small body
// cannot claim a huge array.
class JsonBuilder {
 public:
  JsonBuilder(size_t max_depth, size_t body_bytes)
      : max_depth_(max_depth), body_bytes_(body_bytes) {}
  // A declared length: each item takes a byte at least, so a length beyond
  // the body (or beyond int64) cannot be right.
  bool Fits(uint64_t items) {
    if (items <= body_bytes_) return true;
    Fail(absl::StrFormat("a length of %d items in a body of %d bytes", items, body_bytes_));
    return false;
  }

  bool failed() const { return error_.has_value(); }
  const std::string& error() const { return *error_; }
  void set_offset(size_t offset) { offset_ = offset; }
  bool done() const { return root_.has_value() && stack_.empty(); }
  nlohmann::json TakeRoot() { return std::move(*root_); }
  bool open() const { return !stack_.empty(); }

  void Fail(std::string what) {
    if (!error_) error_ = absl::StrFormat("%s at byte %d", what, offset_);
  }

  void Value(nlohmann::json v) {
    if (failed()) return;
    if (stack_.empty()) {
      if (root_) return Fail("a second data item after the first");
      root_ = std::move(v);
      return;
    }
    Frame& top = stack_.back();
    switch (top.kind) {
      case Frame::kText:
        return Fail("an indefinite-length text string holds a chunk that is not text");
      case Frame::kTag:
        if (!v.is_number()) return Fail("a timestamp (tag 1) that is not a number");
        stack_.pop_back();
        return Value(std::move(v));
      case Frame::kArray:
        top.value.push_back(std::move(v));
        break;
      case Frame::kMap:
        if (top.expecting_key) {
          if (!v.is_string()) return Fail("a map key that is not a text string");
          top.key = v.get<std::string>();
          top.expecting_key = false;
          return;
        }
        top.value[top.key] = std::move(v);
        top.expecting_key = true;
        break;
    }
    if (top.remaining > 0 && --top.remaining == 0) Close();
  }

  void Text(std::string_view text) {
    if (failed()) return;
    if (!simdjson::validate_utf8(text.data(), text.size())) {
      return Fail("a text string that is not valid UTF-8");
    }
    if (!stack_.empty() && stack_.back().kind == Frame::kText) {
      stack_.back().text.append(text);
      return;
    }
    Value(std::string(text));
  }

  // `size` < 0: indefinite length.
  void Open(bool map, int64_t size) {
    if (failed()) return;
    if (stack_.size() >= max_depth_) {
      return Fail(absl::StrFormat("nesting deeper than %d levels", max_depth_));
    }
    Frame f;
    f.kind = map ? Frame::kMap : Frame::kArray;
    f.value = map ? nlohmann::json::object() : nlohmann::json::array();
    f.remaining = size;
    stack_.push_back(std::move(f));
    if (size == 0) Close();
  }

  void OpenText() {
    if (failed()) return;
    if (stack_.size() >= max_depth_) return Fail("nesting too deep");
    Frame f;
    f.kind = Frame::kText;
    f.remaining = -1;
    stack_.push_back(std::move(f));
  }

  void Tag(uint64_t tag) {
    if (failed()) return;
    if (tag != 1) {
      return Fail(absl::StrFormat(
          "CBOR tag %d (Smithy RPC v2 CBOR inputs use tag 1, timestamps, only)", tag));
    }
    if (stack_.size() >= max_depth_) return Fail("nesting too deep");
    Frame f;
    f.kind = Frame::kTag;
    f.remaining = 1;
    stack_.push_back(std::move(f));
  }

  void Break() {
    if (failed()) return;
    if (stack_.empty() || stack_.back().remaining >= 0 || stack_.back().kind == Frame::kTag) {
      return Fail("a break (0xff) outside an indefinite-length item");
    }
    Frame& top = stack_.back();
    if (top.kind == Frame::kMap && !top.expecting_key) return Fail("a map key without a value");
    if (top.kind == Frame::kText) {
      std::string text = std::move(top.text);
      stack_.pop_back();
      return Value(std::move(text));
    }
    Close();
  }

 private:
  struct Frame {
    enum Kind { kArray, kMap, kTag, kText } kind = kArray;
    nlohmann::json value;
    int64_t remaining = -1;  // items (map: pairs) still to come; -1: indefinite
    bool expecting_key = true;
    std::string key;
    std::string text;  // kText: the chunks so far
  };

  void Close() {
    nlohmann::json v = std::move(stack_.back().value);
    stack_.pop_back();
    Value(std::move(v));
  }

  size_t max_depth_;
  size_t body_bytes_;
  size_t offset_ = 0;
  std::vector<Frame> stack_;
  std::optional<nlohmann::json> root_;
  std::optional<std::string> error_;
};

JsonBuilder& B(void* context) { return *static_cast<JsonBuilder*>(context); }

void Unsigned(void* c, uint64_t v) { B(c).Value(v); }
void Negative(void* c, uint64_t n) {
  // -1 - n, as an integer where it fits.
  if (n <= static_cast<uint64_t>(INT64_MAX)) {
    B(c).Value(-1 - static_cast<int64_t>(n));
  } else {
    B(c).Value(-1.0 - static_cast<double>(n));
  }
}

struct cbor_callbacks Callbacks() {
  struct cbor_callbacks cb = cbor_empty_callbacks;
  cb.uint8 = [](void* c, uint8_t v) { Unsigned(c, v); };
  cb.uint16 = [](void* c, uint16_t v) { Unsigned(c, v); };
  cb.uint32 = [](void* c, uint32_t v) { Unsigned(c, v); };
  cb.uint64 = [](void* c, uint64_t v) { Unsigned(c, v); };
  cb.negint8 = [](void* c, uint8_t v) { Negative(c, v); };
  cb.negint16 = [](void* c, uint16_t v) { Negative(c, v); };
  cb.negint32 = [](void* c, uint32_t v) { Negative(c, v); };
  cb.negint64 = [](void* c, uint64_t v) { Negative(c, v); };
  cb.byte_string_start = [](void* c) {
    B(c).Fail("a byte string (no CloudWatch input has one)");
  };
  cb.byte_string = [](void* c, cbor_data, size_t) {
    B(c).Fail("a byte string (no CloudWatch input has one)");
  };
  cb.string = [](void* c, cbor_data data, size_t size) {
    B(c).Text(std::string_view(reinterpret_cast<const char*>(data), size));
  };
  cb.string_start = [](void* c) { B(c).OpenText(); };
  cb.indef_array_start = [](void* c) { B(c).Open(false, -1); };
  cb.array_start = [](void* c, size_t size) {
    if (B(c).Fits(size)) B(c).Open(false, static_cast<int64_t>(size));
  };
  cb.indef_map_start = [](void* c) { B(c).Open(true, -1); };
  cb.map_start = [](void* c, size_t size) {
    if (B(c).Fits(size)) B(c).Open(true, static_cast<int64_t>(size));
  };
  cb.tag = [](void* c, uint64_t tag) { B(c).Tag(tag); };
  cb.float2 = [](void* c, float v) { B(c).Value(static_cast<double>(v)); };
  cb.float4 = [](void* c, float v) { B(c).Value(static_cast<double>(v)); };
  cb.float8 = [](void* c, double v) { B(c).Value(v); };
  cb.undefined = [](void* c) { B(c).Value(nullptr); };
  cb.null = [](void* c) { B(c).Value(nullptr); };
  cb.boolean = [](void* c, bool v) { B(c).Value(v); };
  cb.indef_break = [](void* c) { B(c).Break(); };
  return cb;
}

}  // namespace

absl::StatusOr<nlohmann::json> DecodeCbor(std::string_view bytes, size_t max_depth) {
  if (bytes.empty()) return nlohmann::json::object();
  static const struct cbor_callbacks callbacks = Callbacks();
  JsonBuilder builder(max_depth, bytes.size());
  const auto* data = reinterpret_cast<cbor_data>(bytes.data());
  size_t offset = 0;
  while (offset < bytes.size() && !builder.failed()) {
    if (builder.done()) {
      builder.set_offset(offset);
      builder.Fail("bytes after the data item");
      break;
    }
    builder.set_offset(offset);
    struct cbor_decoder_result r =
        cbor_stream_decode(data + offset, bytes.size() - offset, &callbacks, &builder);
    if (r.status == CBOR_DECODER_NEDATA) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "The CBOR body ends inside an item at byte %d (%d bytes short).", offset, r.required));
    }
    if (r.status == CBOR_DECODER_ERROR || r.read == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("The CBOR body is not well-formed at byte %d.", offset));
    }
    offset += r.read;
  }
  if (builder.failed()) {
    return absl::InvalidArgumentError("The CBOR body has " + builder.error() + ".");
  }
  if (!builder.done()) {
    return absl::InvalidArgumentError(
        "The CBOR body ends before its indefinite-length items are closed.");
  }
  return builder.TakeRoot();
}

}  // namespace trainwatch::api
