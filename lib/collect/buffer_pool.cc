// lib/collect/buffer_pool.cc — see buffer_pool.h.
#include "lib/collect/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace sightline::collect {

ActivityBufferPool::ActivityBufferPool(size_t buffer_bytes, uint32_t initial_buffers,
                                       uint32_t max_buffers, void (*notify)(void*),
                                       void* notify_arg)
    : buffer_bytes_((buffer_bytes + 7) & ~size_t{7}),
      max_buffers_(max_buffers < 1 ? 1 : max_buffers),
      notify_(notify),
      notify_arg_(notify_arg) {
  MutexLock lock(mu_);
  free_.reserve(max_buffers_);
  queue_.reserve(max_buffers_);
  for (uint32_t i = 0; i < initial_buffers && i < max_buffers_; ++i) {
    uint8_t* b = AllocateLocked();
    if (b == nullptr) break;
    free_.push_back(b);
  }
}

ActivityBufferPool::~ActivityBufferPool() {
  MutexLock lock(mu_);
  for (uint8_t* b : free_) std::free(b);
  for (const CompletedBuffer& c : queue_) std::free(c.data);
  // Outstanding buffers belong to CUPTI (or to another client): leaked on purpose.
}

uint8_t* ActivityBufferPool::AllocateLocked() {
  if (all_.size() >= max_buffers_) return nullptr;
  void* p = std::calloc(1, buffer_bytes_);  // zeroed (fresh pages for large sizes); 16-aligned
  if (p == nullptr) return nullptr;
  auto* b = static_cast<uint8_t*>(p);
  all_.insert(b);
  ++stats_.allocated;
  return b;
}

uint8_t* ActivityBufferPool::Acquire() {
  MutexLock lock(mu_);
  uint8_t* b = nullptr;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    b = AllocateLocked();
    if (b == nullptr) {
      ++stats_.dropped_requests;
      return nullptr;
    }
    ++stats_.grown_in_callback;
  }
  handed_out_.insert(b);
  ++stats_.outstanding;
  return b;
}

bool ActivityBufferPool::Complete(uint8_t* data, size_t valid_bytes, uint32_t stream_id) {
  {
    MutexLock lock(mu_);
    auto it = handed_out_.find(data);
    if (it == handed_out_.end()) {
      ++stats_.foreign_completions;
      return false;
    }
    handed_out_.erase(it);
    --stats_.outstanding;
    ++stats_.completed;
    stats_.completed_bytes += valid_bytes;
    if (valid_bytes > buffer_bytes_) valid_bytes = buffer_bytes_;
    queue_.push_back({data, valid_bytes, stream_id});
  }
  if (notify_ != nullptr) notify_(notify_arg_);
  return true;
}

size_t ActivityBufferPool::TakeCompleted(std::vector<CompletedBuffer>* out) {
  MutexLock lock(mu_);
  size_t n = queue_.size();
  out->insert(out->end(), queue_.begin(), queue_.end());
  queue_.clear();
  return n;
}

void ActivityBufferPool::Release(uint8_t* data, size_t used_bytes) {
  {
    MutexLock lock(mu_);
    if (all_.count(data) == 0) return;
  }
  // Outside the lock: the buffer is neither free nor handed out, so it is ours.
  std::memset(data, 0, std::min(used_bytes, buffer_bytes_));
  MutexLock lock(mu_);
  free_.push_back(data);
}

uint32_t ActivityBufferPool::Replenish(uint32_t spare) {
  MutexLock lock(mu_);
  uint32_t added = 0;
  while (free_.size() < spare) {
    uint8_t* b = AllocateLocked();
    if (b == nullptr) break;
    free_.push_back(b);
    ++added;
  }
  return added;
}

BufferPoolStats ActivityBufferPool::stats() const {
  MutexLock lock(mu_);
  BufferPoolStats s = stats_;
  s.queued = queue_.size();
  return s;
}

}  // namespace sightline::collect
