// lib/trace/chunk_decoder.h — decodes frame payloads (TraceHeader, Chunk,
// Footer) of trace.proto by hand into the structs of lib/trace/events.h and
// lib/trace/trace_header.h. Internal to lib/trace (used by TraceReader).
//
// Zero-copy over the payload: events are decoded one at a time into reusable
// structs and handed to the visitor, so a chunk is never materialised.
// Robustness: every length is checked against the bytes present (WireReader);
// unknown fields of any wire type are skipped; a known field with an
// unexpected wire type is skipped like an unknown one (as protobuf does);
// repeated fields grow only with the input. On malformed input the decoder
// stops and reports the payload offset and what was wrong.
#ifndef SIGHTLINE_LIB_TRACE_CHUNK_DECODER_H_
#define SIGHTLINE_LIB_TRACE_CHUNK_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/trace/reader.h"
#include "lib/trace/events.h"
#include "lib/trace/trace_header.h"

namespace sightline::trace::internal {

struct DecodeError {
  size_t offset = 0;        // within the payload
  const char* what = "";    // static text, e.g. "malformed event"
};

bool DecodeHeader(std::string_view payload, TraceHeaderData* out, DecodeError* error);
bool DecodeFooter(std::string_view payload, FooterData* out, DecodeError* error);

// What one chunk contributed (added to the reader's Integrity).
struct ChunkStats {
  uint64_t sequence = 0;
  uint64_t events = 0;
  std::array<uint64_t, kNumEventKinds> counts{};
  uint64_t invalid_events = 0;  // end < start
  uint64_t first_ns = UINT64_MAX;
  uint64_t last_ns = 0;
  uint64_t string_conflicts = 0;  // an id redefined with a different value
  uint64_t stacks_over_limit = 0;  // call stacks ignored: too many in the trace
  bool has_last_loss = false;
  LossReport last_loss;
};

class ChunkDecoder {
 public:
  // Decodes one Chunk payload: defines its strings and stacks, then visits
  // its events in order. Returns false (with *error) on malformed input;
  // events before the malformed one have been visited.
  bool Decode(std::string_view payload, StringTable* strings,
              std::unordered_map<uint32_t, CallStack>* stacks, EventVisitor& visitor,
              ChunkStats* stats, DecodeError* error);

 private:
  // Reusable per-kind structs (MetricRangeEvent keeps its vector capacity).
  KernelEvent kernel_;
  MemcpyEvent memcpy_;
  MemsetEvent memset_;
  MemoryEvent memory_;
  SyncEvent sync_;
  ApiEvent api_;
  NvtxRangeEvent nvtx_range_;
  NvtxMarkerEvent nvtx_marker_;
  NcclEvent nccl_;
  MetricRangeEvent metric_range_;
  GpuMetricSamplesEvent gpu_metrics_;
  std::vector<uint64_t> gpu_durations_;  // decoded field 4, until the event is complete
  CaptureWindowEvent capture_window_;
  OverheadEvent overhead_;
  StepEvent step_;
  LossReport loss_;

  bool DecodePayload(uint32_t field, std::string_view bytes, bool reset);
  void Dispatch(uint32_t field, uint64_t start, uint64_t duration, EventVisitor& visitor,
                ChunkStats* stats);
};

}  // namespace sightline::trace::internal

#endif  // SIGHTLINE_LIB_TRACE_CHUNK_DECODER_H_
