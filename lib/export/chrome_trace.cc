// lib/export/chrome_trace.cc — see chrome_trace.h.
#include "lib/export/chrome_trace.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/export/demangle.h"
#include "lib/export/flow_matcher.h"
#include "lib/export/replay_placement.h"
#include "lib/export/json_text.h"
#include "lib/export/timeline_tracks.h"
#include "lib/trace/memory_tracker.h"
#include "lib/trace/pm_quantities.h"

namespace sightline::exporter {
namespace {

class ChromeEmitter : public trace::EventVisitor {
 public:
  ChromeEmitter(trace::TraceReader& reader, OutputFile& out, const ExportOptions& options)
      : reader_(reader),
        out_(out),
        header_(reader.header()),
        tracks_(header_),
        flows_(options.max_pending_flows),
        pid_(header_.process.pid) {
    base_ns_ = static_cast<int64_t>(header_.clock.trace_ns);
    have_base_ = header_.clock.trace_ns != 0;
  }

  void Begin() {
    out_.Append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    BeginEvent("M", "process_name", 0);
    out_.Append(",\"args\":{\"name\":");
    AppendJsonString(out_, ProcessLabel(header_));
    out_.Append("}}");
    BeginEvent("M", "process_labels", 0);
    std::string labels;
    for (const DeviceInfo& d : header_.devices) {
      if (!labels.empty()) labels += ", ";
      absl::StrAppend(&labels, "GPU ", d.id, ": ", d.name);
    }
    out_.Append(",\"args\":{\"labels\":");
    AppendJsonString(out_, labels);
    out_.Append("}}");
  }

  void End(const ExportStats& stats_so_far) {
    const trace::Integrity& in = reader_.integrity();
    out_.Append("\n],\"otherData\":{\"generator\":\"sightline export\",\"source\":");
    AppendJsonString(out_, reader_.name());
    out_.Append(",\"pid\":");
    AppendUint(out_, pid_);
    out_.Append(",\"host\":");
    AppendJsonString(out_, header_.process.host);
    out_.Append(",\"rank\":");
    AppendInt(out_, header_.process.rank);
    out_.Append(",\"time_origin_trace_ns\":");
    AppendInt(out_, base_ns_);
    out_.Append(",\"time_origin_realtime_ns\":");
    AppendInt(out_, base_ns_ + header_.clock.offset_ns());
    out_.Append(",\"complete\":");
    out_.Append(in.complete ? "true" : "false");
    out_.Append(",\"integrity\":");
    AppendJsonString(out_, in.complete ? "complete" : in.reason);
    out_.Append(",\"lost_records\":");
    AppendUint(out_, in.losses.total());
    out_.Append(",\"events_read\":");
    AppendUint(out_, stats_so_far.events_read);
    out_.Append(",\"events_written\":");
    AppendUint(out_, stats_so_far.events_written);
    out_.Append(",\"flows\":");
    AppendUint(out_, stats_so_far.flows);
    out_.Append(",\"flows_unmatched\":");
    AppendUint(out_, stats_so_far.flows_unmatched);
    out_.Append("}}\n");
  }

  // Flows completed by the last chunk are written after it.
  void EmitPendingFlows() {
    for (const auto& [from, to] : flow_buffer_) {
      uint64_t id = ++flow_id_;
      BeginEvent("s", "launch", from.track);
      out_.Append(",\"cat\":\"flow\",\"id\":");
      AppendUint(out_, id);
      out_.Append(",\"ts\":");
      AppendMicros(out_, from.time_ns - base_ns_);
      out_.Append('}');
      BeginEvent("f", "launch", to.track);
      out_.Append(",\"cat\":\"flow\",\"bp\":\"e\",\"id\":");
      AppendUint(out_, id);
      out_.Append(",\"ts\":");
      AppendMicros(out_, to.time_ns - base_ns_);
      out_.Append('}');
    }
    stats_.flows += flow_buffer_.size();
    flow_buffer_.clear();
  }

  ExportStats& stats() { return stats_; }
  const FlowMatcher& flows() const { return flows_; }
  const TrackRegistry& tracks() const { return tracks_; }

  // ---- EventVisitor ----------------------------------------------------
  // Kernels replayed for metrics (no timestamps): at their launch, once its
  // launch and measured duration are known (after each chunk); at the end
  // the ones still waiting are counted as skipped.
  void EmitReplayedKernels(bool final) {
    if (!final && replay_.waiting() > replay_.capacity() / 2) replay_.ResolveByConfigMean();
    for (const KernelEvent& k : replay_.TakeReady()) EmitKernel(k, true);
    if (final) {
      replay_.ResolveByConfigMean();
      for (const KernelEvent& k : replay_.TakeReady()) EmitKernel(k, true);
      replay_.Finish();
      stats_.events_skipped += replay_.unplaced();
    }
    EmitPendingFlows();
  }

  void OnKernel(const KernelEvent& e) override {
    ++stats_.events_read;
    if (replay_.OnKernel(e)) return;
    EmitKernel(e, false);
  }

  void EmitKernel(const KernelEvent& e, bool replayed) {
    uint64_t tid = Track({TrackType::kStream, e.device_id, e.stream_id});
    std::string_view raw = reader_.strings().Get(e.name_id);
    const std::string& name = KernelName(e.name_id, raw);
    Slice(tid, "kernel", name, e.start_ns, e.end_ns);
    out_.Append(",\"args\":{");
    if (name.size() != raw.size() || name != raw) {
      out_.Append("\"mangled\":");
      AppendJsonString(out_, raw);
      out_.Append(',');
    }
    out_.Append("\"device\":");
    AppendUint(out_, e.device_id);
    out_.Append(",\"stream\":");
    AppendUint(out_, e.stream_id);
    out_.Append(",\"correlation\":");
    AppendUint(out_, e.correlation_id);
    out_.Append(",\"grid\":[");
    AppendUint(out_, e.grid_x); out_.Append(',');
    AppendUint(out_, e.grid_y); out_.Append(',');
    AppendUint(out_, e.grid_z);
    out_.Append("],\"block\":[");
    AppendUint(out_, e.block_x); out_.Append(',');
    AppendUint(out_, e.block_y); out_.Append(',');
    AppendUint(out_, e.block_z);
    out_.Append("],\"registers per thread\":");
    AppendUint(out_, e.registers_per_thread);
    out_.Append(",\"shared memory (static)\":");
    AppendUint(out_, e.static_shared_bytes);
    out_.Append(",\"shared memory (dynamic)\":");
    AppendUint(out_, e.dynamic_shared_bytes);
    if (e.graph_id) {
      out_.Append(",\"graph\":");
      AppendUint(out_, e.graph_id);
    }
    if (replayed) {
      // Replayed for hardware metrics, or measured in place without being
      // traced: at its launch call's start, for the duration measured
      // (gpu__time_duration.sum).
      out_.Append(e.untraced ? ",\"untraced\":true" : ",\"replayed\":true");
    }
    out_.Append("}}");
    GpuFlow(e.correlation_id, tid, e.start_ns);
  }

  void OnMemcpy(const MemcpyEvent& e) override {
    ++stats_.events_read;
    uint64_t tid = Track({TrackType::kStream, e.device_id, e.stream_id});
    Slice(tid, "memcpy", MemcpyName(e), e.start_ns, e.end_ns);
    out_.Append(",\"args\":{\"bytes\":");
    AppendUint(out_, e.bytes);
    if (e.end_ns > e.start_ns) {
      out_.Append(",\"GB/s\":");
      AppendDouble(out_, static_cast<double>(e.bytes) / static_cast<double>(e.end_ns - e.start_ns));
    }
    out_.Append(",\"async\":");
    out_.Append(e.async ? "true" : "false");
    out_.Append(",\"correlation\":");
    AppendUint(out_, e.correlation_id);
    out_.Append("}}");
    GpuFlow(e.correlation_id, tid, e.start_ns);
  }

  void OnMemset(const MemsetEvent& e) override {
    ++stats_.events_read;
    if (e.untraced) {  // no GPU time to draw it at (also counted in the report)
      ++stats_.events_skipped;
      return;
    }
    uint64_t tid = Track({TrackType::kStream, e.device_id, e.stream_id});
    Slice(tid, "memset", MemsetName(e), e.start_ns, e.end_ns);
    out_.Append(",\"args\":{\"bytes\":");
    AppendUint(out_, e.bytes);
    out_.Append(",\"value\":");
    AppendUint(out_, e.value);
    out_.Append(",\"correlation\":");
    AppendUint(out_, e.correlation_id);
    out_.Append("}}");
    GpuFlow(e.correlation_id, tid, e.start_ns);
  }

  void OnSync(const SyncEvent& e) override {
    ++stats_.events_read;
    uint64_t tid = Track({TrackType::kSync, e.device_id, 0});
    Slice(tid, "sync", SyncName(e.sync_kind), e.start_ns, e.end_ns);
    out_.Append(",\"args\":{\"stream\":");
    if (e.stream_id == kNoStream) {
      out_.Append("null");
    } else {
      AppendUint(out_, e.stream_id);
    }
    out_.Append(",\"correlation\":");
    AppendUint(out_, e.correlation_id);
    out_.Append("}}");
  }

  // "fn (file:line) <- ..." for Python stacks, "fn (module+0xoff) <- ..."
  // for native ones; cached per stack id.
  const std::string& StackArg(uint32_t id) {
    auto it = stack_args_.find(id);
    if (it != stack_args_.end()) return it->second;
    return stack_args_.emplace(id, StackLine(reader_, id)).first->second;
  }

  void OnApi(const ApiEvent& e) override {
    ++stats_.events_read;
    if (replay_on_) replay_.OnApi(e);
    uint64_t tid = Track({TrackType::kThread, 0, e.thread_id});
    std::string_view name = reader_.strings().Get(e.name_id);
    Slice(tid, e.domain == ApiDomain::kDriver ? "cuda_driver" : "cuda_runtime",
          ApiDisplayName(name), e.start_ns, e.end_ns);
    out_.Append(",\"args\":{\"correlation\":");
    AppendUint(out_, e.correlation_id);
    if (e.return_value != 0) {
      out_.Append(",\"return\":");
      AppendUint(out_, e.return_value);
    }
    // Call stacks, innermost frame first (strings from the trace, escaped).
    if (e.python_stack_id != 0) {
      const std::string& text = StackArg(e.python_stack_id);
      if (!text.empty()) {
        out_.Append(",\"python_stack\":");
        AppendJsonString(out_, text);
      }
    }
    if (e.stack_id != 0) {
      const std::string& text = StackArg(e.stack_id);
      if (!text.empty()) {
        out_.Append(",\"stack\":");
        AppendJsonString(out_, text);
      }
    }
    out_.Append("}}");
    // Runtime and driver calls share the correlation id of the GPU work; the
    // arrow starts at the outermost (runtime) call when both are present.
    if (e.correlation_id != 0 && IsGpuWorkApi(name) &&
        (e.domain != ApiDomain::kDriver || !flows_.HasLaunch(e.correlation_id))) {
      flows_.AddLaunch(e.correlation_id,
                       FlowEndpoint{tid, static_cast<int64_t>(e.start_ns)}, &flow_buffer_);
    }
  }

  void OnNvtxRange(const NvtxRangeEvent& e) override {
    ++stats_.events_read;
    std::string_view name = reader_.strings().Get(e.name_id);
    if (e.push_pop) {
      uint64_t tid = Track({TrackType::kThread, 0, e.thread_id});
      Slice(tid, "nvtx", name, e.start_ns, e.end_ns);
    } else {
      // Start/end ranges may overlap and cross threads: async pair.
      uint64_t tid = Track({TrackType::kThread, 0, e.thread_id});
      uint64_t id = ++async_id_;
      BeginEvent("b", name, tid);
      out_.Append(",\"cat\":\"nvtx\",\"id\":");
      AppendUint(out_, id);
      out_.Append(",\"ts\":");
      AppendMicros(out_, Rel(e.start_ns));
      NvtxArgs(e.domain_id, e.payload_kind, e.payload_int, e.payload_double, e.color);
      out_.Append("}");
      BeginEvent("e", name, tid);
      out_.Append(",\"cat\":\"nvtx\",\"id\":");
      AppendUint(out_, id);
      out_.Append(",\"ts\":");
      AppendMicros(out_, Rel(e.end_ns));
      out_.Append('}');
      ++stats_.events_written;
      return;
    }
    NvtxArgs(e.domain_id, e.payload_kind, e.payload_int, e.payload_double, e.color);
    out_.Append('}');
  }

  void OnNvtxMarker(const NvtxMarkerEvent& e) override {
    ++stats_.events_read;
    uint64_t tid = Track({TrackType::kThread, 0, e.thread_id});
    Instant(tid, "nvtx", reader_.strings().Get(e.name_id), e.timestamp_ns, 't');
    NvtxArgs(e.domain_id, e.payload_kind, e.payload_int, e.payload_double, e.color);
    out_.Append('}');
  }

  void OnNccl(const NcclEvent& e) override {
    ++stats_.events_read;
    uint64_t tid = Track({TrackType::kNccl, e.device_id, e.source == NcclSource::kGpuKernel ? 1u : 2u});
    Slice(tid, "nccl", NcclName(e, reader_.strings().Get(e.name_id)), e.start_ns, e.end_ns);
    out_.Append(",\"args\":{\"bytes\":");
    AppendUint(out_, e.bytes);
    out_.Append(",\"count\":");
    AppendUint(out_, e.count);
    out_.Append(",\"rank\":");
    AppendInt(out_, e.rank);
    out_.Append(",\"nranks\":");
    AppendInt(out_, e.nranks);
    out_.Append(",\"comm\":");
    AppendUint(out_, e.comm_id);
    if (e.peer >= 0) {
      out_.Append(",\"peer\":");
      AppendInt(out_, e.peer);
    }
    if (e.datatype_id) {
      out_.Append(",\"datatype\":");
      AppendJsonString(out_, reader_.strings().Get(e.datatype_id));
    }
    out_.Append("}}");
  }

  void OnMetricRange(const MetricRangeEvent& e) override {
    ++stats_.events_read;
    for (const MetricValue& v : e.values) {
      if (reader_.strings().Get(v.name_id) == "gpu__time_duration.sum") {
        replay_.OnMeasuredDuration(e.correlation_id, v.value);
      }
    }
    if (e.start_ns == 0 || e.end_ns < e.start_ns) {
      ++stats_.events_skipped;  // replayed ranges without timestamps
      return;
    }
    uint64_t tid = Track({TrackType::kMetrics, e.device_id, 0});
    std::string_view name = reader_.strings().Get(e.range_name_id);
    Slice(tid, "metrics", name.empty() ? std::string_view("metric range") : name, e.start_ns,
          e.end_ns);
    out_.Append(",\"args\":{\"correlation\":");
    AppendUint(out_, e.correlation_id);
    for (const MetricValue& v : e.values) {
      out_.Append(',');
      AppendJsonString(out_, reader_.strings().Get(v.name_id));
      out_.Append(':');
      AppendDouble(out_, v.value);
    }
    out_.Append("}}");
  }

  void OnCaptureWindow(const CaptureWindowEvent& e) override {
    ++stats_.events_read;
    uint64_t tid = Track({TrackType::kProfiler, 0, 0});
    std::string_view label = reader_.strings().Get(e.label_id);
    Slice(tid, "capture", label.empty() ? std::string_view("capture window") : label,
          e.start_ns, e.end_ns);
    out_.Append(",\"args\":{\"index\":");
    AppendUint(out_, e.index);
    out_.Append("}}");
  }

  void OnOverhead(const OverheadEvent& e) override {
    ++stats_.events_read;
    uint64_t tid = Track({TrackType::kProfiler, 0, 0});
    Slice(tid, "overhead", "profiler overhead", e.start_ns, e.end_ns);
    out_.Append(",\"args\":{\"kind\":");
    AppendUint(out_, e.overhead_kind);
    out_.Append(",\"thread\":");
    AppendUint(out_, e.thread_id);
    out_.Append("}}");
  }

  void OnStep(const StepEvent& e) override {
    ++stats_.events_read;
    uint64_t tid = Track({TrackType::kProfiler, 0, 0});
    std::string_view label = reader_.strings().Get(e.name_id);
    std::string name = absl::StrCat(label.empty() ? std::string("step") : std::string(label), " ", e.step);
    Instant(tid, "step", name, e.timestamp_ns, 'p');
    out_.Append(",\"args\":{\"step\":");
    AppendUint(out_, e.step);
    out_.Append("}}");
  }

  // Device memory in use (-t cuda-memory) as a counter per device, changed at
  // each allocation or release (lib/trace/memory_tracker.h).
  void OnMemory(const MemoryEvent& e) override {
    ++stats_.events_read;
    trace::MemoryTracker& m = memory_[e.device_id];
    uint64_t before = m.device_bytes();
    m.Apply(e);
    if (m.device_bytes() == before && memory_emitted_.count(e.device_id)) return;
    memory_emitted_.insert(e.device_id);
    BeginEvent("C", absl::StrCat("GPU memory (device ", e.device_id, ")"), 0);
    out_.Append(",\"ts\":");
    AppendMicros(out_, Rel(e.timestamp_ns));
    out_.Append(",\"args\":{\"allocated bytes\":");
    AppendUint(out_, m.device_bytes());
    out_.Append("}}");
    ++stats_.events_written;
  }

  // PM samples (--gpu-metrics): one counter per sampled metric and device,
  // each sample's value from its start.
  void OnGpuMetrics(const GpuMetricSamplesEvent& e) override {
    ++stats_.events_read;
    const size_t metrics = e.metric_name_ids.size();
    for (size_t j = 0; j < metrics; ++j) {
      const PmCounter c = PmCounterFor(reader_.strings().Get(e.metric_name_ids[j]), e.device_id);
      for (size_t i = 0; i < e.num_samples(); ++i) {
        const float v = e.value(i, j);
        if (std::isnan(v)) continue;
        BeginEvent("C", c.name, 0);
        out_.Append(",\"ts\":");
        AppendMicros(out_, Rel(e.sample_start_ns[i]));
        out_.Append(",\"args\":{\"value\":");
        AppendDouble(out_, v * c.scale);
        out_.Append("}}");
        ++stats_.events_written;
      }
    }
  }

  void OnLoss(const LossReport& e) override {
    ++stats_.events_read;
    BeginEvent("C", "lost records", 0);
    out_.Append(",\"ts\":");
    AppendMicros(out_, Rel(e.timestamp_ns));
    out_.Append(",\"args\":{\"cupti dropped\":");
    AppendUint(out_, e.cupti_dropped_records);
    out_.Append(",\"queue dropped\":");
    AppendUint(out_, e.queue_dropped_records);
    out_.Append(",\"other\":");
    AppendUint(out_, e.total() - e.cupti_dropped_records - e.queue_dropped_records);
    out_.Append("}}");
    ++stats_.events_written;
  }

 private:
  int64_t Rel(uint64_t ns) {
    if (!have_base_) {
      base_ns_ = static_cast<int64_t>(ns);
      have_base_ = true;
    }
    return static_cast<int64_t>(ns) - base_ns_;
  }

  // Starts `{"ph":ph,"name":name,"pid":pid,"tid":tid` (no closing brace).
  void BeginEvent(std::string_view ph, std::string_view name, uint64_t tid) {
    out_.Append(first_event_ ? "{\"ph\":\"" : ",\n{\"ph\":\"");
    first_event_ = false;
    out_.Append(ph);
    out_.Append("\",\"name\":");
    AppendJsonString(out_, name);
    out_.Append(",\"pid\":");
    AppendUint(out_, pid_);
    out_.Append(",\"tid\":");
    AppendUint(out_, tid);
  }

  void Slice(uint64_t tid, std::string_view cat, std::string_view name, uint64_t start,
             uint64_t end) {
    BeginEvent("X", name, tid);
    out_.Append(",\"cat\":\"");
    out_.Append(cat);
    out_.Append("\",\"ts\":");
    AppendMicros(out_, Rel(start));
    out_.Append(",\"dur\":");
    AppendMicros(out_, end > start ? static_cast<int64_t>(end - start) : 0);
    ++stats_.events_written;
  }

  void Instant(uint64_t tid, std::string_view cat, std::string_view name, uint64_t ts,
               char scope) {
    BeginEvent("i", name, tid);
    out_.Append(",\"cat\":\"");
    out_.Append(cat);
    out_.Append("\",\"s\":\"");
    out_.Append(scope);
    out_.Append("\",\"ts\":");
    AppendMicros(out_, Rel(ts));
    ++stats_.events_written;
  }

  void NvtxArgs(uint32_t domain_id, PayloadKind payload_kind, int64_t payload_int,
                double payload_double, uint32_t color) {
    out_.Append(",\"args\":{\"domain\":");
    AppendJsonString(out_, domain_id ? reader_.strings().Get(domain_id) : "default");
    if (payload_kind == PayloadKind::kInt64 || payload_kind == PayloadKind::kUint64) {
      out_.Append(",\"payload\":");
      if (payload_kind == PayloadKind::kUint64) {
        AppendUint(out_, static_cast<uint64_t>(payload_int));
      } else {
        AppendInt(out_, payload_int);
      }
    } else if (payload_kind == PayloadKind::kDouble) {
      out_.Append(",\"payload\":");
      AppendDouble(out_, payload_double);
    }
    if (color != 0) {
      char hex[10];
      std::snprintf(hex, sizeof(hex), "#%06x", color & 0xffffff);
      out_.Append(",\"color\":\"");
      out_.Append(hex);
      out_.Append('"');
    }
    out_.Append('}');
  }

  uint64_t Track(const TrackKey& key) {
    bool is_new = false;
    const TrackInfo& t = tracks_.Get(key, &is_new);
    if (is_new) {
      BeginEvent("M", "thread_name", t.tid);
      out_.Append(",\"args\":{\"name\":");
      AppendJsonString(out_, t.name);
      out_.Append("}}");
      BeginEvent("M", "thread_sort_index", t.tid);
      out_.Append(",\"args\":{\"sort_index\":");
      AppendUint(out_, t.sort_index);
      out_.Append("}}");
    }
    return t.tid;
  }

  // Demangled kernel names, cached per string id (bounded by the string table).
  const std::string& KernelName(uint32_t id, std::string_view raw) {
    auto it = kernel_names_.find(id);
    if (it == kernel_names_.end()) it = kernel_names_.emplace(id, Demangle(raw)).first;
    return it->second;
  }

  void GpuFlow(uint32_t correlation, uint64_t tid, uint64_t start) {
    if (correlation == 0) return;
    flows_.AddGpuWork(correlation, FlowEndpoint{tid, static_cast<int64_t>(start)},
                      &flow_buffer_);
  }

  trace::TraceReader& reader_;
  std::unordered_map<uint32_t, std::string> stack_args_;
  OutputFile& out_;
  const TraceHeaderData& header_;
  TrackRegistry tracks_;
  FlowMatcher flows_;
  std::vector<std::pair<FlowEndpoint, FlowEndpoint>> flow_buffer_;
  uint32_t pid_;
  int64_t base_ns_ = 0;
  bool have_base_ = false;
  bool first_event_ = true;
  uint64_t flow_id_ = 0;
  uint64_t async_id_ = 0;
  std::unordered_map<uint32_t, std::string> kernel_names_;
  std::map<uint32_t, trace::MemoryTracker> memory_;  // by device id
  std::set<uint32_t> memory_emitted_;
  // Replayed kernels (metrics traces only track launches for them).
  bool replay_on_ = !header_.metric_set.empty();
  ReplayPlacement replay_{1u << 16};
  ExportStats stats_;
};

}  // namespace

absl::StatusOr<ExportStats> ExportChromeTrace(trace::TraceReader& reader, OutputFile& out,
                                              const ExportOptions& options) {
  ChromeEmitter emitter(reader, out, options);
  emitter.Begin();
  while (true) {
    absl::StatusOr<bool> more = reader.NextChunk(emitter);
    if (!more.ok()) return more.status();
    emitter.EmitReplayedKernels(/*final=*/false);
    emitter.EmitPendingFlows();
    if (options.on_chunk) options.on_chunk(reader.position());
    if (!*more) break;
  }
  emitter.EmitReplayedKernels(/*final=*/true);
  ExportStats& stats = emitter.stats();
  stats.flows_unmatched = emitter.flows().unmatched();
  stats.tracks = emitter.tracks().size();
  emitter.End(stats);
  stats.bytes_written = out.bytes_written();
  return stats;
}

}  // namespace sightline::exporter
