// lib/trace/byte_buffer.h — a growable byte buffer for the writer's hot path
// (internal to lib/trace).
//
// Unlike std::vector it never zero-fills and never throws: Reserve() returns
// false when memory is exhausted and the caller drops the item (counted).
// Typical use: `if (!buf.Reserve(max)) fail; uint8_t* p = buf.end(); ...
// encode into p ...; buf.CommitTo(p);`.
#ifndef SIGHTLINE_LIB_TRACE_BYTE_BUFFER_H_
#define SIGHTLINE_LIB_TRACE_BYTE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace sightline::trace::internal {

class ByteBuffer {
 public:
  ByteBuffer() = default;
  ~ByteBuffer() { std::free(data_); }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  // Ensures room for `extra` more bytes beyond size().
  bool Reserve(size_t extra) {
    if (capacity_ - size_ >= extra) return true;
    size_t want = capacity_ ? capacity_ : 4096;
    while (want - size_ < extra) {
      if (want > (SIZE_MAX >> 2)) return false;
      want *= 2;
    }
    void* grown = std::realloc(data_, want);
    if (grown == nullptr) return false;
    data_ = static_cast<uint8_t*>(grown);
    capacity_ = want;
    return true;
  }
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Write position; valid for Reserve()d bytes.
  uint8_t* end() { return data_ + size_; }
  void CommitTo(uint8_t* new_end) { size_ = static_cast<size_t>(new_end - data_); }
  void Resize(size_t size) { size_ = size; }  // size <= capacity
  bool Append(const void* bytes, size_t n) {
    if (!Reserve(n)) return false;
    if (n) std::memcpy(data_ + size_, bytes, n);
    size_ += n;
    return true;
  }
  void Clear() { size_ = 0; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace sightline::trace::internal

#endif  // SIGHTLINE_LIB_TRACE_BYTE_BUFFER_H_
