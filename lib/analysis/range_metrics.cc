// lib/analysis/range_metrics.cc — see range_metrics.h.
#include "lib/analysis/range_metrics.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace sightline::analysis {

void FillRangeMetrics(const TimelineModel& model, uint64_t window_start_ns,
                      uint64_t window_end_ns, Report* report) {
  report->range_metrics.clear();
  if (model.range_metric_sets.empty()) return;
  std::vector<const RangeMetricSet*> sets;
  sets.reserve(model.range_metric_sets.size());
  for (const RangeMetricSet& s : model.range_metric_sets) sets.push_back(&s);
  std::stable_sort(sets.begin(), sets.end(), [](const RangeMetricSet* a, const RangeMetricSet* b) {
    return a->start_ns < b->start_ns;
  });
  const bool whole = window_start_ns == 0 && window_end_ns == 0;
  std::map<std::string, RangeMetricsRow> rows;
  for (const RangeMetricSet* s : sets) {
    const std::string name(model.String(s->name));
    RangeMetricsRow& row = rows[name];
    row.range = name;
    RangeMetricSetRow r;
    r.start_ns = s->start_ns;
    r.end_ns = s->end_ns;
    r.instances = s->instances;
    r.passes_needed = s->passes_needed;
    r.passes_collected = s->passes_collected;
    r.complete = !s->values.empty();
    // In the window when at least half of its span is: a set starts at its
    // first instance's push (host time), a little before that instance's
    // first kernel, where a steady-state window starts.
    const uint64_t lo = std::max(s->start_ns, window_start_ns);
    const uint64_t hi = std::min(s->end_ns, window_end_ns);
    const uint64_t overlap = hi > lo ? hi - lo : 0;
    r.in_window = whole || 2 * overlap >= s->end_ns - s->start_ns;
    for (const auto& [metric, value] : s->values) {
      r.metrics.push_back({std::string(model.String(metric)), value, 1});
    }
    std::sort(r.metrics.begin(), r.metrics.end(),
              [](const KernelMetricValue& a, const KernelMetricValue& b) { return a.name < b.name; });
    ++row.sets;
    row.instances += s->instances;
    if (r.complete) {
      ++row.complete;
      if (r.in_window) ++row.complete_in_window;
    }
    row.set_rows.push_back(std::move(r));
  }
  for (auto& [name, row] : rows) {
    row.from_window = row.complete_in_window > 0;
    std::map<std::string, std::pair<double, uint64_t>> sum;  // metric → (sum, sets)
    for (const RangeMetricSetRow& r : row.set_rows) {
      if (!r.complete || (row.from_window && !r.in_window)) continue;
      for (const KernelMetricValue& v : r.metrics) {
        auto& [total, n] = sum[v.name];
        total += v.value;
        ++n;
      }
    }
    for (const auto& [metric, acc] : sum) {
      row.metrics.push_back({metric, acc.first / double(acc.second), acc.second});
    }
    report->range_metrics.push_back(std::move(row));
  }
}

}  // namespace sightline::analysis
