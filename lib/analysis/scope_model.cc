// The analysed part of a model (steps.h ScopeModel, ScopeModelInPlace).
//
// In place: the kept rows of every table move to its front, in the order
// the copy would append them, and the tables shrink to what was kept; the
// analyzer's peak then holds one model's tables, not the whole model and a
// copy of most of it (a steady-state scope is usually most of the trace).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/analysis/steps.h"

namespace sightline::analysis {

namespace {

// Rewrites a table as the kept rows of its ranges, visited in a given order
// (threads' API calls, devices' activities). Rows are read from the table
// itself when the ranges ascend (each begins at or after the previous one's
// end: a write never overtakes a read), else from a copy made first.
template <typename T>
class TableCompactor {
 public:
  TableCompactor(std::vector<T>* table, bool ranges_ascend) : table_(*table) {
    if (!ranges_ascend) copy_ = table_;
  }
  const T& Row(size_t i) const { return copy_.empty() ? table_[i] : copy_[i]; }
  uint32_t size() const { return static_cast<uint32_t>(size_); }
  // Appends `row` (a Row() or a changed copy of one); returns its new index.
  uint32_t Keep(const T& row) {
    table_[size_] = row;
    return static_cast<uint32_t>(size_++);
  }
  void Finish() { table_.resize(size_); }

 private:
  std::vector<T>& table_;
  std::vector<T> copy_;
  size_t size_ = 0;
};

// Whether [begin(x), end(x)) of the items, in their order, ascend.
template <typename Items, typename Begin, typename End>
bool RangesAscend(const Items& items, Begin begin, End end) {
  uint32_t prev_end = 0;
  for (const auto& x : items) {
    if (begin(x) < prev_end || end(x) < begin(x)) return false;
    prev_end = end(x);
  }
  return true;
}

// Keeps the rows for which `keep` holds, in order.
template <typename T, typename Keep>
void KeepIf(std::vector<T>* v, Keep keep) {
  v->erase(std::remove_if(v->begin(), v->end(), [&](const T& x) { return !keep(x); }), v->end());
}

}  // namespace

TimelineModel ScopeModel(const TimelineModel& in, uint64_t start_ns, uint64_t end_ns,
                         uint64_t gpu_start_ns, uint64_t gpu_end_ns) {
  TimelineModel m = in;
  ScopeModelInPlace(&m, start_ns, end_ns, gpu_start_ns, gpu_end_ns);
  return m;
}

void ScopeModelInPlace(TimelineModel* model, uint64_t start_ns, uint64_t end_ns,
                       uint64_t gpu_start_ns, uint64_t gpu_end_ns) {
  TimelineModel& m = *model;
  auto overlaps = [&](uint64_t s, uint64_t e) { return s < end_ns && e > start_ns; };
  auto inside = [&](uint64_t t) { return t >= start_ns && t < end_ns; };
  // Work without a launching call, by its GPU start: inside the steps' GPU
  // span where one is given (a loop whose host runs ahead launches long
  // before its GPU work runs), else inside the host range.
  const bool gpu_span = gpu_end_ns > gpu_start_ns;
  auto inside_gpu = [&](uint64_t t) {
    return gpu_span ? t >= gpu_start_ns && t < gpu_end_ns : inside(t);
  };
  // GPU work by its launch time; API calls that start inside (below) or
  // launched kept work.
  std::vector<uint8_t> keep_api(m.api_calls.size(), 0);
  std::vector<uint8_t> keep_act(m.activities.size(), 0);
  uint64_t gpu_end = end_ns;
  for (size_t i = 0; i < m.activities.size(); ++i) {
    const GpuActivity& a = m.activities[i];
    const bool kept = a.launch_api != kNone ? inside(m.api_calls[a.launch_api].start_ns)
                                            : inside_gpu(a.start_ns);
    if (!kept) continue;
    keep_act[i] = 1;
    gpu_end = std::max(gpu_end, a.end_ns);
    if (a.launch_api != kNone) keep_api[a.launch_api] = 1;
  }
  // Placed replayed instances of the whole model, per kernel and per
  // configuration (read before the activities are cut): the rest of its
  // replayed counts have no position.
  absl::flat_hash_map<uint32_t, uint64_t> placed;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint64_t> placed_config;
  if (!m.replayed_activities.empty()) {
    for (const GpuActivity& a : m.activities) {
      if (a.kind != ActivityKind::kKernel || !m.IsReplayed(a)) continue;
      ++placed[a.name];
      ++placed_config[{a.name, a.detail}];
    }
  }
  // API calls and NVTX ranges, thread by thread.
  std::vector<uint32_t> api_map(m.api_calls.size(), kNone);
  {
    TableCompactor<ApiCall> calls(
        &m.api_calls, RangesAscend(m.threads, [](const ThreadInfo& t) { return t.api_begin; },
                                   [](const ThreadInfo& t) { return t.api_end; }));
    TableCompactor<NvtxRange> ranges(
        &m.nvtx_ranges, RangesAscend(m.threads, [](const ThreadInfo& t) { return t.nvtx_begin; },
                                     [](const ThreadInfo& t) { return t.nvtx_end; }));
    for (ThreadInfo& th : m.threads) {
      const uint32_t api_begin = th.api_begin, api_end = th.api_end;
      th.api_begin = calls.size();
      for (uint32_t i = api_begin; i < api_end; ++i) {
        const ApiCall& c = calls.Row(i);
        if (keep_api[i] || inside(c.start_ns)) api_map[i] = calls.Keep(c);
      }
      th.api_end = calls.size();
      const uint32_t nvtx_begin = th.nvtx_begin, nvtx_end = th.nvtx_end;
      th.nvtx_begin = ranges.size();
      for (uint32_t i = nvtx_begin; i < nvtx_end; ++i) {
        const NvtxRange& r = ranges.Row(i);
        if (overlaps(r.start_ns, r.end_ns)) ranges.Keep(r);
      }
      th.nvtx_end = ranges.size();
    }
    calls.Finish();
    ranges.Finish();
  }
  std::vector<uint8_t>().swap(keep_api);
  // GPU work, device by device.
  std::vector<uint32_t> act_map(m.activities.size(), kNone);
  {
    TableCompactor<GpuActivity> acts(
        &m.activities,
        RangesAscend(m.devices, [](const DeviceTimelineInfo& d) { return d.activity_begin; },
                     [](const DeviceTimelineInfo& d) { return d.activity_end; }));
    for (DeviceTimelineInfo& dev : m.devices) {
      const uint32_t b = dev.activity_begin, e = dev.activity_end;
      dev.activity_begin = acts.size();
      for (uint32_t i = b; i < e; ++i) {
        if (!keep_act[i]) continue;
        GpuActivity a = acts.Row(i);
        a.launch_api = a.launch_api == kNone ? kNone : api_map[a.launch_api];
        act_map[i] = acts.Keep(a);
      }
      dev.activity_end = acts.size();
    }
    acts.Finish();
  }
  std::vector<uint8_t>().swap(keep_act);
  for (StreamInfo& s : m.streams) {
    size_t n = 0;
    for (uint32_t i : s.activities) {
      if (act_map[i] != kNone) s.activities[n++] = act_map[i];
    }
    s.activities.resize(n);
  }
  std::vector<uint32_t>().swap(act_map);
  KeepIf(&m.collectives, [&](const Collective& c) { return overlaps(c.start_ns, c.end_ns); });
  KeepIf(&m.host_syncs, [&](const HostSync& s) { return overlaps(s.start_ns, s.end_ns); });
  KeepIf(&m.step_markers, [&](const StepMarker& s) { return inside(s.timestamp_ns); });
  KeepIf(&m.capture_windows, [&](const CaptureWindow& w) { return overlaps(w.start_ns, w.end_ns); });
  KeepIf(&m.overheads,
         [&](const OverheadSpan& o) { return o.start_ns < gpu_end && o.end_ns > start_ns; });
  KeepIf(&m.memory_ops, [&](const MemoryOp& op) { return inside(op.timestamp_ns); });
  for (MemoryOp& op : m.memory_ops) op.api = op.api == kNone ? kNone : api_map[op.api];
  // PyTorch's memory samples are whole-run facts (memory.cc reads them from
  // the whole model).
  m.torch_memory.clear();
  // Kept whole: communicators, metric samples, range metric sets (the report
  // marks those in scope), GPU metric series (gpu_metrics.cc weighs by
  // overlap with the window), replayed activities.
  //
  // Kernel aggregates: timing and instance counts from the kept launches,
  // per kernel and per launch configuration (the kernel rules weigh each
  // configuration by its time: kept whole, a capture window of a 10-minute
  // monitored run claimed savings of the whole run's kernels, 29 % "of the
  // window"); metrics describe the kernel and stay. Kernels replayed for
  // metrics count as replayed where their placement falls; those the model
  // could not place (no launch call or no measured duration: no time) are
  // carried into every scope, as the whole model lists them. A kernel whose
  // scoped instances are all replayed stays in the table with count 0, as
  // in the whole model.
  struct Acc {
    uint64_t count = 0, total = 0, min = 0, max = 0, replayed = 0;
    double sum_sq = 0;
  };
  struct ConfigAcc {
    uint64_t count = 0, total = 0, replayed = 0;
  };
  absl::flat_hash_map<uint32_t, Acc> acc;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, ConfigAcc> config_acc;  // (name, config)
  uint64_t all = 0;
  // The scope's extent: earliest start, latest end of its GPU work (here)
  // and API calls (below).
  m.first_ns = 0;
  m.last_ns = 0;
  auto extend = [&](uint64_t s, uint64_t e) {
    m.first_ns = m.first_ns == 0 ? s : std::min(m.first_ns, s);
    m.last_ns = std::max(m.last_ns, e);
  };
  for (const GpuActivity& a : m.activities) {
    extend(a.start_ns, a.end_ns);
    if (a.kind != ActivityKind::kKernel) continue;
    Acc& x = acc[a.name];
    ConfigAcc& c = config_acc[{a.name, a.detail}];
    if (m.IsReplayed(a)) {  // not timed
      ++x.replayed;
      ++c.replayed;
      continue;
    }
    uint64_t d = a.duration();
    x.min = x.count == 0 ? d : std::min(x.min, d);
    x.max = std::max(x.max, d);
    x.count++;
    x.total += d;
    x.sum_sq += double(d) * double(d);
    c.count++;
    c.total += d;
    all += d;
  }
  std::vector<KernelAggregate> kernels;
  for (const KernelAggregate& k : m.kernels) {
    const uint64_t placed_k = placed.contains(k.name) ? placed.at(k.name) : 0;
    const uint64_t unplaced = k.replayed_count > placed_k ? k.replayed_count - placed_k : 0;
    auto it = acc.find(k.name);
    if (it == acc.end()) {
      if (unplaced == 0) continue;
      it = acc.emplace(k.name, Acc{}).first;
    }
    it->second.replayed += unplaced;
    KernelAggregate out = k;
    const Acc& x = it->second;
    out.count = x.count;
    out.replayed_count = x.replayed;
    out.total_ns = x.total;
    out.min_ns = x.min;
    out.max_ns = x.max;
    if (x.count > 0) {
      out.mean_ns = double(x.total) / double(x.count);
      double var = x.sum_sq / double(x.count) - out.mean_ns * out.mean_ns;
      out.stddev_ns = var > 0 ? std::sqrt(var) : 0;
    } else {
      out.mean_ns = out.stddev_ns = 0;
    }
    out.share_pct = all ? 100.0 * double(x.total) / double(all) : 0;
    out.configs.clear();
    for (const LaunchConfigUse& use : k.configs) {
      auto pc = placed_config.find({k.name, use.config_id});
      const uint64_t placed_c = pc == placed_config.end() ? 0 : pc->second;
      const uint64_t unplaced_c =
          use.replayed_count > placed_c ? use.replayed_count - placed_c : 0;
      auto c = config_acc.find({k.name, use.config_id});
      if (c == config_acc.end() && unplaced_c == 0) continue;
      LaunchConfigUse scoped = use;
      scoped.count = c == config_acc.end() ? 0 : c->second.count;
      scoped.total_ns = c == config_acc.end() ? 0 : c->second.total;
      scoped.replayed_count = (c == config_acc.end() ? 0 : c->second.replayed) + unplaced_c;
      out.configs.push_back(std::move(scoped));
    }
    std::stable_sort(out.configs.begin(), out.configs.end(),
                     [](const LaunchConfigUse& a, const LaunchConfigUse& b) {
                       if (a.count != b.count) return a.count > b.count;  // as the model's
                       return a.total_ns > b.total_ns;
                     });
    kernels.push_back(std::move(out));
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const KernelAggregate& a, const KernelAggregate& b) {
                     if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
                     return a.name_text < b.name_text;
                   });
  m.kernels = std::move(kernels);
  for (const ApiCall& a : m.api_calls) extend(a.start_ns, a.end_ns);
}

}  // namespace sightline::analysis
