// ModelBuilder::Finish: sort every table, link API calls to GPU work by
// correlation id, nest NVTX ranges, aggregate kernels per name and join metric
// values by correlation id.
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "lib/analysis/model_builder_impl.h"

namespace sightline::analysis {

namespace {
uint64_t CorrelationKey(uint16_t trace, uint32_t correlation_id) {
  return (uint64_t{trace} << 32) | correlation_id;
}
}  // namespace

void ModelBuilder::Impl::AddNcclGpuActivities() {
  // NCCL GPU events go on the timeline only for traces whose NCCL kernels were
  // not recorded as kernels (otherwise they would be counted twice).
  for (size_t i = 0; i < model.collectives.size(); ++i) {
    const Collective& c = model.collectives[i];
    if (c.source != NcclSource::kGpuKernel || c.device == kNone || nccl_streams[i] == kNone) continue;
    if (c.trace < has_comm_kernel.size() && has_comm_kernel[c.trace]) continue;
    GpuActivity a;
    a.start_ns = c.start_ns;
    a.end_ns = c.end_ns;
    a.stream = nccl_streams[i];
    a.correlation_id = nccl_correlation[i];
    a.name = c.name;
    a.detail = static_cast<uint32_t>(i);
    a.kind = ActivityKind::kNccl;
    a.klass = ActivityClass::kCommunication;
    a.trace = c.trace;
    stream_activities[a.stream].push_back(a);
  }
  nccl_streams.clear();
  nccl_streams.shrink_to_fit();
  nccl_correlation.clear();
  nccl_correlation.shrink_to_fit();
  std::stable_sort(model.collectives.begin(), model.collectives.end(),
                   [](const Collective& a, const Collective& b) {
                     return std::tie(a.trace, a.start_ns) < std::tie(b.trace, b.start_ns);
                   });
  FillCommunicatorRanks();
}

void ModelBuilder::Impl::FillCommunicatorRanks() {
  // NCCL 2.28 states a communicator's rank and size only when it is destroyed
  // (see lib/collect/nccl_payload.cc): give them to the collectives of that
  // communicator in the same trace, whenever they were recorded.
  std::map<std::pair<uint16_t, uint64_t>, std::pair<int32_t, int32_t>> ranks;
  auto learn = [&](const Collective& c) {
    if (c.comm_id != 0 && c.nranks > 0 && c.rank >= 0) ranks[{c.trace, c.comm_id}] = {c.rank, c.nranks};
  };
  for (const Collective& c : model.communicators) learn(c);
  for (const Collective& c : model.collectives) learn(c);
  if (ranks.empty()) return;
  for (Collective& c : model.collectives) {
    if (c.comm_id == 0 || c.nranks > 0) continue;
    auto it = ranks.find({c.trace, c.comm_id});
    if (it == ranks.end()) continue;
    c.rank = it->second.first;
    c.nranks = it->second.second;
  }
}

namespace {

bool ActivityBefore(const GpuActivity& a, const GpuActivity& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
  return a.stream < b.stream;
}

bool CallBefore(const ApiCall& a, const ApiCall& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  return a.end_ns > b.end_ns;  // outer call first
}

}  // namespace

void ModelBuilder::Impl::MergeActivities() {
  size_t total = 0;
  for (const auto& s : stream_activities) total += s.size();
  auto& acts = model.activities;
  acts.clear();
  acts.reserve(total);  // untouched pages cost no RSS until written
  for (size_t s = 0; s < model.streams.size(); ++s) {
    auto& buf = stream_activities[s];
    if (!std::is_sorted(buf.begin(), buf.end(), ActivityBefore)) {
      std::sort(buf.begin(), buf.end(), ActivityBefore);
    }
    model.streams[s].activities.clear();
    model.streams[s].activities.reserve(buf.size());
  }
  for (auto& d : model.devices) d.streams.clear();
  for (size_t s = 0; s < model.streams.size(); ++s) {
    model.devices[model.streams[s].device].streams.push_back(static_cast<uint32_t>(s));
  }
  // Per device, a k-way merge of its (sorted) streams by (start, end, stream).
  struct Head {
    uint64_t start, end;  // of the stream's next activity (cached for the heap)
    uint32_t stream;
    size_t next;
  };
  std::vector<Head> heads;
  for (size_t d = 0; d < model.devices.size(); ++d) {
    DeviceTimelineInfo& dev = model.devices[d];
    std::sort(dev.streams.begin(), dev.streams.end(), [&](uint32_t a, uint32_t b) {
      return model.streams[a].stream_id < model.streams[b].stream_id;
    });
    dev.activity_begin = static_cast<uint32_t>(acts.size());
    heads.clear();
    for (uint32_t s : dev.streams) {
      const auto& buf = stream_activities[s];
      if (!buf.empty()) heads.push_back({buf[0].start_ns, buf[0].end_ns, s, 0});
    }
    auto later = [](const Head& a, const Head& b) {
      if (a.start != b.start) return a.start > b.start;
      if (a.end != b.end) return a.end > b.end;
      return a.stream > b.stream;
    };
    std::make_heap(heads.begin(), heads.end(), later);
    while (!heads.empty()) {
      std::pop_heap(heads.begin(), heads.end(), later);
      Head& h = heads.back();
      auto& buf = stream_activities[h.stream];
      model.streams[h.stream].activities.push_back(static_cast<uint32_t>(acts.size()));
      acts.push_back(buf[h.next]);
      ++h.next;
      buf.ReleaseBefore(h.next);
      if (h.next == buf.size()) {
        buf.Clear();
        heads.pop_back();
      } else {
        h.start = buf[h.next].start_ns;
        h.end = buf[h.next].end_ns;
        std::push_heap(heads.begin(), heads.end(), later);
      }
    }
    dev.activity_end = static_cast<uint32_t>(acts.size());
  }
  stream_activities.clear();
  stream_activities.shrink_to_fit();
}

void ModelBuilder::Impl::MergeApiCalls() {
  size_t total = 0;
  for (const auto& t : thread_calls) total += t.size();
  auto& apis = model.api_calls;
  apis.clear();
  apis.reserve(total);
  for (size_t t = 0; t < model.threads.size(); ++t) {
    auto& buf = thread_calls[t];
    if (!std::is_sorted(buf.begin(), buf.end(), CallBefore)) {
      std::sort(buf.begin(), buf.end(), CallBefore);
    }
    model.threads[t].api_begin = static_cast<uint32_t>(apis.size());
    for (size_t i = 0; i < buf.size(); ++i) {
      apis.push_back(buf[i]);
      if ((i & 4095) == 4095) buf.ReleaseBefore(i + 1);
    }
    buf.Clear();
    model.threads[t].api_end = static_cast<uint32_t>(apis.size());
  }
  thread_calls.clear();
  thread_calls.shrink_to_fit();
}

void ModelBuilder::Impl::SortAndIndex() {
  MergeActivities();
  MergeApiCalls();
  auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  std::stable_sort(model.host_syncs.begin(), model.host_syncs.end(), by_start);
  std::stable_sort(model.memory_ops.begin(), model.memory_ops.end(),
                   [](const MemoryOp& a, const MemoryOp& b) {
                     if (a.timestamp_ns != b.timestamp_ns) return a.timestamp_ns < b.timestamp_ns;
                     return a.trace < b.trace;
                   });
  std::stable_sort(model.capture_windows.begin(), model.capture_windows.end(), by_start);
  for (GpuMetricSeries& g : model.gpu_metrics) {  // batches arrive in order: rarely sorts
    if (std::is_sorted(g.start_ns.begin(), g.start_ns.end())) continue;
    std::vector<size_t> order(g.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&g](size_t a, size_t b) { return g.start_ns[a] < g.start_ns[b]; });
    GpuMetricSeries sorted = g;
    const size_t m = g.metric_names.size();
    for (size_t i = 0; i < order.size(); ++i) {
      sorted.start_ns[i] = g.start_ns[order[i]];
      sorted.end_ns[i] = g.end_ns[order[i]];
      std::copy_n(g.values.begin() + order[i] * m, m, sorted.values.begin() + i * m);
    }
    g = std::move(sorted);
  }
  std::stable_sort(model.overheads.begin(), model.overheads.end(), by_start);
  std::stable_sort(model.step_markers.begin(), model.step_markers.end(),
                   [](const StepMarker& a, const StepMarker& b) {
                     return std::tie(a.trace, a.thread, a.timestamp_ns) <
                            std::tie(b.trace, b.thread, b.timestamp_ns);
                   });
}

void ModelBuilder::Impl::LinkCorrelations() {
  // Per trace: correlation id → API index. CUPTI correlation ids are a dense
  // process-wide counter, so a direct table (4 bytes per id) is the norm; a
  // sorted (id, index) list is the fallback for sparse ids. The outermost
  // (earliest) call wins when the runtime and driver calls share an id.
  std::vector<std::vector<uint32_t>> threads_of(model.traces.size());
  for (size_t t = 0; t < model.threads.size(); ++t) {
    threads_of[model.threads[t].trace].push_back(static_cast<uint32_t>(t));
  }
  std::vector<std::vector<uint32_t>> devices_of(model.traces.size());
  for (size_t d = 0; d < model.devices.size(); ++d) {
    devices_of[model.devices[d].trace].push_back(static_cast<uint32_t>(d));
  }
  for (size_t tr = 0; tr < model.traces.size(); ++tr) {
    uint64_t count = 0;
    uint32_t max_id = 0;
    for (uint32_t t : threads_of[tr]) {
      const ThreadInfo& th = model.threads[t];
      count += th.api_end - th.api_begin;
      for (uint32_t i = th.api_begin; i < th.api_end; ++i) {
        max_id = std::max(max_id, model.api_calls[i].correlation_id);
      }
    }
    if (count == 0 || devices_of[tr].empty()) continue;
    auto better = [&](uint32_t candidate, uint32_t current) {
      return current == kNone ||
             model.api_calls[candidate].start_ns < model.api_calls[current].start_ns;
    };
    std::vector<uint32_t> table;
    std::vector<std::pair<uint32_t, uint32_t>> sparse;
    bool dense = uint64_t{max_id} <= 4 * count + 4096;
    if (dense) {
      table.assign(size_t{max_id} + 1, kNone);
    } else {
      sparse.reserve(count);
    }
    for (uint32_t t : threads_of[tr]) {
      const ThreadInfo& th = model.threads[t];
      for (uint32_t i = th.api_begin; i < th.api_end; ++i) {
        uint32_t id = model.api_calls[i].correlation_id;
        if (id == 0) continue;
        if (dense) {
          if (better(i, table[id])) table[id] = i;
        } else {
          sparse.emplace_back(id, i);
        }
      }
    }
    if (!dense) {
      std::sort(sparse.begin(), sparse.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        return model.api_calls[a.second].start_ns < model.api_calls[b.second].start_ns;
      });
    }
    for (uint32_t d : devices_of[tr]) {
      const DeviceTimelineInfo& dev = model.devices[d];
      for (uint32_t i = dev.activity_begin; i < dev.activity_end; ++i) {
        GpuActivity& a = model.activities[i];
        a.launch_api = kNone;
        uint32_t id = a.correlation_id;
        if (id == 0) continue;
        if (dense) {
          if (id <= max_id) a.launch_api = table[id];
        } else {
          auto it = std::lower_bound(sparse.begin(), sparse.end(), id,
                                     [](const auto& e, uint32_t k) { return e.first < k; });
          if (it != sparse.end() && it->first == id) a.launch_api = it->second;
        }
      }
    }
    for (MemoryOp& op : model.memory_ops) {
      if (op.trace != tr || op.correlation_id == 0) continue;
      uint32_t id = op.correlation_id;
      if (dense) {
        if (id <= max_id) op.api = table[id];
      } else {
        auto it = std::lower_bound(sparse.begin(), sparse.end(), id,
                                   [](const auto& e, uint32_t k) { return e.first < k; });
        if (it != sparse.end() && it->first == id) op.api = it->second;
      }
    }
  }
}

void ModelBuilder::Impl::ClipRangesOpenAtWindowEnd() {
  // A range pushed inside a capture window and popped after it closed has no
  // recorded end: the collector closes it when the process ends
  // (RecordConverter::CloseOpenRanges). In a monitored run with 21 captures
  // over 10 minutes one such "train_step" lasted 596 s, nested every later
  // step under it, and step detection found 10 steps instead of 209. Such a
  // range (start inside a window, end past that window's end, past the end
  // of the trace's last window -- an end recorded inside a later window is
  // real -- and at the trace's last recorded API call or GPU activity or
  // later) ends where the recording did: at the window's end, marked as cut
  // (no step: a part of one).
  std::vector<uint64_t> last_window_end(model.traces.size(), 0);
  bool windows = false;
  for (const CaptureWindow& w : model.capture_windows) {
    if (w.trigger == CaptureTrigger::kWholeRun) continue;
    windows = true;
    if (w.trace < last_window_end.size()) {
      last_window_end[w.trace] = std::max(last_window_end[w.trace], w.end_ns);
    }
  }
  if (!windows) return;
  std::vector<uint64_t> last(model.traces.size(), 0);
  for (const ApiCall& c : model.api_calls) {
    if (c.trace < last.size()) last[c.trace] = std::max(last[c.trace], c.end_ns);
  }
  for (const GpuActivity& a : model.activities) {
    if (a.trace < last.size()) last[a.trace] = std::max(last[a.trace], a.end_ns);
  }
  for (NvtxRange& r : model.nvtx_ranges) {
    if (r.trace >= last.size() || last[r.trace] == 0 || r.end_ns < last[r.trace] ||
        r.end_ns <= last_window_end[r.trace]) {
      continue;
    }
    for (const CaptureWindow& w : model.capture_windows) {  // sorted by start
      if (w.start_ns > r.start_ns) break;
      if (w.trigger == CaptureTrigger::kWholeRun || w.trace != r.trace) continue;
      if (r.start_ns < w.end_ns && r.end_ns > w.end_ns) {
        r.end_ns = w.end_ns;
        r.cut_at_window_end = true;
        break;
      }
    }
  }
}

void ModelBuilder::Impl::NestNvtx() {
  ClipRangesOpenAtWindowEnd();
  auto& ranges = model.nvtx_ranges;
  std::sort(ranges.begin(), ranges.end(), [](const NvtxRange& a, const NvtxRange& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  for (auto& t : model.threads) t.nvtx_begin = t.nvtx_end = 0;
  std::vector<uint64_t> open_ends;  // stack of enclosing ranges' ends
  for (size_t i = 0; i < ranges.size();) {
    size_t j = i;
    open_ends.clear();
    while (j < ranges.size() && ranges[j].thread == ranges[i].thread) {
      NvtxRange& r = ranges[j];
      while (!open_ends.empty() && open_ends.back() <= r.start_ns) open_ends.pop_back();
      // A range that starts inside another but outlives it (start/end ranges
      // need not nest) is still counted under the enclosing one.
      r.depth = static_cast<uint16_t>(std::min<size_t>(open_ends.size(), 0xffff));
      open_ends.push_back(r.end_ns);
      ++j;
    }
    model.threads[ranges[i].thread].nvtx_begin = static_cast<uint32_t>(i);
    model.threads[ranges[i].thread].nvtx_end = static_cast<uint32_t>(j);
    i = j;
  }
}

void ModelBuilder::Impl::AggregateKernels() {
  struct Acc {
    KernelAggregate agg;
    double sum_sq = 0;
    std::vector<std::pair<uint32_t, LaunchConfigUse>> configs;  // (config id, use)
    std::map<uint32_t, MetricAggregate> metrics;                // by metric name id
    // Per configuration (config id → metric name id → aggregate).
    std::map<uint32_t, std::map<uint32_t, MetricAggregate>> config_metrics;
    std::map<uint32_t, uint64_t> config_samples;
  };
  // `weight`: how many sets the value stands for (a replayed value in
  // place of its configuration's in-place sets, at the kernel level).
  auto accumulate = [&](MetricAggregate& agg, uint32_t metric, double value,
                        uint64_t weight = 1) {
    if (agg.samples == 0) {
      agg.name = model.strings[metric];
      agg.min = agg.max = value;
    }
    agg.min = std::min(agg.min, value);
    agg.max = std::max(agg.max, value);
    agg.mean += double(weight) * (value - agg.mean) / double(agg.samples + weight);
    agg.samples += weight;
  };
  std::vector<uint32_t> by_name(model.strings.size(), kNone);  // name → acc index
  std::vector<Acc> accs;
  auto acc_for = [&](uint32_t name, ActivityClass klass) -> Acc& {
    if (by_name[name] == kNone) {
      by_name[name] = static_cast<uint32_t>(accs.size());
      accs.emplace_back();
      accs.back().agg.name = name;
      accs.back().agg.name_text = model.strings[name];
      accs.back().agg.klass = klass;
    }
    return accs[by_name[name]];
  };
  // (config id → position in its aggregate's list) for the last aggregate
  // that used it: a launch configuration is almost always used by one name.
  std::vector<std::pair<uint32_t, uint32_t>> config_slot(model.launch_configs.size(),
                                                         {kNone, kNone});
  auto add_config = [&](Acc& acc, uint32_t config, uint64_t ns, bool timed) {
    uint32_t acc_index = static_cast<uint32_t>(&acc - accs.data());
    auto& slot = config_slot[config];
    if (slot.first == acc_index) {
      LaunchConfigUse& use = acc.configs[slot.second].second;
      use.count += timed ? 1 : 0;
      use.replayed_count += timed ? 0 : 1;
      use.total_ns += ns;
      return;
    }
    for (size_t p = 0; p < acc.configs.size(); ++p) {
      auto& [id, use] = acc.configs[p];
      if (id == config) {
        use.count += timed ? 1 : 0;
        use.replayed_count += timed ? 0 : 1;
        use.total_ns += ns;
        slot = {acc_index, static_cast<uint32_t>(p)};
        return;
      }
    }
    slot = {acc_index, static_cast<uint32_t>(acc.configs.size())};
    LaunchConfigUse use;
    use.config = model.launch_configs[config];
    use.config_id = config;
    use.count = timed ? 1 : 0;
    use.replayed_count = timed ? 0 : 1;
    use.total_ns = ns;
    acc.configs.emplace_back(config, use);
    uint32_t device = model.launch_configs[config].device;
    if (std::find(acc.agg.devices.begin(), acc.agg.devices.end(), device) ==
        acc.agg.devices.end()) {
      acc.agg.devices.push_back(device);
    }
  };
  uint64_t all_kernel_ns = 0;
  for (const GpuActivity& a : model.activities) {
    if (a.kind != ActivityKind::kKernel || model.IsReplayed(a)) continue;  // replayed: counted below
    Acc& acc = acc_for(a.name, a.klass);
    uint64_t d = a.duration();
    KernelAggregate& k = acc.agg;
    k.min_ns = k.count == 0 ? d : std::min(k.min_ns, d);
    k.max_ns = std::max(k.max_ns, d);
    k.count++;
    k.total_ns += d;
    acc.sum_sq += double(d) * double(d);
    all_kernel_ns += d;
    add_config(acc, a.detail, d, true);
  }
  for (const ReplayedKernel& r : replayed) {
    Acc& acc = acc_for(r.name, IsCommunicationKernelName(model.strings[r.name])
                                   ? ActivityClass::kCommunication
                                   : ActivityClass::kCompute);
    acc.agg.replayed_count++;
    add_config(acc, r.config, 0, false);
  }

  // Metric join: only the correlation ids that metric samples reference.
  if (!model.metric_samples.empty()) {
    struct Joined {
      uint32_t name = 0;
      uint32_t config = kNone;
    };
    absl::flat_hash_map<uint64_t, Joined> wanted;  // key → kernel name and configuration
    for (const MetricSample& m : model.metric_samples) {
      if (m.correlation_id != 0) wanted.emplace(CorrelationKey(m.trace, m.correlation_id), Joined{});
    }
    // The earliest kernel of a correlation id is the application's: under
    // application replay (spread / sequence metrics) CUPTI launches its own
    // one-thread "WaitNs" kernel after each profiled range, on another stream
    // and with the same correlation id (seen on the H200, CUDA 13.0).
    absl::flat_hash_map<uint64_t, uint64_t> first_start;
    for (const GpuActivity& a : model.activities) {
      if (a.kind != ActivityKind::kKernel || model.IsReplayed(a)) continue;
      const uint64_t key = CorrelationKey(a.trace, a.correlation_id);
      auto it = wanted.find(key);
      if (it == wanted.end()) continue;
      auto [f, fresh] = first_start.emplace(key, a.start_ns);
      if (fresh || a.start_ns < f->second) {
        f->second = a.start_ns;
        it->second = Joined{a.name, a.detail};
      }
    }
    for (const ReplayedKernel& r : replayed) {
      const uint64_t key = CorrelationKey(r.trace, r.correlation_id);
      auto it = wanted.find(key);
      if (it == wanted.end()) continue;
      it->second = Joined{r.name, r.config};
      if (r.untraced) {
        first_start[key] = 0;  // ran once, as launched (a sequence pass)
      } else {
        first_start.erase(key);  // replayed: not a timed kernel
      }
    }
    // Which kernels and configurations have sets of each kind: measured in
    // place (ran once, as launched) and kernel-replayed. Where both exist,
    // dram__* values come from the replayed sets and every other value from
    // the in-place ones: in-place passes add DRAM write-backs of their own
    // (4-31 % more bytes written than ncu on the L2 probe, while kernel
    // replay agreed within 1.7 %; bench/metrics/README.md, runs BK-BM), and
    // a replay times the kernel alone (sequence replay's --metrics-replay-top).
    // Sets of unknown configuration (kNone) are never mixed: all their values count.
    absl::flat_hash_map<uint64_t, uint8_t> kinds;  // (name, config) → bits
    absl::flat_hash_map<uint64_t, uint64_t> in_place_sets;  // (name, config) → count
    constexpr uint8_t kInPlace = 1, kReplayed = 2;
    auto name_config = [](uint32_t name, uint32_t config) {
      return (uint64_t{name} << 32) | config;
    };
    for (MetricSample& m : model.metric_samples) {
      const uint64_t key = CorrelationKey(m.trace, m.correlation_id);
      auto it = wanted.find(key);
      if (it == wanted.end() || it->second.name == 0) continue;
      // Values of a kernel that ran once, as launched (spread / sequence
      // replay): the profiler's passes started and stopped inside launch
      // calls of this trace.
      m.in_place = first_start.count(key) != 0;
      if (m.in_place && m.trace < model.traces.size()) {
        model.traces[m.trace].metric_sets_without_replay++;
      }
      m.kernel_name = it->second.name;
      m.config = it->second.config < model.launch_configs.size() ? it->second.config : kNone;
      if (m.in_place && m.config != kNone && !m.values.empty()) {
        in_place_sets[name_config(m.kernel_name, m.config)]++;
      }
    }
    // CUPTI's kernel replay runs a kernel under a shared-memory carveout of
    // its own (H100, run CA: AdamW's 16 KiB and an nvjet GEMM's 196 KiB
    // became 32 KiB), so a replayed launch's record names another
    // configuration than the same launch measured in place. The carveout is
    // the driver's choice at run time, not the application's launch: a
    // replayed set joins the in-place configuration it differs from only there.
    absl::flat_hash_map<uint32_t, std::vector<uint32_t>> in_place_configs;  // name → configs
    for (const auto& [nc, n] : in_place_sets) {
      in_place_configs[static_cast<uint32_t>(nc >> 32)].push_back(static_cast<uint32_t>(nc));
    }
    for (auto& [name, configs] : in_place_configs) std::sort(configs.begin(), configs.end());
    auto same_launch = [&](uint32_t a, uint32_t b) {
      LaunchConfig x = model.launch_configs[a];
      x.shared_memory_config_bytes = model.launch_configs[b].shared_memory_config_bytes;
      return x == model.launch_configs[b];
    };
    for (MetricSample& m : model.metric_samples) {
      if (m.in_place || m.config == kNone || m.kernel_name == 0) continue;
      if (in_place_sets.count(name_config(m.kernel_name, m.config)) != 0) continue;
      auto c = in_place_configs.find(m.kernel_name);
      if (c == in_place_configs.end()) continue;
      for (uint32_t id : c->second) {
        if (same_launch(m.config, id)) {
          m.config = id;
          break;
        }
      }
    }
    for (const MetricSample& m : model.metric_samples) {
      // kernel_name != 0: joined above.
      if (m.kernel_name == 0 || m.values.empty() || m.config == kNone) continue;
      kinds[name_config(m.kernel_name, m.config)] |= m.in_place ? kInPlace : kReplayed;
    }
    auto both = [&](uint32_t name, uint32_t config) {
      auto k = kinds.find(name_config(name, config));
      return k != kinds.end() && k->second == (kInPlace | kReplayed);
    };
    // Whether a value of this set is used where both kinds exist.
    auto used = [&](const MetricSample& m, uint32_t metric) {
      return IsDramMetric(model.strings[metric]) != m.in_place;
    };
    for (MetricSample& m : model.metric_samples) {
      const uint64_t key = CorrelationKey(m.trace, m.correlation_id);
      auto it = wanted.find(key);
      if (it == wanted.end() || it->second.name == 0) continue;
      if (by_name[m.kernel_name] == kNone) continue;
      Acc& acc = accs[by_name[m.kernel_name]];
      if (!m.values.empty()) {  // incomplete sets (no values) are not measurements
        acc.agg.metric_samples++;
        if (m.config != kNone) acc.config_samples[m.config]++;
      }
      // Decided per configuration: one measured only one way keeps all its
      // values. At the kernel level the mean of a configuration's replayed
      // values stands for its in-place sets (their weight; merged below), so
      // configurations weigh as they do in the other metrics' means however
      // many launches were replayed.
      const bool mixed = m.config != kNone && both(m.kernel_name, m.config);
      const bool replayed_value = mixed && !m.in_place;
      for (const auto& [metric, value] : m.values) {
        if (mixed && !used(m, metric)) continue;
        if (!replayed_value) accumulate(acc.metrics[metric], metric, value);
        if (m.config != kNone) {
          MetricAggregate& cagg = acc.config_metrics[m.config][metric];
          accumulate(cagg, metric, value);
          if (replayed_value) {
            cagg.kernel_replay = true;
            cagg.replayed_sets++;
          }
        }
      }
    }
    // Each mixed configuration's replayed mean, weighted by its in-place sets.
    for (Acc& acc : accs) {
      for (const auto& [config, metrics] : acc.config_metrics) {
        auto in_place = in_place_sets.find(name_config(acc.agg.name, config));
        const uint64_t weight =
            std::max<uint64_t>(1, in_place != in_place_sets.end() ? in_place->second : 0);
        for (const auto& [metric, cagg] : metrics) {
          if (!cagg.kernel_replay) continue;
          MetricAggregate& agg = acc.metrics[metric];
          const bool first = agg.samples == 0;
          accumulate(agg, metric, cagg.mean, weight);
          agg.min = first ? cagg.min : std::min(agg.min, cagg.min);
          agg.max = first ? cagg.max : std::max(agg.max, cagg.max);
          agg.kernel_replay = true;
          agg.replayed_sets += cagg.replayed_sets;
        }
      }
    }
  }

  model.kernels.clear();
  model.kernels.reserve(accs.size());
  for (Acc& acc : accs) {
    KernelAggregate& k = acc.agg;
    if (k.count > 0) {
      k.mean_ns = double(k.total_ns) / double(k.count);
      double var = acc.sum_sq / double(k.count) - k.mean_ns * k.mean_ns;
      k.stddev_ns = var > 0 ? std::sqrt(var) : 0;
    }
    k.share_pct = all_kernel_ns ? 100.0 * double(k.total_ns) / double(all_kernel_ns) : 0;
    std::stable_sort(acc.configs.begin(), acc.configs.end(), [](const auto& a, const auto& b) {
      if (a.second.count != b.second.count) return a.second.count > b.second.count;
      return a.second.total_ns > b.second.total_ns;
    });
    for (auto& [id, use] : acc.configs) {
      auto cm = acc.config_metrics.find(id);
      if (cm != acc.config_metrics.end()) {
        for (auto& [metric, agg] : cm->second) use.metrics.push_back(std::move(agg));
        std::sort(use.metrics.begin(), use.metrics.end(),
                  [](const MetricAggregate& a, const MetricAggregate& b) { return a.name < b.name; });
        use.metric_samples = acc.config_samples[id];
      }
      k.configs.push_back(std::move(use));
    }
    for (auto& [id, m] : acc.metrics) k.metrics.push_back(std::move(m));
    std::sort(k.metrics.begin(), k.metrics.end(),
              [](const MetricAggregate& a, const MetricAggregate& b) { return a.name < b.name; });
    model.kernels.push_back(std::move(k));
  }
  std::sort(model.kernels.begin(), model.kernels.end(),
            [](const KernelAggregate& a, const KernelAggregate& b) {
              if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
              return a.name_text < b.name_text;
            });
}

void ModelBuilder::Impl::ComputeBounds() {
  uint64_t first = UINT64_MAX, last = 0;
  for (const GpuActivity& a : model.activities) {
    first = std::min(first, a.start_ns);
    last = std::max(last, a.end_ns);
  }
  for (const ApiCall& c : model.api_calls) {
    first = std::min(first, c.start_ns);
    last = std::max(last, c.end_ns);
  }
  model.first_ns = first == UINT64_MAX ? 0 : first;
  model.last_ns = last;
}

void ModelBuilder::Impl::PlaceReplayedKernels() {
  if (replayed.empty()) return;
  // Wanted: (trace, correlation id) of the replayed kernels.
  absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>> launch;  // key → API start, end
  absl::flat_hash_map<uint64_t, double> measured;                      // key → duration (ns)
  for (const ReplayedKernel& r : replayed) launch.emplace(CorrelationKey(r.trace, r.correlation_id), std::make_pair(0, 0));
  for (auto& calls : thread_calls) {
    for (const ApiCall& c : calls) {
      if (c.correlation_id == 0) continue;
      auto it = launch.find(CorrelationKey(c.trace, c.correlation_id));
      if (it == launch.end()) continue;
      // The outermost (earliest) call of the id: the runtime call around the driver's.
      if (it->second.second == 0 || c.start_ns < it->second.first) it->second = {c.start_ns, c.end_ns};
    }
  }
  for (const MetricSample& m : model.metric_samples) {
    for (const auto& [metric, value] : m.values) {
      if (metric < model.strings.size() && model.strings[metric] == "gpu__time_duration.sum" &&
          value > 0) {
        measured[CorrelationKey(m.trace, m.correlation_id)] = value;
      }
    }
  }
  // Kernels measured in place without tracing: a sequence's values (and so
  // its gpu__time_duration.sum) belong to one launch per position of the
  // step, the last pass's; the other passes' launches of that kernel and
  // configuration are placed for the mean of its measured launches.
  struct Mean {
    double sum = 0;
    uint32_t n = 0;
  };
  absl::flat_hash_map<std::tuple<uint16_t, uint32_t, uint32_t>, Mean> untraced_mean;
  for (const ReplayedKernel& r : replayed) {
    if (!r.untraced) continue;
    auto d = measured.find(CorrelationKey(r.trace, r.correlation_id));
    if (d == measured.end()) continue;
    Mean& m = untraced_mean[{r.trace, r.name, r.config}];
    m.sum += d->second;
    m.n++;
  }
  for (const ReplayedKernel& r : replayed) {
    const uint64_t key = CorrelationKey(r.trace, r.correlation_id);
    const auto& api = launch.at(key);
    double duration = 0;
    if (auto d = measured.find(key); d != measured.end()) {
      duration = d->second;
    } else if (r.untraced) {
      auto m = untraced_mean.find({r.trace, r.name, r.config});
      if (m != untraced_mean.end()) duration = m->second.sum / m->second.n;
    }
    if (api.second == 0 || !(duration > 0)) continue;  // listed, not placed
    GpuActivity a;
    a.start_ns = api.first;
    a.end_ns = api.first + static_cast<uint64_t>(duration);
    a.stream = r.stream;
    a.correlation_id = r.correlation_id;
    a.name = r.name;
    a.detail = r.config;
    a.kind = ActivityKind::kKernel;
    a.trace = r.trace;
    a.klass = (NameFlags(a.name) & kFlagComm) ? ActivityClass::kCommunication
                                               : ActivityClass::kCompute;
    stream_activities[a.stream].push_back(a);
    model.replayed_activities.push_back(key);
  }
  std::sort(model.replayed_activities.begin(), model.replayed_activities.end());
}

TimelineModel ModelBuilder::Finish() {
  Impl& m = *impl_;
  m.AddNcclGpuActivities();
  m.PlaceReplayedKernels();
  m.SortAndIndex();
  m.LinkCorrelations();
  m.NestNvtx();
  m.AggregateKernels();
  m.ComputeBounds();
  TimelineModel out = std::move(m.model);
  impl_ = std::make_unique<Impl>();
  return out;
}

}  // namespace sightline::analysis
