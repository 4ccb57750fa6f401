// lib/analysis/range_metrics.h — metrics of NVTX ranges measured as a whole
// (`sightline profile --metrics SET --metrics-range nvtx:NAME`): the
// report's range_metrics table, one row per range name with its sets (each
// from num_passes successive instances) and the mean over the complete sets
// inside the analysed window.
#ifndef SIGHTLINE_LIB_ANALYSIS_RANGE_METRICS_H_
#define SIGHTLINE_LIB_ANALYSIS_RANGE_METRICS_H_

#include <cstdint>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"

namespace sightline::analysis {

// A set is in the window when at least half of its span lies inside
// [window_start_ns, window_end_ns] (both 0: every set is).
void FillRangeMetrics(const TimelineModel& model, uint64_t window_start_ns,
                      uint64_t window_end_ns, Report* report);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_RANGE_METRICS_H_
