// lib/trace/torch_memory_marker.h — the PyTorch allocator sample that
// sightline's Python start-up hook (python/sitecustomize.py) marks after every
// optimizer step: an NVTX marker
//   "sightline.torch_memory device=D allocated=A max_allocated=M reserved=R opt=K"
// (the values of torch.cuda.memory_allocated / max_memory_allocated /
// memory_reserved of the current device, in bytes, read in one call of
// torch._C._cuda_memoryStats where torch has it; D is torch's device index, i.e. in
// CUDA_VISIBLE_DEVICES order; K numbers the program's optimizers in the order
// they first stepped, 0 when absent: traces of earlier hooks). Under the
// monitor the hook reads the allocator at most every 0.25 s and marks the
// other steps "sightline.torch_memory device=D opt=0" (a step boundary
// without byte counts: has_memory false). One parser for the analyzer (from
// the trace's markers) and the monitor (from the NVTX callback, without
// tracing).
#ifndef SIGHTLINE_LIB_TRACE_TORCH_MEMORY_MARKER_H_
#define SIGHTLINE_LIB_TRACE_TORCH_MEMORY_MARKER_H_

#include <cstdint>
#include <string_view>

namespace sightline::trace {

inline constexpr std::string_view kTorchMemoryMarkerPrefix = "sightline.torch_memory ";

struct TorchMemoryMarker {
  uint32_t device = 0;
  uint64_t allocated = 0, max_allocated = 0, reserved = 0;
  uint64_t optimizer = 0;  // opt=K
  bool has_memory = false;  // any of allocated=, max_allocated=, reserved=
};

// True when `message` is such a marker with a device index ≤ 65535: fields
// are space-separated KEY=DIGITS (at most 19 digits); unknown keys and fields
// without '=' are skipped; a non-numeric value makes it not ours (false).
bool ParseTorchMemoryMarker(std::string_view message, TorchMemoryMarker* out);

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_TORCH_MEMORY_MARKER_H_
