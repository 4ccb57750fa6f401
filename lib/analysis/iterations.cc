// Iterations (steps) and NVTX ranges projected onto the GPU.
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "lib/analysis/api_names.h"
#include "lib/analysis/text_util.h"
#include "lib/analysis/report_builder.h"
#include "lib/analysis/steps.h"

namespace sightline::analysis {

namespace {

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

}  // namespace

void FillSteps(const TimelineModel& model, const DerivedTimeline& timeline,
               const StepDetection& detection, const ScopeChoice& scope, Report* report) {
  StepSummary& out = report->summary.steps;
  out.source = detection.source;
  out.name = detection.name;
  out.detected = detection.steps.size();
  out.warmup_steps = detection.warmup;
  out.metrics_steps = detection.metrics_steps;
  out.period = detection.period;
  out.match_pct = detection.match_pct;
  // Rows: the steps inside the analysed scope (all of them for a whole-trace
  // analysis), with their index among all detected steps.
  struct Indexed {
    DetectedStep step;
    uint32_t index;
  };
  std::vector<Indexed> steps;
  for (size_t i = 0; i < detection.steps.size(); ++i) {
    const DetectedStep& s = detection.steps[i];
    if (scope.first_step >= 0 && (int64_t(i) < scope.first_step || int64_t(i) > scope.last_step)) {
      continue;
    }
    if (scope.kind == "time" && (s.start_ns < scope.start_ns || s.end_ns > scope.end_ns)) continue;
    steps.push_back({s, static_cast<uint32_t>(i)});
  }
  if (steps.empty()) return;
  std::vector<IntervalSet> busy = BusyPerTrace(model, timeline);
  std::vector<uint64_t> durations;
  double sum = 0, sum_sq = 0, util_sum = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    StepRow row;
    const DetectedStep& step = steps[i].step;
    row.index = steps[i].index;
    row.trace = step.trace;
    const bool on_gpu = step.gpu_end_ns > step.gpu_start_ns;
    row.start_ns = on_gpu ? step.gpu_start_ns : step.start_ns;
    row.end_ns = on_gpu ? step.gpu_end_ns : step.end_ns;
    row.duration_ns = row.end_ns - row.start_ns;
    uint64_t gpu = busy[step.trace].OverlapWith(row.start_ns, row.end_ns);
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

void FillStartup(const TimelineModel& whole, const StepDetection& detection,
                 const ScopeChoice& scope, Report* report) {
  if (scope.kind != "steady_state") return;
  StartupSummary& s = report->summary.startup;
  const uint64_t end = scope.start_ns;
  const uint64_t begin = end - std::min(end, scope.startup_ns);
  s.duration_ns = end - begin;
  for (size_t i = 0; i < detection.warmup && i < detection.steps.size(); ++i) {
    s.warmup_ns += detection.steps[i].duration();
  }
  auto clip = [&](uint64_t a, uint64_t b, std::vector<Interval>* set) {
    a = std::max(a, begin);
    b = std::min(b, end);
    if (a < b) set->push_back({a, b});
  };
  std::vector<Interval> api, module, alloc, sync, gpu, lazy, compile;
  for (const ApiCall& c : whole.api_calls) {
    if (c.start_ns >= end || c.end_ns <= begin) continue;
    clip(c.start_ns, c.end_ns, &api);
    std::string_view name = whole.String(c.name);
    if (name.find("Module") != std::string_view::npos ||
        name.find("Library") != std::string_view::npos ||
        name.find("FuncGetAttributes") != std::string_view::npos ||
        name.find("GetFunction") != std::string_view::npos ||
        name.find("FuncSetAttribute") != std::string_view::npos) {
      clip(c.start_ns, c.end_ns, &module);
    } else if (IsAllocatingApi(name)) {
      clip(c.start_ns, c.end_ns, &alloc);
    } else if (c.flags & (kApiSync | kApiMemcpySync)) {
      clip(c.start_ns, c.end_ns, &sync);
    }
  }
  for (const GpuActivity& a : whole.activities) {
    if (a.start_ns < end && a.end_ns > begin) clip(a.start_ns, a.end_ns, &gpu);
  }
  for (const OverheadSpan& o : whole.overheads) {
    if (o.start_ns >= end || o.end_ns <= begin) continue;
    if (o.kind == (4u << 16) || o.kind == (5u << 16)) clip(o.start_ns, o.end_ns, &lazy);
    if (o.kind == 1u) clip(o.start_ns, o.end_ns, &compile);
  }
  auto total = [](std::vector<Interval> v) { return IntervalSet::FromUnsorted(std::move(v)).total(); };
  s.cuda_api_ns = total(api);
  s.module_loading_ns = total(module);
  s.memory_alloc_ns = total(alloc);
  s.sync_ns = total(sync);
  s.gpu_busy_ns = total(gpu);
  s.lazy_loading_ns = total(lazy);
  s.compilation_ns = total(compile);
  std::vector<Interval> both = api;
  both.insert(both.end(), gpu.begin(), gpu.end());
  uint64_t covered = total(std::move(both));
  s.host_other_ns = s.duration_ns > covered ? s.duration_ns - covered : 0;
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
  // By (domain, name), the name without PyTorch's per-instance annotations
  // (RangeGroupName: a --pytorch trace's 9 134 ranges were 9 134 rows of one
  // instance each).
  std::map<std::pair<uint32_t, std::string_view>, NvtxRow> rows;
  absl::flat_hash_map<uint32_t, std::string_view> group_of;  // name id → group name
  for (size_t i = 0; i < model.nvtx_ranges.size(); ++i) {
    const NvtxRange& r = model.nvtx_ranges[i];
    auto [g, fresh] = group_of.try_emplace(r.name);
    if (fresh) g->second = RangeGroupName(model.String(r.name));
    NvtxRow& row = rows[{r.domain, g->second}];
    row.count++;
    row.cpu_total_ns += r.end_ns - r.start_ns;
    row.gpu_total_ns += gpu_ns[i];
    row.gpu_ops += ops[i];
  }
  for (auto& [key, row] : rows) {
    row.domain = std::string(model.String(key.first));
    row.name = std::string(key.second);
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
