// lib/export/perfetto_trace.cc — see perfetto_trace.h.
#include "lib/export/perfetto_trace.h"

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/export/demangle.h"
#include "lib/export/perfetto/proto_encoder.h"
#include "lib/export/replay_placement.h"
#include "lib/export/timeline_tracks.h"
#include "lib/trace/memory_tracker.h"
#include "lib/trace/pm_quantities.h"

namespace sightline::exporter {
namespace {

// Field numbers (Perfetto's; see perfetto/perfetto_trace_subset.proto).
namespace f {
constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
// TrackEvent
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kName = 23;
constexpr uint32_t kCounterValue = 30;
constexpr uint32_t kDoubleCounterValue = 44;
constexpr uint32_t kFlowIds = 47;
constexpr uint32_t kTerminatingFlowIds = 48;
// DebugAnnotation
constexpr uint32_t kAnnNameIid = 1;
constexpr uint32_t kAnnBool = 2;
constexpr uint32_t kAnnUint = 3;
constexpr uint32_t kAnnInt = 4;
constexpr uint32_t kAnnDouble = 5;
constexpr uint32_t kAnnString = 6;
constexpr uint32_t kAnnStringIid = 17;  // DebugAnnotation.string_value_iid
// InternedData
constexpr uint32_t kEventCategories = 1;
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kDebugAnnotationNames = 3;
constexpr uint32_t kDebugAnnotationStringValues = 29;  // InternedString {iid = 1, str = 2}
constexpr uint32_t kInternedStr = 2;
constexpr uint32_t kIid = 1;       // EventName / EventCategory / DebugAnnotationName
constexpr uint32_t kIidName = 2;
// TrackDescriptor
constexpr uint32_t kUuid = 1;
constexpr uint32_t kTrackName = 2;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kThread = 4;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kCounter = 8;
// Process/ThreadDescriptor
constexpr uint32_t kPid = 1;
constexpr uint32_t kCmdline = 2;
constexpr uint32_t kProcessName = 6;
constexpr uint32_t kTid = 2;
constexpr uint32_t kThreadName = 5;
}  // namespace f

constexpr uint32_t kSeqIncrementalStateCleared = 1;
constexpr uint32_t kSeqNeedsIncrementalState = 2;
constexpr uint32_t kSequenceId = 1;
constexpr uint64_t kTypeSliceBegin = 1, kTypeSliceEnd = 2, kTypeInstant = 3, kTypeCounter = 4;
constexpr uint64_t kComposedIidBase = uint64_t{1} << 32;

// Interned categories (iid = index + 1).
enum Category : uint32_t {
  kCatKernel = 1, kCatMemcpy, kCatMemset, kCatSync, kCatRuntime, kCatDriver, kCatNvtx,
  kCatNccl, kCatMetrics, kCatCapture, kCatOverhead, kCatStep, kCatCount
};
const char* const kCategoryNames[] = {"",     "kernel",  "memcpy",   "memset", "sync",
                                      "cuda_runtime", "cuda_driver", "nvtx", "nccl",
                                      "metrics", "capture", "overhead", "step"};

// Interned debug-annotation names (iid = enum value); metric names are
// interned as kComposedIidBase + string id.
enum ArgName : uint32_t {
  kArgCorrelation = 1, kArgDevice, kArgStream, kArgGrid, kArgBlock, kArgRegisters,
  kArgStaticShared, kArgDynamicShared, kArgBytes, kArgGbps, kArgAsync, kArgValue, kArgDomain,
  kArgPayload, kArgCount, kArgRank, kArgNranks, kArgComm, kArgIndex, kArgKind, kArgStep,
  kArgReturn, kArgGraph, kArgReplayed, kArgPythonStack, kArgStack, kArgPeer, kArgUntraced,
  kArgNameCount
};
const char* const kArgNames[] = {
    "", "correlation", "device", "stream", "grid", "block", "registers per thread",
    "shared memory (static)", "shared memory (dynamic)", "bytes", "GB/s", "async", "value",
    "domain", "payload", "count", "rank", "nranks", "comm", "index", "kind", "step",
    "return", "graph", "replayed", "python_stack", "stack", "peer", "untraced"};

class PerfettoEmitter : public trace::EventVisitor {
 public:
  PerfettoEmitter(trace::TraceReader& reader, OutputFile& out)
      : reader_(reader), out_(out), header_(reader.header()), tracks_(header_),
        pid_(header_.process.pid), enc_(&packet_) {
    process_uuid_ = (uint64_t{pid_} << 32) | 0xffffffffu;
  }

  void Begin() {
    StartPacket(0, kSeqIncrementalStateCleared);
    size_t td = enc_.BeginNested(f::kTrackDescriptor);
    enc_.Varint(f::kUuid, process_uuid_);
    size_t pd = enc_.BeginNested(f::kProcess);
    enc_.Int(f::kPid, static_cast<int32_t>(pid_));
    for (const std::string& arg : header_.process.command_line) enc_.Bytes(f::kCmdline, arg);
    enc_.Bytes(f::kProcessName, ProcessLabel(header_));
    enc_.EndNested(pd);
    enc_.EndNested(td);
    FinishPacket();
  }

  ExportStats& stats() { return stats_; }
  size_t track_count() const { return tracks_.size(); }

  // Kernels replayed for metrics (no timestamps): at their launch call's
  // start for the duration the replay measured (replay_placement.h), after
  // each chunk; at the end the ones still waiting are counted as skipped.
  void EmitReplayedKernels(bool final) {
    if (!final && replay_.waiting() > replay_.capacity() / 2) replay_.ResolveByConfigMean();
    for (const KernelEvent& k : replay_.TakeReady()) EmitKernel(k, true);
    if (final) {
      replay_.ResolveByConfigMean();
      for (const KernelEvent& k : replay_.TakeReady()) EmitKernel(k, true);
      replay_.Finish();
      stats_.events_skipped += replay_.unplaced();
    }
  }

  void OnKernel(const KernelEvent& e) override {
    ++stats_.events_read;
    if (replay_.OnKernel(e)) return;
    EmitKernel(e, false);
  }

  void EmitKernel(const KernelEvent& e, bool replayed) {
    uint64_t track = Track({TrackType::kStream, e.device_id, e.stream_id});
    SliceBegin(track, e.start_ns, kCatKernel, NameIid(e.name_id, NameStyle::kKernel));
    Ann(kArgDevice, uint64_t{e.device_id});
    Ann(kArgStream, uint64_t{e.stream_id});
    Ann(kArgCorrelation, uint64_t{e.correlation_id});
    AnnStr(kArgGrid, absl::StrCat(e.grid_x, "x", e.grid_y, "x", e.grid_z));
    AnnStr(kArgBlock, absl::StrCat(e.block_x, "x", e.block_y, "x", e.block_z));
    Ann(kArgRegisters, uint64_t{e.registers_per_thread});
    Ann(kArgStaticShared, uint64_t{e.static_shared_bytes});
    Ann(kArgDynamicShared, uint64_t{e.dynamic_shared_bytes});
    if (e.graph_id) Ann(kArgGraph, e.graph_id);
    if (replayed) AnnBool(e.untraced ? kArgUntraced : kArgReplayed, true);
    TerminatingFlow(e.correlation_id);
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnMemcpy(const MemcpyEvent& e) override {
    ++stats_.events_read;
    uint64_t track = Track({TrackType::kStream, e.device_id, e.stream_id});
    SliceBegin(track, e.start_ns, kCatMemcpy, ComposedIid(MemcpyName(e)));
    Ann(kArgBytes, e.bytes);
    if (e.end_ns > e.start_ns) {
      AnnDouble(kArgGbps,
                static_cast<double>(e.bytes) / static_cast<double>(e.end_ns - e.start_ns));
    }
    AnnBool(kArgAsync, e.async);
    Ann(kArgCorrelation, uint64_t{e.correlation_id});
    TerminatingFlow(e.correlation_id);
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnMemset(const MemsetEvent& e) override {
    ++stats_.events_read;
    if (e.untraced) {  // no GPU time to draw it at (also counted in the report)
      ++stats_.events_skipped;
      return;
    }
    uint64_t track = Track({TrackType::kStream, e.device_id, e.stream_id});
    SliceBegin(track, e.start_ns, kCatMemset, ComposedIid(MemsetName(e)));
    Ann(kArgBytes, e.bytes);
    Ann(kArgValue, uint64_t{e.value});
    Ann(kArgCorrelation, uint64_t{e.correlation_id});
    TerminatingFlow(e.correlation_id);
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnSync(const SyncEvent& e) override {
    ++stats_.events_read;
    uint64_t track = Track({TrackType::kSync, e.device_id, 0});
    SliceBegin(track, e.start_ns, kCatSync, ComposedIid(std::string(SyncName(e.sync_kind))));
    if (e.stream_id != kNoStream) Ann(kArgStream, uint64_t{e.stream_id});
    Ann(kArgCorrelation, uint64_t{e.correlation_id});
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnApi(const ApiEvent& e) override {
    ++stats_.events_read;
    if (replay_on_) replay_.OnApi(e);
    uint64_t track = Track({TrackType::kThread, 0, e.thread_id});
    SliceBegin(track, e.start_ns, e.domain == ApiDomain::kDriver ? kCatDriver : kCatRuntime,
               NameIid(e.name_id, NameStyle::kApi));
    Ann(kArgCorrelation, uint64_t{e.correlation_id});
    if (e.return_value) Ann(kArgReturn, uint64_t{e.return_value});
    // Call stacks, innermost frame first, interned once per stack.
    if (e.python_stack_id != 0) AnnStack(kArgPythonStack, e.python_stack_id);
    if (e.stack_id != 0) AnnStack(kArgStack, e.stack_id);
    if (e.correlation_id && IsGpuWorkApi(reader_.strings().Get(e.name_id))) {
      enc_.Fixed64(f::kFlowIds, FlowId(e.correlation_id));
    }
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnNvtxRange(const NvtxRangeEvent& e) override {
    ++stats_.events_read;
    uint64_t track;
    if (e.push_pop) {
      track = Track({TrackType::kNvtx, 0, e.thread_id});
    } else {
      track = Track({TrackType::kNvtxLane, 0, nvtx_lanes_.Assign(e.start_ns, e.end_ns)});
    }
    SliceBegin(track, e.start_ns, kCatNvtx, NameIid(e.name_id));
    NvtxAnns(e.domain_id, e.payload_kind, e.payload_int, e.payload_double);
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnNvtxMarker(const NvtxMarkerEvent& e) override {
    ++stats_.events_read;
    uint64_t track = Track({TrackType::kNvtx, 0, e.thread_id});
    StartEvent(track, e.timestamp_ns, kTypeInstant, kCatNvtx);
    enc_.Varint(f::kNameIid, NameIid(e.name_id));
    NvtxAnns(e.domain_id, e.payload_kind, e.payload_int, e.payload_double);
    FinishSliceBegin();
  }

  void OnNccl(const NcclEvent& e) override {
    ++stats_.events_read;
    uint64_t track = Track({TrackType::kNccl, e.device_id, e.source == NcclSource::kGpuKernel ? 1u : 2u});
    uint64_t iid = e.name_id ? NameIid(e.name_id) : ComposedIid(NcclName(e, ""));
    SliceBegin(track, e.start_ns, kCatNccl, iid);
    Ann(kArgBytes, e.bytes);
    Ann(kArgCount, e.count);
    AnnInt(kArgRank, e.rank);
    AnnInt(kArgNranks, e.nranks);
    Ann(kArgComm, e.comm_id);
    if (e.peer >= 0) AnnInt(kArgPeer, e.peer);
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnMetricRange(const MetricRangeEvent& e) override {
    ++stats_.events_read;
    for (const MetricValue& v : e.values) {
      if (reader_.strings().Get(v.name_id) == "gpu__time_duration.sum") {
        replay_.OnMeasuredDuration(e.correlation_id, v.value);
      }
    }
    if (e.start_ns == 0 || e.end_ns < e.start_ns) {
      ++stats_.events_skipped;
      return;
    }
    uint64_t track = Track({TrackType::kMetrics, e.device_id, 0});
    uint64_t iid = e.range_name_id ? NameIid(e.range_name_id) : ComposedIid("metric range");
    SliceBegin(track, e.start_ns, kCatMetrics, iid);
    Ann(kArgCorrelation, uint64_t{e.correlation_id});
    for (const MetricValue& v : e.values) {
      size_t a = enc_.BeginNested(f::kDebugAnnotations);
      enc_.Varint(f::kAnnNameIid, MetricNameIid(v.name_id));
      enc_.Double(f::kAnnDouble, v.value);
      enc_.EndNested(a);
    }
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnCaptureWindow(const CaptureWindowEvent& e) override {
    ++stats_.events_read;
    uint64_t track = Track({TrackType::kProfiler, 0, 0});
    uint64_t iid = e.label_id ? NameIid(e.label_id) : ComposedIid("capture window");
    SliceBegin(track, e.start_ns, kCatCapture, iid);
    Ann(kArgIndex, uint64_t{e.index});
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnOverhead(const OverheadEvent& e) override {
    ++stats_.events_read;
    uint64_t track = Track({TrackType::kProfiler, 0, 0});
    SliceBegin(track, e.start_ns, kCatOverhead, ComposedIid("profiler overhead"));
    Ann(kArgKind, uint64_t{e.overhead_kind});
    FinishSliceBegin();
    SliceEnd(track, e.end_ns);
  }

  void OnStep(const StepEvent& e) override {
    ++stats_.events_read;
    uint64_t track = Track({TrackType::kProfiler, 0, 0});
    StartEvent(track, e.timestamp_ns, kTypeInstant, kCatStep);
    std::string_view label = reader_.strings().Get(e.name_id);
    enc_.Bytes(f::kName, absl::StrCat(label.empty() ? std::string("step") : std::string(label), " ", e.step));
    Ann(kArgStep, e.step);
    FinishSliceBegin();
  }

  // Device memory in use (-t cuda-memory): one counter track per device,
  // a value at each change (lib/trace/memory_tracker.h).
  void OnMemory(const MemoryEvent& e) override {
    ++stats_.events_read;
    auto [it, first] = memory_.try_emplace(e.device_id);
    trace::MemoryTracker& m = it->second;
    uint64_t before = m.device_bytes();
    m.Apply(e);
    if (!first && m.device_bytes() == before) return;
    const uint64_t uuid = (uint64_t{pid_} << 32) | (0xfff00000u + (e.device_id & 0xfffffu));
    if (first) CounterTrack(uuid, absl::StrCat("GPU memory (device ", e.device_id, "), bytes"));
    CounterValue(uuid, e.timestamp_ns, static_cast<int64_t>(m.device_bytes()));
  }

  // PM samples (--gpu-metrics): one counter track per sampled metric and
  // device, each sample's value from its start.
  void OnGpuMetrics(const GpuMetricSamplesEvent& e) override {
    ++stats_.events_read;
    const size_t metrics = e.metric_name_ids.size();
    for (size_t j = 0; j < metrics; ++j) {
      const PmCounter c = PmCounterFor(reader_.strings().Get(e.metric_name_ids[j]), e.device_id);
      auto [it, first] = gpu_metric_tracks_.try_emplace(c.name, 0);
      if (first) {
        it->second = (uint64_t{pid_} << 32) | (0xffe00000u + gpu_metric_tracks_.size());
        CounterTrack(it->second, c.name);
      }
      for (size_t i = 0; i < e.num_samples(); ++i) {
        const float v = e.value(i, j);
        if (std::isnan(v)) continue;
        StartPacket(e.sample_start_ns[i], kSeqNeedsIncrementalState);
        size_t te = enc_.BeginNested(f::kTrackEvent);
        enc_.Varint(f::kType, kTypeCounter);
        enc_.Varint(f::kTrackUuid, it->second);
        enc_.Double(f::kDoubleCounterValue, v * c.scale);
        enc_.EndNested(te);
        FinishPacket();
        ++stats_.events_written;
      }
    }
  }

  void OnLoss(const LossReport& e) override {
    ++stats_.events_read;
    if (!loss_track_emitted_) {
      loss_track_emitted_ = true;
      CounterTrack(LossTrackUuid(), "lost records");
    }
    CounterValue(LossTrackUuid(), e.timestamp_ns, static_cast<int64_t>(e.total()));
  }

 private:
  // A counter track under the process (its descriptor, once).
  void CounterTrack(uint64_t uuid, std::string_view name) {
    StartPacket(0, 0);
    size_t td = enc_.BeginNested(f::kTrackDescriptor);
    enc_.Varint(f::kUuid, uuid);
    enc_.Varint(f::kParentUuid, process_uuid_);
    enc_.Bytes(f::kTrackName, name);
    size_t cd = enc_.BeginNested(f::kCounter);
    enc_.EndNested(cd);
    enc_.EndNested(td);
    FinishPacket();
  }
  // One value of a counter track.
  void CounterValue(uint64_t uuid, uint64_t timestamp_ns, int64_t value) {
    StartPacket(timestamp_ns, kSeqNeedsIncrementalState);
    size_t te = enc_.BeginNested(f::kTrackEvent);
    enc_.Varint(f::kType, kTypeCounter);
    enc_.Varint(f::kTrackUuid, uuid);
    enc_.Int(f::kCounterValue, value);
    enc_.EndNested(te);
    FinishPacket();
    ++stats_.events_written;
  }

  uint64_t LossTrackUuid() const { return (uint64_t{pid_} << 32) | 0xfffffffeu; }
  uint64_t FlowId(uint32_t correlation) const {
    return (uint64_t{pid_} << 32) | correlation;
  }

  void StartPacket(uint64_t ts, uint32_t flags) {
    packet_.clear();
    if (ts) enc_.Varint(f::kTimestamp, ts);
    enc_.Varint(f::kSequenceId, kSequenceId);
    if (flags) enc_.Varint(f::kSequenceFlags, flags);
  }

  void FinishPacket() {
    char hdr[16];
    size_t n = 0;
    hdr[n++] = static_cast<char>((f::kTracePacket << 3) | proto::kLengthDelimited);
    uint64_t len = packet_.size();
    while (len >= 0x80) {
      hdr[n++] = static_cast<char>(len | 0x80);
      len >>= 7;
    }
    hdr[n++] = static_cast<char>(len);
    out_.Append(std::string_view(hdr, n));
    out_.Append(packet_);
  }

  // Starts a packet with a TrackEvent of `type`; the caller adds fields, then
  // calls FinishSliceBegin().
  void StartEvent(uint64_t track, uint64_t ts, uint64_t type, Category cat) {
    StartPacket(ts, kSeqNeedsIncrementalState);
    track_event_token_ = enc_.BeginNested(f::kTrackEvent);
    enc_.Varint(f::kType, type);
    enc_.Varint(f::kTrackUuid, track);
    enc_.Varint(f::kCategoryIids, CategoryIid(cat));
  }
  void SliceBegin(uint64_t track, uint64_t ts, Category cat, uint64_t name_iid) {
    StartEvent(track, ts, kTypeSliceBegin, cat);
    enc_.Varint(f::kNameIid, name_iid);
  }
  // Closes the TrackEvent, appends the interned data it introduced, writes.
  void FinishSliceBegin() {
    enc_.EndNested(track_event_token_);
    if (!new_names_.empty() || !new_categories_.empty() || !new_arg_names_.empty() ||
        !new_stack_strings_.empty()) {
      size_t id = enc_.BeginNested(f::kInternedData);
      for (uint64_t iid : new_categories_) {
        size_t m = enc_.BeginNested(f::kEventCategories);
        enc_.Varint(f::kIid, iid);
        enc_.Bytes(f::kIidName, kCategoryNames[iid]);
        enc_.EndNested(m);
      }
      for (const auto& [iid, name] : new_names_) {
        size_t m = enc_.BeginNested(f::kEventNames);
        enc_.Varint(f::kIid, iid);
        enc_.Bytes(f::kIidName, name);
        enc_.EndNested(m);
      }
      for (const auto& [iid, name] : new_arg_names_) {
        size_t m = enc_.BeginNested(f::kDebugAnnotationNames);
        enc_.Varint(f::kIid, iid);
        enc_.Bytes(f::kIidName, name);
        enc_.EndNested(m);
      }
      for (const auto& [iid, text] : new_stack_strings_) {
        size_t m = enc_.BeginNested(f::kDebugAnnotationStringValues);
        enc_.Varint(f::kIid, iid);
        enc_.Bytes(f::kInternedStr, text);
        enc_.EndNested(m);
      }
      enc_.EndNested(id);
      new_names_.clear();
      new_categories_.clear();
      new_arg_names_.clear();
      new_stack_strings_.clear();
    }
    FinishPacket();
    ++stats_.events_written;
  }
  void SliceEnd(uint64_t track, uint64_t ts) {
    StartPacket(ts, kSeqNeedsIncrementalState);
    size_t te = enc_.BeginNested(f::kTrackEvent);
    enc_.Varint(f::kType, kTypeSliceEnd);
    enc_.Varint(f::kTrackUuid, track);
    enc_.EndNested(te);
    FinishPacket();
  }

  void TerminatingFlow(uint32_t correlation) {
    if (correlation == 0) return;
    enc_.Fixed64(f::kTerminatingFlowIds, FlowId(correlation));
    ++stats_.flows;
  }

  void Ann(ArgName name, uint64_t v) {
    size_t a = enc_.BeginNested(f::kDebugAnnotations);
    enc_.Varint(f::kAnnNameIid, ArgIid(name));
    enc_.Varint(f::kAnnUint, v);
    enc_.EndNested(a);
  }
  void AnnInt(ArgName name, int64_t v) {
    size_t a = enc_.BeginNested(f::kDebugAnnotations);
    enc_.Varint(f::kAnnNameIid, ArgIid(name));
    enc_.Int(f::kAnnInt, v);
    enc_.EndNested(a);
  }
  void AnnDouble(ArgName name, double v) {
    size_t a = enc_.BeginNested(f::kDebugAnnotations);
    enc_.Varint(f::kAnnNameIid, ArgIid(name));
    enc_.Double(f::kAnnDouble, v);
    enc_.EndNested(a);
  }
  void AnnBool(ArgName name, bool v) {
    size_t a = enc_.BeginNested(f::kDebugAnnotations);
    enc_.Varint(f::kAnnNameIid, ArgIid(name));
    enc_.Bool(f::kAnnBool, v);
    enc_.EndNested(a);
  }
  void AnnStr(ArgName name, std::string_view v) {
    size_t a = enc_.BeginNested(f::kDebugAnnotations);
    enc_.Varint(f::kAnnNameIid, ArgIid(name));
    enc_.Bytes(f::kAnnString, v);
    enc_.EndNested(a);
  }
  // A call stack as an interned string value (the same stack on thousands of
  // calls is written once); nothing when the trace lacks it.
  void AnnStack(ArgName name, uint32_t stack_id) {
    auto it = stack_iids_.find(stack_id);
    if (it == stack_iids_.end()) {
      std::string text = StackLine(reader_, stack_id);
      const uint64_t iid = text.empty() ? 0 : stack_iids_.size() + 1;
      it = stack_iids_.emplace(stack_id, iid).first;
      if (iid != 0) new_stack_strings_.emplace_back(iid, std::move(text));
    }
    if (it->second == 0) return;
    size_t a = enc_.BeginNested(f::kDebugAnnotations);
    enc_.Varint(f::kAnnNameIid, ArgIid(name));
    enc_.Varint(f::kAnnStringIid, it->second);
    enc_.EndNested(a);
  }
  void NvtxAnns(uint32_t domain_id, PayloadKind kind, int64_t pint, double pdouble) {
    AnnStr(kArgDomain, domain_id ? reader_.strings().Get(domain_id) : "default");
    if (kind == PayloadKind::kInt64) AnnInt(kArgPayload, pint);
    if (kind == PayloadKind::kUint64) Ann(kArgPayload, static_cast<uint64_t>(pint));
    if (kind == PayloadKind::kDouble) AnnDouble(kArgPayload, pdouble);
  }

  // How an interned string is shown: as is, demangled (kernels) or without
  // CUPTI's version suffix (API calls). The first use of an id decides.
  enum class NameStyle { kPlain, kKernel, kApi };
  uint64_t NameIid(uint32_t string_id, NameStyle style = NameStyle::kPlain) {
    if (string_id == 0) return ComposedIid("(unnamed)");
    // Dense ids (the normal case) in a bit vector; a hostile sparse id costs
    // one hash-set entry, never a huge allocation.
    bool first_use;
    if (string_id < (1u << 22)) {
      if (string_id >= names_emitted_.size()) names_emitted_.resize(string_id + 1024, false);
      first_use = !names_emitted_[string_id];
      names_emitted_[string_id] = true;
    } else {
      first_use = sparse_names_emitted_.insert(string_id).second;
    }
    if (first_use) {
      std::string_view raw = reader_.strings().Get(string_id);
      new_names_.emplace_back(string_id, style == NameStyle::kKernel ? Demangle(raw)
                                         : style == NameStyle::kApi  ? std::string(ApiDisplayName(raw))
                                                                     : std::string(raw));
    }
    return string_id;
  }
  uint64_t ComposedIid(const std::string& name) {
    auto [it, inserted] = composed_.try_emplace(name, kComposedIidBase + composed_.size());
    if (inserted) new_names_.emplace_back(it->second, name);
    return it->second;
  }
  uint64_t CategoryIid(Category c) {
    if (!(categories_emitted_ & (1u << c))) {
      categories_emitted_ |= 1u << c;
      new_categories_.push_back(c);
    }
    return c;
  }
  uint64_t ArgIid(ArgName a) {
    if (!(args_emitted_ & (uint64_t{1} << a))) {
      args_emitted_ |= uint64_t{1} << a;
      new_arg_names_.emplace_back(a, kArgNames[a]);
    }
    return a;
  }
  uint64_t MetricNameIid(uint32_t string_id) {
    uint64_t iid = kComposedIidBase + string_id;
    if (metric_names_emitted_.insert(string_id).second) {
      new_arg_names_.emplace_back(iid, std::string(reader_.strings().Get(string_id)));
    }
    return iid;
  }

  // Returns the track uuid; writes its descriptor the first time.
  uint64_t Track(const TrackKey& key) {
    bool is_new = false;
    const TrackInfo& t = tracks_.Get(key, &is_new);
    uint64_t uuid = (uint64_t{pid_} << 32) ^ (t.tid & 0xffffffffu) ^
                    (t.is_real_thread ? 0 : (uint64_t{1} << 63));
    if (is_new) {
      std::string saved;
      saved.swap(packet_);  // a descriptor may be needed mid-event: keep both
      StartPacket(0, 0);
      size_t td = enc_.BeginNested(f::kTrackDescriptor);
      enc_.Varint(f::kUuid, uuid);
      if (t.is_real_thread) {
        size_t th = enc_.BeginNested(f::kThread);
        enc_.Int(f::kPid, static_cast<int32_t>(pid_));
        enc_.Int(f::kTid, static_cast<int32_t>(t.tid));
        enc_.Bytes(f::kThreadName, t.name);
        enc_.EndNested(th);
      } else {
        uint64_t parent = process_uuid_;
        if (key.type == TrackType::kNvtx) {
          bool dummy = false;
          const TrackInfo& thread = tracks_.Get({TrackType::kThread, 0, key.id}, &dummy);
          if (dummy) {
            // Thread track first seen through its NVTX child: describe it too.
            FinishPacketAndDescribeThread(thread);
          }
          parent = (uint64_t{pid_} << 32) ^ (thread.tid & 0xffffffffu);
        }
        enc_.Varint(f::kParentUuid, parent);
        enc_.Bytes(f::kTrackName, t.name);
      }
      enc_.EndNested(td);
      FinishPacket();
      saved.swap(packet_);
    }
    return uuid;
  }

  // Called while a descriptor packet is half written: emit the thread's own
  // descriptor in a separate packet without disturbing the one in progress.
  void FinishPacketAndDescribeThread(const TrackInfo& thread) {
    std::string in_progress;
    in_progress.swap(packet_);
    StartPacket(0, 0);
    size_t td = enc_.BeginNested(f::kTrackDescriptor);
    enc_.Varint(f::kUuid, (uint64_t{pid_} << 32) ^ (thread.tid & 0xffffffffu));
    size_t th = enc_.BeginNested(f::kThread);
    enc_.Int(f::kPid, static_cast<int32_t>(pid_));
    enc_.Int(f::kTid, static_cast<int32_t>(thread.tid));
    enc_.Bytes(f::kThreadName, thread.name);
    enc_.EndNested(th);
    enc_.EndNested(td);
    FinishPacket();
    in_progress.swap(packet_);
  }

  trace::TraceReader& reader_;
  OutputFile& out_;
  const TraceHeaderData& header_;
  TrackRegistry tracks_;
  uint32_t pid_;
  uint64_t process_uuid_ = 0;
  std::string packet_;
  proto::Encoder enc_;
  size_t track_event_token_ = 0;
  std::vector<bool> names_emitted_;
  std::unordered_map<std::string, uint64_t> composed_;
  std::unordered_set<uint32_t> sparse_names_emitted_;
  std::unordered_set<uint32_t> metric_names_emitted_;
  uint32_t categories_emitted_ = 0;
  uint64_t args_emitted_ = 0;
  std::vector<std::pair<uint64_t, std::string>> new_names_;
  std::vector<uint64_t> new_categories_;
  std::vector<std::pair<uint64_t, std::string>> new_arg_names_;
  LaneAllocator nvtx_lanes_;
  bool loss_track_emitted_ = false;
  std::map<uint32_t, trace::MemoryTracker> memory_;  // by device id
  std::map<std::string, uint64_t> gpu_metric_tracks_;  // counter name → track uuid
  std::unordered_map<uint32_t, uint64_t> stack_iids_;  // stack id → interned string iid (0 = none)
  std::vector<std::pair<uint64_t, std::string>> new_stack_strings_;
  ExportStats stats_;
  bool replay_on_ = !header_.metric_set.empty();  // track launches for replayed kernels
  ReplayPlacement replay_{1u << 16};
};

}  // namespace

absl::StatusOr<ExportStats> ExportPerfettoTrace(trace::TraceReader& reader, OutputFile& out,
                                                const ExportOptions& options) {
  PerfettoEmitter emitter(reader, out);
  emitter.Begin();
  while (true) {
    absl::StatusOr<bool> more = reader.NextChunk(emitter);
    if (!more.ok()) return more.status();
    emitter.EmitReplayedKernels(/*final=*/false);
    if (options.on_chunk) options.on_chunk(reader.position());
    if (!*more) break;
  }
  emitter.EmitReplayedKernels(/*final=*/true);
  ExportStats& stats = emitter.stats();
  stats.tracks = emitter.track_count();
  stats.bytes_written = out.bytes_written();
  return stats;
}

}  // namespace sightline::exporter
