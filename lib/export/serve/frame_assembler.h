// lib/export/serve/frame_assembler.h — reassembles the .sltrace framing
// (lib/trace/format.h) from a byte stream that arrives in arbitrary pieces.
//
// A socket delivers a traced process's stream in whatever sizes the kernel
// chooses; the server must write whole, CRC-checked frames only, so that a
// client dying mid-frame leaves a file that is readable up to its last
// complete frame. Memory: the preamble plus at most one partial frame
// (bounded by trace::kMaxFramePayload); complete frames are handed out as
// views into the assembler's buffer and are invalid after the callback.
#ifndef SIGHTLINE_LIB_EXPORT_SERVE_FRAME_ASSEMBLER_H_
#define SIGHTLINE_LIB_EXPORT_SERVE_FRAME_ASSEMBLER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "lib/trace/format.h"

namespace sightline::exporter {

struct Frame {
  trace::FrameType type;
  std::string_view bytes;    // header + payload, exactly as received
  std::string_view payload;
};

class FrameAssembler {
 public:
  using FrameCallback = std::function<void(const Frame&)>;

  // Consumes `size` bytes; calls `on_frame` for each frame completed by them.
  // Returns false once the stream is unusable (not a trace, newer format,
  // bad frame magic, oversized length, CRC mismatch); error() says why and
  // at which stream offset. Further calls then return false at once.
  bool Feed(const char* data, size_t size, const FrameCallback& on_frame);

  bool has_preamble() const { return preamble_done_; }
  std::string_view preamble() const { return std::string_view(preamble_); }
  // Bytes of an incomplete frame held back (lost if the stream ends now).
  size_t partial_bytes() const { return buffer_.size(); }
  uint64_t bytes_fed() const { return offset_; }
  uint64_t frames() const { return frames_; }
  const std::string& error() const { return error_; }

 private:
  bool Fail(std::string message);
  std::string preamble_;
  std::string buffer_;  // bytes of the frame in progress
  bool preamble_done_ = false;
  uint64_t offset_ = 0;        // stream bytes consumed
  uint64_t frame_offset_ = 0;  // stream offset of the frame in progress
  uint64_t frames_ = 0;
  std::string error_;
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_SERVE_FRAME_ASSEMBLER_H_
