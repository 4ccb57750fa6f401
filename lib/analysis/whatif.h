// lib/analysis/whatif.h — replays the analysed (steady-state) part of a trace
// with a fix applied, so a finding's saving is what its fix would change in
// the step time, not the idle time it happens to overlap.
//
// The replay: one logical host thread issues the recorded API calls in start
// order (calls of several threads overlap as they did: only the union of host
// busy time is replayed), with the recorded host time between them. Each
// launch enqueues its GPU work on its stream; an operation starts when it was
// launched (+1 µs) and its stream is free, and lasts its recorded duration.
// A launch call costs the host at most `launch_overhead_ns`: the rest of a
// longer call is the wait for room in a full launch queue, which follows the
// GPU (a GPU-bound loop fills the queue), not host work.
// A blocking call (synchronize, synchronous copy) waits until the GPU has
// finished everything enqueued. The replayed time is max(host end, GPU end).
// The baseline replay is compared with the recorded window (`fidelity`); a
// fix's saving is (baseline − fixed) / baseline of the recorded window.
//
// Fixes (each one finding's recommendation):
//   kSyncApi      synchronizing calls no longer wait (deferred reads, events);
//   kSyncMemcpy   copies from pinned memory, issued asynchronously (pinned
//                 memory, non_blocking=True): synchronous and pageable copies
//                 no longer block the host, and pageable copies run at the
//                 pinned bandwidth of the trace's own pinned copies in that
//                 direction (else `pinned_gbps`, by default the device's
//                 host link: PinnedGbpsFor); a synchronize that
//                 only waits for an upload (the same thread's next call
//                 after a host-to-device copy the fix makes asynchronous,
//                 with no launch between: PyTorch's `.cuda()` without
//                 non_blocking is cudaMemcpyAsync + cudaStreamSynchronize)
//                 goes with it. The wait after a download stays: the host
//                 reads that data (deferring the read is kSyncApi's fix);
//   kHostGaps     host pauses longer than `host_gap_ns` between CUDA calls
//                 (data loading, preprocessing, logging) shrink to the median
//                 pause: the work moves off the launch path (DataLoader
//                 workers, prefetching);
//   kGraph        runs of launches are replayed as one graph launch: launch
//                 calls and the host pauses shorter than `host_gap_ns` between
//                 them vanish (a CUDA graph replays without Python or the
//                 launch path), one `graph_launch_ns` per run remains; calls
//                 that cannot be captured (synchronizing, copies to pageable
//                 memory) end a run;
//   kAllocations  synchronous allocation and release calls (cudaMalloc,
//                 cudaFree, ...) vanish: memory stays cached or pooled
//                 (no empty_cache() in the loop, preallocated buffers); such
//                 calls also end a graph run (cudaFree cannot be captured);
//   kTensorCores  FP32 GEMM/convolution kernels that do not use tensor cores
//                 run `tensor_speedup` times faster (the device's dense BF16
//                 tensor-core peak over its FP32 FMA peak: bf16 autocast);
//   kCommOverlap  communication kernels (NCCL) run on a stream of their own,
//                 beside compute, and a synchronize that only orders compute
//                 before a collective (the same thread's next GPU work after
//                 it is a collective) no longer blocks the host (an event
//                 or stream dependency orders them instead): the upper bound
//                 of overlapping communication with independent compute, as
//                 comm_compute_overlap's recommendation does. Such
//                 synchronizes belong to this fix, not to kSyncApi.
#ifndef SIGHTLINE_LIB_ANALYSIS_WHATIF_H_
#define SIGHTLINE_LIB_ANALYSIS_WHATIF_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/analysis/model.h"

namespace sightline::analysis {

enum WhatIfFix : uint32_t {
  kFixNone = 0,
  kFixSyncApi = 1,
  kFixSyncMemcpy = 2,
  kFixHostGaps = 4,
  kFixGraph = 8,
  kFixTensorCores = 16,
  kFixAllocations = 32,
  kFixCommOverlap = 64,
};

struct WhatIfParams {
  uint64_t host_gap_ns = 200'000;    // longer host pauses are "work", shorter ones launch overhead
  uint64_t graph_launch_ns = 8'000;  // one graph launch on the host
  uint64_t launch_overhead_ns = 20'000;  // launch-path time a graph removes per call
  uint64_t launch_to_start_ns = 1'000;
  double tensor_speedup = 0;         // 0: from the device (TensorSpeedupFor)
  double pinned_gbps = 0;  // pinned copy bandwidth when the trace has none; 0: PinnedGbpsFor
  bool operator==(const WhatIfParams& o) const;
};

// The replay reads the model's own tables (the model must outlive the
// WhatIf); what it keeps besides is about 4 bytes per replayed GPU operation
// and 1 per API call: the operations in launch order and a few bits per call.
// Replays are remembered by their fixes (Replay is const but fills that
// memo: one analysis thread).
class WhatIf {
 public:
  WhatIf(const TimelineModel& model, const WhatIfParams& params);
  bool empty() const { return runs_.empty(); }
  // Replayed time of the analysed window with `fixes` (WhatIfFix bits) applied.
  uint64_t Replay(uint32_t fixes) const;
  uint64_t baseline() const { return baseline_; }
  // Saving of `fixes` on top of `already` (fix bits), scaled to `window_ns`.
  uint64_t Saving(uint32_t fixes, uint32_t already, uint64_t window_ns) const;
  // FP32 GEMM/convolution kernels without tensor cores: GPU time in the window.
  uint64_t fp32_math_ns() const { return fp32_math_ns_; }
  double tensor_speedup() const { return tensor_speedup_; }
  // Synchronizes that only order compute before a collective (kFixCommOverlap).
  uint64_t comm_waits() const { return comm_waits_; }

 private:
  // One thread's calls of the replayed trace: api_calls[api_begin, api_end)
  // (in start order, the longer first: the model's order), their GPU work
  // from ops_[op_begin].
  struct Run {
    uint32_t api_begin, api_end, op_begin;
  };
  class CallWalk;  // the calls of every run merged by start, with their work
  // Per API call (call_bits_, indexed like api_calls).
  enum CallBit : uint8_t {
    kHasOps = 1,      // launched GPU work (ops_)
    kPageable = 2,    // moves pageable host memory (cannot be captured)
    kUploadWait = 4,  // a synchronize that only waits for the upload before it
    kCommWait = 8,    // a synchronize whose thread next launches a collective
  };
  uint64_t ReplayOnce(uint32_t fixes) const;
  void PrefetchOp(uint32_t i) const;  // the activity of ops_[i] a few ops ahead
  // A pageable copy's duration at the pinned bandwidth (else its own).
  uint64_t PinnedDuration(const GpuActivity& a) const;

  const TimelineModel& model_;
  std::vector<Run> runs_;
  // Activities launched by the replayed trace's calls, by (call, start);
  // last_op_[i]: ops_[i] is its call's last.
  std::vector<uint32_t> ops_;
  std::vector<bool> last_op_;
  std::vector<uint8_t> call_bits_;
  std::vector<uint8_t> fp32_math_;  // per string id: 1 = an FP32 GEMM/convolution kernel
  double pinned_gbps_[2] = {0, 0};   // host-to-device, device-to-host
  uint64_t median_small_gap_ = 0;
  uint64_t baseline_ = 0;
  mutable std::vector<std::pair<uint32_t, uint64_t>> replayed_;  // (fixes, Replay(fixes))
  uint64_t fp32_math_ns_ = 0;
  uint64_t comm_waits_ = 0;
  double tensor_speedup_ = 1;
  WhatIfParams params_;
};

// The what-if replays of one model, each built once per set of parameters:
// launch_bound, fp32_math and ApplyRootCauses replay the same window (with
// the default parameters, one replay table serves all three). Owned by the
// analysis of one model (RunRules), which must outlive it; one thread.
class WhatIfCache {
 public:
  explicit WhatIfCache(const TimelineModel& model) : model_(model) {}
  const WhatIf& Get(const WhatIfParams& params);

 private:
  const TimelineModel& model_;
  std::vector<std::unique_ptr<WhatIf>> built_;
  std::vector<WhatIfParams> params_;  // built_[i]'s
};

// FP32 matrix math on the FMA pipes, from the kernel name's library
// conventions (cuBLAS/cuDNN/CUTLASS: sgemm, "f32f32_f32f32", "_ffma",
// implicit/direct/FFT/Winograd convolutions on float) and no tensor-core
// marker (tf32, hmma, 1688, 16816, gmma, bf16, f16, ...).
bool IsFp32MathKernelName(std::string_view name);
// Dense BF16 tensor-core peak / FP32 FMA peak: GH100 (cc 9.x) 14.8, GA100
// (8.0) 16, other 8.x 4, else 4.
double TensorSpeedupFor(uint32_t cc_major, uint32_t cc_minor);
// Pinned host<->device copy bandwidth (GB/s) of the device's host link.
double PinnedGbpsFor(uint32_t cc_major, uint32_t cc_minor);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_WHATIF_H_
