// lib/collect/record_converter.h — CUPTI activity records → sightline events.
//
// Runs on the collector's writer thread, one record at a time, straight out of
// a completed CUPTI buffer (nothing is copied first). It needs only CUPTI's
// record layouts (cupti_activity.h), never libcupti itself: API names come in
// through a lookup function, so tests feed it synthetic records (STYLE.md #9).
//
// Record kinds handled (CUDA 13 / CUPTI 13.0 layouts):
//   CONCURRENT_KERNEL, KERNEL (Kernel10)   → KernelEvent (+ NcclEvent for NCCL kernels)
//   MEMCPY (Memcpy6), MEMCPY2 (PtoP4)      → MemcpyEvent
//   MEMSET (Memset4)                       → MemsetEvent
//   SYNCHRONIZATION (Synchronization2)     → SyncEvent
//   RUNTIME, DRIVER (API)                  → ApiEvent (skip list applied)
//   MARKER (Marker2) + MARKER_DATA (2)     → NvtxRangeEvent / NvtxMarkerEvent
//                                            (+ NcclEvent for NCCL's NVTX ranges)
//   OVERHEAD (Overhead3)                   → OverheadEvent
//   GRAPH_TRACE (GraphTrace2)              → KernelEvent named "[CUDA graph N]"
//   MEMORY2 (Memory4), MEMORY_POOL (Pool3) → MemoryEvent (allocations, releases,
//                                            stream-ordered pool operations)
// Anything else is counted in stats().unsupported_records.
//
// Records with end < start or a zero timestamp are counted as
// invalid_timestamps and dropped (CUPTI_NOTES: a starved device buffer yields
// such records without counting them as drops).
//
// A range start and its end arrive in any order relative to other records but
// the start always precedes its end; pending starts are kept by marker id.
// Instantaneous markers wait for their MARKER_DATA (color, payload) until
// EndBuffer().
//
// NCCL payloads (message size, communicator, rank; see nccl_payload.h) reach
// an NCCL range from two places, tried in this order:
//   1. its own MARKER_DATA record, when CUPTI attached NCCL's NVTX extended
//      payload to it (exact: same marker id);
//   2. AddNcclPayload(): payloads decoded by the collector's NVTX callback at
//      the nvtxDomainRangePushEx, joined to the range on the same thread
//      whose start is nearest within options.nccl_join_tolerance_ns and whose
//      name is the payload's API call ("ncclAllReduce" for schema AllReduce).
// Joins happen when the range ends, so feed the callback payloads of a pass
// before converting its buffers. Communicator payloads (ncclCommDestroy,
// ncclCommInitRank, ...) map comm id → rank/nranks for the ranges that end
// after them and are also written as an NcclEvent with source 3 so readers can
// fill rank/nranks of earlier events of that communicator. Whatever could not
// be joined is counted in stats().nccl, never guessed.
#ifndef SIGHTLINE_LIB_COLLECT_RECORD_CONVERTER_H_
#define SIGHTLINE_LIB_COLLECT_RECORD_CONVERTER_H_

#include <cupti_activity.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/collect/event_sink.h"
#include "lib/collect/nccl_payload.h"
#include "lib/trace/events.h"

namespace sightline::collect {

// NCCL payload joins (see the file comment). Not losses: a range without a
// payload simply keeps bytes/comm unset.
struct NcclJoinStats {
  uint64_t ranges = 0;                  // NCCL-domain ranges emitted
  uint64_t from_activity = 0;           // payload from the range's MARKER_DATA
  uint64_t from_callback = 0;           // payload joined from the NVTX callback
  uint64_t without_payload = 0;         // collective ranges left without one
  uint64_t undecoded = 0;               // extended payloads of unknown schema/size
  uint64_t callback_unmatched = 0;      // callback payloads no range claimed
  uint64_t comm_events = 0;             // source-3 communicator events written
};

struct ConversionStats {
  uint64_t records = 0;
  uint64_t invalid_timestamps = 0;
  uint64_t unsupported_records = 0;
  uint64_t skipped_api_records = 0;  // filtered by the skip list (not a loss)
  uint64_t unmatched_range_ends = 0;
  uint64_t open_ranges_at_end = 0;
  // Python stacks whose API record never came (bounded table cleared): lost.
  uint64_t python_stacks_unmatched = 0;
  // Kernels measured in place while not traced (AddUntracedKernel) that
  // were written without a traced launch of their configuration to copy
  // registers, shared memory and carveout from (those fields read 0).
  uint64_t untraced_without_template = 0;
  // "Maybe traced" untraced kernels dropped: CUPTI had a record after all.
  uint64_t untraced_duplicates_dropped = 0;
  // Kernel records without timestamps kept as untraced (keep_untimed_kernels).
  uint64_t untimed_kernels_kept = 0;
  // Memset records without timestamps kept as untraced (the same option).
  uint64_t untimed_memsets_kept = 0;
  uint64_t counts[kNumEventKinds] = {};
  NcclJoinStats nccl;
};

struct ConverterOptions {
  std::vector<std::string> api_skip;  // API names not to record
  bool nccl = true;                   // emit NcclEvent for NCCL kernels / NVTX ranges
  // Callback payload ↔ range start distance accepted by the join.
  uint64_t nccl_join_tolerance_ns = 200000;
  // CUPTI allocates the copy of an NVTX extended payload in a MARKER_DATA
  // record and leaves freeing it to the client (free(), both the
  // nvtxPayloadData_t and its payload). Off only for records not from CUPTI.
  bool free_ext_payloads = true;
  // Kernels may be measured in place without being traced
  // (SIGHTLINE_METRICS_INPLACE_TRACE=none): remember each traced kernel
  // configuration's fields for AddUntracedKernel.
  bool untraced_kernels = false;
  // Hardware metrics are collected: a kernel record CUPTI gives with no
  // start and no end (both 0) that is not replayed — a CUDA graph's kernels
  // inside a measured --metrics-range instance (H100, CUDA 13.0, run AU) —
  // is kept as an untraced kernel (KernelEvent::untraced: placed at its
  // launch call like the ones written from launch calls) instead of being
  // dropped as invalid. Other invalid spans are still counted lost. Memset
  // records with no start and no end are kept the same way
  // (MemsetEvent::untraced).
  bool keep_untimed_kernels = false;
};

class RecordConverter {
 public:
  // Name of a runtime/driver API callback id, or nullptr when unknown.
  using ApiNameFn = std::function<const char*(ApiDomain domain, uint32_t cbid)>;
  // Whether the kernel with this correlation id was replayed (metrics).
  using ReplayedFn = std::function<bool(uint32_t correlation_id)>;

  RecordConverter(EventSink* sink, ConverterOptions options, ApiNameFn api_name);

  void set_replayed_fn(ReplayedFn fn) { replayed_fn_ = std::move(fn); }

  // Converts one record into zero or more events on the sink.
  void Convert(const CUpti_Activity* record);
  // Call after the last record of a buffer: emits waiting instantaneous markers.
  void EndBuffer();
  // An NCCL payload decoded at an nvtxDomainRangePushEx on `thread_id`
  // (CUPTI's thread id: pthread_self(), truncated) at `timestamp_ns`.
  void AddNcclPayload(uint32_t thread_id, uint64_t timestamp_ns, const NcclPayload& payload);
  // An API call timed from sightline's own callbacks instead of a CUPTI
  // record (a direct driver launch, e.g. cuBLAS's cuLaunchKernelEx, when the
  // driver kind is not traced): converted like a CUPTI API record, with the
  // stacks attached to its correlation id. `thread_id` as CUPTI's
  // (pthread_self(), truncated).
  void AddCallbackApi(ApiDomain domain, uint32_t cbid, uint64_t start_ns, uint64_t end_ns,
                      uint32_t correlation_id, uint32_t thread_id);
  // The API record with this correlation id gets this call stack id.
  void AttachStack(uint32_t correlation_id, uint32_t stack_id);
  // The API record with this correlation id gets this Python stack id
  // (ApiEvent.python_stack_id). At most kMaxPendingPythonStacks wait; past
  // that the waiting ones are dropped and counted.
  void AttachPythonStack(uint32_t correlation_id, uint32_t stack_id);
  static constexpr size_t kMaxPendingPythonStacks = 1 << 20;
  // A kernel launched while no kernel activity kind was enabled (measured in
  // place for metrics): `e` holds what the launch call gave (device,
  // context, stream, correlation id, grid, block, dynamic shared memory),
  // `name` its kernel's name. Written as KernelEvent::untraced (no
  // timestamps) once a traced launch of the same configuration (device,
  // name, grid, block, dynamic shared memory) gives the fields a launch call
  // does not carry; FlushUntracedKernels writes the ones waiting.
  //
  // `maybe_traced`: the kernel kind changed during its launch call, so
  // CUPTI may have a record of it after all: held until the end and dropped
  // when a traced kernel with its correlation id was converted (among the
  // last kRecentTraced, or any time after).
  void AddUntracedKernel(KernelEvent e, std::string_view name, bool maybe_traced = false);
  static constexpr size_t kRecentTraced = 1 << 16;
  // Writes the waiting untraced kernels whose configuration is now known;
  // `final`: all of them (the rest counted in untraced_without_template).
  void FlushUntracedKernels(bool final);
  // End of the trace: ranges still open are emitted ending at `end_ns` (they
  // were open when the capture ended) and counted in open_ranges_at_end.
  void CloseOpenRanges(uint64_t end_ns);

  const ConversionStats& stats() const { return stats_; }

 private:
  struct PendingRange {
    uint64_t start_ns = 0;
    uint32_t name_id = 0;
    uint32_t domain_id = 0;
    uint32_t thread_id = 0;
    bool is_nccl = false;         // a collective by its name
    bool is_nccl_domain = false;  // domain "NCCL"
    std::string nccl_name;        // range name, NCCL domain only
    NcclOp nccl_op = NcclOp::kUnknown;
  };
  struct CallbackPayload {
    uint64_t timestamp_ns = 0;
    NcclPayload payload;
  };
  struct MarkerData {
    uint32_t color = 0;
    uint32_t category = 0;
    PayloadKind payload_kind = PayloadKind::kNone;
    int64_t payload_int = 0;
    double payload_double = 0;
    bool has_nccl = false;        // decoded NCCL extended payload
    bool ext_undecoded = false;   // an extended payload we could not decode
    NcclPayload nccl;
  };

  void ConvertKernel(const CUpti_ActivityKernel10& k);
  void ConvertMemcpy(const CUpti_ActivityMemcpy6& m);
  void ConvertPeerMemcpy(const CUpti_ActivityMemcpyPtoP4& m);
  void ConvertMemset(const CUpti_ActivityMemset4& m);
  void ConvertSync(const CUpti_ActivitySynchronization2& s);
  void ConvertApi(const CUpti_ActivityAPI& a, ApiDomain domain);
  void ConvertMarker(const CUpti_ActivityMarker2& m);
  void ConvertMarkerData(const CUpti_ActivityMarkerData2& d);
  void ConvertOverhead(const CUpti_ActivityOverhead3& o);
  void ConvertGraph(const CUpti_ActivityGraphTrace2& g);
  void ConvertMemory(const CUpti_ActivityMemory4& m);
  void ConvertMemoryPool(const CUpti_ActivityMemoryPool3& m);
  bool ValidSpan(uint64_t start, uint64_t end);
  void EmitRange(const PendingRange& r, uint64_t end_ns, uint32_t end_thread, uint32_t marker_id);
  void EmitNccl(const PendingRange& r, uint64_t end_ns, const MarkerData* data);
  bool TakeCallbackPayload(const PendingRange& r, NcclPayload* out);
  void DropStaleCallbackPayloads(uint32_t thread, uint64_t before_ns);
  void Count(EventKind kind) { ++stats_.counts[static_cast<int>(kind)]; }
  uint32_t ApiNameId(ApiDomain domain, uint32_t cbid, bool* skip);

  EventSink* sink_;
  ConverterOptions options_;
  ApiNameFn api_name_;
  ReplayedFn replayed_fn_;
  ConversionStats stats_;
  std::unordered_set<std::string> api_skip_set_;
  // Per (domain, cbid): 0 unknown, 1 keep, 2 skip; and the interned name.
  std::unordered_map<uint64_t, std::pair<uint8_t, uint32_t>> api_names_;
  std::unordered_map<uint32_t, PendingRange> open_ranges_;  // by marker id
  std::unordered_map<uint32_t, MarkerData> marker_data_;    // by marker id
  std::vector<std::pair<NvtxMarkerEvent, uint32_t>> pending_instants_;  // + marker id
  std::unordered_map<uint32_t, uint32_t> stacks_;            // correlation → stack id
  std::unordered_map<uint32_t, uint32_t> python_stacks_;     // correlation → Python stack id
  std::unordered_map<uint32_t, uint32_t> context_device_;    // context → device
  // Untraced kernels: per configuration, a traced launch's record; the
  // untraced ones still waiting for theirs.
  struct ConfigKey {
    uint32_t device, name_id, gx, gy, gz, bx, by, bz, dynamic_shared;
    bool operator==(const ConfigKey& o) const {
      return device == o.device && name_id == o.name_id && gx == o.gx && gy == o.gy &&
             gz == o.gz && bx == o.bx && by == o.by && bz == o.bz &&
             dynamic_shared == o.dynamic_shared;
    }
  };
  struct ConfigKeyHash {
    size_t operator()(const ConfigKey& k) const {
      uint64_t h = 1469598103934665603ull;
      for (uint32_t v : {k.device, k.name_id, k.gx, k.gy, k.gz, k.bx, k.by, k.bz,
                         k.dynamic_shared}) {
        h = (h ^ v) * 1099511628211ull;
      }
      return static_cast<size_t>(h);
    }
  };
  static ConfigKey KeyOf(const KernelEvent& e) {
    return {e.device_id, e.name_id, e.grid_x, e.grid_y, e.grid_z,
            e.block_x,   e.block_y, e.block_z, e.dynamic_shared_bytes};
  }
  // The fields a launch call lacks, per traced configuration (at most
  // kMaxTracedConfigs; untraced kernels of later ones are written without).
  struct TracedFields {
    uint32_t registers_per_thread = 0, static_shared_bytes = 0, local_bytes_per_thread = 0,
             shared_memory_config_bytes = 0, launch_type = 0, cluster_x = 0, cluster_y = 0,
             cluster_z = 0, cache_config_requested = 0, cache_config_executed = 0, context_id = 0;
  };
  static constexpr size_t kMaxTracedConfigs = 1 << 16;
  void WriteUntraced(KernelEvent e, const TracedFields* traced);
  void RememberTraced(const KernelEvent& e);
  std::unordered_map<ConfigKey, TracedFields, ConfigKeyHash> traced_configs_;
  std::vector<KernelEvent> untraced_waiting_;
  std::unordered_map<uint32_t, KernelEvent> maybe_traced_;  // by correlation id
  std::unordered_set<uint32_t> recent_traced_;              // correlation ids
  std::deque<uint32_t> recent_traced_order_;
  // NVTX-callback NCCL payloads waiting for their range, per thread, in push order.
  std::unordered_map<uint32_t, std::deque<CallbackPayload>> nccl_callback_payloads_;
  size_t nccl_callback_pending_ = 0;
  // Communicator hash → (rank, nranks), from communicator payloads.
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> nccl_comms_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_RECORD_CONVERTER_H_
