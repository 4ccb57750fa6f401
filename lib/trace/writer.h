// lib/trace/writer.h — streams events into framed, CRC-checked chunks.
//
// Single-threaded: one TraceWriter is owned by one thread (the collector's
// writer thread). Events are encoded straight into the current chunk's buffer
// (no per-event allocation); when the buffer passes `chunk_bytes` the chunk is
// framed and written to the sink with one Write() call. Strings and call stacks
// are interned per trace: the first use of a string puts its definition into
// the current chunk, ahead of the events of that chunk.
//
// Depends on libc only (no abseil/protobuf): safe inside the injected library.
#ifndef SIGHTLINE_LIB_TRACE_WRITER_H_
#define SIGHTLINE_LIB_TRACE_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lib/trace/events.h"
#include "lib/trace/trace_header.h"
#include "lib/trace/sink.h"

namespace sightline::trace {

struct WriterOptions {
  // A chunk is emitted once its encoded size passes this many bytes.
  size_t chunk_bytes = 1 << 20;
};

class TraceWriter {
 public:
  TraceWriter(std::unique_ptr<Sink> sink, const WriterOptions& options = {});
  ~TraceWriter();  // Finish("destroyed") if not finished
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Writes the preamble and the header frame. Must be called first, once.
  bool Begin(const TraceHeaderData& header);

  // Interned id (>= 1) for `s`; the empty string is id 0. Strings longer than
  // 1 MiB are truncated. The definition goes into the current chunk (or, if
  // it would overflow a non-empty chunk, the next one), so it always precedes
  // the events that use it. Ids stay valid for the whole trace, except after
  // a failed chunk write: its definitions are lost and later Intern calls
  // define the strings again under new ids.
  uint32_t Intern(std::string_view s);
  // Interned id (>= 1) for a call stack (equal frame lists share one id).
  uint32_t InternStack(const CallStack& stack);

  void Add(const KernelEvent& e);
  void Add(const MemcpyEvent& e);
  void Add(const MemsetEvent& e);
  void Add(const MemoryEvent& e);
  void Add(const SyncEvent& e);
  void Add(const ApiEvent& e);
  void Add(const NvtxRangeEvent& e);
  void Add(const NvtxMarkerEvent& e);
  void Add(const NcclEvent& e);
  void Add(const MetricRangeEvent& e);
  // Over kMaxGpuMetricSamples samples or kMaxGpuMetrics metrics, or arrays
  // that disagree: not written, counted as lost.
  void Add(const GpuMetricSamplesEvent& e);
  void Add(const CaptureWindowEvent& e);
  void Add(const OverheadEvent& e);
  void Add(const StepEvent& e);
  // Loss counters are cumulative; the footer carries the last report merged
  // with the writer's own write errors (write_errors += events of chunks the
  // sink refused).
  void Add(const LossReport& e);
  // Timestamps: any uint64 start/end pair round-trips exactly (deltas and
  // durations are taken modulo 2^64; readers count end < start as invalid).
  // Add/Intern after Finish() are ignored.

  // Emits the current chunk if it holds anything. Returns false on sink error
  // (the chunk's events are then counted as lost in LossReport::write_errors).
  bool Flush();
  // Flush, write the footer, close the sink. Idempotent.
  bool Finish(std::string_view end_reason);

  const FooterData& totals() const { return totals_; }
  uint64_t bytes_written() const { return bytes_written_; }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  FooterData totals_;
  uint64_t bytes_written_ = 0;
  std::string error_;
};

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_WRITER_H_
