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
#ifndef SIGHTLINE_LIB_COLLECT_RECORD_CONVERTER_H_
#define SIGHTLINE_LIB_COLLECT_RECORD_CONVERTER_H_

#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/collect/event_sink.h"
#include "sightline/events.h"

namespace sightline::collect {

struct ConversionStats {
  uint64_t records = 0;
  uint64_t invalid_timestamps = 0;
  uint64_t unsupported_records = 0;
  uint64_t skipped_api_records = 0;  // filtered by the skip list (not a loss)
  uint64_t unmatched_range_ends = 0;
  uint64_t open_ranges_at_end = 0;
  uint64_t counts[kNumEventKinds] = {};
};

struct ConverterOptions {
  std::vector<std::string> api_skip;  // API names not to record
  bool nccl = true;                   // emit NcclEvent for NCCL kernels / NVTX ranges
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
  // The API record with this correlation id gets this call stack id.
  void AttachStack(uint32_t correlation_id, uint32_t stack_id);
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
    bool is_nccl = false;
    NcclOp nccl_op = NcclOp::kUnknown;
  };
  struct MarkerData {
    uint32_t color = 0;
    uint32_t category = 0;
    PayloadKind payload_kind = PayloadKind::kNone;
    int64_t payload_int = 0;
    double payload_double = 0;
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
  bool ValidSpan(uint64_t start, uint64_t end);
  void EmitRange(const PendingRange& r, uint64_t end_ns, uint32_t end_thread, uint32_t marker_id);
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
  std::unordered_map<uint32_t, uint32_t> context_device_;    // context → device
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_RECORD_CONVERTER_H_
