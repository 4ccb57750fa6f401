// lib/analysis/report_builder.h — internal: the pieces of BuildSummaryReport
// (summary.cc, iterations.cc, occupancy_columns.cc). Not part of the API.
#ifndef SIGHTLINE_LIB_ANALYSIS_REPORT_BUILDER_H_
#define SIGHTLINE_LIB_ANALYSIS_REPORT_BUILDER_H_

#include <string>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"
#include "lib/analysis/steps.h"
#include "lib/analysis/timeline.h"

namespace sightline::analysis {

void FillTraces(const TimelineModel& model, Report* report);
void FillDevices(const TimelineModel& model, const DerivedTimeline& timeline, Report* report);
void FillTables(const TimelineModel& model, Report* report);
// The cross-rank section (matching, clock offsets, wait attribution); after
// FillSteps (per-step rows).
void FillCrossRank(const CrossRankAnalysis& cross, Report* report);
// Theoretical occupancy + limiter of a launch configuration (occupancy.h);
// leaves the row's defaults when the device's properties are unknown.
void FillOccupancy(const TimelineModel& model, const LaunchConfig& config, KernelRow* row);
// Iterations (steps.h): the detected steps inside the analysed scope.
void FillSteps(const TimelineModel& model, const DerivedTimeline& timeline,
               const StepDetection& detection, const ScopeChoice& scope, Report* report);
// What filled the time before the steady state, from the whole-trace model.
void FillStartup(const TimelineModel& whole, const StepDetection& detection,
                 const ScopeChoice& scope, Report* report);
// NVTX ranges projected onto the GPU.
void FillNvtx(const TimelineModel& model, Report* report);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_REPORT_BUILDER_H_
