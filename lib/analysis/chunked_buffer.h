// lib/analysis/chunked_buffer.h — an append-only sequence stored in fixed-size
// blocks, for the model builder's streaming pass.
//
// Why not std::vector: a vector that grows by doubling holds up to 2× its
// size, and 3× while it reallocates; on a 5 M-event trace that is the
// difference between fitting in 2× the file size and not. Appending here never
// moves an element. Elements are random-access (so std::sort works in place
// when a stream's records arrived out of order), and blocks can be released
// from the front while the contents are moved into the final, exactly sized
// table, so the peak stays at one copy plus a block. Blocks are mapped with
// mmap (not malloc) so that a released block really leaves the process's
// resident set: glibc keeps freed sub-threshold blocks on its free lists,
// and raises its mmap threshold after large frees.
//
// T must be trivially copyable (plain event records).
#ifndef SIGHTLINE_LIB_ANALYSIS_CHUNKED_BUFFER_H_
#define SIGHTLINE_LIB_ANALYSIS_CHUNKED_BUFFER_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <new>
#include <type_traits>
#include <vector>

namespace sightline::analysis::internal {

template <typename T, size_t kBlockShift = 14>
class ChunkedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "plain records only");

 public:
  static constexpr size_t kBlockSize = size_t{1} << kBlockShift;
  static constexpr size_t kMask = kBlockSize - 1;
  static constexpr size_t kBlockBytes = kBlockSize * sizeof(T);

  ChunkedBuffer() = default;
  ChunkedBuffer(ChunkedBuffer&& o) noexcept { *this = std::move(o); }
  ChunkedBuffer& operator=(ChunkedBuffer&& o) noexcept {
    if (this != &o) {
      Clear();
      blocks_ = std::move(o.blocks_);
      size_ = o.size_;
      released_ = o.released_;
      o.blocks_.clear();
      o.size_ = 0;
      o.released_ = 0;
    }
    return *this;
  }
  ChunkedBuffer(const ChunkedBuffer&) = delete;
  ChunkedBuffer& operator=(const ChunkedBuffer&) = delete;
  ~ChunkedBuffer() { Clear(); }

  void push_back(const T& value) {
    if ((size_ & kMask) == 0) blocks_.push_back(AllocateBlock());
    new (&blocks_[size_ >> kBlockShift][size_ & kMask]) T(value);
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return blocks_[i >> kBlockShift][i & kMask]; }
  const T& operator[](size_t i) const { return blocks_[i >> kBlockShift][i & kMask]; }
  const T& back() const { return (*this)[size_ - 1]; }

  // Frees every block that lies entirely before element `i` (consumed).
  void ReleaseBefore(size_t i) {
    for (size_t b = released_; b < (i >> kBlockShift) && b < blocks_.size(); ++b) {
      FreeBlock(blocks_[b]);
      blocks_[b] = nullptr;
    }
    if ((i >> kBlockShift) > released_) released_ = i >> kBlockShift;
  }
  void Clear() {
    for (T* b : blocks_) FreeBlock(b);
    blocks_.clear();
    blocks_.shrink_to_fit();
    size_ = 0;
    released_ = 0;
  }

  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = T*;
    using reference = T&;
    Iterator() = default;
    Iterator(ChunkedBuffer* b, std::ptrdiff_t i) : buffer_(b), i_(i) {}
    reference operator*() const { return (*buffer_)[i_]; }
    pointer operator->() const { return &(*buffer_)[i_]; }
    reference operator[](difference_type n) const { return (*buffer_)[i_ + n]; }
    Iterator& operator++() { ++i_; return *this; }
    Iterator operator++(int) { Iterator t = *this; ++i_; return t; }
    Iterator& operator--() { --i_; return *this; }
    Iterator operator--(int) { Iterator t = *this; --i_; return t; }
    Iterator& operator+=(difference_type n) { i_ += n; return *this; }
    Iterator& operator-=(difference_type n) { i_ -= n; return *this; }
    Iterator operator+(difference_type n) const { return Iterator(buffer_, i_ + n); }
    friend Iterator operator+(difference_type n, const Iterator& it) { return it + n; }

    Iterator operator-(difference_type n) const { return Iterator(buffer_, i_ - n); }
    difference_type operator-(const Iterator& o) const { return i_ - o.i_; }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }
    bool operator<(const Iterator& o) const { return i_ < o.i_; }
    bool operator>(const Iterator& o) const { return i_ > o.i_; }
    bool operator<=(const Iterator& o) const { return i_ <= o.i_; }
    bool operator>=(const Iterator& o) const { return i_ >= o.i_; }

   private:
    ChunkedBuffer* buffer_ = nullptr;
    std::ptrdiff_t i_ = 0;
  };
  Iterator begin() { return Iterator(this, 0); }
  Iterator end() { return Iterator(this, static_cast<std::ptrdiff_t>(size_)); }

 private:
  static T* AllocateBlock() {
    void* p = ::mmap(nullptr, kBlockBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  static void FreeBlock(T* b) {
    if (b != nullptr) ::munmap(b, kBlockBytes);
  }

  std::vector<T*> blocks_;
  size_t size_ = 0;
  size_t released_ = 0;
};

}  // namespace sightline::analysis::internal

#endif  // SIGHTLINE_LIB_ANALYSIS_CHUNKED_BUFFER_H_
