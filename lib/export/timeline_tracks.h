// lib/export/timeline_tracks.h — how a trace maps onto timeline tracks, shared
// by the Chrome trace-event and Perfetto exporters so both show the same rows
// with the same names.
//
// One traced process becomes one process group holding:
//   * one track per CPU thread that made CUDA API calls or NVTX annotations
//     (its real tid), API calls nested as slices;
//   * one track per (device, CUDA stream): kernels, memcpys, memsets;
//   * per device: a "synchronization" track (CUPTI sync records, which carry
//     no thread), an "NCCL" track, a "metric ranges" track;
//   * a "sightline" track for capture windows, profiler overhead and steps.
// Synthetic tracks get tids above every real Linux tid (>= 2^30), assigned in
// order of first appearance so the output is deterministic.
//
// Event names: kernels, API calls and NVTX ranges use their interned names;
// memcpy/memset/sync/NCCL names are composed here ("Memcpy HtoD (Pageable ->
// Device)"), the way Nsight Systems labels them.
#ifndef SIGHTLINE_LIB_EXPORT_TIMELINE_TRACKS_H_
#define SIGHTLINE_LIB_EXPORT_TIMELINE_TRACKS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "lib/trace/events.h"
#include "lib/trace/reader.h"
#include "lib/trace/trace_header.h"

namespace sightline::exporter {

enum class TrackType : uint8_t {
  kThread = 0,     // id = tid
  kNvtx = 1,       // NVTX ranges of a thread (Perfetto child track); id = tid
  kStream = 2,     // id = stream id; device
  kSync = 3,       // device
  kNccl = 4,       // device; id = NcclEvent::source
  kMetrics = 5,    // device
  kProfiler = 6,   // capture windows, overhead, steps
  kNvtxLane = 7,   // start/end NVTX ranges that may overlap; id = lane
};

struct TrackKey {
  TrackType type = TrackType::kThread;
  uint32_t device = 0;
  uint64_t id = 0;
  bool operator<(const TrackKey& o) const {
    return std::tie(type, device, id) < std::tie(o.type, o.device, o.id);
  }
};

struct TrackInfo {
  uint64_t tid = 0;         // Chrome tid / Perfetto thread tid
  uint64_t sort_index = 0;  // display order: streams first, then threads
  std::string name;
  bool is_real_thread = false;
};

// Assigns tids and names to tracks as they are first seen. Memory grows with
// the number of distinct tracks (threads + streams), never with events.
class TrackRegistry {
 public:
  explicit TrackRegistry(const TraceHeaderData& header) : header_(header) {}
  // Returns the track and sets *is_new the first time a key is seen.
  const TrackInfo& Get(const TrackKey& key, bool* is_new);
  size_t size() const { return tracks_.size(); }

 private:
  std::string DeviceLabel(uint32_t device) const;
  const TraceHeaderData& header_;
  std::map<TrackKey, TrackInfo> tracks_;
  uint64_t next_synthetic_tid_ = uint64_t{1} << 30;
};

// "python train.py --x (pid 1234, host a, rank 0)".
std::string ProcessLabel(const TraceHeaderData& header);

// A recorded call stack as one line, innermost frame first, at most 64
// frames: "step (train.py:42) <- main (train.py:60)" for Python stacks,
// "f (libx.so+0x12) <- g (libx.so+0x40)" for native ones; "" when the
// trace has no such stack. The strings are the trace's (the caller escapes).
std::string StackLine(const trace::TraceReader& reader, uint32_t stack_id);

std::string MemcpyName(const MemcpyEvent& e);   // "Memcpy HtoD (Pageable -> Device)"
std::string MemsetName(const MemsetEvent& e);   // "Memset (Device)"
std::string_view SyncName(SyncKind kind);       // "Stream Synchronize"
std::string NcclName(const NcclEvent& e, std::string_view interned_name);

// CUPTI's API function names carry a version suffix ("cudaLaunchKernel_v7000");
// timelines show the name users call ("cudaLaunchKernel"), as Nsight Systems does.
std::string_view ApiDisplayName(std::string_view cupti_name);

// True for API names that put work on the GPU (kernel launches, copies,
// memsets, graph launches): their correlation id has a GPU-side partner.
bool IsGpuWorkApi(std::string_view api_name);

// Allocates non-overlapping lanes for intervals that arrive roughly in start
// order (NVTX start/end ranges). At most `max_lanes`; beyond that the lane
// that frees first is reused (overlap then shows as nesting, nothing is lost).
class LaneAllocator {
 public:
  explicit LaneAllocator(size_t max_lanes = 16) : max_lanes_(max_lanes) {}
  uint32_t Assign(uint64_t start_ns, uint64_t end_ns);

 private:
  size_t max_lanes_;
  std::vector<uint64_t> lane_end_;
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_TIMELINE_TRACKS_H_
