// lib/history/trend.h — series of run summaries across recorded runs, with
// regressions marked (`sightline trend`).
//
// Per quantity (step time p50 and p99, GPU utilization, memory peak):
//  1. change points by binary segmentation: the split of a segment that
//     maximises the shift of medians, in units of the larger of the two sides'
//     robust spread (1.4826 x MAD, floored at 1 % of the level), is a change
//     point when the shift is at least `threshold_pct` of the earlier level and
//     `min_z` spreads; both sides are searched again. A side may be a single
//     run (the newest run can start a new level);
//  2. inside each segment of at least 4 runs, a run that differs from the
//     median of the others by `threshold_pct` and `min_z` spreads is an outlier.
// A change to a worse level marks its first run a regression (a better one an
// improvement); a worse outlier is a regression on its own.
// The newest-run check (--fail-on-regression PCT): the newest run against the
// median of up to `baseline_runs` earlier runs that are not outliers.
#ifndef SIGHTLINE_LIB_HISTORY_TREND_H_
#define SIGHTLINE_LIB_HISTORY_TREND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/history/history_store.h"

namespace sightline::history {

struct QuantityDef {
  const char* name;   // "step_p50_ms"
  const char* title;  // "Step time p50"
  const char* unit;   // "ms"
  bool higher_is_worse;
  double (*get)(const RunRecord&);  // NaN when the run does not have it
};
const std::vector<QuantityDef>& Quantities();
const QuantityDef* FindQuantity(const std::string& name);

struct PointMark {
  bool regression = false;
  bool improvement = false;
  bool change_point = false;  // first run of a new level
  bool outlier = false;
  double change_pct = 0;      // against the reference level, signed
  std::string why;
};

struct TrendOptions {
  double threshold_pct = 10;
  double min_z = 3;
  size_t baseline_runs = 10;
};

struct Series {
  const QuantityDef* quantity = nullptr;
  std::vector<double> values;  // per run; NaN = missing
  std::vector<PointMark> marks;
};

// Marks one series (values in run order; NaN skipped).
std::vector<PointMark> MarkSeries(const std::vector<double>& values, bool higher_is_worse,
                                  const TrendOptions& options);

struct NewestCheck {
  bool available = false;  // at least 2 runs with the quantity
  double value = 0, baseline = 0;
  double worse_pct = 0;  // > 0: worse than the baseline by this much
};
NewestCheck CheckNewest(const Series& series, const TrendOptions& options);

struct Trend {
  std::vector<RunRecord> runs;
  std::vector<Series> series;  // one per Quantities()
};
Trend BuildTrend(std::vector<RunRecord> runs, const TrendOptions& options);

// --fail-on-regression / --threshold: a finite percentage in (0, 10000];
// "nan", "inf", negative, empty or trailing garbage refused with a message.
absl::StatusOr<double> ParsePercent(const std::string& flag, const std::string& text);

std::string RenderTrendText(const Trend& trend);
// A self-contained page: one SVG plot per quantity (regressions red, change
// points dashed), then the runs with their labels and top findings.
std::string RenderTrendHtml(const Trend& trend, const std::string& title);

}  // namespace sightline::history

#endif  // SIGHTLINE_LIB_HISTORY_TREND_H_
