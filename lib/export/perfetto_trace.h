// lib/export/perfetto_trace.h — streams a .sltrace into a Perfetto protobuf
// trace (perfetto.protos.Trace: a sequence of TracePacket), encoded by our own
// writer; the subset of Perfetto's schema we use is written down, with
// Perfetto's field numbers, in lib/export/perfetto/perfetto_trace_subset.proto.
//
// What the Perfetto UI shows: one process track per traced process
// (ProcessDescriptor: pid, command line), a thread track per CPU thread
// (ThreadDescriptor) with its CUDA API calls, an "NVTX" child track per thread,
// one track per (GPU, CUDA stream) with kernels / memcpys / memsets, per-GPU
// synchronization, NCCL and metric-range tracks, a "sightline" track with
// capture windows, steps and profiler overhead, and a "lost records" counter.
// Slices are SLICE_BEGIN/SLICE_END TrackEvents on one packet sequence;
// event names, categories and argument names are interned (InternedData,
// emitted once, in the packet that first uses them); kernel arguments (grid,
// block, registers, shared memory, correlation id) are debug annotations.
// Launch -> GPU-work arrows use flow ids: (pid << 32 | correlation id) on the
// launching API slices, as a terminating flow id on the GPU slice.
//
// Memory: the current chunk, one packet buffer, the track table and the set of
// interned ids already emitted (bounded by the trace's string table).
#ifndef SIGHTLINE_LIB_EXPORT_PERFETTO_TRACE_H_
#define SIGHTLINE_LIB_EXPORT_PERFETTO_TRACE_H_

#include "absl/status/statusor.h"
#include "lib/export/chrome_trace.h"  // ExportOptions, ExportStats
#include "lib/export/output_file.h"
#include "lib/trace/reader.h"

namespace sightline::exporter {

absl::StatusOr<ExportStats> ExportPerfettoTrace(trace::TraceReader& reader, OutputFile& out,
                                                const ExportOptions& options = {});

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_PERFETTO_TRACE_H_
