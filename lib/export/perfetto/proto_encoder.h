// lib/export/perfetto/proto_encoder.h — an append-only protobuf encoder for
// the Perfetto exporter (no generated code, no allocation once the buffer has
// grown to its working size).
//
// Nested messages are written in place: BeginNested() reserves a 4-byte
// "redundant" varint for the length (0x80 0x80 0x80 0x00 form, as Perfetto's
// own protozero writer does; every protobuf parser accepts it) and
// EndNested() patches it, so no sub-message is ever copied. Nesting depth is
// the caller's business; a nested message must stay below 256 MiB.
#ifndef SIGHTLINE_LIB_EXPORT_PERFETTO_PROTO_ENCODER_H_
#define SIGHTLINE_LIB_EXPORT_PERFETTO_PROTO_ENCODER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sightline::exporter::proto {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class Encoder {
 public:
  explicit Encoder(std::string* out) : out_(out) {}

  void Varint(uint32_t field, uint64_t value) {
    Tag(field, kVarint);
    RawVarint(value);
  }
  void Int(uint32_t field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  void Bool(uint32_t field, bool value) { Varint(field, value ? 1 : 0); }
  void Fixed64(uint32_t field, uint64_t value) {
    Tag(field, kFixed64);
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(value >> (8 * i));
    out_->append(b, 8);
  }
  void Double(uint32_t field, double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    Fixed64(field, bits);
  }
  void Bytes(uint32_t field, std::string_view value) {
    Tag(field, kLengthDelimited);
    RawVarint(value.size());
    out_->append(value.data(), value.size());
  }

  // Returns a token for EndNested.
  size_t BeginNested(uint32_t field) {
    Tag(field, kLengthDelimited);
    size_t at = out_->size();
    out_->append("\x80\x80\x80\x00", 4);
    return at;
  }
  void EndNested(size_t token) {
    size_t len = out_->size() - token - 4;
    char* p = &(*out_)[token];
    p[0] = static_cast<char>(0x80 | (len & 0x7f));
    p[1] = static_cast<char>(0x80 | ((len >> 7) & 0x7f));
    p[2] = static_cast<char>(0x80 | ((len >> 14) & 0x7f));
    p[3] = static_cast<char>((len >> 21) & 0x7f);
  }

  void RawVarint(uint64_t v) {
    char b[10];
    size_t n = 0;
    while (v >= 0x80) {
      b[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    b[n++] = static_cast<char>(v);
    out_->append(b, n);
  }

 private:
  void Tag(uint32_t field, WireType type) { RawVarint((uint64_t{field} << 3) | type); }
  std::string* out_;
};

}  // namespace sightline::exporter::proto

#endif  // SIGHTLINE_LIB_EXPORT_PERFETTO_PROTO_ENCODER_H_
