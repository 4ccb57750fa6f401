// lib/analysis/baseline_compare.h — what changed between a baseline window
// and a later one of the same program (a monitor's anomaly capture against
// its baseline capture): the step, the CUDA calls and kernels that grew or
// appeared per step, and the findings that appeared.
//
// Quantities are per step when both reports have steps (the analysed host
// range over the median step: a capture opens mid-step), else per second of
// window. A call or kernel is listed when
// its time per step grew by at least `min_growth_ns` and `min_growth_pct` of
// the baseline step (so a slower step names what took the extra time), the
// largest growth first. Pure function of two reports; no I/O.
#ifndef SIGHTLINE_LIB_ANALYSIS_BASELINE_COMPARE_H_
#define SIGHTLINE_LIB_ANALYSIS_BASELINE_COMPARE_H_

#include <string>
#include <vector>

#include "lib/analysis/report.h"

namespace sightline::analysis {

struct BaselineCompareOptions {
  double min_growth_ns = 200'000;  // per step (or per second without steps)
  double min_growth_pct = 2;       // of the baseline step (of a second without steps)
  size_t max_apis = 3, max_kernels = 2;
};

struct BaselineChange {
  std::string what;   // "api" or "kernel"
  std::string name;
  bool is_new = false;                 // absent from the baseline
  double base_ns = 0, now_ns = 0;      // time per step (or per second)
  double base_count = 0, now_count = 0;  // calls or launches per step (or per second)
};

struct BaselineComparison {
  bool per_step = false;
  double base_step_ns = 0, now_step_ns = 0;  // step p50 (per_step only)
  double base_gpu_pct = 0, now_gpu_pct = 0;  // mean GPU utilization of the steps
  std::vector<BaselineChange> changes;       // APIs first, then kernels; each by growth
  std::vector<const Finding*> new_findings;  // in `now`, saving >= 1 %, rule absent in base
};

BaselineComparison CompareWithBaseline(const Report& base, const Report& now,
                                       const BaselineCompareOptions& options = {});

// One line each: the step, every change, the new findings ("" parts left out).
std::vector<std::string> DescribeComparison(const BaselineComparison& c);

// `now`'s findings in the order that explains what changed: first the new
// findings whose offenders name a call or kernel that appeared or grew
// (the cause of the change: a per-step sync that appeared, not the host
// work it stopped overlapping): those whose top offender grew before those
// that list a change further down (cpu_bound lists the syncs among the
// places its host time goes), each tier by the largest growth it names;
// then the other new findings, then the rest, in the report's own order.
std::vector<const Finding*> FindingsByChange(const BaselineComparison& c, const Report& now);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_BASELINE_COMPARE_H_
