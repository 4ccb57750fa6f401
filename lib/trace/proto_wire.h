// lib/trace/proto_wire.h — a tiny, allocation-free protobuf wire-format
// encoder and decoder (internal to lib/trace).
//
// The collector cannot link protobuf (it lives inside the profiled process), so
// the writer encodes trace.proto messages by hand with these helpers and the
// reader decodes them the same way. Only what the schema needs is here:
// varints, zig-zag, fixed64 doubles, tags and length-delimited fields.
//
// Encoding rules (proto3): a scalar field equal to its default (0, false,
// +0.0) is omitted, unless it is declared `optional` (explicit presence).
// Encoders write into a caller-supplied buffer with enough room (see the
// kMax* bounds); they return the new end pointer.
//
// Decoding rules: WireReader never reads past `end`; every length is checked
// against the bytes present; unknown fields of every valid wire type
// (including groups) are skipped; wire types 6 and 7 are an error.
#ifndef SIGHTLINE_LIB_TRACE_PROTO_WIRE_H_
#define SIGHTLINE_LIB_TRACE_PROTO_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace sightline::trace::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

inline constexpr size_t kMaxVarintBytes = 10;
// Largest tag + varint value: field numbers used here are < 2^11 → 2-byte tag.
inline constexpr size_t kMaxScalarFieldBytes = 2 + kMaxVarintBytes;

// ---- Encoding ------------------------------------------------------------

inline size_t VarintSize(uint64_t v) {
  // 1 + floor(bits / 7), with 0 taking one byte.
  int bits = 64 - __builtin_clzll(v | 1);
  return static_cast<size_t>((bits * 9 + 64) / 64);
}

inline uint8_t* WriteVarint(uint64_t v, uint8_t* p) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline uint64_t ZigZag64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline uint32_t ZigZag32(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
inline int64_t UnZigZag64(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}
inline int32_t UnZigZag32(uint32_t v) {
  return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
}

inline constexpr uint32_t MakeTag(uint32_t field, WireType type) { return (field << 3) | type; }

inline uint8_t* WriteTag(uint32_t field, WireType type, uint8_t* p) {
  return WriteVarint(MakeTag(field, type), p);
}

// uint32/uint64/enum/bool field, omitted when zero.
inline uint8_t* PutUint(uint32_t field, uint64_t v, uint8_t* p) {
  if (v == 0) return p;
  p = WriteTag(field, kVarint, p);
  return WriteVarint(v, p);
}
// `optional` field: written whenever present, even when zero.
inline uint8_t* PutUintAlways(uint32_t field, uint64_t v, uint8_t* p) {
  p = WriteTag(field, kVarint, p);
  return WriteVarint(v, p);
}
inline uint8_t* PutSint64(uint32_t field, int64_t v, uint8_t* p) {
  return PutUint(field, ZigZag64(v), p);
}
inline uint8_t* PutSint32(uint32_t field, int32_t v, uint8_t* p) {
  return PutUint(field, ZigZag32(v), p);
}
inline uint8_t* PutBool(uint32_t field, bool v, uint8_t* p) { return PutUint(field, v ? 1 : 0, p); }
// double field, omitted when +0.0 (bit pattern zero), as protobuf does.
inline uint8_t* PutDouble(uint32_t field, double v, uint8_t* p) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  if (bits == 0) return p;
  p = WriteTag(field, kFixed64, p);
  std::memcpy(p, &bits, 8);
  return p + 8;
}
// Length-delimited field (string, bytes, message) with its contents.
inline uint8_t* PutBytes(uint32_t field, const void* data, size_t size, uint8_t* p) {
  p = WriteTag(field, kLengthDelimited, p);
  p = WriteVarint(size, p);
  if (size) std::memcpy(p, data, size);
  return p + size;
}
// A string field, omitted when empty (proto3 default).
inline uint8_t* PutString(uint32_t field, std::string_view s, uint8_t* p) {
  if (s.empty()) return p;
  return PutBytes(field, s.data(), s.size(), p);
}
// Upper bound of PutBytes' output for `size` bytes of contents.
inline size_t BytesFieldMaxSize(size_t size) { return 2 + kMaxVarintBytes + size; }

// ---- Decoding ------------------------------------------------------------

class WireReader {
 public:
  WireReader(const uint8_t* begin, const uint8_t* end) : begin_(begin), p_(begin), end_(end) {}
  explicit WireReader(std::string_view s)
      : WireReader(reinterpret_cast<const uint8_t*>(s.data()),
                   reinterpret_cast<const uint8_t*>(s.data()) + s.size()) {}

  bool done() const { return p_ >= end_; }
  // Offset of the read position from the start of this reader's input.
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  const uint8_t* position() const { return p_; }

  bool ReadVarint(uint64_t* v) {
    if (p_ < end_ && *p_ < 0x80) {  // fast path: one byte
      *v = *p_++;
      return true;
    }
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return false;
      uint8_t byte = *p_++;
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) {
        *v = result;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }

  // Reads a field tag. Fails on field number 0 or wire types 6/7.
  bool ReadTag(uint32_t* field, WireType* type) {
    uint64_t tag;
    if (!ReadVarint(&tag) || tag > 0xffffffffu) return false;
    uint32_t wire_type = static_cast<uint32_t>(tag & 7);
    *field = static_cast<uint32_t>(tag >> 3);
    if (*field == 0 || wire_type > kFixed32) return false;
    *type = static_cast<WireType>(wire_type);
    return true;
  }

  bool ReadFixed64(uint64_t* v) {
    if (end_ - p_ < 8) return false;
    std::memcpy(v, p_, 8);
    p_ += 8;
    return true;
  }
  bool ReadFixed32(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    std::memcpy(v, p_, 4);
    p_ += 4;
    return true;
  }
  bool ReadDouble(double* v) {
    uint64_t bits;
    if (!ReadFixed64(&bits)) return false;
    std::memcpy(v, &bits, 8);
    return true;
  }
  // A length-delimited field's contents (a view into the input).
  bool ReadBytes(std::string_view* out) {
    uint64_t size;
    if (!ReadVarint(&size)) return false;
    if (size > static_cast<uint64_t>(end_ - p_)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(size));
    p_ += size;
    return true;
  }
  bool ReadSubReader(WireReader* out) {
    std::string_view bytes;
    if (!ReadBytes(&bytes)) return false;
    *out = WireReader(bytes);
    return true;
  }

  // Skips one field's value of the given wire type (the tag already read).
  // Groups are skipped up to their matching end-group tag, nesting at most
  // kMaxGroupDepth deep.
  bool Skip(uint32_t field, WireType type) {
    switch (type) {
      case kVarint: {
        uint64_t ignored;
        return ReadVarint(&ignored);
      }
      case kFixed64:
        if (end_ - p_ < 8) return false;
        p_ += 8;
        return true;
      case kFixed32:
        if (end_ - p_ < 4) return false;
        p_ += 4;
        return true;
      case kLengthDelimited: {
        std::string_view ignored;
        return ReadBytes(&ignored);
      }
      case kStartGroup:
        return SkipGroup(field);
      case kEndGroup:
        return false;  // unmatched end of group
    }
    return false;
  }

 private:
  static constexpr int kMaxGroupDepth = 64;

  bool SkipGroup(uint32_t group_field) {
    uint32_t open[kMaxGroupDepth];
    int depth = 0;
    open[depth++] = group_field;
    while (depth > 0) {
      uint32_t field;
      WireType type;
      if (!ReadTag(&field, &type)) return false;
      if (type == kEndGroup) {
        if (open[depth - 1] != field) return false;
        --depth;
      } else if (type == kStartGroup) {
        if (depth == kMaxGroupDepth) return false;
        open[depth++] = field;
      } else if (!Skip(field, type)) {
        return false;
      }
    }
    return true;
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace sightline::trace::wire

#endif  // SIGHTLINE_LIB_TRACE_PROTO_WIRE_H_
