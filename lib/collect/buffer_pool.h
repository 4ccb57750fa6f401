// lib/collect/buffer_pool.h — bounded pool of CUPTI activity buffers and the
// hand-off queue from CUPTI's threads to the collector's writer thread.
//
// CUPTI asks for an empty buffer (Acquire) on whatever thread needs one and
// hands it back full (Complete) on its own callback thread; neither may block
// on I/O. Acquire pops a free buffer; only when none is free and fewer than
// `max_buffers` exist does it allocate (counted, since an allocation there skews
// launch timings — Kineto #685); the writer thread keeps `spare` buffers ready
// with Replenish(). When all `max_buffers` are in use, Acquire returns nullptr:
// CUPTI then drops that buffer's records and counts them (safe since CUPTI API
// version 27), and we count the refused request in dropped_requests.
//
// Buffers are never freed while the process runs (another CUPTI client that
// took over the callbacks may still hold one), only reused.
//
// Every buffer handed out is all zeroes (allocated zeroed, and Release clears
// the bytes CUPTI wrote, on the writer thread), so the collector can set
// CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER and CUPTI does not clear a
// whole buffer on the application thread that asked for it.
//
// Lock order: the pool's mutex is a leaf; nothing is called while holding it
// except the notify function, which must be async-signal-safe-ish (a write()).
#ifndef SIGHTLINE_LIB_COLLECT_BUFFER_POOL_H_
#define SIGHTLINE_LIB_COLLECT_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "lib/trace/thread_annotations.h"

namespace sightline::collect {

struct CompletedBuffer {
  uint8_t* data = nullptr;
  size_t valid_bytes = 0;
  uint32_t stream_id = 0;
};

struct BufferPoolStats {
  uint64_t allocated = 0;          // buffers that exist
  uint64_t outstanding = 0;        // handed to CUPTI, not completed yet
  uint64_t queued = 0;             // completed, not yet taken by the writer
  uint64_t dropped_requests = 0;   // Acquire returned nullptr
  uint64_t grown_in_callback = 0;  // Acquire had to allocate
  uint64_t foreign_completions = 0;  // Complete() with a buffer not ours
  uint64_t completed = 0;
  uint64_t completed_bytes = 0;
};

// Whether the writer's next cuptiActivityFlushAll must be forced: at least
// three quarters of the pool's max_buffers are out with CUPTI. A plain flush
// returns only buffers whose records are all complete; CUPTI can keep a
// buffer per kernel-replayed launch (and ~1.5 per sequence pass) out past
// such flushes (H200, CUDA 13.0, 2026-12-06: the LM's measured steps, a
// buffer requested per replayed launch, 256 out after 71 s, then 1334
// records refused). A forced flush
// returns them; a record still incomplete in one (a kernel in flight on
// another stream) comes back without timestamps and is counted as invalid,
// where a refused buffer would lose all its records.
inline bool PoolNeedsForcedFlush(const BufferPoolStats& s, uint32_t max_buffers) {
  return max_buffers > 0 && s.outstanding * 4 >= uint64_t{max_buffers} * 3;
}

class ActivityBufferPool {
 public:
  // `notify` is called (outside no lock but the pool's) after a completion;
  // may be null.
  ActivityBufferPool(size_t buffer_bytes, uint32_t initial_buffers, uint32_t max_buffers,
                     void (*notify)(void*) = nullptr, void* notify_arg = nullptr);
  ~ActivityBufferPool();  // frees only buffers currently free or queued
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  size_t buffer_bytes() const { return buffer_bytes_; }
  uint32_t max_buffers() const { return max_buffers_; }

  // CUPTI buffer-requested path. Returns an 8-byte aligned buffer of
  // buffer_bytes() or nullptr (counted) when the pool is exhausted.
  uint8_t* Acquire();
  // CUPTI buffer-completed path: queues the buffer for the writer. A buffer the
  // pool did not hand out is counted and ignored (returns false).
  bool Complete(uint8_t* data, size_t valid_bytes, uint32_t stream_id = 0);
  // Writer path: moves every queued buffer into *out (appends). Returns count.
  size_t TakeCompleted(std::vector<CompletedBuffer>* out);
  // Writer path: the buffer's records were consumed; its first `used_bytes`
  // (what CUPTI wrote: CompletedBuffer::valid_bytes) are cleared and it
  // becomes free.
  void Release(uint8_t* data, size_t used_bytes);
  // Writer path: allocate so that at least `spare` buffers are free (bounded
  // by max_buffers). Returns the number allocated.
  uint32_t Replenish(uint32_t spare);

  BufferPoolStats stats() const;

 private:
  uint8_t* AllocateLocked() SL_REQUIRES(mu_);

  const size_t buffer_bytes_;
  const uint32_t max_buffers_;
  void (*notify_)(void*);
  void* notify_arg_;
  mutable Mutex mu_;  // leaf
  std::vector<uint8_t*> free_ SL_GUARDED_BY(mu_);
  std::vector<CompletedBuffer> queue_ SL_GUARDED_BY(mu_);
  std::unordered_set<uint8_t*> handed_out_ SL_GUARDED_BY(mu_);
  std::unordered_set<uint8_t*> all_ SL_GUARDED_BY(mu_);
  BufferPoolStats stats_ SL_GUARDED_BY(mu_);
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_BUFFER_POOL_H_
