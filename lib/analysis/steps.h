// lib/analysis/steps.h — where the program's steps (iterations) are, where
// its warm-up ends, and which part of the trace an analysis looks at.
//
// Step sources, first found wins (AnalysisOptions::step_range_name forces
// the NVTX one):
//   1. an NVTX range named by --step-range;
//   2. step markers (sightline_step / the C API);
//   3. an auto-detected NVTX step range (most frequent top-level range,
//      names with "step"/"iter" first, library domains excluded);
//   4. capture windows (--capture-range), one step per window;
//   5. the launch pattern: the sequence of GPU operations in launch order
//      (correlation id) repeats with a period P once the program is in its
//      loop; a step starts at the launch of the once-per-period operation
//      that follows the longest host pause of the period (the loop's top:
//      data loading, logging, the Python loop itself). Needs at least three
//      periods and ≥ 80 % of the second half of the sequence repeating
//      exactly (PyTorch eager and graphed training and inference loops do,
//      start-up does not).
//
// Warm-up: the first step always (first-call compilation, autotuning,
// allocator growth); then steps until a step, and the median of it and the
// next two, are within 25 % of the median step time of the second half.
//
// Scope (--window): "steady" (default) = from the first step after warm-up
// to the end of the last step; "all" = the whole trace; "steps:A-B" = steps
// A..B (0-based, as listed); "T0..T1" = a time range relative to the trace's
// first event (units ns/us/ms/s, default s). Without steps, steady = all.
#ifndef SIGHTLINE_LIB_ANALYSIS_STEPS_H_
#define SIGHTLINE_LIB_ANALYSIS_STEPS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/analysis/model.h"

namespace sightline::analysis {

struct DetectedStep {
  uint64_t start_ns = 0, end_ns = 0;  // host time (merged clock): what the scope selects
  uint16_t trace = 0;
  // Launch pattern: when the GPU began this step and the next one. A loop
  // whose host runs ahead of the GPU (a graphed or GPU-bound step) launches
  // faster than the GPU runs; its step time is the GPU's. 0 = use host time.
  uint64_t gpu_start_ns = 0, gpu_end_ns = 0;
  uint64_t duration() const {
    return gpu_end_ns > gpu_start_ns ? gpu_end_ns - gpu_start_ns : end_ns - start_ns;
  }
};

struct StepDetection {
  std::string source;  // "nvtx", "step_marker", "capture_window", "launch_pattern", ""
  std::string name;    // NVTX range / marker name; launch pattern: the anchor operation
  std::vector<DetectedStep> steps;  // sorted by start
  size_t warmup = 0;                // leading steps that are warm-up (of the reference trace)
  // Of the warm-up: steps that ran hardware-metric passes or replays (a
  // measured kernel's launch, a per-range set's instances); the steady
  // state begins after the last when at least 2 steps follow.
  size_t metrics_steps = 0;
  uint64_t steady_start_ns = 0;     // start of the first step after warm-up
  // Launch pattern only: operations per step and the share of the second
  // half of the launch sequence that repeats with that period.
  uint32_t period = 0;
  double match_pct = 0;
};

StepDetection DetectSteps(const TimelineModel& model, const std::string& step_range_name,
                          std::vector<std::string>* notes);

// Leading warm-up steps of a step-time series (≥ 1 when there are ≥ 2 steps).
size_t WarmupSteps(const std::vector<uint64_t>& durations);

struct WindowSpec {
  enum Kind { kSteady, kAll, kSteps, kTime, kCapture } kind = kSteady;
  uint64_t first = 0, last = 0;  // steps A..B, time offsets (ns) T0..T1, or capture N
};
// Parses --window: "steady", "all", "steps:A-B" (or "steps:A"), "T0..T1",
// "capture:N" (the capture window the collector numbered N, else the N-th
// in start order, from 1: what a monitor capture or one --capture-range
// window recorded; the unrecorded time around it is not idle time).
absl::StatusOr<WindowSpec> ParseWindowSpec(std::string_view text);

struct ScopeChoice {
  std::string kind = "whole";  // "steady_state", "whole", "steps", "time"
  uint64_t start_ns = 0, end_ns = 0;  // host time range analysed (whole: 0, 0)
  int64_t first_step = -1, last_step = -1;  // indices into detection.steps
  uint64_t startup_ns = 0;  // trace start .. start_ns (steady_state only)
  // Steps timed on the GPU (a launch pattern whose host runs ahead): the GPU
  // span of the scope's steps. GPU work without a launching call (NCCL's
  // kernels, launched through the driver) is kept by its GPU start inside
  // it, not by the host range. 0, 0: host range only.
  uint64_t gpu_start_ns = 0, gpu_end_ns = 0;
};

ScopeChoice ChooseScope(const TimelineModel& model, const StepDetection& steps,
                        const WindowSpec& spec, std::vector<std::string>* notes);

// The part of `model` launched in [start_ns, end_ns): GPU work whose
// launching call (or, without one, whose start: inside [gpu_start_ns,
// gpu_end_ns) when that span is given) falls inside, API calls that
// start inside plus the launches of kept work, and NVTX ranges, syncs,
// markers, windows and overhead spans that overlap. Devices, streams,
// threads and strings keep their indices; kernel aggregates are recomputed
// (launch configurations and metrics are kept). PyTorch's memory samples
// are left out (whole-run facts: memory.h reads the whole model).
// scope_model.cc.
TimelineModel ScopeModel(const TimelineModel& model, uint64_t start_ns, uint64_t end_ns,
                         uint64_t gpu_start_ns = 0, uint64_t gpu_end_ns = 0);
// The same, cut from `model` itself: its tables keep the rows in scope (the
// analyzer's peak holds one model, not a whole one beside its scoped copy).
void ScopeModelInPlace(TimelineModel* model, uint64_t start_ns, uint64_t end_ns,
                       uint64_t gpu_start_ns = 0, uint64_t gpu_end_ns = 0);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_STEPS_H_
