// lib/export/report_json.cc — Report → JSON ("schema": "sightline.report.v1").
// Field list: docs/report-schema.md. Fields are only ever added.
#include <string>

#include "lib/export/demangle.h"
#include "lib/export/report_render.h"
#include "lib/trace/json_writer.h"

namespace sightline::exporter {
namespace {

using analysis::Report;
using json::JsonWriter;

// -1 marks "unknown" in the report; JSON says null.
void NumberOrNull(JsonWriter& w, double v) {
  if (v < 0) {
    w.Null();
  } else {
    w.Double(v);
  }
}

void WriteTraces(JsonWriter& w, const Report& r) {
  w.Key("traces").BeginArray();
  for (const analysis::TraceSummary& t : r.traces) {
    w.BeginObject();
    w.Key("path").String(t.path);
    w.Key("pid").Uint(t.pid);
    w.Key("rank").Int(t.rank);
    w.Key("host").String(t.host);
    w.Key("complete").Bool(t.complete);
    w.Key("integrity").String(t.complete ? "complete" : t.integrity_reason);
    w.Key("lost_records").Uint(t.lost_records);
    w.Key("events").Uint(t.events);
    w.Key("invalid_timestamps").Uint(t.invalid_timestamps);
    w.Key("replayed_kernels").Uint(t.replayed_kernels);
    w.Key("untraced_kernels").Uint(t.untraced_kernels);
    w.Key("untraced_memsets").Uint(t.untraced_memsets);
    w.Key("clock_offset_ns").Int(t.clock_offset_ns);
    w.Key("has_clock_mapping").Bool(t.has_clock_mapping);
    w.EndObject();
  }
  w.EndArray();
}

void WriteDevice(JsonWriter& w, const analysis::DeviceSummary& d) {
  w.BeginObject();
  w.Key("index").Uint(d.index);
  w.Key("id").Uint(d.id);
  w.Key("rank").Int(d.rank);
  w.Key("trace").Uint(d.trace);
  w.Key("name").String(d.name);
  w.Key("window_start_ns").Uint(d.window_start_ns);
  w.Key("window_end_ns").Uint(d.window_end_ns);
  w.Key("window_ns").Uint(d.window_ns);
  w.Key("busy_ns").Uint(d.busy_ns);
  w.Key("gpu_utilization_pct").Double(d.gpu_utilization_pct);
  w.Key("compute_pct").Double(d.compute_pct);
  w.Key("comm_pct").Double(d.comm_pct);
  w.Key("memory_pct").Double(d.memory_pct);
  w.Key("idle_pct").Double(d.idle_pct);
  w.Key("compute_ns").Uint(d.compute_ns);
  w.Key("comm_ns").Uint(d.comm_ns);
  w.Key("memory_ns").Uint(d.memory_ns);
  w.Key("idle_ns").Uint(d.idle_ns);
  w.Key("kernels").Uint(d.kernels);
  w.Key("memcpys").Uint(d.memcpys);
  w.Key("memsets").Uint(d.memsets);
  w.Key("concurrency_ns").BeginArray();
  for (uint64_t v : d.concurrency_ns) w.Uint(v);
  w.EndArray();
  w.Key("idle_attribution_ns").BeginObject();
  w.Key("host_wait").Uint(d.idle_host_wait_ns);
  w.Key("sync_wait").Uint(d.idle_sync_wait_ns);
  w.Key("kernel_wait").Uint(d.idle_kernel_wait_ns);
  w.Key("other").Uint(d.idle_other_ns);
  w.Key("profiler").Uint(d.idle_profiler_ns);
  w.EndObject();
  w.Key("comm_overlap_pct").Double(d.comm_overlap_pct);
  w.Key("memory_peak_bytes").Uint(d.memory_peak_bytes);
  w.EndObject();
}

void WriteMemorySites(JsonWriter& w, const char* key, const std::vector<analysis::MemorySite>& v) {
  w.Key(key).BeginArray();
  for (const analysis::MemorySite& s : v) {
    w.BeginObject();
    w.Key("site").String(s.site);
    w.Key("bytes").Uint(s.bytes);
    w.Key("allocations").Uint(s.allocations);
    w.Key("call_ns").Uint(s.call_ns);
    w.EndObject();
  }
  w.EndArray();
}

// "timeline": [t_ns, bytes] pairs, a step function.
void WriteMemoryTimeline(JsonWriter& w, const std::vector<analysis::MemoryPoint>& points) {
  w.Key("timeline").BeginArray();
  for (const analysis::MemoryPoint& p : points) {
    w.BeginArray();
    w.Uint(p.t_ns);
    w.Uint(p.bytes);
    w.EndArray();
  }
  w.EndArray();
}

void WriteMemory(JsonWriter& w, const analysis::MemorySummary& m) {
  w.Key("memory").BeginObject();
  w.Key("recorded").Bool(m.recorded);
  w.Key("devices").BeginArray();
  for (const analysis::MemoryDevice& d : m.devices) {
    w.BeginObject();
    w.Key("device_index").Uint(d.device_index);
    w.Key("id").Uint(d.id);
    w.Key("rank").Int(d.rank);
    w.Key("capacity_bytes").Uint(d.capacity_bytes);
    w.Key("peak_bytes").Uint(d.peak_bytes);
    w.Key("peak_ns").Uint(d.peak_ns);
    w.Key("static_bytes").Uint(d.static_bytes);
    w.Key("pool_bytes").Uint(d.pool_bytes);
    w.Key("scope_peak_bytes").Uint(d.scope_peak_bytes);
    w.Key("end_bytes").Uint(d.end_bytes);
    w.Key("end_allocations").Uint(d.end_allocations);
    w.Key("pinned_peak_bytes").Uint(d.pinned_peak_bytes);
    w.Key("managed_peak_bytes").Uint(d.managed_peak_bytes);
    w.Key("allocations").Uint(d.allocations);
    w.Key("releases").Uint(d.releases);
    w.Key("unmatched_releases").Uint(d.unmatched_releases);
    w.Key("scope_allocations").Uint(d.scope_allocations);
    w.Key("scope_releases").Uint(d.scope_releases);
    w.Key("scope_alloc_call_ns").Uint(d.scope_alloc_call_ns);
    w.Key("allocations_per_step").Double(d.allocations_per_step);
    w.Key("growth_bytes_per_step").Double(d.growth_bytes_per_step);
    w.Key("steps_increasing").Uint(d.steps_increasing);
    w.Key("steps_decreasing").Uint(d.steps_decreasing);
    w.Key("step_end_bytes").BeginArray();
    for (uint64_t b : d.step_end_bytes) w.Uint(b);
    w.EndArray();
    WriteMemorySites(w, "peak_sites", d.peak_sites);
    WriteMemorySites(w, "end_sites", d.end_sites);
    WriteMemorySites(w, "scope_live_sites", d.scope_live_sites);
    WriteMemorySites(w, "churn_sites", d.churn_sites);
    w.Key("torch").BeginObject();
    w.Key("samples").Uint(d.torch_samples);
    w.Key("allocated_peak_bytes").Uint(d.torch_allocated_peak_bytes);
    w.Key("reserved_peak_bytes").Uint(d.torch_reserved_peak_bytes);
    w.Key("allocated_end_bytes").Uint(d.torch_allocated_end_bytes);
    w.Key("reserved_end_bytes").Uint(d.torch_reserved_end_bytes);
    w.EndObject();
    w.Key("sources").BeginArray();
    for (const analysis::MemorySource& s : d.sources) {
      w.BeginObject();
      w.Key("source").String(s.source);
      w.Key("peak_bytes").Uint(s.peak_bytes);
      w.Key("bytes_at_peak").Uint(s.bytes_at_peak);
      w.Key("end_bytes").Uint(s.end_bytes);
      w.EndObject();
    }
    w.EndArray();
    WriteMemoryTimeline(w, d.timeline);
    w.Key("pools").BeginArray();
    for (const analysis::MemoryPoolSummary& pool : d.pools) {
      w.BeginObject();
      w.Key("address").Uint(pool.address);
      w.Key("peak_bytes").Uint(pool.peak_bytes);
      w.Key("peak_used_bytes").Uint(pool.peak_used_bytes);
      w.Key("end_bytes").Uint(pool.end_bytes);
      w.Key("allocations").Uint(pool.allocations);
      w.Key("destroyed").Bool(pool.destroyed);
      WriteMemoryTimeline(w, pool.timeline);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WriteSteps(JsonWriter& w, const analysis::StepSummary& s) {
  w.Key("steps").BeginObject();
  w.Key("source").String(s.source);
  w.Key("name").String(s.name);
  w.Key("detected").Uint(s.detected);
  w.Key("warmup_steps").Uint(s.warmup_steps);
  w.Key("metrics_steps").Uint(s.metrics_steps);
  w.Key("period").Uint(s.period);
  w.Key("match_pct").Double(s.match_pct);
  w.Key("count").Uint(s.count);
  w.Key("mean_ns").Double(s.mean_ns);
  w.Key("stddev_ns").Double(s.stddev_ns);
  w.Key("p50_ns").Uint(s.p50_ns);
  w.Key("p99_ns").Uint(s.p99_ns);
  w.Key("min_ns").Uint(s.min_ns);
  w.Key("max_ns").Uint(s.max_ns);
  w.Key("mean_gpu_utilization_pct").Double(s.mean_gpu_utilization_pct);
  w.Key("items").BeginArray();
  for (const analysis::StepRow& row : s.steps) {
    w.BeginObject();
    w.Key("index").Uint(row.index);
    w.Key("start_ns").Uint(row.start_ns);
    w.Key("duration_ns").Uint(row.duration_ns);
    w.Key("gpu_utilization_pct").Double(row.gpu_utilization_pct);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// {"metric name": mean, ...} (JSON object, names as ncu spells them).
void WriteMetricValues(JsonWriter& w, const char* key,
                       const std::vector<analysis::KernelMetricValue>& values) {
  w.Key(key).BeginObject();
  for (const analysis::KernelMetricValue& m : values) {
    w.Key(m.name).Double(m.value);
  }
  w.EndObject();
}

// metric name -> [min, max] over the sets the mean of WriteMetricValues is
// taken over (equal for a single set).
void WriteMetricRanges(JsonWriter& w, const char* key,
                       const std::vector<analysis::KernelMetricValue>& values) {
  w.Key(key).BeginObject();
  for (const analysis::KernelMetricValue& m : values) {
    w.Key(m.name).BeginArray().Double(m.min).Double(m.max).EndArray();
  }
  w.EndObject();
}

// The metrics whose values come from kernel-replayed sets in place of
// in-place ones (sequence replay's --metrics-replay-top): sorted names.
void WriteKernelReplayed(JsonWriter& w, const std::vector<analysis::KernelMetricValue>& values) {
  w.Key("metrics_from_kernel_replay").BeginArray();
  for (const analysis::KernelMetricValue& m : values) {
    if (m.kernel_replay) w.String(m.name);
  }
  w.EndArray();
}

void WriteKernels(JsonWriter& w, const Report& r) {
  w.Key("kernels").BeginArray();
  for (const analysis::KernelRow& k : r.kernels) {
    w.BeginObject();
    w.Key("name").String(k.name);
    w.Key("display_name").String(Demangle(k.name));
    w.Key("short_name").String(DisplayKernelName(k.name));
    w.Key("class").String(k.klass);
    w.Key("count").Uint(k.count);
    w.Key("replayed_count").Uint(k.replayed_count);
    w.Key("total_ns").Uint(k.total_ns);
    w.Key("mean_ns").Double(k.mean_ns);
    w.Key("min_ns").Uint(k.min_ns);
    w.Key("max_ns").Uint(k.max_ns);
    w.Key("stddev_ns").Double(k.stddev_ns);
    w.Key("share_pct").Double(k.share_pct);
    w.Key("grid").BeginArray().Uint(k.grid[0]).Uint(k.grid[1]).Uint(k.grid[2]).EndArray();
    w.Key("block").BeginArray().Uint(k.block[0]).Uint(k.block[1]).Uint(k.block[2]).EndArray();
    w.Key("registers_per_thread").Uint(k.registers_per_thread);
    w.Key("shared_bytes").Uint(k.shared_bytes);
    w.Key("launch_configs").Uint(k.launch_configs);
    w.Key("theoretical_occupancy_pct");
    NumberOrNull(w, k.theoretical_occupancy_pct);
    w.Key("occupancy_limiter").String(k.occupancy_limiter);
    w.Key("python_site").String(k.python_site);
    w.Key("op").String(k.op);
    w.Key("metric_samples").Uint(k.metric_samples);
    WriteMetricValues(w, "metrics", k.metrics);
    WriteMetricRanges(w, "metrics_range", k.metrics);
    WriteKernelReplayed(w, k.metrics);
    w.Key("metrics_by_config").BeginArray();
    for (const analysis::KernelConfigMetrics& c : k.metrics_by_config) {
      w.BeginObject();
      w.Key("grid").BeginArray().Uint(c.grid[0]).Uint(c.grid[1]).Uint(c.grid[2]).EndArray();
      w.Key("block").BeginArray().Uint(c.block[0]).Uint(c.block[1]).Uint(c.block[2]).EndArray();
      w.Key("shared_bytes").Uint(c.shared_bytes);
      w.Key("registers_per_thread").Uint(c.registers_per_thread);
      w.Key("count").Uint(c.count);
      w.Key("metric_samples").Uint(c.samples);
      WriteMetricValues(w, "metrics", c.metrics);
      WriteMetricRanges(w, "metrics_range", c.metrics);
      WriteKernelReplayed(w, c.metrics);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteMetricsCoverage(JsonWriter& w, const analysis::MetricsCoverage& c) {
  w.Key("metrics_coverage").BeginObject();
  w.Key("recorded").Bool(c.present);
  w.Key("kernel_time_pct").Double(c.kernel_time_pct);
  w.Key("covered_ns").Uint(c.covered_ns);
  w.Key("kernel_ns").Uint(c.kernel_ns);
  w.Key("configurations_with").Uint(c.configs_with);
  w.Key("configurations_without").Uint(c.configs_without);
  w.Key("missing").BeginArray();
  for (const analysis::MetricsCoverage::Missing& m : c.missing) {
    w.BeginObject();
    w.Key("name").String(m.name);
    w.Key("short_name").String(DisplayKernelName(m.name));
    w.Key("grid").BeginArray().Uint(m.grid[0]).Uint(m.grid[1]).Uint(m.grid[2]).EndArray();
    w.Key("block").BeginArray().Uint(m.block[0]).Uint(m.block[1]).Uint(m.block[2]).EndArray();
    w.Key("count").Uint(m.count);
    w.Key("total_ns").Uint(m.total_ns);
    w.Key("share_pct").Double(m.share_pct);
    w.Key("reason").String(m.reason);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WriteRangeMetrics(JsonWriter& w, const Report& r) {
  w.Key("range_metrics").BeginArray();
  for (const analysis::RangeMetricsRow& row : r.range_metrics) {
    w.BeginObject();
    w.Key("range").String(row.range);
    w.Key("sets").Uint(row.sets);
    w.Key("complete_sets").Uint(row.complete);
    w.Key("complete_sets_in_window").Uint(row.complete_in_window);
    w.Key("instances").Uint(row.instances);
    w.Key("metrics_from_window").Bool(row.from_window);
    WriteMetricValues(w, "metrics", row.metrics);
    w.Key("set_list").BeginArray();
    for (const analysis::RangeMetricSetRow& s : row.set_rows) {
      w.BeginObject();
      w.Key("start_ns").Uint(s.start_ns);
      w.Key("end_ns").Uint(s.end_ns);
      w.Key("instances").Uint(s.instances);
      w.Key("passes").Uint(s.passes_needed);
      w.Key("passes_collected").Uint(s.passes_collected);
      w.Key("complete").Bool(s.complete);
      w.Key("in_window").Bool(s.in_window);
      WriteMetricValues(w, "metrics", s.metrics);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteGpuMetricRows(JsonWriter& w, const char* key,
                        const std::vector<analysis::GpuMetricSpanRow>& rows,
                        const analysis::GpuMetricsDevice& d, bool steps) {
  w.Key(key).BeginArray();
  for (const analysis::GpuMetricSpanRow& row : rows) {
    w.BeginObject();
    if (steps) {
      w.Key("index").Uint(row.index);
      w.Key("start_ns").Uint(row.start_ns);
      w.Key("end_ns").Uint(row.end_ns);
    } else {
      w.Key("name").String(row.name);
      w.Key("instances").Uint(row.instances);
      w.Key("resolved").Bool(row.resolved);
    }
    w.Key("time_ns").Uint(row.time_ns);
    w.Key("values").BeginObject();
    for (size_t j = 0; j < d.stats.size() && j < row.values.size(); ++j) {
      w.Key(d.stats[j].key).Double(row.values[j]);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
}

void WriteGpuMetrics(JsonWriter& w, const Report& r) {
  w.Key("gpu_metrics").BeginArray();
  for (const analysis::GpuMetricsDevice& d : r.gpu_metrics) {
    w.BeginObject();
    w.Key("trace").Uint(d.trace);
    w.Key("device").Uint(d.device_id);
    w.Key("device_name").String(d.device_name);
    w.Key("samples").Uint(d.samples);
    w.Key("samples_total").Uint(d.samples_total);
    w.Key("samples_missing").Uint(d.samples_missing);
    w.Key("samples_missing_in_window").Uint(d.samples_missing_in_window);
    w.Key("interval_ns").Double(d.interval_ns);
    w.Key("interval_asked_ns").Uint(d.interval_asked_ns);
    w.Key("coverage_pct").Double(d.coverage_pct);
    w.Key("unavailable").BeginArray();
    for (const std::string& u : d.unavailable) w.String(u);
    w.EndArray();
    w.Key("metrics").BeginArray();
    for (const analysis::GpuMetricStat& st : d.stats) {
      w.BeginObject();
      w.Key("key").String(st.key);
      w.Key("label").String(st.label);
      w.Key("metric").String(st.metric);
      w.Key("unit").String(st.unit);
      w.Key("mean").Double(st.mean);
      w.Key("p50").Double(st.p50);
      w.Key("p95").Double(st.p95);
      w.Key("max").Double(st.max);
      if (st.busy_pct >= 0) {
        w.Key("busy_pct").Double(st.busy_pct);
        w.Key("saturated_pct").Double(st.saturated_pct);
      }
      w.EndObject();
    }
    w.EndArray();
    WriteGpuMetricRows(w, "steps", d.steps, d, true);
    WriteGpuMetricRows(w, "ranges", d.ranges, d, false);
    WriteGpuMetricRows(w, "kernels", d.kernels, d, false);
    w.Key("timeline").BeginObject();
    w.Key("t_ns").BeginArray();
    for (uint64_t t : d.timeline_ns) w.Uint(t);
    w.EndArray();
    for (size_t j = 0; j < d.stats.size() && j < d.timeline.size(); ++j) {
      w.Key(d.stats[j].key).BeginArray();
      for (float v : d.timeline[j]) w.Double(v);
      w.EndArray();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
}

void WriteTables(JsonWriter& w, const Report& r) {
  w.Key("apis").BeginArray();
  for (const analysis::ApiRow& a : r.apis) {
    w.BeginObject();
    w.Key("name").String(a.name);
    w.Key("raw_name").String(a.raw_name);
    w.Key("count").Uint(a.count);
    w.Key("total_ns").Uint(a.total_ns);
    w.Key("mean_ns").Double(a.mean_ns);
    w.Key("min_ns").Uint(a.min_ns);
    w.Key("max_ns").Uint(a.max_ns);
    w.Key("stddev_ns").Double(a.stddev_ns);
    w.Key("share_pct").Double(a.share_pct);
    w.EndObject();
  }
  w.EndArray();
  w.Key("memcpys").BeginArray();
  for (const analysis::MemcpyRow& m : r.memcpys) {
    w.BeginObject();
    w.Key("kind").String(m.kind);
    w.Key("memory").String(m.memory);
    w.Key("count").Uint(m.count);
    w.Key("bytes").Uint(m.bytes);
    w.Key("total_ns").Uint(m.total_ns);
    w.Key("mean_ns").Double(m.mean_ns);
    w.Key("bandwidth_gbps").Double(m.bandwidth_gbps);
    w.EndObject();
  }
  w.EndArray();
  w.Key("streams").BeginArray();
  for (const analysis::StreamSummary& s : r.streams) {
    w.BeginObject();
    w.Key("device_index").Uint(s.device_index);
    w.Key("stream_id").Uint(s.stream_id);
    w.Key("rank").Int(s.rank);
    w.Key("ops").Uint(s.ops);
    w.Key("kernels").Uint(s.kernels);
    w.Key("memcpys").Uint(s.memcpys);
    w.Key("memsets").Uint(s.memsets);
    w.Key("busy_ns").Uint(s.busy_ns);
    w.Key("busy_pct").Double(s.busy_pct);
    w.EndObject();
  }
  w.EndArray();
  w.Key("nvtx").BeginArray();
  for (const analysis::NvtxRow& n : r.nvtx) {
    w.BeginObject();
    w.Key("name").String(n.name);
    w.Key("domain").String(n.domain);
    w.Key("count").Uint(n.count);
    w.Key("cpu_total_ns").Uint(n.cpu_total_ns);
    w.Key("gpu_total_ns").Uint(n.gpu_total_ns);
    w.Key("gpu_ops").Uint(n.gpu_ops);
    w.Key("gpu_share_pct").Double(n.gpu_share_pct);
    w.EndObject();
  }
  w.EndArray();
  w.Key("nccl").BeginArray();
  for (const analysis::NcclRow& n : r.nccl) {
    w.BeginObject();
    w.Key("rank").Int(n.rank);
    w.Key("device_index").Uint(n.device_index);
    w.Key("count").Uint(n.count);
    w.Key("total_ns").Uint(n.total_ns);
    w.Key("overlapped_ns").Uint(n.overlapped_ns);
    w.Key("comm_share_pct").Double(n.comm_share_pct);
    w.Key("overlap_pct").Double(n.overlap_pct);
    w.EndObject();
  }
  w.EndArray();
  w.Key("nccl_ops").BeginArray();
  for (const analysis::NcclOpRow& n : r.nccl_ops) {
    w.BeginObject();
    w.Key("trace_index").Uint(n.trace_index);
    w.Key("rank").Int(n.rank);
    w.Key("op").String(n.op);
    w.Key("count").Uint(n.count);
    w.Key("sized_count").Uint(n.sized_count);
    w.Key("bytes_total").Uint(n.bytes_total);
    w.Key("bytes_min").Uint(n.bytes_min);
    w.Key("bytes_max").Uint(n.bytes_max);
    w.Key("gpu_count").Uint(n.gpu_count);
    w.Key("gpu_total_ns").Uint(n.gpu_total_ns);
    w.Key("algbw_gbps").Double(n.algbw_gbps);
    w.Key("comm_id").String(n.comm_id);
    w.Key("comm_rank").Int(n.comm_rank);
    w.Key("comm_nranks").Int(n.comm_nranks);
    w.EndObject();
  }
  w.EndArray();
  // Cross-rank matching and wait attribution: method "" and no ranks unless
  // two or more ranks have NCCL work.
  const analysis::CrossRankSummary& x = r.cross_rank;
  w.Key("cross_rank").BeginObject();
  w.Key("method").String(x.method);
  w.Key("clock_source").String(x.clock_source);
  w.Key("channels").Uint(x.channels);
  w.Key("collectives_matched").Uint(x.collectives_matched);
  w.Key("calls").Uint(x.calls);
  w.Key("matched_calls").Uint(x.matched_calls);
  w.Key("unmatched_calls").Uint(x.unmatched_calls);
  w.Key("skew_median_ns").Uint(x.skew_median_ns);
  w.Key("skew_max_ns").Uint(x.skew_max_ns);
  w.Key("skew_samples").Uint(x.skew_samples);
  w.Key("ranks").BeginArray();
  for (const analysis::CrossRankRow& k : x.ranks) {
    w.BeginObject();
    w.Key("trace_index").Uint(k.trace_index);
    w.Key("rank").Int(k.rank);
    w.Key("clock_offset_ns").Int(k.clock_offset_ns);
    w.Key("clock_aligned").Bool(k.clock_aligned);
    w.Key("calls").Uint(k.calls);
    w.Key("matched_calls").Uint(k.matched_calls);
    w.Key("unmatched_calls").Uint(k.unmatched_calls);
    w.Key("arrival_delay_ns").Uint(k.arrival_delay_ns);
    w.Key("wait_ns").Uint(k.wait_ns);
    w.Key("last_arrivals").Uint(k.last_arrivals);
    w.Key("late_margin_ns").Uint(k.late_margin_ns);
    w.Key("comm_ns").Uint(k.comm_ns);
    w.Key("exposed_comm_ns").Uint(k.exposed_comm_ns);
    w.EndObject();
  }
  w.EndArray();
  w.Key("steps").BeginArray();
  for (const analysis::CrossRankStepRow& st : x.steps) {
    w.BeginObject();
    w.Key("index").Uint(st.index);
    w.Key("ops").Uint(st.ops);
    w.Key("last_rank").Int(st.last_rank);
    w.Key("late_ns").Uint(st.late_ns);
    w.Key("last_arrivals").Uint(st.last_arrivals);
    w.EndObject();
  }
  w.EndArray();
  w.Key("latest").BeginArray();
  for (const analysis::CrossRankOpRow& o : x.latest) {
    w.BeginObject();
    w.Key("comm_id").String(o.comm_id);
    w.Key("op").String(o.op);
    w.Key("bytes").Uint(o.bytes);
    w.Key("seq").Uint(o.seq);
    w.Key("p2p").Bool(o.p2p);
    w.Key("ranks").Uint(o.ranks);
    w.Key("first_arrival_ns").Uint(o.first_arrival_ns);
    w.Key("last_rank").Int(o.last_rank);
    w.Key("last_margin_ns").Uint(o.last_margin_ns);
    w.Key("end_spread_ns").Uint(o.end_spread_ns);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WriteFindings(JsonWriter& w, const Report& r) {
  w.Key("findings").BeginArray();
  for (const analysis::Finding& f : r.findings) {
    w.BeginObject();
    w.Key("rule").String(f.rule);
    w.Key("severity").String(analysis::SeverityName(f.severity));
    w.Key("title").String(f.title);
    w.Key("scope").String(f.scope);
    w.Key("est_saving_ns").Uint(f.est_saving_ns);
    w.Key("est_saving_pct").Double(f.est_saving_pct);
    w.Key("evidence").BeginObject();
    for (const analysis::EvidenceItem& e : f.evidence) {
      w.Key(e.key);
      if (e.is_number) {
        w.Double(e.number);
      } else {
        w.String(e.text);
      }
    }
    w.EndObject();
    w.Key("evidence_units").BeginObject();
    for (const analysis::EvidenceItem& e : f.evidence) {
      if (e.is_number && !e.unit.empty()) w.Key(e.key).String(e.unit);
    }
    w.EndObject();
    w.Key("offenders").BeginArray();
    for (const analysis::Offender& o : f.offenders) {
      w.BeginObject();
      w.Key("name").String(o.name);
      w.Key("count").Uint(o.count);
      w.Key("total_ns").Uint(o.total_ns);
      w.Key("share_pct").Double(o.share_pct);
      w.Key("detail").String(o.detail);
      w.Key("python_site").String(o.python_site);
      w.EndObject();
    }
    w.EndArray();
    w.Key("recommendation").String(f.recommendation);
    w.Key("symptoms").BeginArray();
    for (const std::string& s : f.symptoms) w.String(s);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WritePythonSites(JsonWriter& w, const Report& r) {
  w.Key("python_sites").BeginArray();
  for (const analysis::PythonSiteRow& s : r.python_sites) {
    w.BeginObject();
    w.Key("site").String(s.site);
    w.Key("inferred").Bool(s.inferred);
    w.Key("gpu_ns").Uint(s.gpu_ns);
    w.Key("host_blocked_ns").Uint(s.host_blocked_ns);
    w.Key("launches").Uint(s.launches);
    w.Key("calls").Uint(s.calls);
    w.EndObject();
  }
  w.EndArray();
  w.Key("ops").BeginArray();
  for (const analysis::OpRow& o : r.ops) {
    w.BeginObject();
    w.Key("op").String(o.op);
    w.Key("gpu_ns").Uint(o.gpu_ns);
    w.Key("kernels").Uint(o.kernels);
    w.EndObject();
  }
  w.EndArray();
  w.Key("python_stacks").BeginArray();
  for (const analysis::PythonStackRow& s : r.python_stacks) {
    w.BeginObject();
    w.Key("frames").BeginArray();
    for (const std::string& f : s.frames) w.String(f);
    w.EndArray();
    w.Key("gpu_ns").Uint(s.gpu_ns);
    w.Key("host_blocked_ns").Uint(s.host_blocked_ns);
    w.EndObject();
  }
  w.EndArray();
  w.Key("python_attribution").BeginObject();
  w.Key("kernel_time_with_user_site_pct").Double(r.python_attributed_gpu_pct);
  w.Key("kernel_time_inferred_pct").Double(r.python_inferred_gpu_pct);
  w.Key("kernel_time_with_op_pct").Double(r.op_attributed_gpu_pct);
  w.EndObject();
}

}  // namespace

std::string RenderReportJson(const Report& r) {
  std::string out;
  JsonWriter w(&out, 2);
  w.BeginObject();
  w.Key("schema").String(r.schema.empty() ? analysis::kReportSchema : r.schema);
  WriteTraces(w, r);
  w.Key("summary").BeginObject();
  w.Key("window_start_ns").Uint(r.summary.window_start_ns);
  w.Key("window_end_ns").Uint(r.summary.window_end_ns);
  w.Key("window_ns").Uint(r.summary.window_ns);
  {
    const analysis::FirstAction& a = r.summary.first_action;
    w.Key("first_action").BeginObject();
    w.Key("rule").String(a.rule);
    w.Key("title").String(a.title);
    w.Key("saving_pct").Double(a.saving_pct);
    w.Key("step_ns").Uint(a.step_ns);
    w.Key("expected_step_ns").Uint(a.expected_step_ns);
    w.EndObject();
  }
  w.Key("scope").String(r.summary.scope);
  w.Key("scope_start_ns").Uint(r.summary.scope_start_ns);
  w.Key("scope_end_ns").Uint(r.summary.scope_end_ns);
  w.Key("steady_first_step").Int(r.summary.steady_first_step);
  w.Key("startup_ns").Uint(r.summary.startup_ns);
  {
    const analysis::StartupSummary& u = r.summary.startup;
    w.Key("startup").BeginObject();
    w.Key("duration_ns").Uint(u.duration_ns);
    w.Key("warmup_ns").Uint(u.warmup_ns);
    w.Key("cuda_api_ns").Uint(u.cuda_api_ns);
    w.Key("module_loading_ns").Uint(u.module_loading_ns);
    w.Key("memory_alloc_ns").Uint(u.memory_alloc_ns);
    w.Key("sync_ns").Uint(u.sync_ns);
    w.Key("gpu_busy_ns").Uint(u.gpu_busy_ns);
    w.Key("host_other_ns").Uint(u.host_other_ns);
    w.Key("lazy_loading_ns").Uint(u.lazy_loading_ns);
    w.Key("compilation_ns").Uint(u.compilation_ns);
    w.EndObject();
  }
  w.Key("gpu_activities").Uint(r.summary.gpu_activities);
  w.Key("api_calls").Uint(r.summary.api_calls);
  w.Key("nvtx_ranges").Uint(r.summary.nvtx_ranges);
  w.Key("devices").BeginArray();
  for (const analysis::DeviceSummary& d : r.summary.devices) WriteDevice(w, d);
  w.EndArray();
  WriteSteps(w, r.summary.steps);
  w.Key("metrics_coverage_pct");
  if (r.metrics_coverage.present) {
    w.Double(r.metrics_coverage.kernel_time_pct);
  } else {
    w.Null();
  }
  w.EndObject();
  WriteKernels(w, r);
  WriteMetricsCoverage(w, r.metrics_coverage);
  WriteRangeMetrics(w, r);
  WriteGpuMetrics(w, r);
  WriteTables(w, r);
  WriteMemory(w, r.memory);
  WriteFindings(w, r);
  WritePythonSites(w, r);
  w.Key("notes").BeginArray();
  for (const std::string& n : r.notes) w.String(n);
  w.EndArray();
  w.EndObject();
  out += '\n';
  return out;
}

}  // namespace sightline::exporter
