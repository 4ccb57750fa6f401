// lib/analysis/analyze.h — the analyzer's entry points.
//
//   auto report = sightline::analysis::Analyze({"rank0.sltrace", "rank1.sltrace"}, {});
//   if (!report.ok()) { ...report.status().message() names the file... }
//
// Analyze reads each trace in one streaming pass into a TimelineModel (several
// traces = several ranks, merged on CLOCK_REALTIME), computes the summary and
// tables, runs every registered rule and ranks the findings by estimated
// saving (ns, descending). The overview rules `gpu_idle` and
// `gpu_low_utilization` say where the GPU idles, not why; they rank as if
// their saving were kOverviewRankWeight of it, i.e. below any cause finding
// (cpu_bound, sync_api, kernel_fragmentation, ...) that explains at least a
// quarter of the same idle time. Damaged or truncated traces are analysed as far as
// they go; the damage is reported in Report::traces and Report::notes.
#ifndef SIGHTLINE_LIB_ANALYSIS_ANALYZE_H_
#define SIGHTLINE_LIB_ANALYSIS_ANALYZE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/analysis/model.h"
#include "lib/analysis/report.h"
#include "lib/analysis/rule.h"
#include "lib/analysis/steps.h"
#include "lib/trace/reader.h"

namespace sightline::analysis {

inline constexpr double kOverviewRankWeight = 0.25;

absl::StatusOr<Report> Analyze(const std::vector<std::string>& trace_paths,
                               const AnalysisOptions& options);

// Over already opened readers (each is read to its end).
absl::StatusOr<Report> Analyze(const std::vector<trace::TraceReader*>& readers,
                               const AnalysisOptions& options);

// Over a finished model (synthetic tests, embedding). The analysed scope is
// a copy of the model's part in it.
Report AnalyzeModel(const TimelineModel& model, const AnalysisOptions& options);
// The same report; the scope is cut from `model` in place (no copy of its
// tables), which leaves `model` holding the analysed part only.
Report AnalyzeModel(TimelineModel&& model, const AnalysisOptions& options);

// Summary and tables only, no rules (used by AnalyzeModel; exposed for tests).
Report BuildSummaryReport(const TimelineModel& model, const DerivedTimeline& timeline,
                          const AnalysisOptions& options);

// The summary and tables of `model` (already restricted to `scope`) with the
// given steps (used by AnalyzeModel).
void FillSummaryTables(const TimelineModel& model, const DerivedTimeline& timeline,
                       const StepDetection& steps, const ScopeChoice& scope, Report* report);

// Runs the rules on a report whose summary is filled; appends and ranks findings.
void RunRules(const TimelineModel& model, const DerivedTimeline& timeline,
              const AnalysisOptions& options, Report* report);

// One finding per root cause (root_cause.cc): what-if savings for the cause
// findings, symptoms folded into their cause, marginal savings whose sum
// never exceeds the window, and summary.first_action.
// Runs on the rules' findings before ranking, with the replays the rules
// already built (what_ifs).
void ApplyRootCauses(WhatIfCache& what_ifs, const AnalysisOptions& options, uint64_t window_ns,
                     std::vector<Finding>* findings);
// A sync_api finding that fired only on the host time its calls block
// (evidence fired_on = host_blocked): its saving comes from the what-if
// replay (ApplyRootCauses), none of its own.
bool IsBlockedOnlySync(const Finding& f);
// After ranking: savings capped in rank order (sum ≤ window), first action.
void CapSavingsAndChooseFirst(Report* report);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_ANALYZE_H_
