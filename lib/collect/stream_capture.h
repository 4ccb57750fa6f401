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
// So the collector counts the captures in progress (the driver's
// cuStreamBeginCapture* and cuStreamEndCapture* callbacks); while any is,
// no launch reaches the hook, and before a capture begins the hook ends
// any open measurement (KernelLaunchHook::OnUnhookedWork). Launches made
// during a capture are traced as usual, without metrics.
#ifndef SIGHTLINE_LIB_COLLECT_STREAM_CAPTURE_H_
#define SIGHTLINE_LIB_COLLECT_STREAM_CAPTURE_H_

#include <cuda.h>
#include <cupti.h>

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

// Driver entry points (null when the process's libcuda lacks them).
struct StreamCaptureApi {
  CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
};

// Resolved once from the process's libcuda (dlsym RTLD_DEFAULT).
const StreamCaptureApi& DriverStreamCaptureApi();

// The stream a driver call's stream parameter names: in a per-thread
// default stream call (a _ptsz callback id) stream 0 is
// CU_STREAM_PER_THREAD.
CUstream LaunchQueryStream(CUpti_CallbackId cbid, CUstream stream);

// True when `stream` is being captured (active or invalidated capture), or
// when the query fails (the legacy stream while another thread captures in
// global mode). False without the driver entry point.
bool LaunchIsCaptured(const StreamCaptureApi& api, CUstream stream);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_STREAM_CAPTURE_H_
