// InputWindow: the reader's bytes, from memory or from pread() (see the header).
#include "lib/trace/input_window.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sightline::trace::internal {

namespace {
constexpr char kFrameMagicBytes[4] = {'S', 'L', 'F', 'R'};  // format.h kFrameMagic
}  // namespace

InputWindow::InputWindow(std::string_view data)
    : memory_(reinterpret_cast<const uint8_t*>(data.data())),
      size_(data.size()),
      size_at_open_(data.size()) {
  // An empty view may carry a null pointer; Get never dereferences it then
  // (callers check sizes first), but keep memory_ non-null to select the
  // memory path.
  static const uint8_t kEmpty = 0;
  if (memory_ == nullptr) memory_ = &kEmpty;
}

InputWindow::InputWindow(int fd, uint64_t size, size_t block_bytes)
    : fd_(fd),
      size_(size),
      size_at_open_(size),
      block_bytes_(std::clamp(block_bytes, kMinBlockBytes, kMaxBlockBytes)) {}

InputWindow::~InputWindow() {
  if (fd_ >= 0) ::close(fd_);
}

const uint8_t* InputWindow::Fill(uint64_t offset, size_t n) {
  if (read_errno_ != 0) return nullptr;
  // Read a whole block ahead (fewer system calls), but never past the end.
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(std::max(n, block_bytes_), size_ - offset));
  // Bytes of the current window that the new one starts with (the part of
  // a frame that straddles the old window's end) are kept, not read again.
  size_t keep = 0;
  const uint8_t* keep_from = nullptr;
  if (offset >= window_start_ && offset < window_start_ + window_length_) {
    keep = static_cast<size_t>(window_start_ + window_length_ - offset);
    keep_from = buffer_.get() + (offset - window_start_);
  }
  if (want > capacity_) {
    // Grows only for a frame larger than a block (bounded by kMaxFramePayload,
    // and by the file's size: callers check lengths against size() first).
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[want]);
    if (keep > 0) std::memcpy(bigger.get(), keep_from, keep);
    buffer_ = std::move(bigger);
    capacity_ = want;
  } else if (keep > 0 && keep_from != buffer_.get()) {
    std::memmove(buffer_.get(), keep_from, keep);
  }
  window_start_ = offset;
  window_length_ = keep;
  window_bytes_ += keep;
  while (window_length_ < want) {
    ssize_t got = ::pread(fd_, buffer_.get() + window_length_, want - window_length_,
                          static_cast<off_t>(offset + window_length_));
    if (got < 0) {
      if (errno == EINTR) continue;
      read_errno_ = errno;
      read_error_at_ = offset + window_length_;
      return nullptr;
    }
    if (got == 0) {
      // End of file before the size seen at open: the file shrank. What was
      // read stays usable; nothing beyond it is trusted any more.
      size_ = offset + window_length_;
      ++shrink_count_;
      return nullptr;
    }
    window_length_ += static_cast<size_t>(got);
    window_bytes_ += static_cast<uint64_t>(got);
  }
  return buffer_.get();
}

bool InputWindow::FrameMagicAt(uint64_t offset) {
  if (offset + 4 > size_) return false;
  if (memory_ != nullptr) return std::memcmp(memory_ + offset, kFrameMagicBytes, 4) == 0;
  if (offset >= window_start_ && offset + 4 <= window_start_ + window_length_) {
    return std::memcmp(buffer_.get() + (offset - window_start_), kFrameMagicBytes, 4) == 0;
  }
  uint8_t bytes[4];
  ssize_t got;
  do {
    got = ::pread(fd_, bytes, 4, static_cast<off_t>(offset));
  } while (got < 0 && errno == EINTR);
  if (got > 0) window_bytes_ += static_cast<uint64_t>(got);
  return got == 4 && std::memcmp(bytes, kFrameMagicBytes, 4) == 0;
}

bool InputWindow::FindFrameMagic(uint64_t from, uint64_t* offset) {
  if (from >= size_) {
    *offset = size_;
    return true;
  }
  if (memory_ != nullptr) {
    const void* hit = memmem(memory_ + from, size_ - from, kFrameMagicBytes, 4);
    *offset = hit ? static_cast<uint64_t>(static_cast<const uint8_t*>(hit) - memory_) : size_;
    return true;
  }
  // Scan block by block, overlapping by 3 bytes so that a magic across a
  // block boundary is found. Bytes already in the window are scanned where
  // they are: after damage the reader searches from one candidate to the
  // next, a few bytes apart, and re-reading a whole block for each search
  // made that quadratic in I/O.
  while (from < size_) {
    const uint8_t* p;
    size_t n;
    const uint64_t window_end = std::min<uint64_t>(window_start_ + window_length_, size_);
    if (from >= window_start_ && from + 4 <= window_end) {
      p = buffer_.get() + (from - window_start_);
      n = static_cast<size_t>(window_end - from);
    } else {
      n = static_cast<size_t>(std::min<uint64_t>(size_ - from, block_bytes_));
      p = Get(from, n);
      if (p == nullptr) return false;
    }
    const void* hit = memmem(p, n, kFrameMagicBytes, 4);
    if (hit != nullptr) {
      *offset = from + static_cast<uint64_t>(static_cast<const uint8_t*>(hit) - p);
      return true;
    }
    if (from + n >= size_) break;
    from += n - 3;  // n >= 4 here (a window remainder) or n == block_bytes_
  }
  *offset = size_;
  return true;
}

}  // namespace sightline::trace::internal
