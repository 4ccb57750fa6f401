// lib/analysis/report_builder.h — internal: the pieces of BuildSummaryReport
// (summary.cc, iterations.cc, occupancy_columns.cc). Not part of the API.
#ifndef SIGHTLINE_LIB_ANALYSIS_REPORT_BUILDER_H_
#define SIGHTLINE_LIB_ANALYSIS_REPORT_BUILDER_H_

#include <string>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"
#include "lib/analysis/timeline.h"

namespace sightline::analysis {

void FillTraces(const TimelineModel& model, Report* report);
void FillDevices(const TimelineModel& model, const DerivedTimeline& timeline, Report* report);
void FillTables(const TimelineModel& model, Report* report);
// Theoretical occupancy + limiter of a launch configuration (occupancy.h);
// leaves the row's defaults when the device's properties are unknown.
void FillOccupancy(const TimelineModel& model, const LaunchConfig& config, KernelRow* row);
// Iterations: explicit NVTX name > step markers > auto-detected NVTX range >
// profiler-API capture windows.
void FillSteps(const TimelineModel& model, const DerivedTimeline& timeline,
               const std::string& step_range_name, Report* report);
// NVTX ranges projected onto the GPU.
void FillNvtx(const TimelineModel& model, Report* report);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_REPORT_BUILDER_H_
