// tests/trace/trace_test_util.h — helpers shared by the trace tests: events
// with every field set, a visitor that records everything it sees, field-wise
// equality, and small file helpers.
#ifndef SIGHTLINE_TESTS_TRACE_TRACE_TEST_UTIL_H_
#define SIGHTLINE_TESTS_TRACE_TRACE_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "lib/trace/reader.h"
#include "lib/trace/writer.h"
#include "lib/trace/events.h"
#include "lib/trace/trace_header.h"

namespace sightline {
// Needed by std::vector<MetricValue>::operator== (found by ADL).
inline bool operator==(const MetricValue& a, const MetricValue& b) {
  return a.name_id == b.name_id && a.value == b.value;
}
}  // namespace sightline

namespace sightline::trace::testing {

// ---- Field-wise views (for ==) -----------------------------------------
inline auto Tie(const KernelEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.device_id, e.context_id, e.stream_id, e.correlation_id,
                  e.name_id, e.grid_x, e.grid_y, e.grid_z, e.block_x, e.block_y, e.block_z,
                  e.registers_per_thread, e.static_shared_bytes, e.dynamic_shared_bytes,
                  e.local_bytes_per_thread, e.shared_memory_config_bytes, e.graph_id,
                  e.graph_node_id, e.launch_type, e.cluster_x, e.cluster_y, e.cluster_z,
                  e.replayed, e.cache_config_requested, e.cache_config_executed, e.untraced);
}
inline auto Tie(const MemcpyEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.device_id, e.context_id, e.stream_id, e.correlation_id,
                  e.bytes, e.copy_kind, e.src_kind, e.dst_kind, e.async, e.src_device_id,
                  e.dst_device_id, e.graph_node_id);
}
inline auto Tie(const MemsetEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.device_id, e.context_id, e.stream_id, e.correlation_id,
                  e.bytes, e.value, e.memory_kind, e.async, e.graph_node_id, e.untraced);
}
inline auto Tie(const MemoryEvent& e) {
  return std::tie(e.timestamp_ns, e.device_id, e.context_id, e.stream_id, e.correlation_id,
                  e.operation, e.memory_kind, e.address, e.bytes, e.async, e.pool_address,
                  e.pool_type, e.pool_size, e.pool_used, e.pool_release_threshold, e.source_id,
                  e.pc);
}
inline auto Tie(const SyncEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.context_id, e.stream_id, e.correlation_id, e.sync_kind,
                  e.cuda_event_id, e.device_id);
}
inline auto Tie(const ApiEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.domain, e.cbid, e.name_id, e.correlation_id,
                  e.thread_id, e.return_value, e.stack_id, e.python_stack_id);
}
inline auto Tie(const NvtxRangeEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.domain_id, e.name_id, e.thread_id, e.end_thread_id,
                  e.color, e.category, e.payload_kind, e.payload_int, e.payload_double,
                  e.push_pop);
}
inline auto Tie(const NvtxMarkerEvent& e) {
  return std::tie(e.timestamp_ns, e.domain_id, e.name_id, e.thread_id, e.color, e.category,
                  e.payload_kind, e.payload_int, e.payload_double);
}
inline auto Tie(const NcclEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.device_id, e.stream_id, e.correlation_id, e.op,
                  e.bytes, e.count, e.datatype_id, e.comm_id, e.rank, e.nranks, e.name_id,
                  e.source, e.thread_id, e.peer);
}
inline auto Tie(const MetricValue& e) { return std::tie(e.name_id, e.value); }
inline auto Tie(const MetricRangeEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.device_id, e.correlation_id, e.range_name_id, e.values,
                  e.num_passes, e.range_index);
}
inline auto Tie(const GpuMetricSamplesEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.device_id, e.interval_ns, e.metric_name_ids,
                  e.sample_start_ns, e.sample_end_ns, e.values);
}
inline auto Tie(const CaptureWindowEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.index, e.label_id, e.trigger);
}
inline auto Tie(const OverheadEvent& e) {
  return std::tie(e.start_ns, e.end_ns, e.overhead_kind, e.thread_id, e.device_id);
}
inline auto Tie(const StepEvent& e) {
  return std::tie(e.timestamp_ns, e.step, e.thread_id, e.name_id);
}
inline auto Tie(const LossReport& e) {
  return std::tie(e.timestamp_ns, e.cupti_dropped_records, e.queue_dropped_buffers,
                  e.queue_dropped_records, e.invalid_timestamps, e.metric_ranges_dropped,
                  e.unsupported_records, e.write_errors, e.stacks_dropped,
                  e.gpu_metric_samples_dropped, e.untraced_kernels_lost);
}

// One decoded event of any kind, in file order.
struct AnyEvent {
  EventKind kind = EventKind::kUnspecified;
  KernelEvent kernel;
  MemcpyEvent memcpy;
  MemsetEvent memset;
  SyncEvent sync;
  ApiEvent api;
  NvtxRangeEvent nvtx_range;
  NvtxMarkerEvent nvtx_marker;
  NcclEvent nccl;
  MetricRangeEvent metric_range;
  CaptureWindowEvent capture_window;
  OverheadEvent overhead;
  StepEvent step;
  LossReport loss;
  MemoryEvent memory;
  GpuMetricSamplesEvent gpu_metrics;
};
bool operator==(const AnyEvent& a, const AnyEvent& b);
std::string Describe(const AnyEvent& e);  // for failure messages

class RecordingVisitor : public EventVisitor {
 public:
  void OnKernel(const KernelEvent& e) override { Push(EventKind::kKernel).kernel = e; }
  void OnMemcpy(const MemcpyEvent& e) override { Push(EventKind::kMemcpy).memcpy = e; }
  void OnMemset(const MemsetEvent& e) override { Push(EventKind::kMemset).memset = e; }
  void OnSync(const SyncEvent& e) override { Push(EventKind::kSync).sync = e; }
  void OnApi(const ApiEvent& e) override { Push(EventKind::kApi).api = e; }
  void OnNvtxRange(const NvtxRangeEvent& e) override { Push(EventKind::kNvtxRange).nvtx_range = e; }
  void OnNvtxMarker(const NvtxMarkerEvent& e) override {
    Push(EventKind::kNvtxMarker).nvtx_marker = e;
  }
  void OnNccl(const NcclEvent& e) override { Push(EventKind::kNccl).nccl = e; }
  void OnMetricRange(const MetricRangeEvent& e) override {
    Push(EventKind::kMetricRange).metric_range = e;
  }
  void OnCaptureWindow(const CaptureWindowEvent& e) override {
    Push(EventKind::kCaptureWindow).capture_window = e;
  }
  void OnOverhead(const OverheadEvent& e) override { Push(EventKind::kOverhead).overhead = e; }
  void OnStep(const StepEvent& e) override { Push(EventKind::kStep).step = e; }
  void OnLoss(const LossReport& e) override { Push(EventKind::kLoss).loss = e; }
  void OnMemory(const MemoryEvent& e) override { Push(EventKind::kMemory).memory = e; }
  void OnGpuMetrics(const GpuMetricSamplesEvent& e) override {
    Push(EventKind::kGpuMetrics).gpu_metrics = e;
  }

  std::vector<AnyEvent> events;

 private:
  AnyEvent& Push(EventKind kind) {
    events.emplace_back();
    events.back().kind = kind;
    return events.back();
  }
};

// Adds `e` to the writer according to its kind.
void AddTo(TraceWriter& writer, const AnyEvent& e);

// One event of every kind with every field set to a distinct non-default
// value (ids interned through `writer` when given), starting near `t0`.
std::vector<AnyEvent> EveryKindFullySet(TraceWriter* writer, uint64_t t0);
// One event of every kind with all fields at their defaults (times zero).
std::vector<AnyEvent> EveryKindDefault();

TraceHeaderData SampleHeader();

// Writes a complete trace of `events` to memory with the given chunk size.
std::string WriteTrace(const std::vector<AnyEvent>& events, size_t chunk_bytes,
                       const TraceHeaderData& header = SampleHeader());

// A realistic mix (kernels, memcpy, API calls, NVTX) of `count` events.
std::vector<AnyEvent> RealisticMix(size_t count, uint32_t seed = 1);

// Reads everything from `data`; returns the reader (or the Open error).
absl::StatusOr<std::unique_ptr<TraceReader>> ReadAllFromBuffer(std::string_view data,
                                                               RecordingVisitor* visitor,
                                                               ReaderOptions options = {});

// Framing helpers (lib/trace/format.h) for building or dissecting files.
std::string Preamble(uint32_t version = 1);
std::string Frame(uint8_t type, std::string_view payload);
struct RawFrame {
  uint8_t type = 0;
  size_t offset = 0;  // of the frame header
  std::string payload;
};
// Splits a well-formed file into frames (test input must be valid).
std::vector<RawFrame> SplitFrames(std::string_view file);

// A multi-chunk trace of RealisticMix(count, seed) and, for each chunk
// frame, the offset where it ends and the number of events read once it has
// been read (for damage and truncation tests).
struct ChunkedTrace {
  std::vector<AnyEvent> events;
  std::string bytes;
  size_t header_end = 0;
  std::map<size_t, size_t> events_after;  // frame end offset → events so far
};
ChunkedTrace MakeChunkedTrace(size_t count, size_t chunk_bytes, uint32_t seed);

// True when `got` is `want` with some elements left out (order kept).
bool IsSubsequence(const std::vector<AnyEvent>& got, const std::vector<AnyEvent>& want);

// A fresh empty directory under $TEST_TMPDIR or /tmp, removed by the caller.
std::string MakeTempDir();
void RemoveTree(const std::string& path);
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, std::string_view data);

}  // namespace sightline::trace::testing

#endif  // SIGHTLINE_TESTS_TRACE_TRACE_TEST_UTIL_H_
