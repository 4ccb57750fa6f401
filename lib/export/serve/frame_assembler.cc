// lib/export/serve/frame_assembler.cc — see frame_assembler.h.
#include "lib/export/serve/frame_assembler.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "lib/trace/crc32c.h"

namespace sightline::exporter {
namespace {

uint32_t LoadLe32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

bool FrameAssembler::Fail(std::string message) {
  error_ = std::move(message);
  buffer_.clear();
  return false;
}

bool FrameAssembler::Feed(const char* data, size_t size, const FrameCallback& on_frame) {
  if (!error_.empty()) return false;
  while (size > 0) {
    if (!preamble_done_) {
      size_t want = trace::kFilePreambleSize - preamble_.size();
      size_t n = std::min(want, size);
      preamble_.append(data, n);
      data += n;
      size -= n;
      offset_ += n;
      // Check the magic as soon as its bytes are there: a stranger talking to
      // the socket is refused without waiting for more.
      size_t have = std::min(preamble_.size(), sizeof(trace::kFileMagic));
      if (std::memcmp(preamble_.data(), trace::kFileMagic, have) != 0) {
        return Fail("not a sightline trace stream (bad magic at offset 0)");
      }
      if (preamble_.size() == trace::kFilePreambleSize) {
        uint32_t version = LoadLe32(preamble_.data() + 8);
        if (version == 0 || version > trace::kFormatVersion) {
          return Fail(absl::StrCat("trace format version ", version,
                                   " is not supported (this server reads up to ",
                                   trace::kFormatVersion, ")"));
        }
        preamble_done_ = true;
        frame_offset_ = offset_;
      }
      continue;
    }
    // Collect the 16-byte frame header, then the payload.
    size_t need;
    if (buffer_.size() < trace::kFrameHeaderSize) {
      need = trace::kFrameHeaderSize - buffer_.size();
    } else {
      uint32_t length = LoadLe32(buffer_.data() + 8);
      need = trace::kFrameHeaderSize + length - buffer_.size();
    }
    size_t n = std::min(need, size);
    buffer_.append(data, n);
    data += n;
    size -= n;
    offset_ += n;
    if (buffer_.size() == trace::kFrameHeaderSize) {
      uint32_t magic = LoadLe32(buffer_.data());
      if (magic != trace::kFrameMagic) {
        return Fail(absl::StrCat("bad frame magic at stream offset ", frame_offset_));
      }
      uint8_t type = static_cast<uint8_t>(buffer_[4]);
      if (type < 1 || type > 3) {
        return Fail(absl::StrCat("unknown frame type ", type, " at stream offset ",
                                 frame_offset_));
      }
      uint32_t length = LoadLe32(buffer_.data() + 8);
      if (length > trace::kMaxFramePayload) {
        return Fail(absl::StrCat("frame length ", length, " at stream offset ", frame_offset_,
                                 " exceeds the ", trace::kMaxFramePayload, "-byte limit"));
      }
    }
    if (buffer_.size() < trace::kFrameHeaderSize) continue;
    uint32_t length = LoadLe32(buffer_.data() + 8);
    if (buffer_.size() < trace::kFrameHeaderSize + length) continue;
    std::string_view payload(buffer_.data() + trace::kFrameHeaderSize, length);
    uint32_t crc = LoadLe32(buffer_.data() + 12);
    if (trace::Crc32c(payload.data(), payload.size()) != crc) {
      return Fail(absl::StrCat("CRC mismatch in frame at stream offset ", frame_offset_));
    }
    Frame frame{static_cast<trace::FrameType>(buffer_[4]), std::string_view(buffer_), payload};
    ++frames_;
    on_frame(frame);
    buffer_.clear();
    frame_offset_ = offset_;
  }
  return true;
}

}  // namespace sightline::exporter
