// lib/collect/stream_capture.h — CUDA stream capture (graph capture) and the
// metrics hook.
//
// A launch into a stream that is being captured does not run: it becomes a
// node of the graph being built and runs later inside a graph launch. And
// the range profiler cannot run while a capture is in progress: seen on the
// H100 (runs AS, AT, 2026-12-06, `sightline profile --metrics full
// --metrics-replay sequence`):
//  * with the program's first launches captured, the range profiler's
//    set-up at the first hooked launch invalidated the capture and the
//    program's cudaStreamEndCapture failed ("operation failed due to a
//    previous error during capture"), the program exited;
//  * with eager launches on another stream while the same thread captured
//    (thread-local mode), cuptiRangeProfilerStart failed with
//    CUPTI_ERROR_UNKNOWN and the capture was invalidated just the same,
//    although the hook's calls ran with the thread's capture mode relaxed.
// So the collector tracks the captures in progress (the driver's
// cuStreamBeginCapture* and cuStreamEndCapture* callbacks,
// StreamCaptureTracker); while any is, no launch reaches the hook (checked
// again under the hook's lock), no per-range instance begins, and before a
// capture begins the hook ends any open measurement
// (KernelLaunchHook::OnUnhookedWork). Launches made during a capture are
// traced as usual, without metrics, and counted.
#ifndef SIGHTLINE_LIB_COLLECT_STREAM_CAPTURE_H_
#define SIGHTLINE_LIB_COLLECT_STREAM_CAPTURE_H_

#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <unordered_set>

#include "lib/trace/thread_annotations.h"

namespace sightline::collect {

inline bool IsStreamCaptureBeginCbid(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2 ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz;
}

inline bool IsStreamCaptureEndCbid(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz;
}

// Which capture a begin or end call names: its stream, or, for the
// per-thread default stream (CU_STREAM_PER_THREAD, or 0 in a _ptsz call),
// the calling thread (`thread`, any per-thread key).
uint64_t CaptureKey(CUpti_CallbackId cbid, CUstream stream, uint64_t thread);

// The captures in progress. Begin and end calls may come from any thread.
class StreamCaptureTracker {
 public:
  // A begin call's enter: from now until its exit, a capture may be in
  // progress (no launch may reach the hook).
  void BeginEnter();
  // Its exit: `result` CUDA_SUCCESS means the capture of `key` began.
  void BeginExit(uint64_t key, CUresult result);
  // An end call's exit. The capture of `key` is over when the driver ended
  // it: CUDA_SUCCESS, or the capture invalidated or unjoined (the graph is
  // not returned, the capture ends). Any other result (the stream was not
  // capturing, another thread's capture) leaves it, as does an end for a
  // capture this tracker never saw begin.
  void EndExit(uint64_t key, CUresult result);
  // Any capture in progress (or a begin call under way). One atomic load.
  bool active() const { return active_.load(std::memory_order_acquire) > 0; }
  // A launch withheld from the hook because of a capture.
  void CountWithheld() { withheld_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t withheld() const { return withheld_.load(std::memory_order_relaxed); }
  // Captures still in progress (begun and not ended).
  size_t open() const;

 private:
  void Publish() SL_REQUIRES(mu_);
  mutable Mutex mu_;
  std::unordered_set<uint64_t> streams_ SL_GUARDED_BY(mu_);
  int entering_ SL_GUARDED_BY(mu_) = 0;
  std::atomic<int> active_{0};
  std::atomic<uint64_t> withheld_{0};
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_STREAM_CAPTURE_H_
