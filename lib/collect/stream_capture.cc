// lib/collect/stream_capture.cc — see stream_capture.h.
#include "lib/collect/stream_capture.h"

namespace sightline::collect {

uint64_t CaptureKey(CUpti_CallbackId cbid, CUstream stream, uint64_t thread) {
  const bool ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz ||
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz ||
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz ||
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz;
  if (stream == CU_STREAM_PER_THREAD || (stream == nullptr && ptsz)) {
    return (thread << 1) | 1;  // stream handles are aligned pointers: bit 0 is free
  }
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(stream));
}

void StreamCaptureTracker::Publish() {
  active_.store(entering_ + static_cast<int>(streams_.size()), std::memory_order_release);
}

void StreamCaptureTracker::BeginEnter() {
  MutexLock lock(mu_);
  ++entering_;
  Publish();
}

void StreamCaptureTracker::BeginExit(uint64_t key, CUresult result) {
  MutexLock lock(mu_);
  if (entering_ > 0) --entering_;
  if (result == CUDA_SUCCESS) streams_.insert(key);
  Publish();
}

void StreamCaptureTracker::EndExit(uint64_t key, CUresult result) {
  if (result != CUDA_SUCCESS && result != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
      result != CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
    return;
  }
  MutexLock lock(mu_);
  streams_.erase(key);
  Publish();
}

size_t StreamCaptureTracker::open() const {
  MutexLock lock(mu_);
  return streams_.size();
}

}  // namespace sightline::collect
