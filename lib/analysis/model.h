// lib/analysis/model.h — the timeline model: every trace (rank) merged onto one
// clock, in compact, sorted, index-linked tables that the summary and the
// rules query.
//
// Built in one streaming pass: ModelBuilder is a trace::EventVisitor fed by one
// TraceReader after another (or by in-memory events for synthetic tests), then
// Finish() sorts, links and aggregates. Memory is proportional to the events
// kept: 40 bytes per GPU activity or API call (+4 for the per-stream index);
// launch configurations, memcpy details and names are stored once and
// referenced by index. The pass appends into block storage (no vector
// doubling) and Finish moves it into exactly sized tables.
//
// Clock: every timestamp is moved onto CLOCK_REALTIME nanoseconds with the
// trace header's ClockMapping (offset = realtime_ns - trace_ns; 0 when the
// header has none), so ranks recorded by different processes line up.
//
// Validity: an interval event with a zero start, a zero end or end < start is
// not put on the timeline; it is counted in TraceSource::invalid_by_kind.
// Kernels with `replayed=true` (durations distorted by kernel replay) are kept
// in the per-name aggregate (launch configuration, metrics) but excluded from
// all timeline timing and counted in TraceSource::replayed_kernels; so are
// kernels with `untraced=true` (measured in place while kernels were not
// traced), counted in TraceSource::untraced_kernels.
//
// Ids: `name` fields are indices into TimelineModel::strings (0 = ""),
// `stream` into streams, `device` into devices, `thread` into threads,
// `launch_api` into api_calls. kNone marks a missing link.
#ifndef SIGHTLINE_LIB_ANALYSIS_MODEL_H_
#define SIGHTLINE_LIB_ANALYSIS_MODEL_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/trace/reader.h"
#include "lib/trace/events.h"
#include "lib/trace/trace_header.h"

namespace sightline::analysis {

inline constexpr uint32_t kNone = 0xffffffffu;

enum class ActivityKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2, kNccl = 3 };
const char* ActivityKindName(ActivityKind kind);  // "kernel", "memcpy", ...

// HTA's kernel classes: communication = NCCL kernels (name contains "nccl",
// case-insensitive) and NCCL GPU events; memory = memcpy/memset; compute = rest.
enum class ActivityClass : uint8_t { kCompute = 0, kCommunication = 1, kMemory = 2 };
const char* ActivityClassName(ActivityClass c);  // "compute", "communication", "memory"

// True for names HTA classifies as communication kernels.
bool IsCommunicationKernelName(std::string_view name);

// One input trace (one process / rank).
struct TraceSource {
  std::string name;  // path or buffer name
  TraceHeaderData header;
  int64_t clock_offset_ns = 0;  // added to every timestamp of this trace
  bool has_clock_mapping = false;
  int32_t rank = -1;            // header rank, or the trace's position when absent
  // From the reader (complete, reason, losses, counts...). Empty for in-memory.
  trace::Integrity integrity;
  std::array<uint64_t, kNumEventKinds> events_by_kind{};  // events seen
  std::array<uint64_t, kNumEventKinds> invalid_by_kind{};  // zero / inverted times
  uint64_t replayed_kernels = 0;
  // Kernels measured in place for metrics while kernels were not traced
  // (KernelEvent::untraced): timed like replayed ones, never by the timeline.
  uint64_t untraced_kernels = 0;
  // Memsets CUPTI gave without timestamps while metrics were collected
  // (MemsetEvent::untraced): counted, outside all timing.
  uint64_t untraced_memsets = 0;
  // Metric sets collected over several launches without replay (spread or
  // sequence replay): kernel durations are true, but the launch calls that
  // started/stopped a pass hold the profiler's time.
  uint64_t metric_sets_without_replay = 0;
  uint64_t profiler_kernels = 0;  // CUPTI's "WaitNs" kernels of a metrics trace, left out
  LossReport losses;  // last LossReport event (the reader's footer wins if present)
  uint64_t invalid_total() const;
  uint64_t lost_records() const;  // losses.total() + integrity.events_missing
};

// One GPU of one trace. Ranks on different processes are different devices.
struct DeviceTimelineInfo {
  uint32_t trace = 0;
  uint32_t device_id = 0;  // CUDA ordinal as recorded
  DeviceInfo info;         // from the header; info.id == device_id, name may be ""
  bool has_info = false;
  // [activity_begin, activity_end) in TimelineModel::activities (device order).
  uint32_t activity_begin = 0, activity_end = 0;
  std::vector<uint32_t> streams;  // indices into TimelineModel::streams
};

struct StreamInfo {
  uint32_t trace = 0;
  uint32_t device = 0;  // index into devices
  uint32_t stream_id = 0;
  // Activities of this stream, sorted by start (indices into activities).
  std::vector<uint32_t> activities;
};

struct ThreadInfo {
  uint32_t trace = 0;
  uint32_t thread_id = 0;
  // [api_begin, api_end) in api_calls (sorted by start within the thread).
  uint32_t api_begin = 0, api_end = 0;
  // [nvtx_begin, nvtx_end) in nvtx_ranges (sorted by start, outer first).
  uint32_t nvtx_begin = 0, nvtx_end = 0;
};

// One kernel / memcpy / memset / NCCL operation on a GPU, on the merged clock.
// 40 bytes; the device is streams[stream].device (TimelineModel::DeviceOf).
struct GpuActivity {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t stream = 0;          // index into streams
  uint32_t correlation_id = 0;
  uint32_t name = 0;            // kernel name; "[CUDA memcpy HtoD]" style for copies
  // kernel: index into launch_configs; memcpy/memset: into copies; nccl: into collectives.
  uint32_t detail = kNone;
  uint32_t launch_api = kNone;  // launching API call (by correlation id), if any
  ActivityKind kind = ActivityKind::kKernel;
  ActivityClass klass = ActivityClass::kCompute;
  uint16_t trace = 0;
  uint64_t duration() const { return end_ns - start_ns; }
};

struct LaunchConfig {
  uint32_t grid_x = 0, grid_y = 1, grid_z = 1;
  uint32_t block_x = 0, block_y = 1, block_z = 1;
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t local_bytes_per_thread = 0;
  uint32_t shared_memory_config_bytes = 0;
  uint32_t launch_type = 0;
  uint32_t cluster_x = 0, cluster_y = 0, cluster_z = 0;
  uint32_t device = 0;  // index into devices
  uint64_t threads_per_block() const { return uint64_t{block_x} * block_y * block_z; }
  uint64_t blocks() const { return uint64_t{grid_x} * grid_y * grid_z; }
  bool operator==(const LaunchConfig& o) const;
};

// Memcpy / memset details (memset: copy_kind kUnknown, dst_kind = memory kind).
struct CopyDetail {
  uint64_t bytes = 0;
  CopyKind copy_kind = CopyKind::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown;
  MemoryKind dst_kind = MemoryKind::kUnknown;
  bool async = false;
};

struct Collective {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;
  uint64_t comm_id = 0;
  NcclOp op = NcclOp::kUnknown;
  int32_t rank = -1, nranks = 0;
  int32_t peer = -1;        // Send/Recv: the peer's rank in the communicator (-1 unknown)
  uint32_t name = 0;
  NcclSource source = NcclSource::kUnknown;
  uint32_t device = kNone;
  uint32_t thread = kNone;  // host NVTX calls: the calling thread (index into threads)
  uint16_t trace = 0;
};

// API call flags (ApiCall::flags), from the API name (see api_names.h).
enum ApiFlag : uint8_t {
  kApiLaunch = 1,          // kernel / graph launch
  kApiSync = 2,            // blocks the host until GPU work finishes
  kApiMemcpySync = 4,      // synchronous memcpy / memset
  kApiMemcpy = 8,          // any memcpy
  kApiGraphLaunch = 16,
  kApiAlloc = 32,          // allocates or releases memory (not stream-ordered)
};

struct ApiCall {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t name = 0;
  uint32_t correlation_id = 0;
  uint32_t thread = 0;     // index into threads
  uint32_t stack_id = 0;   // per-trace CallStack id (resolve with TimelineModel::Stack)
  uint32_t python_stack_id = 0;  // per-trace Python CallStack id (0 = none)
  uint16_t trace = 0;
  uint8_t flags = 0;
  ApiDomain domain = ApiDomain::kUnknown;
  uint64_t duration() const { return end_ns - start_ns; }
};

// One allocation, release or stream-ordered pool operation (MemoryEvent).
struct MemoryOp {
  uint64_t timestamp_ns = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t pool_address = 0;  // stream-ordered pool (0 = none)
  uint64_t pool_size = 0;     // the pool's size as the record reports it
  uint32_t device = kNone;    // index into devices
  uint32_t correlation_id = 0;
  uint32_t api = kNone;       // index into api_calls: the call that made it
  uint32_t source = 0;        // model string: the module that requested it (0 = unknown)
  uint16_t trace = 0;
  MemoryOperation op = MemoryOperation::kUnknown;
  MemoryKind kind = MemoryKind::kUnknown;
  bool async = false;
};

struct NvtxRange {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t name = 0;
  uint32_t domain = 0;
  uint32_t thread = 0;  // index into threads
  uint16_t trace = 0;
  uint16_t depth = 0;   // 0 = top level on its thread (computed by Finish)
  // Its end was not recorded (open when a capture window closed): it ends at
  // the window's end here and is never a step.
  bool cut_at_window_end = false;
};

struct HostSync {  // CUPTI synchronization record: the host blocked on the GPU
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device = kNone;
  uint32_t stream_id = kNoStream;
  uint32_t correlation_id = 0;
  SyncKind kind = SyncKind::kUnknown;
  uint16_t trace = 0;
};

// What PyTorch's caching allocator held after an optimizer step: an NVTX
// marker "sightline.torch_memory device=D allocated=A max_allocated=M
// reserved=R" written by the --pytorch start-up hook (python/sitecustomize.py).
struct TorchMemorySample {
  uint64_t timestamp_ns = 0;
  uint64_t allocated = 0, max_allocated = 0, reserved = 0;
  uint32_t device = kNone;  // index into devices
  uint16_t trace = 0;
};

struct StepMarker {
  uint64_t timestamp_ns = 0;
  uint64_t step = 0;
  uint32_t name = 0;
  uint32_t thread = 0;  // index into threads
  uint16_t trace = 0;
};

struct CaptureWindow {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t index = 0;
  uint32_t label = 0;
  CaptureTrigger trigger = CaptureTrigger::kWholeRun;
  uint16_t trace = 0;
};

// CUPTI overhead kinds (CUpti_ActivityOverheadKind) that are the profiler's
// own cost: buffer flush, instrumentation, CUPTI resources, activity buffer
// requests, UVM activity set-up. Driver compilation, lazy function loading,
// runtime-triggered module loading and a full command buffer happen without
// a profiler too: they are the application's.
inline bool IsProfilerOverheadKind(uint32_t kind) {
  switch (kind) {
    case 1u << 16: case 2u << 16: case 3u << 16: case 7u << 16: case 8u << 16:
      return true;
    default:
      return false;
  }
}

struct OverheadSpan {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t kind = 0;
  uint32_t device = kNone;  // index into devices when device-side
  uint32_t thread = kNone;  // index into threads when host-side with a thread
  uint16_t trace = 0;
};

// Metric values of one profiled range (one kernel, or one NVTX range).
struct MetricSample {
  uint16_t trace = 0;
  uint32_t device = kNone;
  uint32_t correlation_id = 0;
  uint32_t range_name = 0;
  uint32_t kernel_name = 0;  // joined by correlation id (0 = unmatched)
  uint32_t config = kNone;   // the joined kernel's launch configuration (launch_configs)
  bool in_place = false;     // the kernel ran once, as launched (sequence / spread), not replayed
  std::vector<std::pair<uint32_t, double>> values;  // (metric name, value)
};

// One metric set of an NVTX range's instances (--metrics-range nvtx:NAME,
// lib/collect/range_profiler_user.h): the values measured over `instances`
// successive instances, one pass each, from the first one's push to the last
// one's pop. No values: incomplete (the capture ended first).
struct RangeMetricSet {
  uint16_t trace = 0;
  uint32_t device = kNone;
  uint32_t name = 0;  // the range's name (string id)
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t instances = 0;
  uint32_t passes_needed = 0, passes_collected = 0;
  std::vector<std::pair<uint32_t, double>> values;  // (metric name, value)
};

struct MetricAggregate {
  std::string name;
  uint64_t samples = 0;
  double mean = 0, min = 0, max = 0;
  // Some configuration (this configuration) has in-place and kernel-
  // replayed sets and this value comes from its replayed ones (dram__*
  // metrics; at the kernel level each such value weighs as many sets as
  // its configuration's in-place ones, so `samples` counts those).
  bool kernel_replay = false;
  uint64_t replayed_sets = 0;  // of those replayed sets
};

struct LaunchConfigUse {
  LaunchConfig config;
  uint32_t config_id = kNone;  // index into launch_configs
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t replayed_count = 0;  // instances excluded from timing (kernel replay)
  uint64_t metric_samples = 0;  // metric sets measured on this configuration
  std::vector<MetricAggregate> metrics;  // of this configuration, sorted by name
};

// Per kernel name, over all traces: what the kernel-level rules need.
struct KernelAggregate {
  uint32_t name = 0;
  std::string name_text;
  ActivityClass klass = ActivityClass::kCompute;
  uint64_t count = 0;           // timed (non-replayed, valid) instances
  uint64_t replayed_count = 0;  // instances excluded from timing
  uint64_t total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0, stddev_ns = 0;  // population stddev, like nsys
  double share_pct = 0;               // of all timed kernel time in the model
  std::vector<LaunchConfigUse> configs;  // most frequent first
  std::vector<uint32_t> devices;         // indices into devices
  std::vector<MetricAggregate> metrics;  // sorted by name, over all configurations
  uint64_t metric_samples = 0;           // metric sets joined to this kernel
  // Mean of a metric over its samples, or `fallback` when never measured.
  double Metric(std::string_view metric_name, double fallback = -1) const;
  bool HasMetric(std::string_view metric_name) const;
};

// PM samples (--gpu-metrics) of one device of one trace, with one metric
// list: parallel arrays, sorted by start on the merged clock.
struct GpuMetricSeries {
  uint32_t device = 0;                // index into devices
  uint16_t trace = 0;
  uint32_t interval_ns = 0;           // asked for
  std::vector<uint32_t> metric_names;  // model string ids; columns of values
  std::vector<uint64_t> start_ns, end_ns;
  std::vector<float> values;           // row-major: sample × metric
  size_t size() const { return start_ns.size(); }
  float value(size_t sample, size_t metric) const {
    return values[sample * metric_names.size() + metric];
  }
};

struct TimelineModel {
  std::vector<TraceSource> traces;
  std::vector<std::string> strings{std::string()};  // model-global string ids
  std::vector<DeviceTimelineInfo> devices;
  std::vector<StreamInfo> streams;
  std::vector<ThreadInfo> threads;
  // Sorted by (device, start_ns, end_ns, stream); devices[d] covers a
  // contiguous range.
  std::vector<GpuActivity> activities;
  std::vector<LaunchConfig> launch_configs;  // deduplicated
  std::vector<CopyDetail> copies;
  std::vector<Collective> collectives;       // sorted by (trace, start)
  // NCCL communicator info (NcclEvent source 3: comm id → rank, nranks, from
  // NCCL's ncclCommInitRank/Destroy NVTX payloads); not collectives. The
  // builder copies rank/nranks onto collectives of the same trace and comm.
  std::vector<Collective> communicators;
  // Sorted by (thread, start), the longer first at equal starts; threads[t]
  // covers a contiguous range (the what-if replay merges threads in this order).
  std::vector<ApiCall> api_calls;
  std::vector<NvtxRange> nvtx_ranges;        // sorted by (thread, start, -end)
  std::vector<HostSync> host_syncs;          // sorted by start
  std::vector<MemoryOp> memory_ops;          // sorted by (timestamp, trace)
  std::vector<TorchMemorySample> torch_memory;  // in trace order
  std::vector<StepMarker> step_markers;      // sorted by (trace, thread, timestamp)
  std::vector<CaptureWindow> capture_windows;  // sorted by start
  std::vector<OverheadSpan> overheads;       // sorted by start
  std::vector<MetricSample> metric_samples;
  std::vector<RangeMetricSet> range_metric_sets;  // by start time
  std::vector<GpuMetricSeries> gpu_metrics;  // by (trace, device); samples by start
  // Kernels replayed for hardware metrics (CUPTI reports them without
  // timestamps) are placed at their launch call's start for the duration
  // the replay measured (gpu__time_duration.sum): on the timeline and in
  // utilization, not in the kernel table's timing. Their (trace << 32 |
  // correlation id), sorted; IsReplayed() asks.
  std::vector<uint64_t> replayed_activities;
  bool IsReplayed(const GpuActivity& a) const {
    return !replayed_activities.empty() &&
           std::binary_search(replayed_activities.begin(), replayed_activities.end(),
                              (uint64_t{a.trace} << 32) | a.correlation_id);
  }
  std::vector<KernelAggregate> kernels;      // by total_ns descending
  // Call stacks per trace (id → stack), with frames' function/module ids
  // remapped to model strings.
  std::vector<absl::flat_hash_map<uint32_t, CallStack>> stacks;

  // Earliest start / latest end over GPU activities and API calls (0 if none).
  uint64_t first_ns = 0, last_ns = 0;

  std::string_view String(uint32_t id) const {
    return id < strings.size() ? std::string_view(strings[id]) : std::string_view();
  }
  const CallStack* Stack(uint16_t trace, uint32_t stack_id) const;
  // Model device index of an activity.
  uint32_t DeviceOf(const GpuActivity& a) const { return streams[a.stream].device; }
  // The API call that launched `a`, or nullptr.
  const ApiCall* LaunchOf(const GpuActivity& a) const {
    return a.launch_api == kNone ? nullptr : &api_calls[a.launch_api];
  }
  const KernelAggregate* FindKernel(std::string_view name) const;
  uint64_t total_events() const;
};

// Progress of a slow read: bytes consumed of the current trace.
struct ReadProgress {
  size_t trace_index = 0, trace_count = 0;
  std::string trace_name;
  uint64_t bytes_done = 0, bytes_total = 0;
};
using ProgressCallback = std::function<void(const ReadProgress&)>;

// In-memory events of one trace, for synthetic tests and embedding: strings are
// the trace's interned strings (index = id, [0] = ""). Times in the trace's clock.
struct SyntheticTrace {
  std::string name = "synthetic";
  TraceHeaderData header;
  std::vector<std::string> strings{std::string()};
  std::vector<KernelEvent> kernels;
  std::vector<MemcpyEvent> memcpys;
  std::vector<MemsetEvent> memsets;
  std::vector<SyncEvent> syncs;
  std::vector<MemoryEvent> memory;
  std::vector<ApiEvent> apis;
  std::vector<NvtxRangeEvent> nvtx_ranges;
  std::vector<NvtxMarkerEvent> nvtx_markers;
  std::vector<NcclEvent> nccls;
  std::vector<MetricRangeEvent> metric_ranges;
  std::vector<GpuMetricSamplesEvent> gpu_metrics;
  std::vector<CaptureWindowEvent> capture_windows;
  std::vector<OverheadEvent> overheads;
  std::vector<StepEvent> steps;
  std::vector<CallStack> stacks;
  std::vector<LossReport> losses;
  // Interns `s` (returns the existing id when present).
  uint32_t Intern(std::string_view s);
};

class ModelBuilder {
 public:
  ModelBuilder();
  ~ModelBuilder();
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  // Reads every chunk of `reader` into the model (one streaming pass).
  absl::Status AddTrace(trace::TraceReader& reader, const ProgressCallback& progress = nullptr);
  // Adds in-memory events (synthetic tests).
  void AddSynthetic(const SyntheticTrace& trace);
  // Sorts, links API→GPU, nests NVTX, aggregates kernels and joins metrics.
  TimelineModel Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Opens each path, reads it, returns the finished model. Errors name the file.
absl::StatusOr<TimelineModel> BuildModel(const std::vector<std::string>& trace_paths,
                                         const ProgressCallback& progress = nullptr);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_MODEL_H_
