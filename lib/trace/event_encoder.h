// lib/trace/event_encoder.h — hand-written protobuf encoders for the event
// payload messages of trace.proto (KernelEvent, MemcpyEvent, ...). Internal to
// lib/trace; used by TraceWriter. libc only, allocation free.
//
// Each Encode* writes the message body (without its own tag/length) at `p` and
// returns the new end. kMax*Bytes bound the output so the caller can reserve
// room once. Field numbers are those of proto/sightline/v1/trace.proto; the
// wire-compatibility tests parse the output with the generated classes.
#ifndef SIGHTLINE_LIB_TRACE_EVENT_ENCODER_H_
#define SIGHTLINE_LIB_TRACE_EVENT_ENCODER_H_

#include <cstdint>
#include <cstring>

#include "lib/trace/proto_wire.h"
#include "lib/trace/events.h"

namespace sightline::trace::internal {

// Bound for the fixed-size payloads: 26 fields (KernelEvent) of at most 12 bytes each.
inline constexpr size_t kMaxFixedPayloadBytes = 26 * wire::kMaxScalarFieldBytes;
// One MetricValue entry: tag + length + name_id field + double field.
inline constexpr size_t kMaxMetricValueBytes = 2 + 12 + 9;

// Event.payload oneof field numbers.
enum PayloadField : uint32_t {
  kKernelField = 10, kMemcpyField = 11, kMemsetField = 12, kSyncField = 13, kApiField = 14,
  kNvtxRangeField = 15, kNvtxMarkerField = 16, kNcclField = 17, kMetricRangeField = 18,
  kCaptureWindowField = 19, kOverheadField = 20, kStepField = 21, kLossField = 22,
  kMemoryField = 23, kGpuMetricsField = 24,
  kLastPayloadField = kGpuMetricsField,  // keep equal to the highest field above
};

inline uint8_t* EncodeKernel(const KernelEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.device_id, p);
  p = PutUint(2, e.context_id, p);
  p = PutUint(3, e.stream_id, p);
  p = PutUint(4, e.correlation_id, p);
  p = PutUint(5, e.name_id, p);
  p = PutUint(6, e.grid_x, p);
  if (e.grid_y != 1) p = PutUintAlways(7, e.grid_y, p);  // optional: absent means 1
  if (e.grid_z != 1) p = PutUintAlways(8, e.grid_z, p);
  p = PutUint(9, e.block_x, p);
  if (e.block_y != 1) p = PutUintAlways(10, e.block_y, p);
  if (e.block_z != 1) p = PutUintAlways(11, e.block_z, p);
  p = PutUint(12, e.registers_per_thread, p);
  p = PutUint(13, e.static_shared_bytes, p);
  p = PutUint(14, e.dynamic_shared_bytes, p);
  p = PutUint(15, e.local_bytes_per_thread, p);
  p = PutUint(16, e.shared_memory_config_bytes, p);
  p = PutUint(17, e.graph_id, p);
  p = PutUint(18, e.graph_node_id, p);
  p = PutUint(19, e.launch_type, p);
  p = PutUint(20, e.cluster_x, p);
  p = PutUint(21, e.cluster_y, p);
  p = PutUint(22, e.cluster_z, p);
  p = PutBool(23, e.replayed, p);
  p = PutUint(24, e.cache_config_requested, p);
  p = PutUint(25, e.cache_config_executed, p);
  p = PutBool(26, e.untraced, p);
  return p;
}

inline uint8_t* EncodeMemcpy(const MemcpyEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.device_id, p);
  p = PutUint(2, e.context_id, p);
  p = PutUint(3, e.stream_id, p);
  p = PutUint(4, e.correlation_id, p);
  p = PutUint(5, e.bytes, p);
  p = PutUint(6, static_cast<uint32_t>(e.copy_kind), p);
  p = PutUint(7, static_cast<uint32_t>(e.src_kind), p);
  p = PutUint(8, static_cast<uint32_t>(e.dst_kind), p);
  p = PutBool(9, e.async, p);
  p = PutUint(10, e.src_device_id, p);
  p = PutUint(11, e.dst_device_id, p);
  p = PutUint(12, e.graph_node_id, p);
  return p;
}

inline uint8_t* EncodeMemset(const MemsetEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.device_id, p);
  p = PutUint(2, e.context_id, p);
  p = PutUint(3, e.stream_id, p);
  p = PutUint(4, e.correlation_id, p);
  p = PutUint(5, e.bytes, p);
  p = PutUint(6, e.value, p);
  p = PutUint(7, static_cast<uint32_t>(e.memory_kind), p);
  p = PutBool(8, e.async, p);
  p = PutUint(9, e.graph_node_id, p);
  p = PutBool(10, e.untraced, p);
  return p;
}

inline uint8_t* EncodeMemory(const MemoryEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.device_id, p);
  p = PutUint(2, e.context_id, p);
  p = PutUint(3, e.stream_id, p);
  p = PutUint(4, e.correlation_id, p);
  p = PutUint(5, static_cast<uint32_t>(e.operation), p);
  p = PutUint(6, static_cast<uint32_t>(e.memory_kind), p);
  p = PutUint(7, e.address, p);
  p = PutUint(8, e.bytes, p);
  p = PutBool(9, e.async, p);
  p = PutUint(10, e.pool_address, p);
  p = PutUint(11, e.pool_type, p);
  p = PutUint(12, e.pool_size, p);
  p = PutUint(13, e.pool_used, p);
  p = PutUint(14, e.pool_release_threshold, p);
  p = PutUint(15, e.source_id, p);
  p = PutUint(16, e.pc, p);
  return p;
}

inline uint8_t* EncodeSync(const SyncEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.context_id, p);
  p = PutUint(2, e.stream_id, p);
  p = PutUint(3, e.correlation_id, p);
  p = PutUint(4, static_cast<uint32_t>(e.sync_kind), p);
  p = PutUint(5, e.cuda_event_id, p);
  p = PutUint(6, e.device_id, p);
  return p;
}

inline uint8_t* EncodeApi(const ApiEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, static_cast<uint32_t>(e.domain), p);
  p = PutUint(2, e.cbid, p);
  p = PutUint(3, e.name_id, p);
  p = PutUint(4, e.correlation_id, p);
  p = PutUint(5, e.thread_id, p);
  p = PutUint(6, e.return_value, p);
  p = PutUint(7, e.stack_id, p);
  p = PutUint(8, e.python_stack_id, p);
  return p;
}

inline uint8_t* EncodeNvtxRange(const NvtxRangeEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.domain_id, p);
  p = PutUint(2, e.name_id, p);
  p = PutUint(3, e.thread_id, p);
  p = PutUint(4, e.end_thread_id, p);
  p = PutUint(5, e.color, p);
  p = PutUint(6, e.category, p);
  p = PutUint(7, static_cast<uint32_t>(e.payload_kind), p);
  p = PutSint64(8, e.payload_int, p);
  p = PutDouble(9, e.payload_double, p);
  p = PutBool(10, e.push_pop, p);
  return p;
}

inline uint8_t* EncodeNvtxMarker(const NvtxMarkerEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.domain_id, p);
  p = PutUint(2, e.name_id, p);
  p = PutUint(3, e.thread_id, p);
  p = PutUint(4, e.color, p);
  p = PutUint(5, e.category, p);
  p = PutUint(6, static_cast<uint32_t>(e.payload_kind), p);
  p = PutSint64(7, e.payload_int, p);
  p = PutDouble(8, e.payload_double, p);
  return p;
}

inline uint8_t* EncodeNccl(const NcclEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.device_id, p);
  p = PutUint(2, e.stream_id, p);
  p = PutUint(3, e.correlation_id, p);
  p = PutUint(4, static_cast<uint32_t>(e.op), p);
  p = PutUint(5, e.bytes, p);
  p = PutUint(6, e.count, p);
  p = PutUint(7, e.datatype_id, p);
  p = PutUint(8, e.comm_id, p);
  p = PutSint32(9, e.rank, p);
  p = PutSint32(10, e.nranks, p);
  p = PutUint(11, e.name_id, p);
  p = PutUint(12, static_cast<uint32_t>(e.source), p);
  p = PutUint(13, e.thread_id, p);
  if (e.peer >= 0) p = PutUintAlways(14, ZigZag32(e.peer), p);
  return p;
}

// `count` values are written (the caller caps it). Fixed part: nine uint32
// fields and a flag, 10 × (1 + 5) bytes at most (< kMaxFixedPayloadBytes).
inline uint8_t* EncodeMetricRange(const MetricRangeEvent& e, size_t count, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.device_id, p);
  p = PutUint(2, e.correlation_id, p);
  p = PutUint(3, e.range_name_id, p);
  for (size_t i = 0; i < count; ++i) {
    const MetricValue& v = e.values[i];
    uint8_t body[24];
    uint8_t* b = PutUint(1, v.name_id, body);
    b = PutDouble(2, v.value, b);
    p = PutBytes(4, body, static_cast<size_t>(b - body), p);
  }
  p = PutUint(5, e.num_passes, p);
  p = PutUint(6, e.range_index, p);
  p = PutUint(7, e.launches_spanned, p);
  p = PutUint(8, e.first_correlation_id, p);
  p = PutUint(9, e.passes_collected, p);
  if (e.user_range) p = PutUint(10, 1, p);
  return p;
}

// Bound of EncodeGpuMetrics' output for `samples` samples of `metrics`
// metrics: four packed fields (tag + length + varints / floats) and two
// scalars.
inline size_t MaxGpuMetricsBytes(size_t samples, size_t metrics) {
  return 4 * (2 + wire::kMaxVarintBytes) + metrics * 5 + samples * 2 * wire::kMaxVarintBytes +
         samples * metrics * 4 + 2 * wire::kMaxScalarFieldBytes;
}

// The caller caps samples and metrics (kMaxGpuMetricSamples, kMaxGpuMetrics)
// and checks that the arrays agree (values = samples × metrics).
inline uint8_t* EncodeGpuMetrics(const GpuMetricSamplesEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.device_id, p);
  auto packed = [&p](uint32_t field, size_t n, auto value_at) {
    if (n == 0) return;
    size_t size = 0;
    for (size_t i = 0; i < n; ++i) size += VarintSize(value_at(i));
    p = WriteTag(field, kLengthDelimited, p);
    p = WriteVarint(size, p);
    for (size_t i = 0; i < n; ++i) p = WriteVarint(value_at(i), p);
  };
  const size_t samples = e.sample_start_ns.size();
  packed(2, e.metric_name_ids.size(), [&e](size_t i) { return uint64_t{e.metric_name_ids[i]}; });
  packed(3, samples, [&e](size_t i) { return e.sample_start_ns[i] - e.start_ns; });
  packed(4, samples, [&e](size_t i) { return e.sample_end_ns[i] - e.sample_start_ns[i]; });
  if (!e.values.empty()) {
    p = WriteTag(5, kLengthDelimited, p);
    p = WriteVarint(e.values.size() * 4, p);
    std::memcpy(p, e.values.data(), e.values.size() * 4);  // little-endian IEEE floats
    p += e.values.size() * 4;
  }
  p = PutUint(6, e.interval_ns, p);
  return p;
}

inline uint8_t* EncodeCaptureWindow(const CaptureWindowEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.index, p);
  p = PutUint(2, e.label_id, p);
  p = PutUint(3, static_cast<uint32_t>(e.trigger), p);
  return p;
}

inline uint8_t* EncodeOverhead(const OverheadEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.overhead_kind, p);
  p = PutUint(2, e.thread_id, p);
  p = PutUint(3, e.device_id, p);
  return p;
}

inline uint8_t* EncodeStep(const StepEvent& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.step, p);
  p = PutUint(2, e.thread_id, p);
  p = PutUint(3, e.name_id, p);
  return p;
}

inline uint8_t* EncodeLoss(const LossReport& e, uint8_t* p) {
  using namespace wire;
  p = PutUint(1, e.cupti_dropped_records, p);
  p = PutUint(2, e.queue_dropped_buffers, p);
  p = PutUint(3, e.queue_dropped_records, p);
  p = PutUint(4, e.invalid_timestamps, p);
  p = PutUint(5, e.metric_ranges_dropped, p);
  p = PutUint(6, e.unsupported_records, p);
  p = PutUint(7, e.write_errors, p);
  p = PutUint(8, e.stacks_dropped, p);
  p = PutUint(9, e.gpu_metric_samples_dropped, p);
  p = PutUint(10, e.untraced_kernels_lost, p);
  return p;
}

}  // namespace sightline::trace::internal

#endif  // SIGHTLINE_LIB_TRACE_EVENT_ENCODER_H_
