// lib/collect/stream_capture.cc — see stream_capture.h.
#include "lib/collect/stream_capture.h"

#include <dlfcn.h>

namespace sightline::collect {

const StreamCaptureApi& DriverStreamCaptureApi() {
  static const StreamCaptureApi api = [] {
    StreamCaptureApi a;
    a.is_capturing = reinterpret_cast<CUresult (*)(CUstream, CUstreamCaptureStatus*)>(
        dlsym(RTLD_DEFAULT, "cuStreamIsCapturing"));
    return a;
  }();
  return api;
}

CUstream LaunchQueryStream(CUpti_CallbackId cbid, CUstream stream) {
  if (stream != nullptr) return stream;
  const bool per_thread = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                          cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
                          cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
                          cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz;
  return per_thread ? CU_STREAM_PER_THREAD : stream;
}

bool LaunchIsCaptured(const StreamCaptureApi& api, CUstream stream) {
  if (api.is_capturing == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api.is_capturing(stream, &status) != CUDA_SUCCESS) return true;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace sightline::collect
