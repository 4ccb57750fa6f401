// lib/collect/kernel_launch_hook.h — the seam between the collector's CUPTI
// API-callback subscriber and per-kernel hardware-metric collection (the range
// profiler in lib/collect/range_profiler.{h,cc}).
//
// The collector owns the one CUPTI subscriber of the process (CUPTI allows only
// one). When metrics are requested (`SIGHTLINE_METRICS` non-empty) it creates a
// KernelLaunchHook through CreateKernelLaunchHook() and calls it from its
// callbacks:
//
//   resource callback  CONTEXT_CREATED   → OnContextCreated(ctx)
//   driver/runtime API ENTER of a launch → OnLaunchEnter(...)
//   driver/runtime API EXIT  of a launch → OnLaunchExit(...)
//   resource callback  CONTEXT_DESTROY_STARTING → OnContextDestroy(ctx)
//   capture end / process exit (writer side)    → OnCaptureEnd()
//
// Threading: the On* callbacks run on the application's launching threads
// (CUPTI callbacks run inline in the API call). The hook serialises itself if it
// needs to. No callback may throw, abort or block indefinitely; the hook
// reports its failures through `last_error()` / Stats and degrades to a no-op.
// The collector never holds its own locks while calling into the hook.
//
// Kernels whose duration was distorted by replay are reported by the hook in
// `IsReplayedCorrelation()` so the collector can set KernelEvent.replayed.
// Launches profiled by spread replay (one pass each, no replay) are not.
//
// Launch info: on CUDA 13 a triple-chevron launch arrives as the runtime
// callback __cudaLaunchKernel(_ptsz)_v13000, whose parameters carry no grid or
// block; the collector then calls OnLaunchEnter from the driver
// cuLaunchKernel(Ex) callback underneath (grid/block/shared memory from its
// parameters, correlation id of the runtime call) and OnLaunchExit at the
// runtime call's exit.
#ifndef SIGHTLINE_LIB_COLLECT_KERNEL_LAUNCH_HOOK_H_
#define SIGHTLINE_LIB_COLLECT_KERNEL_LAUNCH_HOOK_H_

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/collect/config.h"
#include "lib/collect/stream_capture.h"
#include "lib/trace/events.h"

namespace sightline::collect {

// What the collector knows about one kernel launch at API enter/exit.
struct KernelLaunchInfo {
  CUcontext context = nullptr;
  uint32_t device_id = 0;
  uint32_t correlation_id = 0;   // CUPTI correlation id (matches KernelEvent)
  const char* kernel_name = "";  // mangled or demangled as CUPTI gives it; may be ""
  uint32_t grid_x = 0, grid_y = 1, grid_z = 1;
  uint32_t block_x = 0, block_y = 1, block_z = 1;
  uint32_t dynamic_shared_bytes = 0;
  CUstream stream = nullptr;
  uint32_t cbid = 0;             // CUPTI callback id of the launch API
  bool is_runtime_api = false;   // cudaLaunchKernel* vs cuLaunchKernel*
};

// Settings passed to the hook on creation (from the CollectorConfig's metric
// fields, see HookConfigFromCollectorConfig below; the hook reads no
// environment variable for these).
struct KernelLaunchHookConfig {
  std::string metric_set;          // SIGHTLINE_METRICS, e.g. "basic" or "a,b,c"
  std::string kernel_filter;       // SIGHTLINE_METRICS_KERNELS regex-ish substring; "" all
  uint32_t max_ranges = 2000;      // SIGHTLINE_METRICS_MAX_RANGES
  bool exclude_nccl = true;        // NCCL kernels can hang under replay
  // Per distinct kernel configuration (name + grid + block + dynamic shared
  // memory), profile launch i when i % every_nth == 0, at most
  // launches_per_kernel times (0 = no cap). SIGHTLINE_METRICS_LAUNCHES /
  // SIGHTLINE_METRICS_EVERY. In spread replay these count metric *sets*
  // (each from num_passes consecutive launches of the configuration).
  uint32_t launches_per_kernel = 0;
  uint32_t every_nth = 1;
  // Sequence replay: complete sequences of each learned step per capture
  // window (SIGHTLINE_METRICS_SEQUENCES): N sets per launch position.
  uint32_t sequences_per_step = 1;
  // Sequence replay: configurations kernel-replayed once for their DRAM
  // counters (SIGHTLINE_METRICS_REPLAY_TOP; ReplayTopChooser); 0 = none.
  uint32_t replay_top = 0;
  uint32_t device_id = 0;
  // SIGHTLINE_METRICS_REPLAY: kernel (CUPTI kernel replay, default), spread
  // (pass p on the p-th launch of a configuration, no replay; see
  // range_profiler_spread.h), auto (spread; configurations left incomplete at a
  // capture end get kernel replay in later capture windows).
  MetricsReplay replay = MetricsReplay::kKernel;
  // SIGHTLINE_METRICS_RANGE=nvtx:NAME: metrics per instance of the NVTX
  // range NAME (range_profiler_user.h) instead of per kernel; "" = per kernel.
  std::string range_nvtx;
  // SIGHTLINE_METRICS_RANGE=graph: metrics per launch of a CUDA graph (the
  // first graph launched twice, GraphRangeChooser) instead of per kernel.
  bool range_graph = false;
  bool image_per_launch = false;    // SIGHTLINE_METRICS_IMAGE=per_launch
  bool batch_sessions = false;      // SIGHTLINE_METRICS_SESSION=batch
  bool spread_user_replay = false;  // SIGHTLINE_METRICS_SPREAD_REPLAY=user
  bool debug = false;               // SIGHTLINE_METRICS_DEBUG
  bool quiet = false;               // SIGHTLINE_QUIET: no summary line at a capture end
  // Called with true when the hook starts measuring the application's own
  // launches in place (sequence replay: pass 0 begins; --metrics-range: the
  // measured NVTX range is pushed) and with false when it stops (the last
  // pass, a restart, a failure or TurnOff, the range's pop, a capture or
  // context end), under the hook's lock, on a launching thread or the
  // collector's writer. Concurrent-kernel tracing instruments kernel code,
  // and counters measured in place count that code (GH100: +8 instructions
  // a warp; bench/metrics/spread_probe.cu --trace), where ncu, which does
  // not trace, does not; the serialized KERNEL kind does not instrument but
  // lengthens each kernel's measured duration by ~1 us. So meanwhile the
  // collector traces no kernel kind during sequence passes (each launch is
  // written from its launch call, KernelEvent::untraced) and the KERNEL kind
  // inside --metrics-range instances (SIGHTLINE_METRICS_INPLACE_TRACE).
  // Spread replay's one-launch passes are not switched (not run on a GPU).
  // Unset: nothing is switched.
  std::function<void(bool in_place)> on_in_place;
  // Called (under the hook's lock, on a launching thread) when a sequence
  // pass ended with `kernels` more ranges than launches the hook saw:
  // kernels launched without a hooked call (inside a CUDA graph launch, a
  // cooperative launch). Traced with no kernel kind, they have no record:
  // the collector counts them lost and traces later passes with the KERNEL
  // kind (auto).
  std::function<void(uint64_t kernels)> on_unseen_kernels;
  // The collector's captures in progress (stream_capture.h), owned by the
  // collector and outliving the hook: while active() the hook begins no
  // measurement (re-checked under its lock: a capture may begin between the
  // collector's check and the hook's). Null: not checked.
  const StreamCaptureTracker* stream_captures = nullptr;
};

// The hook's settings from the collector's (lib/collect/collector.cc).
inline KernelLaunchHookConfig HookConfigFromCollectorConfig(const CollectorConfig& c) {
  KernelLaunchHookConfig hc;
  hc.metric_set = c.metric_set;
  hc.kernel_filter = c.metric_kernel_filter;
  hc.max_ranges = c.metric_max_ranges;
  hc.launches_per_kernel = c.metric_launches_per_kernel;
  hc.every_nth = c.metric_every_nth;
  hc.sequences_per_step = c.metric_sequences;
  hc.replay_top = c.metric_replay_top;
  hc.replay = c.metric_replay;
  hc.range_nvtx = c.metric_range_nvtx;
  hc.range_graph = c.metric_range_graph;
  hc.image_per_launch = c.metric_image_per_launch;
  hc.batch_sessions = c.metric_batch_sessions;
  hc.spread_user_replay = c.metric_spread_user_replay;
  hc.debug = c.metric_debug;
  hc.quiet = c.quiet;
  return hc;
}

// Per range: where its passes came from (parallel to MetricCaptureResult::ranges).
struct MetricRangeSpan {
  uint32_t launches = 1;              // launches the passes came from (spread: > 1)
  uint32_t first_correlation_id = 0;  // first of them (the event carries the last)
  uint32_t passes_collected = 0;      // < the event's num_passes: incomplete, no values
  bool spread = false;                // collected without replay
};

// Returned by OnCaptureEnd: the events to append to the trace, plus counts.
struct MetricCaptureResult {
  std::vector<MetricRangeEvent> ranges;  // name ids are NOT interned yet:
  // metric/range names are carried as strings below; the collector interns
  // them on its writer thread and fills MetricValue::name_id /
  // MetricRangeEvent::range_name_id.
  std::vector<std::string> range_names;                 // parallel to `ranges`
  std::vector<std::vector<std::string>> metric_names;   // parallel to `ranges`
  uint64_t ranges_dropped = 0;  // counted into LossReport.metric_ranges_dropped
  std::string error;            // empty when fine
  std::vector<MetricRangeSpan> spans;  // parallel to `ranges`
  // Spread replay counts (see range_profiler_spread.h SpreadStats).
  uint64_t spread_completed = 0;   // sets with values
  uint64_t spread_incomplete = 0;  // sets short of passes at capture end (events without values)
  uint64_t spread_discarded = 0;   // partial sets thrown away (another kernel in a pass)
};

class KernelLaunchHook {
 public:
  virtual ~KernelLaunchHook() = default;

  // A context was created (also called for contexts that existed before the
  // hook was installed). Set up per-context state; must not launch work.
  virtual void OnContextCreated(CUcontext context, uint32_t device_id) = 0;
  // Just before a kernel launch API runs on the calling thread.
  virtual void OnLaunchEnter(const KernelLaunchInfo& launch) = 0;
  // Just after the launch API returned (the kernel may still be running).
  virtual void OnLaunchExit(const KernelLaunchInfo& launch) = 0;
  // Context is about to be destroyed: collect what is pending for it.
  virtual void OnContextDestroy(CUcontext context) = 0;
  // The capture ended (or the process exits): stop, decode, return everything
  // collected since the last call. Called from the collector's control path,
  // never from inside a CUPTI buffer callback.
  virtual MetricCaptureResult OnCaptureEnd() = 0;
  // A capture window opened (the hook admits launches again after a
  // capture end; it starts admitting).
  virtual void OnCaptureStart() {}
  // Just before work the hook does not see launch by launch is submitted —
  // a CUDA graph launch, a cooperative launch — or (`stream_capture`)
  // before a stream capture begins (while any capture is in progress the
  // collector gives the hook no launch, since the range profiler's
  // Start/Stop would invalidate it, see stream_capture.h): nothing of it
  // may run inside an open per-kernel measurement, in any context (the
  // untraced kind is process-wide): sequence passes end or are discarded,
  // kernel-replay sessions are flushed. A per-range instance (whose range
  // a graph's kernels belong to) is cut only by a capture.
  virtual void OnUnhookedWork(bool /*stream_capture*/) {}
  // Per-range metrics (config.range_nvtx): every NVTX push (any domain,
  // with its ASCII message, "" when it has none) and pop on the calling
  // thread, inside its NVTX call; `now_ns` is the collector's clock.
  virtual void OnNvtxPush(const char* /*message*/, uint64_t /*now_ns*/) {}
  virtual void OnNvtxPop(uint64_t /*now_ns*/) {}
  // True when the hook wants OnNvtxPush / OnNvtxPop.
  virtual bool WantsNvtx() const { return false; }
  // Per-range metrics over graph launches (config.range_graph): the enter
  // and the exit of each cuGraphLaunch(_ptsz) on the calling thread, inside
  // its driver callback; `exec_key` identifies the graph executable (its
  // CUPTI id), `now_ns` is the collector's clock.
  virtual void OnGraphLaunch(bool /*enter*/, uint64_t /*exec_key*/, uint64_t /*now_ns*/) {}
  virtual bool WantsGraphLaunches() const { return false; }
  // True when the kernel with this correlation id was replayed (its timing is
  // distorted). Called on the writer thread; must be thread-safe.
  virtual bool IsReplayedCorrelation(uint32_t correlation_id) const = 0;
  // Number of passes of the configured metric set (0 when unknown).
  virtual uint32_t num_passes() const = 0;
  // Last error, human-readable ("" when none).
  virtual std::string last_error() const = 0;
};

// Implemented by lib/collect/range_profiler.cc. Returns nullptr (and fills
// *error) when metrics cannot be collected (no permission, unknown metric,
// unsupported device); tracing then continues without metrics.
std::unique_ptr<KernelLaunchHook> CreateKernelLaunchHook(const KernelLaunchHookConfig& config,
                                                         std::string* error);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_KERNEL_LAUNCH_HOOK_H_
