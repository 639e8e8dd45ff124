#pragma once
// Byte encodings for keys and values of the store.
//
// Keys sort bytewise (RocksDB's default comparator), so numbers in keys are
// big-endian, signed ones with the sign bit flipped, and strings in composite
// keys are escaped and terminated so that ("a", "b") < ("a\0", ...) < ("ab", ...)
// holds for the bytes as for the tuples. Values use little-endian varints and
// raw IEEE-754 doubles.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace trainwatch::store::coding {

inline void PutBig64(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, 8);
}

inline uint64_t GetBig64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Signed, order-preserving: INT64_MIN -> 0x00..., -1 -> 0x7f ff..., 0 -> 0x80 00...
inline void PutOrderedI64(std::string* out, int64_t v) {
  PutBig64(out, static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
}
inline int64_t GetOrderedI64(const char* p) {
  return static_cast<int64_t>(GetBig64(p) ^ (uint64_t{1} << 63));
}

// Escaped string: 0x00 -> 0x00 0xff, terminated by 0x00 0x01.
inline void PutOrderedString(std::string* out, std::string_view s) {
  for (char c : s) {
    out->push_back(c);
    if (c == '\0') out->push_back('\xff');
  }
  out->push_back('\0');
  out->push_back('\x01');
}

// Reads an escaped string from the front of *in; false on malformed input.
inline bool GetOrderedString(std::string_view* in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in->size(); ++i) {
    char c = (*in)[i];
    if (c != '\0') {
      out->push_back(c);
      continue;
    }
    if (i + 1 >= in->size()) return false;
    char next = (*in)[i + 1];
    if (next == '\xff') {
      out->push_back('\0');
      ++i;
    } else if (next == '\x01') {
      in->remove_prefix(i + 2);
      return true;
    } else {
      return false;
    }
  }
  return false;
}

inline void PutVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

inline bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    uint8_t byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}
inline void PutVarintSigned(std::string* out, int64_t v) { PutVarint64(out, ZigZag(v)); }
inline bool GetVarintSigned(std::string_view* in, int64_t* v) {
  uint64_t u;
  if (!GetVarint64(in, &u)) return false;
  *v = UnZigZag(u);
  return true;
}

inline void PutDouble(std::string* out, double d) {
  char buf[8];
  std::memcpy(buf, &d, 8);
  out->append(buf, 8);
}
inline bool GetDouble(std::string_view* in, double* d) {
  if (in->size() < 8) return false;
  std::memcpy(d, in->data(), 8);
  in->remove_prefix(8);
  return true;
}

inline void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutVarint64(out, s.size());
  out->append(s.data(), s.size());
}
inline bool GetLengthPrefixed(std::string_view* in, std::string_view* s) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n > in->size()) return false;
  *s = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

// The smallest key greater than every key starting with `prefix` (for
// iteration upper bounds); empty when there is none (prefix all 0xff).
inline std::string PrefixSuccessor(std::string prefix) {
  while (!prefix.empty()) {
    unsigned char last = static_cast<unsigned char>(prefix.back());
    if (last != 0xff) {
      prefix.back() = static_cast<char>(last + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return prefix;
}

}  // namespace trainwatch::store::coding
