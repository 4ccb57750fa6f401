// lib/analysis/gpu_metrics.h — PM samples (`sightline profile --gpu-metrics`)
// attributed to the analysed window, its steps, NVTX ranges and kernels: the
// report's gpu_metrics table (one entry per sampled device).
//
// Every sample covers [start, end) on the GPU (100 us at the default 10 kHz)
// and holds the device-wide value of each metric over that interval; a span
// (window, step, range instance, kernel instance) gets the mean of the
// samples overlapping it, each weighted by the overlap. NaN values (CUPTI
// could not evaluate a sample) are left out of both sums.
//  * Steps and NVTX ranges are host-side intervals; they are projected onto
//    the GPU first: from the first start to the last end of the GPU work
//    their CUDA calls launched (ranges: calls of the range's own thread).
//    A step or range that launched nothing keeps its host interval.
//  * Several kernels often run within one sample: a kernel's values are the
//    device's while it ran, shared with whatever ran beside it. A kernel row
//    is `resolved` when its mean instance lasts at least two sampling
//    intervals; the text report shows only resolved kernels.
//  * busy / saturated: the share of sampled window time at >= 10 % / >= 80 %
//    of peak (percent quantities only) — "busy" says the unit was used,
//    "saturated" that it was the limit.
#ifndef SIGHTLINE_LIB_ANALYSIS_GPU_METRICS_H_
#define SIGHTLINE_LIB_ANALYSIS_GPU_METRICS_H_

#include <cstdint>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"

namespace sightline::analysis {

inline constexpr double kGpuMetricBusyPct = 10;
inline constexpr double kGpuMetricSaturatedPct = 80;

// Fills report->gpu_metrics from model.gpu_metrics over [window_start_ns,
// window_end_ns] (both 0: each series' whole span), using
// report->summary.steps for the per-step rows.
void FillGpuMetrics(const TimelineModel& model, uint64_t window_start_ns, uint64_t window_end_ns,
                    Report* report);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_GPU_METRICS_H_
