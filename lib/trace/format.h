// lib/trace/format.h — the framing of a .sltrace file (and of the socket stream).
//
//   file   := FileMagic frame*            (a clean file ends with a footer frame)
//   FileMagic := "SLTRACE\n" (8 bytes) u32 format_version (little endian)
//   frame  := u32 frame_magic "SLFR" | u8 type | u8 flags | u16 reserved(0)
//             | u32 payload_length | u32 crc32c(payload) | payload
//
// Frame types: 1 header (TraceHeader), 2 chunk (Chunk), 3 footer (Footer).
// Every payload is a protobuf message of proto/sightline/v1/trace.proto. A frame
// is written with one write() once complete, so a killed writer leaves every
// earlier frame intact; the reader accepts all complete frames and reports the
// partial tail. Frame magic lets the reader say "garbage at offset N" instead of
// trusting a random length.
#ifndef SIGHTLINE_LIB_TRACE_FORMAT_H_
#define SIGHTLINE_LIB_TRACE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sightline::trace {

inline constexpr char kFileMagic[8] = {'S', 'L', 'T', 'R', 'A', 'C', 'E', '\n'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kFilePreambleSize = 12;  // magic + version
inline constexpr uint32_t kFrameMagic = 0x52464c53;  // "SLFR" little endian
inline constexpr size_t kFrameHeaderSize = 16;
// Upper bound on one frame's payload; the reader refuses larger lengths.
inline constexpr uint32_t kMaxFramePayload = 64u << 20;

enum class FrameType : uint8_t { kHeader = 1, kChunk = 2, kFooter = 3 };

// A frame header: magic, type byte, 3 zero bytes, payload length, CRC-32C of
// the payload (crc32c.h), integers little endian. `type` is a byte so tests
// and fuzzers can write types this reader does not know.
inline void EncodeFrameHeader(uint8_t type, uint32_t length, uint32_t crc,
                              uint8_t out[kFrameHeaderSize]) {
  std::memset(out, 0, kFrameHeaderSize);
  std::memcpy(out, &kFrameMagic, 4);
  out[4] = type;
  std::memcpy(out + 8, &length, 4);
  std::memcpy(out + 12, &crc, 4);
}

inline constexpr const char* kTraceExtension = ".sltrace";

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_FORMAT_H_
