// lib/export/report_render.h — renders analysis::Report for people and CI:
// a one-screen text report, JSON ("schema": "sightline.report.v1", every
// number the text shows and more; fields documented in docs/report-schema.md),
// and the comparison of two runs (`sightline diff`) as text or JSON
// ("schema": "sightline.diff.v1") with a regression verdict for CI gates.
#ifndef SIGHTLINE_LIB_EXPORT_REPORT_RENDER_H_
#define SIGHTLINE_LIB_EXPORT_REPORT_RENDER_H_

#include <string>
#include <vector>

#include "lib/analysis/kernel_metrics.h"
#include "lib/analysis/report.h"
#include "lib/analysis/rule_util.h"

namespace sightline::exporter {

inline constexpr const char kDiffSchema[] = "sightline.diff.v1";

// Text report for a terminal `width` columns wide (>= 60): summary, traces,
// per-GPU breakdown, steps, top kernels, findings ranked by saving with their
// evidence and recommendation, notes. `max_kernels`/`max_findings` bound the
// tables ("... N more" lines say what was left out; the JSON has all).
struct TextOptions {
  int width = 100;
  size_t max_kernels = 10;
  size_t max_findings = 10;
};
std::string RenderReportText(const analysis::Report& report, const TextOptions& options = {});

// `analyze --group-by python|op|kernel`: one table of GPU time and
// host-blocked time by Python call site, by PyTorch op, or by kernel (with
// each kernel's op and call site). report_group_by.cc.
std::string RenderGroupByText(const analysis::Report& report, const std::string& group_by,
                              int width = 100);

// `analyze --kernel REGEX`: ncu-style details pages (kernel_metrics.h), one
// per kernel, sections as rows of label, value and note.
std::string RenderKernelPagesText(const std::vector<analysis::KernelPage>& pages, int width = 100);

// Pretty-printed JSON (2-space indent), newline-terminated.
std::string RenderReportJson(const analysis::Report& report);

// ---- diff ------------------------------------------------------------------
//
// Tracked quantities and how a regression is judged against PCT:
//   step_time_mean_ns, step_time_p50_ns, step_time_p99_ns (when both runs have
//     steps), window_ns (always) and kernel_time_total_ns: relative increase
//     (new - base) / base * 100 > PCT;
//   gpu_utilization_pct (per device, matched by position): a drop of more
//     than PCT percentage points;
//   per-kernel total time, for kernels matched by name whose share of kernel
//     time is >= min_kernel_share_pct in either run: relative increase > PCT.
// Kernels only in one run are listed as appeared / disappeared; findings are
// matched by (rule, scope) and listed as appeared / resolved / changed.
struct DiffOptions {
  double fail_on_regression_pct = -1;  // < 0: report only, never a regression
  double min_kernel_share_pct = 1.0;
};

struct QuantityChange {
  std::string name;   // "step_time_mean_ns", "gpu_utilization_pct[0]", "kernel:gemm"
  std::string unit;   // "ns", "pct", "count"
  double base = 0, now = 0;
  double change = 0;  // relative % for times and counts; percentage points for "pct"
  bool lower_is_better = true;
  bool gated = false;      // compared against PCT
  bool regression = false;
  bool improvement = false;  // moved the good way by more than PCT (or 1%/1 pt)
};

struct KernelChange {
  std::string name;
  uint64_t base_count = 0, now_count = 0;
  uint64_t base_total_ns = 0, now_total_ns = 0;
  double base_share_pct = 0, now_share_pct = 0;
  double total_change_pct = 0;  // relative; 0 when absent in base
  bool regression = false;
};

struct FindingChange {
  std::string rule, scope, title;
  std::string severity_base, severity_now;  // "" when absent on that side
  uint64_t saving_base_ns = 0, saving_now_ns = 0;
};

struct DiffResult {
  std::string base_label, now_label;  // trace paths
  double threshold_pct = -1;
  std::vector<QuantityChange> quantities;
  std::vector<KernelChange> kernels;  // by max(base, now) total descending
  std::vector<std::string> kernels_appeared, kernels_disappeared;
  std::vector<FindingChange> findings_appeared, findings_resolved, findings_changed;
  std::vector<std::string> regressions;  // one line per regression, for the verdict
  // One line per damaged (incomplete) input trace, either side.
  std::vector<std::string> damage_notes;
  bool regression() const { return !regressions.empty(); }
};

DiffResult DiffReports(const analysis::Report& base, const analysis::Report& now,
                       const DiffOptions& options);
std::string RenderDiffText(const DiffResult& diff, int width = 100);
std::string RenderDiffJson(const DiffResult& diff);

// ---- shared formatting -------------------------------------------------------
// Durations and percentages: the analysis' one formatter (rule_util.h), so a
// finding's title and the report's tables print a number the same way.
// "812 ns", "12.4 us", "3.21 ms", "1.50 s".
inline std::string FormatDuration(double ns) { return analysis::FormatNs(ns); }
using analysis::FormatPct;                   // "87.3%"
std::string FormatBytes(double bytes);       // "4.19 MB"
// A hardware metric's value by its name's unit: durations ("gpu__time_duration"),
// percentages ("...pct..."), byte rates ("4.19 MB/s"), byte counts; else 4
// significant digits. The text report's range metrics and the HTML report's.
std::string FormatMetricValue(const std::string& metric, double value);
// A PM-sampled value (--gpu-metrics) in its quantity's unit ("%", "B/s",
// "Hz"); "-" for NaN (no sample covered it). Text and HTML reports.
std::string FormatGpuMetric(const std::string& unit, double value);
// Removes trailing spaces from every line (tables are padded with %-Ns).
std::string TrimLineEnds(const std::string& text);
// Shortens `s` to `width` display columns with a middle ellipsis.
std::string Ellipsize(const std::string& s, size_t width);

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_REPORT_RENDER_H_
