// lib/analysis/timeline.h — per-device derived timeline shared by the summary
// and the rules: busy / compute / communication / memory unions, the HTA
// window, and every idle gap with its cause.
//
// Idle attribution (ANCHORS.md, HTA, made device-level): for each gap between
// consecutive busy intervals of a device, look at the activity that ends the
// gap and the API call that launched it (same trace, by correlation id):
//   kernel-wait  gap <= kernel_wait_ns (launch latency only);
//   sync-wait    the launch started after the gap began, and the launching
//                thread had been blocked in a synchronizing call (sync API,
//                synchronous memcpy/memset, CUPTI sync record) that began
//                before the gap and ended inside it, and the launch followed
//                within max(kernel_wait_ns, half the gap): the host drained
//                the GPU and did little else;
//   host-wait    the launch started after the gap began (the CPU was late);
//   other        the launch was issued before the gap (dependency, event wait,
//                another stream), or no launch is known.
// Profiler overhead intervals on the device count as busy (nsys gpu_gaps).
#ifndef SIGHTLINE_LIB_ANALYSIS_TIMELINE_H_
#define SIGHTLINE_LIB_ANALYSIS_TIMELINE_H_

#include <cstdint>
#include <vector>

#include "lib/analysis/cross_rank.h"
#include "lib/analysis/intervals.h"
#include "lib/analysis/model.h"

namespace sightline::analysis {

// kProfiler: the host was inside the profiler for most of the gap (host-side
// CUPTI overhead records of the same trace cover at least 3/4 of it, e.g.
// CUPTI's activity buffer request at a capture start): not the app's.
enum class IdleCause : uint8_t {
  kHostWait = 0, kSyncWait = 1, kKernelWait = 2, kOther = 3, kProfiler = 4
};
inline constexpr size_t kNumIdleCauses = 5;
// "host_wait", "sync_wait", "kernel_wait", "other", "profiler"
const char* IdleCauseName(IdleCause c);

struct IdleGap {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device = 0;           // model device index
  IdleCause cause = IdleCause::kOther;
  uint32_t next_activity = kNone;  // activity that ends the gap
  uint32_t blocking_api = kNone;   // sync-wait: the synchronizing API call
  uint64_t length() const { return end_ns - start_ns; }
};

struct DeviceTimeline {
  uint32_t device = 0;
  uint64_t window_start_ns = 0, window_end_ns = 0;  // 0,0 when no activity
  IntervalSet busy;     // all activity (+ device overhead)
  IntervalSet compute;  // compute kernels
  IntervalSet comm;     // communication kernels / NCCL GPU events
  IntervalSet memory;   // memcpy / memset
  IntervalSet copies;   // memcpy only (H2D/D2H/...)
  std::vector<IdleGap> gaps;  // every gap inside the window, by start
  uint64_t window_ns() const { return window_end_ns - window_start_ns; }
};

struct TimelineOptions {
  uint64_t kernel_wait_ns = 10'000;  // "launch latency only" constant
};

struct DerivedTimeline {
  std::vector<DeviceTimeline> devices;  // indexed like TimelineModel::devices
  // Global window: first activity start .. last activity end over all devices
  // (falls back to API calls when there is no GPU activity).
  uint64_t window_start_ns = 0, window_end_ns = 0;
  uint64_t window_ns() const { return window_end_ns - window_start_ns; }
  TimelineOptions options;  // what it was built with
  // NCCL operations matched across ranks, clock offsets, who waited for whom
  // (cross_rank.h); inactive with fewer than two ranks with NCCL work.
  CrossRankAnalysis cross_rank;
};

DerivedTimeline BuildDerivedTimeline(const TimelineModel& model, const TimelineOptions& options);

// The cause of an idle gap [start, end) that `next_activity` ends (rules
// above); sets *blocking_api for sync-wait. Used per device and per stream.
IdleCause AttributeIdleGap(const TimelineModel& model, uint64_t start_ns, uint64_t end_ns,
                           uint32_t next_activity, const TimelineOptions& options,
                           uint32_t* blocking_api);

// The synchronizing API call on `thread` that ended in [from_ns, to_ns] and
// started before from_ns (latest such), or kNone.
uint32_t FindBlockingSyncCall(const TimelineModel& model, uint32_t thread, uint64_t from_ns,
                              uint64_t to_ns);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_TIMELINE_H_
