// lib/collect/range_profiler.h — per-kernel hardware metrics with the CUPTI
// range profiler (CUDA 12.6+ API: cupti_range_profiler.h + cupti_profiler_host.h),
// behind the collector's KernelLaunchHook (kernel_launch_hook.h).
//
// Mode: auto range + kernel replay, one range per selected kernel launch. For
// each selected launch, on the launching thread, inside the launch API's
// callbacks:
//
//   enter: (first launch) cuptiProfilerInitialize, chip name, host object
//          and config image — CUPTI refuses this inside InitializeInjection
//          (cuInit), so it waits for the first launch; (first launch on a
//          context) counter availability, cuptiRangeProfilerEnable, counter-
//          data image + SetConfig(AutoRange, KernelReplay); then
//          cuptiRangeProfilerStart
//   ... the launch runs; CUPTI replays the kernel once per pass ...
//   exit:  cuptiRangeProfilerStop, DecodeData (dropped ranges counted),
//          evaluate the new range to GPU values (host API) and keep it as a
//          MetricRangeEvent tied to the launch's correlation id (CUPTI names
//          auto ranges "0", "1", …, so the launch's kernel name is used); the
//          correlation id is remembered as "replayed" so the collector marks
//          the KernelEvent (CUPTI reports such kernels with zero timestamps).
//
// The counter-data image is shared by a context's launches and
// re-initialised when full (SIGHTLINE_METRICS_IMAGE=per_launch: a fresh image
// and SetConfig per launch). SIGHTLINE_METRICS_SESSION=batch keeps one
// session open across consecutive profiled launches (ranges matched to
// launches in order; any count mismatch drops that batch and falls back to
// per-launch sessions). Measured on the H200 both cost the same: the
// per-pass replay dominates, so per-launch sessions stay the default.
// SIGHTLINE_METRICS_DEBUG=1 prints the time spent per stage at capture end.
//
// Serialisation: auto range records every kernel of the context between Start
// and Stop, so the hook holds one mutex from the enter of a profiled launch to
// its exit, and every other launch (any thread) passes through that mutex at
// its enter: unprofiled launches wait while a profiled one is replaying (and
// close an open batched session first). A thread-local flag makes nested
// launch callbacks on the same thread no-ops.
//
// Selection (KernelSelector, pure C++): NCCL kernels are never replayed by
// default (replay serialises the context; collectives waiting for peers hang);
// an optional POSIX extended regex on the kernel name (mangled or demangled);
// per distinct kernel configuration (name + grid + block + dynamic shared
// memory) launch index i is profiled when i % every_nth == 0 and at most
// `launches_per_kernel` times (0 = no cap); at most `max_ranges` ranges
// overall (the rest is counted, not profiled). In spread replay the selector
// is asked only when a configuration has no set in progress, so these count
// metric sets, each spanning num_passes launches.
//
// Replay mode (KernelLaunchHookConfig::replay, SIGHTLINE_METRICS_REPLAY):
//   kernel  (default) the path above: CUPTI replays each profiled launch once
//           per pass (~20 ms per pass on the H200); the kernel is marked
//           replayed.
//   spread  pass p of the set on the p-th launch of the configuration, no
//           replay (range_profiler_spread.h); a set completes after
//           num_passes launches and is reported with the last launch's
//           correlation id, the first one's and the launch count
//           (MetricRangeSpan). Kernels are not marked replayed. A set still
//           short of passes at capture end is reported incomplete (an event
//           without values, passes collected so far). Any CUPTI error → one
//           warning, kernel replay for the rest of the run.
//   auto    spread; a configuration left incomplete at a capture end is
//           kernel-replayed in later capture windows (capture-range repeat).
//           A configuration's first launch cannot know whether it will
//           repeat, so a kernel launched once per process gets no values in
//           spread/auto mode: use kernel mode for such programs.
// Files: range_profiler.cc (setup, kernel replay, capture end),
// range_profiler_select.cc (KernelSelector), range_profiler_spread.{h,cc}
// (spread bookkeeping, pure C++), range_profiler_spread_target.cc (its CUPTI
// side), range_profiler_impl.h (the class they share).
//
// Failure policy: no exception or abort escapes; every CUPTI call goes through
// one checked helper. Unknown metric / chip / bad regex → CreateKernelLaunchHook
// returns nullptr with the message. Counters unavailable at run time
// (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, another profiler or DCGM holding the
// counters) → one warning on stderr, the hook turns itself off, tracing goes on.
#ifndef SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_H_
#define SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_H_

#include <regex.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "lib/collect/kernel_launch_hook.h"

namespace sightline::collect {

struct KernelSelectorOptions {
  std::string name_regex;            // "" = every kernel
  uint32_t launches_per_kernel = 0;  // per name+grid+block; 0 = unlimited
  uint32_t every_nth = 1;            // per name+grid+block launch index
  uint32_t max_ranges = 2000;        // overall budget
  bool exclude_nccl = true;
};

enum class SelectDecision : uint8_t {
  kProfile = 0,
  kSkipNccl,
  kSkipName,      // regex did not match
  kSkipNth,       // not an every-Nth launch
  kSkipQuota,     // launches_per_kernel reached for this configuration
  kSkipBudget,    // max_ranges reached
};

// Decides which launches are profiled. Not thread-safe (the hook serialises).
class KernelSelector {
 public:
  KernelSelector() = default;
  ~KernelSelector();
  KernelSelector(const KernelSelector&) = delete;
  KernelSelector& operator=(const KernelSelector&) = delete;

  // Compiles the regex; false with *error on a bad pattern.
  bool Init(const KernelSelectorOptions& options, std::string* error);
  SelectDecision Decide(std::string_view kernel_name, uint32_t grid_x, uint32_t grid_y,
                        uint32_t grid_z, uint32_t block_x, uint32_t block_y, uint32_t block_z,
                        uint32_t dynamic_shared_bytes = 0);
  uint64_t profiled() const { return profiled_; }
  uint64_t skipped(SelectDecision d) const { return skipped_[static_cast<int>(d)]; }

 private:
  bool NameMatches(std::string_view name);
  KernelSelectorOptions options_;
  regex_t regex_{};
  bool has_regex_ = false;
  std::unordered_map<uint64_t, bool> name_match_cache_;     // by name hash
  std::unordered_map<uint64_t, uint64_t> launches_by_key_;  // by name+grid+block hash
  uint64_t profiled_ = 0;
  uint64_t skipped_[6] = {};
};

// "_Z..." → demangled name, otherwise the input.
std::string DemangleKernelName(std::string_view name);

// The selector's options from the hook config (launches_per_kernel and
// every_nth come from CollectorConfig: SIGHTLINE_METRICS_LAUNCHES /
// SIGHTLINE_METRICS_EVERY, `sightline profile --metrics-launches/--metrics-every`).
KernelSelectorOptions SelectorOptionsFromConfig(const KernelLaunchHookConfig& config);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_H_
