// Iterations (steps) and NVTX ranges projected onto the GPU.
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "lib/analysis/text_util.h"
#include "lib/analysis/report_builder.h"

namespace sightline::analysis {

namespace {

struct StepSpan {
  uint64_t start_ns, end_ns;
  uint16_t trace;
};

// Busy union of all devices of each trace (per-step utilization of a rank).
std::vector<IntervalSet> BusyPerTrace(const TimelineModel& model,
                                      const DerivedTimeline& timeline) {
  std::vector<IntervalSet> out(model.traces.size());
  for (size_t d = 0; d < model.devices.size(); ++d) {
    IntervalSet& s = out[model.devices[d].trace];
    s = s.Union(timeline.devices[d].busy);
  }
  return out;
}

std::vector<StepSpan> StepsFromMarkers(const TimelineModel& model, std::string* name) {
  // Group markers by (trace, thread, name); take the largest group of each
  // trace's most used group key... simply: consecutive markers of one group.
  std::map<std::tuple<uint16_t, uint32_t, uint32_t>, std::vector<uint64_t>> groups;
  for (const StepMarker& m : model.step_markers) {
    groups[{m.trace, m.thread, m.name}].push_back(m.timestamp_ns);
  }
  // Per trace, the group with the most markers.
  std::map<uint16_t, const std::vector<uint64_t>*> best;
  std::map<uint16_t, uint32_t> best_name;
  for (const auto& [key, times] : groups) {
    uint16_t trace = std::get<0>(key);
    auto it = best.find(trace);
    if (it == best.end() || times.size() > it->second->size()) {
      best[trace] = &times;
      best_name[trace] = std::get<2>(key);
    }
  }
  std::vector<StepSpan> steps;
  for (const auto& [trace, times] : best) {
    *name = std::string(model.String(best_name[trace]));
    for (size_t i = 1; i < times->size(); ++i) {
      if ((*times)[i] > (*times)[i - 1]) steps.push_back({(*times)[i - 1], (*times)[i], trace});
    }
  }
  return steps;
}

std::vector<StepSpan> StepsFromNvtx(const TimelineModel& model, uint32_t name,
                                    bool top_level_only) {
  std::vector<StepSpan> steps;
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.name != name || (top_level_only && r.depth != 0)) continue;
    steps.push_back({r.start_ns, r.end_ns, r.trace});
  }
  return steps;
}

// Libraries that wrap each of their API calls in an NVTX range of their own
// domain: one range per call, never the application's step.
bool IsLibraryDomain(std::string_view domain) {
  for (std::string_view lib : {"NCCL", "cuBLAS", "cuDNN", "cuFFT", "cuSPARSE", "NVSHMEM"}) {
    if (domain == lib) return true;
  }
  return false;
}

// The most frequent top-level range name (names mentioning "step" or "iter"
// first), with at least two occurrences, outside library domains; 0 when
// none.
uint32_t AutoDetectStepRange(const TimelineModel& model) {
  absl::flat_hash_map<uint32_t, std::pair<uint64_t, uint64_t>> counts;  // name → (n, total)
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.depth != 0 || r.name == 0) continue;
    if (r.domain != 0 && IsLibraryDomain(model.String(r.domain))) continue;
    auto& c = counts[r.name];
    c.first++;
    c.second += r.end_ns - r.start_ns;
  }
  uint32_t best = 0;
  std::tuple<bool, uint64_t, uint64_t> best_key{false, 0, 0};
  for (const auto& [name, c] : counts) {
    if (c.first < 2) continue;
    std::string_view text = model.String(name);
    bool stepish = ContainsIgnoreCase(text, "step") ||
                   ContainsIgnoreCase(text, "iter");
    std::tuple<bool, uint64_t, uint64_t> key{stepish, c.first, c.second};
    if (best == 0 || key > best_key || (key == best_key && text < model.String(best))) {
      best = name;
      best_key = key;
    }
  }
  return best;
}

uint32_t FindString(const TimelineModel& model, std::string_view s) {
  for (size_t i = 1; i < model.strings.size(); ++i) {
    if (model.strings[i] == s) return static_cast<uint32_t>(i);
  }
  return 0;
}

}  // namespace

void FillSteps(const TimelineModel& model, const DerivedTimeline& timeline,
               const std::string& step_range_name, Report* report) {
  StepSummary& out = report->summary.steps;
  std::vector<StepSpan> steps;
  if (!step_range_name.empty()) {
    uint32_t name = FindString(model, step_range_name);
    if (name != 0) steps = StepsFromNvtx(model, name, /*top_level_only=*/false);
    out.source = "nvtx";
    out.name = step_range_name;
    if (steps.empty()) {
      report->notes.push_back("no NVTX range named '" + step_range_name +
                              "' found; no iterations reported");
    }
  } else if (!model.step_markers.empty()) {
    steps = StepsFromMarkers(model, &out.name);
    out.source = "step_marker";
  }
  if (steps.empty() && step_range_name.empty()) {
    uint32_t name = AutoDetectStepRange(model);
    if (name != 0) {
      steps = StepsFromNvtx(model, name, /*top_level_only=*/true);
      out.source = "nvtx";
      out.name = std::string(model.String(name));
    }
  }
  if (steps.empty() && step_range_name.empty()) {
    for (const CaptureWindow& w : model.capture_windows) {
      if (w.trigger == CaptureTrigger::kWholeRun) continue;
      steps.push_back({w.start_ns, w.end_ns, w.trace});
    }
    if (!steps.empty()) {
      out.source = "capture_window";
      out.name = "";
    }
  }
  if (steps.empty()) {
    if (step_range_name.empty()) {
      out.source.clear();
      out.name.clear();
    }
    return;
  }
  std::sort(steps.begin(), steps.end(), [](const StepSpan& a, const StepSpan& b) {
    return std::tie(a.start_ns, a.trace) < std::tie(b.start_ns, b.trace);
  });
  std::vector<IntervalSet> busy = BusyPerTrace(model, timeline);
  std::vector<uint64_t> durations;
  double sum = 0, sum_sq = 0, util_sum = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    StepRow row;
    row.index = static_cast<uint32_t>(i);
    row.start_ns = steps[i].start_ns;
    row.end_ns = steps[i].end_ns;
    row.duration_ns = steps[i].end_ns - steps[i].start_ns;
    uint64_t gpu = busy[steps[i].trace].OverlapWith(row.start_ns, row.end_ns);
    row.gpu_utilization_pct = row.duration_ns ? 100.0 * double(gpu) / double(row.duration_ns) : 0;
    durations.push_back(row.duration_ns);
    sum += double(row.duration_ns);
    sum_sq += double(row.duration_ns) * double(row.duration_ns);
    util_sum += row.gpu_utilization_pct;
    out.steps.push_back(row);
  }
  std::sort(durations.begin(), durations.end());
  size_t n = durations.size();
  out.count = n;
  out.mean_ns = sum / double(n);
  double var = sum_sq / double(n) - out.mean_ns * out.mean_ns;
  out.stddev_ns = var > 0 ? std::sqrt(var) : 0;
  auto nearest_rank = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * double(n)));
    return durations[std::min(n, std::max<size_t>(rank, 1)) - 1];
  };
  out.p50_ns = nearest_rank(50);
  out.p99_ns = nearest_rank(99);
  out.min_ns = durations.front();
  out.max_ns = durations.back();
  out.mean_gpu_utilization_pct = util_sum / double(n);
}

void FillNvtx(const TimelineModel& model, Report* report) {
  if (model.nvtx_ranges.empty()) return;
  // Each GPU activity adds its time to every NVTX range that encloses the
  // start of its launching API call on the launching thread.
  std::vector<uint64_t> gpu_ns(model.nvtx_ranges.size(), 0);
  std::vector<uint32_t> ops(model.nvtx_ranges.size(), 0);
  uint64_t all_gpu = 0;
  const NvtxRange* base = model.nvtx_ranges.data();
  for (const GpuActivity& a : model.activities) {
    all_gpu += a.duration();
    const ApiCall* launch = model.LaunchOf(a);
    if (launch == nullptr) continue;
    const ThreadInfo& t = model.threads[launch->thread];
    if (t.nvtx_begin == t.nvtx_end) continue;
    uint64_t at = launch->start_ns;
    const NvtxRange* it = std::upper_bound(base + t.nvtx_begin, base + t.nvtx_end, at,
                                           [](uint64_t v, const NvtxRange& r) {
                                             return v < r.start_ns;
                                           });
    for (int walked = 0; it != base + t.nvtx_begin && walked < 4096; ++walked) {
      --it;
      if (it->end_ns > at) {
        gpu_ns[it - base] += a.duration();
        ops[it - base]++;
      } else if (it->depth == 0) {
        break;  // an earlier top-level range that ended: nothing before encloses `at`
      }
    }
  }
  std::map<std::pair<uint32_t, uint32_t>, NvtxRow> rows;  // (domain, name)
  for (size_t i = 0; i < model.nvtx_ranges.size(); ++i) {
    const NvtxRange& r = model.nvtx_ranges[i];
    NvtxRow& row = rows[{r.domain, r.name}];
    row.count++;
    row.cpu_total_ns += r.end_ns - r.start_ns;
    row.gpu_total_ns += gpu_ns[i];
    row.gpu_ops += ops[i];
  }
  for (auto& [key, row] : rows) {
    row.domain = std::string(model.String(key.first));
    row.name = std::string(model.String(key.second));
    row.gpu_share_pct = all_gpu ? 100.0 * double(row.gpu_total_ns) / double(all_gpu) : 0;
    report->nvtx.push_back(std::move(row));
  }
  std::sort(report->nvtx.begin(), report->nvtx.end(), [](const NvtxRow& a, const NvtxRow& b) {
    if (a.gpu_total_ns != b.gpu_total_ns) return a.gpu_total_ns > b.gpu_total_ns;
    if (a.cpu_total_ns != b.cpu_total_ns) return a.cpu_total_ns > b.cpu_total_ns;
    return a.name < b.name;
  });
}

}  // namespace sightline::analysis
