// lib/export/chrome_trace.h — streams a .sltrace into Chrome trace-event JSON
// (the format of chrome://tracing, Perfetto UI's JSON importer and Kineto).
//
// Layout (see timeline_tracks.h): one pid per traced process, one tid per CUDA
// stream, CPU threads with their API calls ("X" slices) and NVTX ranges
// (push/pop ranges as slices on the thread, start/end ranges as async "b"/"e"
// pairs, markers as instants), flow arrows ("s" -> "f", bp "e") from each
// launching API call to the GPU work it caused, matched by correlation id.
// Timestamps are microseconds with three decimals relative to the trace's
// clock-mapping instant (TraceHeader.clock.trace_ns), or to the first event
// when the header has none; "otherData.time_origin_realtime_ns" gives the
// wall-clock time of ts 0.
//
// Memory: one chunk's events at a time (the reader's), the track table, and a
// bounded correlation map for flows whose two ends arrive in different
// chunks: at most `max_pending_flows` launch calls and as many GPU records
// waiting for their launch; the oldest entries are evicted first and counted
// in ExportStats::flows_unmatched. Nothing else grows with the trace.
#ifndef SIGHTLINE_LIB_EXPORT_CHROME_TRACE_H_
#define SIGHTLINE_LIB_EXPORT_CHROME_TRACE_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "lib/export/output_file.h"
#include "lib/trace/reader.h"

namespace sightline::exporter {

struct ExportOptions {
  // Bound of each correlation map used to pair launches with GPU work.
  size_t max_pending_flows = size_t{1} << 18;
  // Called after each chunk with reader.position() (progress display).
  std::function<void(uint64_t bytes_read)> on_chunk;
};

struct ExportStats {
  uint64_t events_read = 0;      // events decoded from the trace
  uint64_t events_written = 0;   // timeline events emitted (slices, instants, counters)
  uint64_t flows = 0;            // launch -> GPU-work arrows emitted
  uint64_t flows_unmatched = 0;  // GPU records whose launch was never seen or was evicted
  uint64_t events_skipped = 0;   // events with no place on a timeline (no timestamps)
  uint64_t tracks = 0;
  uint64_t bytes_written = 0;
};

// Reads every remaining chunk of `reader` and writes the JSON to `out` (which
// the caller closes). Errors: I/O errors of the reader.
absl::StatusOr<ExportStats> ExportChromeTrace(trace::TraceReader& reader, OutputFile& out,
                                              const ExportOptions& options = {});

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_CHROME_TRACE_H_
