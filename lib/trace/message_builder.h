// lib/trace/message_builder.h — a simple std::string-backed protobuf message
// builder for the cold path (trace header, footer, call stacks). Internal to
// lib/trace; libc++ only. The hot path (events) uses event_encoder.h instead.
#ifndef SIGHTLINE_LIB_TRACE_MESSAGE_BUILDER_H_
#define SIGHTLINE_LIB_TRACE_MESSAGE_BUILDER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/trace/proto_wire.h"

namespace sightline::trace::internal {

class MessageBuilder {
 public:
  // Scalars are omitted when zero (proto3 defaults).
  MessageBuilder& Uint(uint32_t field, uint64_t v) { return Raw(wire::PutUint(field, v, tmp_)); }
  MessageBuilder& Sint32(uint32_t field, int32_t v) { return Raw(wire::PutSint32(field, v, tmp_)); }
  MessageBuilder& Double(uint32_t field, double v) { return Raw(wire::PutDouble(field, v, tmp_)); }
  MessageBuilder& String(uint32_t field, std::string_view s) {
    if (!s.empty()) Bytes(field, s);
    return *this;
  }
  // Always written (repeated strings keep empty elements; messages keep presence).
  MessageBuilder& Bytes(uint32_t field, std::string_view s) {
    uint8_t* p = wire::WriteTag(field, wire::kLengthDelimited, tmp_);
    p = wire::WriteVarint(s.size(), p);
    out_.append(reinterpret_cast<const char*>(tmp_), static_cast<size_t>(p - tmp_));
    out_.append(s.data(), s.size());
    return *this;
  }
  MessageBuilder& Message(uint32_t field, const MessageBuilder& m) { return Bytes(field, m.out_); }

  const std::string& bytes() const { return out_; }
  std::string& mutable_bytes() { return out_; }

 private:
  MessageBuilder& Raw(uint8_t* end) {
    out_.append(reinterpret_cast<const char*>(tmp_), static_cast<size_t>(end - tmp_));
    return *this;
  }
  uint8_t tmp_[wire::kMaxScalarFieldBytes + 8];
  std::string out_;
};

}  // namespace sightline::trace::internal

#endif  // SIGHTLINE_LIB_TRACE_MESSAGE_BUILDER_H_
