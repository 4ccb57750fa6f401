// BuildSummaryReport part 1: traces, per-device utilization and HTA temporal
// breakdown, concurrency histogram, idle attribution, per-stream busy time,
// kernel / API / memcpy tables, NCCL per rank.
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/analysis/api_names.h"
#include "lib/analysis/report_builder.h"

namespace sightline::analysis {

namespace {

double Pct(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * double(part) / double(whole);
}

// Time with 0, 1, 2, 3+ kernels (kernel and NCCL activities) running.
std::array<uint64_t, 4> ConcurrencyHistogram(const TimelineModel& model,
                                             const DeviceTimelineInfo& info,
                                             const DeviceTimeline& t) {
  std::array<uint64_t, 4> hist{};
  // End times of the running kernels; few at once, so a flat vector with a
  // linear minimum beats a heap.
  std::vector<uint64_t> ends;
  uint64_t now = t.window_start_ns;
  auto advance = [&](uint64_t to) {
    if (to <= now) return;
    hist[std::min<size_t>(ends.size(), 3)] += to - now;
    now = to;
  };
  auto pop_min = [&]() {
    auto it = std::min_element(ends.begin(), ends.end());
    uint64_t v = *it;
    *it = ends.back();
    ends.pop_back();
    return v;
  };
  for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
    const GpuActivity& a = model.activities[i];
    if (a.kind != ActivityKind::kKernel && a.kind != ActivityKind::kNccl) continue;
    while (!ends.empty()) {
      uint64_t m = *std::min_element(ends.begin(), ends.end());
      if (m > a.start_ns) break;
      advance(m);
      pop_min();
    }
    advance(a.start_ns);
    if (a.end_ns > a.start_ns) ends.push_back(a.end_ns);
  }
  while (!ends.empty()) {
    advance(*std::min_element(ends.begin(), ends.end()));
    pop_min();
  }
  advance(t.window_end_ns);
  return hist;
}

struct RunningStats {
  uint64_t count = 0, total = 0, min = 0, max = 0;
  double sum_sq = 0;
  void Add(uint64_t v) {
    min = count == 0 ? v : std::min(min, v);
    max = std::max(max, v);
    ++count;
    total += v;
    sum_sq += double(v) * double(v);
  }
  double mean() const { return count ? double(total) / double(count) : 0; }
  double stddev() const {
    if (count == 0) return 0;
    double var = sum_sq / double(count) - mean() * mean();
    return var > 0 ? std::sqrt(var) : 0;
  }
};

// Per-stream figures of one device in a single sequential pass over the
// device's activities (a stream's activities appear there in its own order):
// busy time, op counts, HTA's per-stream idle attribution, queue length.
void FillStreams(const TimelineModel& model, const TimelineOptions& options,
                 const DeviceTimelineInfo& info, uint32_t device_index, const DeviceSummary& ds,
                 std::vector<StreamSummary>* out) {
  struct Acc {
    StreamSummary s;
    UnionLength busy;
    uint64_t prev_end = 0;
    bool first = true;
    // Queue sweep: ends of launched, unfinished ops (as many as the queue is
    // deep), the sweep's clock and its time-weighted depth.
    // Kept sorted; ops on one stream run in order, so an end almost always
    // goes to the back (a FIFO), and an out-of-order one is inserted.
    std::deque<uint64_t> pending;
    uint64_t now = 0, weighted = 0, queue_begin = 0;
    void Advance(uint64_t t) {
      if (t <= now) return;
      weighted += uint64_t{pending.size()} * (t - now);
      now = t;
    }
  };
  std::vector<Acc> accs(info.streams.size());
  std::vector<uint32_t> local(model.streams.size(), kNone);
  for (size_t k = 0; k < info.streams.size(); ++k) {
    const StreamInfo& si = model.streams[info.streams[k]];
    local[info.streams[k]] = static_cast<uint32_t>(k);
    accs[k].s.device_index = device_index;
    accs[k].s.stream_id = si.stream_id;
    accs[k].s.rank = ds.rank;
  }
  for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
    const GpuActivity& a = model.activities[i];
    Acc& acc = accs[local[a.stream]];
    StreamSummary& ss = acc.s;
    acc.busy.Add(a.start_ns, a.end_ns);
    ss.ops++;
    if (a.kind == ActivityKind::kKernel || a.kind == ActivityKind::kNccl) ss.kernels++;
    if (a.kind == ActivityKind::kMemcpy) ss.memcpys++;
    if (a.kind == ActivityKind::kMemset) ss.memsets++;
    if (!acc.first && a.start_ns > acc.prev_end) {
      uint32_t blocking = kNone;
      uint64_t gap = a.start_ns - acc.prev_end;
      ss.idle_ns += gap;
      switch (AttributeIdleGap(model, acc.prev_end, a.start_ns, i, options, &blocking)) {
        case IdleCause::kHostWait: ss.idle_host_wait_ns += gap; break;
        case IdleCause::kSyncWait: ss.idle_sync_wait_ns += gap; break;
        case IdleCause::kKernelWait: ss.idle_kernel_wait_ns += gap; break;
        case IdleCause::kOther: ss.idle_other_ns += gap; break;
        case IdleCause::kProfiler: ss.idle_profiler_ns += gap; break;
      }
    }
    acc.prev_end = acc.first ? a.end_ns : std::max(acc.prev_end, a.end_ns);
    acc.first = false;
    // Stream order is launch order: +1 at the launching call's start, -1 at
    // the op's end.
    const ApiCall* launch = model.LaunchOf(a);
    uint64_t launched = launch != nullptr ? std::min(launch->start_ns, a.start_ns) : a.start_ns;
    if (ss.ops == 1) acc.now = acc.queue_begin = launched;
    while (!acc.pending.empty() && acc.pending.front() <= launched) {
      acc.Advance(acc.pending.front());
      acc.pending.pop_front();
    }
    acc.Advance(launched);
    if (acc.pending.empty() || acc.pending.back() <= a.end_ns) {
      acc.pending.push_back(a.end_ns);
    } else {
      acc.pending.insert(
          std::upper_bound(acc.pending.begin(), acc.pending.end(), a.end_ns), a.end_ns);
    }
    ss.max_queue_length = std::max<uint64_t>(ss.max_queue_length, acc.pending.size());
  }
  for (Acc& acc : accs) {
    StreamSummary& ss = acc.s;
    ss.busy_ns = acc.busy.total();
    ss.busy_pct = Pct(ss.busy_ns, ds.window_ns);
    uint64_t finish = acc.now;
    while (!acc.pending.empty()) {
      acc.Advance(acc.pending.front());
      finish = std::max(finish, acc.pending.front());
      acc.pending.pop_front();
    }
    ss.mean_queue_length = finish > acc.queue_begin
                               ? double(acc.weighted) / double(finish - acc.queue_begin)
                               : 0;
    out->push_back(ss);
  }
}

}  // namespace

void FillTraces(const TimelineModel& model, Report* report) {
  for (const TraceSource& t : model.traces) {
    TraceSummary s;
    s.path = t.name;
    s.pid = t.header.process.pid;
    s.rank = t.rank;
    s.host = t.header.process.host;
    s.complete = t.integrity.complete;
    s.integrity_reason = t.integrity.reason;
    s.lost_records = t.lost_records();
    for (uint64_t n : t.events_by_kind) s.events += n;
    s.invalid_timestamps = t.invalid_total();
    s.replayed_kernels = t.replayed_kernels;
    s.untraced_kernels = t.untraced_kernels;
    s.untraced_memsets = t.untraced_memsets;
    s.clock_offset_ns = t.clock_offset_ns;
    s.has_clock_mapping = t.has_clock_mapping;
    report->traces.push_back(s);
    if (!s.complete && !s.integrity_reason.empty()) {
      report->notes.push_back(absl::StrCat(t.name, ": incomplete trace: ", s.integrity_reason));
    }
    if (s.lost_records > 0) {
      report->notes.push_back(absl::StrCat(t.name, ": ", s.lost_records,
                                           " records lost during collection; totals are lower "
                                           "bounds"));
    }
    if (s.invalid_timestamps > 0) {
      report->notes.push_back(absl::StrCat(t.name, ": ", s.invalid_timestamps,
                                           " events with zero or inverted timestamps were "
                                           "excluded from the timeline"));
    }
    if (t.profiler_kernels > 0) {
      report->notes.push_back(absl::StrCat(t.name, ": ", t.profiler_kernels,
                                           " kernels launched by CUPTI's range profiler (WaitNs) "
                                           "were left out"));
    }
    if (s.replayed_kernels > 0) {
      report->notes.push_back(absl::StrCat(t.name, ": ", s.replayed_kernels,
                                           " kernels profiled with replay were excluded from "
                                           "timeline timing"));
    }
    if (s.untraced_kernels > 0) {
      report->notes.push_back(absl::StrCat(
          t.name, ": ", s.untraced_kernels,
          " kernels were measured in place for hardware metrics without being traced (so that "
          "tracing adds nothing to their counters and time): they have no GPU timestamps, are "
          "drawn at their launch for their measured duration and are excluded from timeline "
          "timing"));
    }
    if (s.untraced_memsets > 0) {
      report->notes.push_back(absl::StrCat(
          t.name, ": ", s.untraced_memsets,
          " memsets came from CUPTI without GPU timestamps while hardware metrics were "
          "collected: counted, not on the timeline, excluded from timing"));
    }
  }
  if (model.traces.size() > 1) {
    size_t without_clock = 0;
    for (const TraceSource& t : model.traces) without_clock += t.has_clock_mapping ? 0 : 1;
    if (without_clock > 0) {
      report->notes.push_back(absl::StrCat(without_clock, " of ", model.traces.size(),
                                           " traces carry no clock mapping; their timestamps "
                                           "are merged unshifted"));
    }
  }
}

void FillDevices(const TimelineModel& model, const DerivedTimeline& timeline, Report* report) {
  Summary& s = report->summary;
  s.window_start_ns = timeline.window_start_ns;
  s.window_end_ns = timeline.window_end_ns;
  s.window_ns = timeline.window_ns();
  s.gpu_activities = model.activities.size();
  s.api_calls = model.api_calls.size();
  s.nvtx_ranges = model.nvtx_ranges.size();
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const DeviceTimelineInfo& info = model.devices[d];
    const DeviceTimeline& t = timeline.devices[d];
    if (info.activity_begin == info.activity_end) continue;
    DeviceSummary ds;
    ds.index = static_cast<uint32_t>(d);
    ds.id = info.device_id;
    ds.trace = info.trace;
    ds.rank = model.traces[info.trace].rank;
    ds.name = info.info.name;
    ds.window_start_ns = t.window_start_ns;
    ds.window_end_ns = t.window_end_ns;
    ds.window_ns = t.window_ns();
    ds.busy_ns = t.busy.total();
    ds.compute_ns = t.compute.total();
    ds.comm_ns = t.comm.Subtract(t.compute).total();
    ds.memory_ns = ds.busy_ns - std::min(ds.busy_ns, ds.compute_ns + ds.comm_ns);
    ds.idle_ns = ds.window_ns - std::min(ds.window_ns, ds.busy_ns);
    ds.gpu_utilization_pct = Pct(ds.busy_ns, ds.window_ns);
    ds.compute_pct = Pct(ds.compute_ns, ds.window_ns);
    ds.comm_pct = Pct(ds.comm_ns, ds.window_ns);
    ds.memory_pct = Pct(ds.memory_ns, ds.window_ns);
    ds.idle_pct = Pct(ds.idle_ns, ds.window_ns);
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      switch (model.activities[i].kind) {
        case ActivityKind::kKernel:
        case ActivityKind::kNccl: ds.kernels++; break;
        case ActivityKind::kMemcpy: ds.memcpys++; break;
        case ActivityKind::kMemset: ds.memsets++; break;
      }
    }
    ds.concurrency_ns = ConcurrencyHistogram(model, info, t);
    for (const IdleGap& g : t.gaps) {
      switch (g.cause) {
        case IdleCause::kHostWait: ds.idle_host_wait_ns += g.length(); break;
        case IdleCause::kSyncWait: ds.idle_sync_wait_ns += g.length(); break;
        case IdleCause::kKernelWait: ds.idle_kernel_wait_ns += g.length(); break;
        case IdleCause::kOther: ds.idle_other_ns += g.length(); break;
        case IdleCause::kProfiler: ds.idle_profiler_ns += g.length(); break;
      }
    }
    uint64_t comm_total = t.comm.total();
    ds.comm_overlap_pct = Pct(t.comm.Intersect(t.compute).total(), comm_total);
    s.devices.push_back(ds);

    FillStreams(model, timeline.options, info, static_cast<uint32_t>(s.devices.size() - 1), ds,
                &report->streams);

    if (comm_total > 0) {
      NcclRow row;
      row.rank = ds.rank;
      row.device_index = ds.index;
      for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
        const GpuActivity& a = model.activities[i];
        if (a.klass != ActivityClass::kCommunication) continue;
        row.count++;
        row.total_ns += a.duration();
      }
      row.overlapped_ns = t.comm.Intersect(t.compute).total();
      row.comm_share_pct = Pct(comm_total, ds.window_ns);
      row.overlap_pct = ds.comm_overlap_pct;
      report->nccl.push_back(row);
    }
  }
}

// NCCL per-op table (report->nccl_ops), part of FillTables.
static void FillNcclOps(const TimelineModel& model, Report* report);

void FillTables(const TimelineModel& model, Report* report) {
  for (const KernelAggregate& k : model.kernels) {
    if (k.count == 0 && k.replayed_count == 0) continue;
    KernelRow row;
    row.name = k.name_text;
    row.klass = ActivityClassName(k.klass);
    row.count = k.count;
    row.replayed_count = k.replayed_count;
    row.total_ns = k.total_ns;
    row.min_ns = k.min_ns;
    row.max_ns = k.max_ns;
    row.mean_ns = k.mean_ns;
    row.stddev_ns = k.stddev_ns;
    row.share_pct = k.share_pct;
    row.launch_configs = static_cast<uint32_t>(k.configs.size());
    if (!k.configs.empty()) {
      const LaunchConfig& c = k.configs.front().config;
      row.grid = {c.grid_x, c.grid_y, c.grid_z};
      row.block = {c.block_x, c.block_y, c.block_z};
      row.registers_per_thread = c.registers_per_thread;
      row.shared_bytes = uint64_t{c.static_shared_bytes} + c.dynamic_shared_bytes;
      FillOccupancy(model, c, &row);
    }
    report->kernels.push_back(std::move(row));
  }

  std::vector<RunningStats> apis(model.strings.size());  // by name id
  uint64_t api_total = 0;
  for (const ApiCall& c : model.api_calls) {
    apis[c.name].Add(c.duration());
    api_total += c.duration();
  }
  for (uint32_t name = 0; name < apis.size(); ++name) {
    const RunningStats& st = apis[name];
    if (st.count == 0) continue;
    ApiRow row;
    row.raw_name = std::string(model.String(name));
    row.name = std::string(StripApiVersionSuffix(row.raw_name));
    row.count = st.count;
    row.total_ns = st.total;
    row.min_ns = st.min;
    row.max_ns = st.max;
    row.mean_ns = st.mean();
    row.stddev_ns = st.stddev();
    row.share_pct = Pct(st.total, api_total);
    report->apis.push_back(std::move(row));
  }
  std::sort(report->apis.begin(), report->apis.end(), [](const ApiRow& a, const ApiRow& b) {
    return std::tie(b.total_ns, a.name) < std::tie(a.total_ns, b.name);
  });

  // Memcpy / memset by (direction, memory kinds).
  std::map<std::pair<std::string, std::string>, MemcpyRow> copies;
  for (const GpuActivity& a : model.activities) {
    if (a.kind != ActivityKind::kMemcpy && a.kind != ActivityKind::kMemset) continue;
    const CopyDetail& c = model.copies[a.detail];
    std::string kind, memory;
    if (a.kind == ActivityKind::kMemcpy) {
      kind = CopyKindName(c.copy_kind);
      memory = absl::StrCat(MemoryKindName(c.src_kind), "->", MemoryKindName(c.dst_kind));
    } else {
      kind = "memset";
      memory = MemoryKindName(c.dst_kind);
    }
    MemcpyRow& row = copies[{kind, memory}];
    row.kind = kind;
    row.memory = memory;
    row.count++;
    row.bytes += c.bytes;
    row.total_ns += a.duration();
  }
  for (auto& [key, row] : copies) {
    row.mean_ns = row.count ? double(row.total_ns) / double(row.count) : 0;
    row.bandwidth_gbps = row.total_ns ? double(row.bytes) / double(row.total_ns) : 0;
    report->memcpys.push_back(row);
  }
  std::sort(report->memcpys.begin(), report->memcpys.end(),
            [](const MemcpyRow& a, const MemcpyRow& b) { return a.total_ns > b.total_ns; });
  FillNcclOps(model, report);
}

static void FillNcclOps(const TimelineModel& model, Report* report) {
  struct Acc {
    NcclOpRow row;
    std::set<uint64_t> comms;
  };
  std::map<std::pair<uint16_t, uint8_t>, Acc> ops;
  for (const Collective& c : model.collectives) {
    if (c.source != NcclSource::kGpuKernel && c.source != NcclSource::kHostNvtx) continue;
    Acc& a = ops[{c.trace, static_cast<uint8_t>(c.op)}];
    NcclOpRow& r = a.row;
    if (c.source == NcclSource::kGpuKernel) {
      r.gpu_count++;
      r.gpu_total_ns += c.end_ns - c.start_ns;
      continue;
    }
    r.count++;
    if (c.bytes > 0) {
      r.bytes_min = r.sized_count == 0 ? c.bytes : std::min(r.bytes_min, c.bytes);
      r.bytes_max = std::max(r.bytes_max, c.bytes);
      r.bytes_total += c.bytes;
      r.sized_count++;
    }
    if (c.comm_id != 0) {
      a.comms.insert(c.comm_id);
      if (c.nranks > 0) {
        r.comm_rank = c.rank;
        r.comm_nranks = c.nranks;
      }
    }
  }
  // Traces without NCCL kernel events (recorded with NCCL tracing off, or by
  // an older collector that missed mangled names): take the op from the
  // communication kernels' names, "...ncclDevKernel_AllReduce_Sum_f32...".
  std::vector<bool> has_gpu_events(model.traces.size(), false);
  for (const Collective& c : model.collectives) {
    if (c.source == NcclSource::kGpuKernel && c.trace < has_gpu_events.size()) has_gpu_events[c.trace] = true;
  }
  for (const GpuActivity& g : model.activities) {
    if (g.kind != ActivityKind::kKernel || g.klass != ActivityClass::kCommunication) continue;
    if (g.trace >= has_gpu_events.size() || has_gpu_events[g.trace]) continue;
    std::string_view name = model.String(g.name);
    size_t k = name.find("Kernel_");
    if (k == std::string_view::npos) continue;
    std::string_view token = name.substr(k + 7);
    token = token.substr(0, token.find_first_of("_(<"));
    for (uint8_t op = 1; op <= static_cast<uint8_t>(NcclOp::kSendRecv); ++op) {
      if (token != NcclOpName(static_cast<NcclOp>(op))) continue;
      NcclOpRow& r = ops[{g.trace, op}].row;
      r.gpu_count++;
      r.gpu_total_ns += g.duration();
      break;
    }
  }
  for (auto& [key, a] : ops) {
    NcclOpRow& r = a.row;
    r.trace_index = key.first;
    r.rank = key.first < model.traces.size() ? model.traces[key.first].rank : -1;
    r.op = NcclOpName(static_cast<NcclOp>(key.second));
    if (a.comms.size() == 1) {
      r.comm_id = absl::StrFormat("0x%016x", *a.comms.begin());
    } else if (a.comms.size() > 1) {
      r.comm_id = "multiple";
      r.comm_rank = -1;
      r.comm_nranks = 0;
    }
    if (r.count > 0 && r.sized_count == r.count && r.gpu_count == r.count && r.gpu_total_ns > 0) {
      r.algbw_gbps = double(r.bytes_total) / double(r.gpu_total_ns);
    }
    report->nccl_ops.push_back(r);
  }
}

}  // namespace sightline::analysis
