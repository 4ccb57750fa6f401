// lib/analysis/kernel_metrics.h — hardware metrics (--metrics) in the report:
//
//  * per kernel (KernelRow::metrics): the mean of each metric over the
//    kernel's measured launches, and per launch configuration
//    (KernelRow::metrics_by_config) when more than one configuration was
//    measured (a GEMM on two shapes: their values differ);
//  * coverage (Report::metrics_coverage): the share of the analysed window's
//    kernel time whose kernel name + launch configuration has metrics, and
//    the heaviest configurations without them, each with the reason
//    (a communication kernel, a kernel inside a CUDA graph launch, another
//    configuration of a measured kernel, or a kernel the collector did not
//    measure);
//  * a details page per kernel (KernelPage), as ncu's details page: speed of
//    light with the bound unit (the same 60 % knee as the speed-of-light
//    rules), memory workload, compute workload, occupancy (theoretical with
//    its limiter from the occupancy calculator, achieved from the counters),
//    launch statistics (waves per SM), the kernel's own run figures and the
//    findings that name it. Values not collected read "n/a" with the metric
//    set that has them. `sightline analyze --kernel REGEX` prints these
//    pages; the HTML report shows them for its top kernels.
// Pure C++, no CUDA.
#ifndef SIGHTLINE_LIB_ANALYSIS_KERNEL_METRICS_H_
#define SIGHTLINE_LIB_ANALYSIS_KERNEL_METRICS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/analysis/model.h"
#include "lib/analysis/report.h"

namespace sightline::analysis {

// Fills KernelRow::metrics / metrics_by_config / metric_samples of the rows
// FillTables made from `model`, and Report::metrics_coverage.
void FillKernelMetrics(const TimelineModel& model, Report* report);

// Pages (report.h KernelPage) of the kernels whose traced, demangled or
// short name matches `pattern` (POSIX extended regex, searched, as
// SIGHTLINE_METRICS_KERNELS; "" = every kernel), heaviest first, at most `limit` (0 = no limit). An invalid pattern
// is an error (CheckKernelPattern says so before a trace is read).
absl::Status CheckKernelPattern(std::string_view pattern);
absl::StatusOr<std::vector<KernelPage>> BuildKernelPages(const TimelineModel& model,
                                                         const Report& report,
                                                         std::string_view pattern, size_t limit);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_KERNEL_METRICS_H_
