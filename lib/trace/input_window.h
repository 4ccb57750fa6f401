// lib/trace/input_window.h — where TraceReader gets its bytes: a caller's
// buffer, or a file read with pread() into one reusable buffer. Internal to
// lib/trace.
//
// Why pread and not mmap: a mapped file that another process truncates
// (a trace being rewritten, a file on a network filesystem shrinking) raises
// SIGBUS when the reader touches the vanished pages, and no check before the
// touch closes that race. pread() instead reports the end of the file (0
// bytes) or an error, so a file that shrinks or fails while being read is
// damage to report, never a crash. It also means the CRC is checked on the
// very bytes that are decoded, even if the file changes underneath.
//
// Memory: one buffer of max(block_bytes, largest frame requested) bytes;
// frames are bounded by kMaxFramePayload (format.h), so reading a file of any
// size costs O(block + frame), never the file's size. The page cache, not
// this process, holds the file.
//
// The window only ever moves forward in the normal case (frames are read in
// order); a request before the window (rare: after damage) is read again.
#ifndef SIGHTLINE_LIB_TRACE_INPUT_WINDOW_H_
#define SIGHTLINE_LIB_TRACE_INPUT_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace sightline::trace::internal {

class InputWindow {
 public:
  // Bounds of ReaderOptions::read_block_bytes (smaller or larger values are
  // clamped).
  static constexpr size_t kMinBlockBytes = 64;
  static constexpr size_t kMaxBlockBytes = size_t{64} << 20;

  // Over `data` in memory (not copied; it must outlive the window).
  explicit InputWindow(std::string_view data);
  // Over an open file `fd` (owned: closed by the destructor) that held
  // `size` bytes when it was opened; reads in blocks of `block_bytes`.
  InputWindow(int fd, uint64_t size, size_t block_bytes);
  ~InputWindow();
  InputWindow(const InputWindow&) = delete;
  InputWindow& operator=(const InputWindow&) = delete;

  // Bytes the input holds as far as known: the size at open, lowered when
  // the file turns out to have shrunk.
  uint64_t size() const { return size_; }
  uint64_t size_at_open() const { return size_at_open_; }

  // Bytes [offset, offset + n) (requires offset + n <= size()), valid until
  // the next call. nullptr when the input ended early or a read failed:
  //  - the file shrank: size() is lowered to where it now ends and
  //    shrank_to() says so; the caller retries against the new size;
  //  - a read error: read_errno() is set (and stays set).
  // A shrink is reported (nullptr) even when the requested bytes happen to
  // be present, so that every decision of the caller sees one consistent
  // size.
  const uint8_t* Get(uint64_t offset, size_t n) {
    if (memory_ != nullptr) return memory_ + offset;
    if (offset >= window_start_ && offset + n <= window_start_ + window_length_) {
      return buffer_.get() + (offset - window_start_);
    }
    return Fill(offset, n);
  }

  // Offset of the first frame magic ("SLFR") at or after `from`, or size()
  // when there is none. false when the input ended early or a read failed
  // (as for Get).
  bool FindFrameMagic(uint64_t from, uint64_t* offset);

  // Whether the 4 bytes at `offset` (offset + 4 <= size()) are a frame magic,
  // read with one small pread when outside the window (the window stays as
  // it is). false on a read error or shrink (reported as for Get on the
  // next Get).
  bool FrameMagicAt(uint64_t offset);

  int read_errno() const { return read_errno_; }
  // Offset of the failed read (valid when read_errno() != 0).
  uint64_t read_error_at() const { return read_error_at_; }
  // Number of times the file was found shorter than expected.
  int shrink_count() const { return shrink_count_; }
  // Bytes brought into the window so far: read from the file, or moved when
  // a refill keeps the tail of the previous window (0 for memory input).
  // The reader's I/O and copy work, checked by the resync tests.
  uint64_t window_bytes() const { return window_bytes_; }

 private:
  const uint8_t* Fill(uint64_t offset, size_t n);

  const uint8_t* memory_ = nullptr;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t size_at_open_ = 0;
  size_t block_bytes_ = 0;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_ = 0;
  uint64_t window_start_ = 0;
  size_t window_length_ = 0;
  int read_errno_ = 0;
  uint64_t read_error_at_ = 0;
  int shrink_count_ = 0;
  uint64_t window_bytes_ = 0;
};

}  // namespace sightline::trace::internal

#endif  // SIGHTLINE_LIB_TRACE_INPUT_WINDOW_H_
