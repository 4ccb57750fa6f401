// lib/trace/events.h — the in-memory event model shared by the collector, the
// trace reader/writer, the analyzer and the exporters.
//
// Internal, not installed: no installed library exports the functions declared
// here (EventKindName, ...); they live in sightline_trace_writer, which is
// linked into the injected library and the tools with hidden symbols. The
// installed surface is include/sightline/sightline.h(pp).
//
// These are plain structs (no CUDA, no protobuf, no allocation except the few
// repeated fields) mirroring proto/sightline/v1/trace.proto one to one. The
// collector fills them from CUPTI records; lib/trace encodes them to the wire
// format and decodes them back; the analyzer consumes them.
//
// Conventions:
//  * Timestamps are nanoseconds in the collector's clock domain (CUPTI
//    timestamps). TraceHeader.clock maps that domain to CLOCK_REALTIME.
//  * `*_id` fields named `name_id`, `domain_id`, `label_id`, `function_id`,
//    `module_id`, `datatype_id` are interned-string ids of the trace
//    (0 = none); resolve them through trace::StringTable.
//  * Enum values equal the proto enum values, so conversion is a cast.
#ifndef SIGHTLINE_LIB_TRACE_EVENTS_H_
#define SIGHTLINE_LIB_TRACE_EVENTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sightline {

enum class EventKind : uint8_t {
  kUnspecified = 0,
  kKernel = 1,
  kMemcpy = 2,
  kMemset = 3,
  kSync = 4,
  kApi = 5,
  kNvtxRange = 6,
  kNvtxMarker = 7,
  kNccl = 8,
  kMetricRange = 9,
  kCaptureWindow = 10,
  kOverhead = 11,
  kStep = 12,
  kLoss = 13,
  kMemory = 14,
  kGpuMetrics = 15,
};
inline constexpr int kNumEventKinds = 16;

// Stable lower-case names used in `sightline info` and JSON ("kernel", ...).
const char* EventKindName(EventKind kind);

enum class CopyKind : uint8_t {
  kUnknown = 0, kHtoD = 1, kDtoH = 2, kHtoA = 3, kAtoH = 4, kAtoA = 5,
  kAtoD = 6, kDtoA = 7, kDtoD = 8, kHtoH = 9, kPtoP = 10,
};
const char* CopyKindName(CopyKind kind);  // "HtoD", ...

enum class MemoryKind : uint8_t {
  kUnknown = 0, kPageable = 1, kPinned = 2, kDevice = 3, kArray = 4,
  kManaged = 5, kDeviceStatic = 6, kManagedStatic = 7,
};
const char* MemoryKindName(MemoryKind kind);  // "pageable", ...

enum class SyncKind : uint8_t {
  kUnknown = 0, kEventSynchronize = 1, kStreamWaitEvent = 2,
  kStreamSynchronize = 3, kContextSynchronize = 4,
};
const char* SyncKindName(SyncKind kind);

enum class MemoryOperation : uint8_t {
  kUnknown = 0, kAllocation = 1, kRelease = 2,
  kPoolCreated = 3, kPoolDestroyed = 4, kPoolTrimmed = 5,
};
const char* MemoryOperationName(MemoryOperation op);  // "allocation", ...

enum class ApiDomain : uint8_t { kUnknown = 0, kRuntime = 1, kDriver = 2 };

enum class PayloadKind : uint8_t { kNone = 0, kInt64 = 1, kUint64 = 2, kDouble = 3 };

enum class NcclOp : uint8_t {
  kUnknown = 0, kAllReduce = 1, kBroadcast = 2, kReduce = 3, kAllGather = 4,
  kReduceScatter = 5, kSend = 6, kRecv = 7, kAllToAll = 8, kSendRecv = 9,
};
const char* NcclOpName(NcclOp op);  // "AllReduce", ...

enum class CaptureTrigger : uint8_t {
  kWholeRun = 0, kProfilerApi = 1, kNvtx = 2, kTimer = 3, kApi = 4,
};

inline constexpr uint32_t kNoStream = 0xffffffffu;

struct KernelEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint32_t name_id = 0;
  uint32_t grid_x = 0, grid_y = 1, grid_z = 1;
  uint32_t block_x = 0, block_y = 1, block_z = 1;
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t local_bytes_per_thread = 0;
  uint32_t shared_memory_config_bytes = 0;  // carveout in effect, bytes
  uint64_t graph_id = 0;
  uint64_t graph_node_id = 0;
  uint32_t launch_type = 0;  // 0 regular, 1 cooperative, 2 coop multi-device, 3 cluster
  uint32_t cluster_x = 0, cluster_y = 0, cluster_z = 0;
  bool replayed = false;     // duration distorted by kernel replay
  uint32_t cache_config_requested = 0;
  uint32_t cache_config_executed = 0;
  // Measured in place for hardware metrics while kernels were not traced
  // (sequence passes): no GPU timestamps, start = end = 0 (trace.proto).
  bool untraced = false;
  // No GPU timestamps: placed at its launch for its measured duration.
  bool untimed() const { return replayed || untraced; }

  uint64_t threads_per_block() const {
    return uint64_t{block_x} * block_y * block_z;
  }
  uint64_t blocks() const { return uint64_t{grid_x} * grid_y * grid_z; }
};

struct MemcpyEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t bytes = 0;
  CopyKind copy_kind = CopyKind::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown;
  MemoryKind dst_kind = MemoryKind::kUnknown;
  bool async = false;
  uint32_t src_device_id = 0;
  uint32_t dst_device_id = 0;
  uint64_t graph_node_id = 0;
};

struct MemsetEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t bytes = 0;
  uint32_t value = 0;
  MemoryKind memory_kind = MemoryKind::kUnknown;
  bool async = false;
  uint64_t graph_node_id = 0;
  // No GPU timestamps (CUPTI gave none while metrics were collected): kept
  // for bytes, stream and correlation, outside all timing (trace.proto).
  bool untraced = false;
};

// An allocation or release (or a stream-ordered pool operation); see
// trace.proto MemoryEvent.
struct MemoryEvent {
  uint64_t timestamp_ns = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = kNoStream;
  uint32_t correlation_id = 0;
  MemoryOperation operation = MemoryOperation::kUnknown;
  MemoryKind memory_kind = MemoryKind::kUnknown;
  uint64_t address = 0;
  uint64_t bytes = 0;
  bool async = false;
  uint64_t pool_address = 0;
  uint32_t pool_type = 0;  // 0 none, 1 local, 2 imported
  uint64_t pool_size = 0;
  uint64_t pool_used = 0;
  uint64_t pool_release_threshold = 0;
  uint32_t source_id = 0;
  uint64_t pc = 0;
};

struct SyncEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = kNoStream;
  uint32_t correlation_id = 0;
  SyncKind sync_kind = SyncKind::kUnknown;
  uint64_t cuda_event_id = 0;
  uint32_t device_id = 0;
};

struct ApiEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  ApiDomain domain = ApiDomain::kUnknown;
  uint32_t cbid = 0;
  uint32_t name_id = 0;
  uint32_t correlation_id = 0;
  uint32_t thread_id = 0;
  uint32_t return_value = 0;
  uint32_t stack_id = 0;  // CallStack id; 0 = none
  // Python call stack (CallStack of kind kPython) of the calling thread at
  // the call's entry; 0 = none (not Python, no frames, or not recorded).
  uint32_t python_stack_id = 0;
};

struct NvtxRangeEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t domain_id = 0;
  uint32_t name_id = 0;
  uint32_t thread_id = 0;
  uint32_t end_thread_id = 0;
  uint32_t color = 0;
  uint32_t category = 0;
  PayloadKind payload_kind = PayloadKind::kNone;
  int64_t payload_int = 0;
  double payload_double = 0;
  bool push_pop = false;
};

struct NvtxMarkerEvent {
  uint64_t timestamp_ns = 0;
  uint32_t domain_id = 0;
  uint32_t name_id = 0;
  uint32_t thread_id = 0;
  uint32_t color = 0;
  uint32_t category = 0;
  PayloadKind payload_kind = PayloadKind::kNone;
  int64_t payload_int = 0;
  double payload_double = 0;
};

// Where an NcclEvent comes from (trace.proto NcclEvent.source: the wire
// values, never renumbered).
enum class NcclSource : uint32_t {
  kUnknown = 0,
  kGpuKernel = 1,         // an NCCL kernel's activity record (device time)
  kHostNvtx = 2,          // NCCL's own NVTX range on the calling thread (host time)
  kCommunicatorInfo = 3,  // a communicator's rank/size, not an operation
};

struct NcclEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  NcclOp op = NcclOp::kUnknown;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint32_t datatype_id = 0;
  uint64_t comm_id = 0;
  int32_t rank = -1;
  int32_t nranks = 0;
  uint32_t name_id = 0;
  NcclSource source = NcclSource::kUnknown;
  uint32_t thread_id = 0;
  int32_t peer = -1;  // Send/Recv: the peer's rank in the communicator; -1 unknown / none
};

struct MetricValue {
  uint32_t name_id = 0;
  double value = 0;
};

// A DRAM counter (dram__*). Measured in place (sequence / spread replay)
// its value includes write-backs the measurement itself adds; sequence
// replay's --metrics-replay-top kernel-replays the configurations moving the
// most DRAM bytes for these (lib/collect/range_profiler_sequence.h
// ReplayTopChooser) and the
// analyzer takes them from the replay (lib/analysis/model_finish.cc).
inline bool IsDramMetric(std::string_view name) { return name.rfind("dram__", 0) == 0; }

struct MetricRangeEvent {
  uint64_t start_ns = 0;  // when known (kernel start), else 0
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t correlation_id = 0;
  uint32_t range_name_id = 0;
  std::vector<MetricValue> values;
  uint32_t num_passes = 0;
  uint32_t range_index = 0;
  // Spread replay: the passes came from this many launches of one kernel
  // configuration (no replay); correlation_id is the last, this the first.
  // 0 or 1: one launch (kernel replay).
  uint32_t launches_spanned = 0;
  uint32_t first_correlation_id = 0;
  // Passes collected; fewer than num_passes = an incomplete spread (no
  // values). 0 = all (kernel replay, older traces).
  uint32_t passes_collected = 0;
  // A set of an NVTX range's instances (--metrics-range nvtx:NAME): no
  // kernel (correlation ids 0), range_name_id is the range's name,
  // launches_spanned its instances, start/end the first instance's push and
  // the last one's pop.
  bool user_range = false;
};

// PM sampling (--gpu-metrics): consecutive hardware samples of one device.
// Sample i covers [sample_start_ns[i], sample_end_ns[i]); its value of
// metric j (name metric_name_ids[j]) is values[i * metric_name_ids.size() + j]
// (NaN: CUPTI could not evaluate it). start_ns/end_ns: the first sample's
// start and the last one's end.
// Bounds of one event (writer and reader): larger batches are split.
inline constexpr size_t kMaxGpuMetricSamples = 4096;
inline constexpr size_t kMaxGpuMetrics = 256;

struct GpuMetricSamplesEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device_id = 0;
  uint32_t interval_ns = 0;  // the sampling interval asked for
  std::vector<uint32_t> metric_name_ids;
  std::vector<uint64_t> sample_start_ns;
  std::vector<uint64_t> sample_end_ns;
  std::vector<float> values;

  size_t num_samples() const { return sample_start_ns.size(); }
  float value(size_t sample, size_t metric) const {
    return values[sample * metric_name_ids.size() + metric];
  }
};

struct CaptureWindowEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t index = 0;
  uint32_t label_id = 0;
  CaptureTrigger trigger = CaptureTrigger::kWholeRun;
};

// device_id of a host-side (process/thread) overhead record.
inline constexpr uint32_t kHostOverheadDevice = 0xffffffffu;

struct OverheadEvent {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t overhead_kind = 0;
  uint32_t thread_id = 0;
  uint32_t device_id = 0;  // kHostOverheadDevice: host-side (thread/process)
};

struct StepEvent {
  uint64_t timestamp_ns = 0;
  uint64_t step = 0;
  uint32_t thread_id = 0;
  uint32_t name_id = 0;
};

// Loss counters. Cumulative: each LossReport carries totals so far.
struct LossReport {
  uint64_t timestamp_ns = 0;
  uint64_t cupti_dropped_records = 0;
  uint64_t queue_dropped_buffers = 0;
  uint64_t queue_dropped_records = 0;
  uint64_t invalid_timestamps = 0;
  uint64_t metric_ranges_dropped = 0;
  uint64_t unsupported_records = 0;
  uint64_t write_errors = 0;
  uint64_t stacks_dropped = 0;
  // PM sampling: samples missing from the stream (hardware-buffer overflow or
  // gaps longer than the interval), or not written (host queue full).
  uint64_t gpu_metric_samples_dropped = 0;
  // Kernels run in a metric pass while kernels were not traced that no
  // hooked launch call announced (no record of them; trace.proto).
  uint64_t untraced_kernels_lost = 0;

  uint64_t total() const {
    return cupti_dropped_records + queue_dropped_records + invalid_timestamps +
           metric_ranges_dropped + write_errors + stacks_dropped + gpu_metric_samples_dropped +
           untraced_kernels_lost;
  }
};

// Native frames: function, module (shared object), offset, address.
// Python frames: function = qualified name, module = source file, line.
struct StackFrame {
  uint32_t function_id = 0;
  uint32_t module_id = 0;
  uint64_t offset = 0;
  uint64_t address = 0;
  uint32_t line = 0;  // Python frames: source line (0 = unknown)
};

enum class StackKind : uint8_t { kNative = 0, kPython = 1 };

struct CallStack {
  uint32_t id = 0;
  std::vector<StackFrame> frames;  // innermost first
  StackKind kind = StackKind::kNative;
};

}  // namespace sightline

#endif  // SIGHTLINE_LIB_TRACE_EVENTS_H_
