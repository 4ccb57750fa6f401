// lib/trace/reader.h — reads .sltrace files chunk by chunk.
//
// Never crashes, never trusts a length beyond what the input holds, never
// materialises the whole trace: events are decoded one chunk at a time and
// handed to an EventVisitor. A file whose writer died is read up to its last
// complete frame and the damage is described in Integrity.
//
// Files are read with pread() into one reusable buffer (not mmap), so a file
// that shrinks while being read (rewritten, truncated by another process, a
// network filesystem) gives the result of a file truncated at that point
// plus a problem naming the file and the offset, never a SIGBUS. Memory:
// O(read_block_bytes + largest frame), frames being at most
// kMaxFramePayload (format.h) bytes.
//
// Errors that make a file unreadable (missing, not a trace, newer format,
// damaged header) come back as absl::Status naming the file, the byte offset
// and the problem.
#ifndef SIGHTLINE_LIB_TRACE_READER_H_
#define SIGHTLINE_LIB_TRACE_READER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/trace/events.h"
#include "lib/trace/trace_header.h"

namespace sightline::trace {

namespace internal {
class InputWindow;
}  // namespace internal

// Receives decoded events. Default implementations ignore the event.
class EventVisitor {
 public:
  virtual ~EventVisitor() = default;
  virtual void OnKernel(const KernelEvent&) {}
  virtual void OnMemcpy(const MemcpyEvent&) {}
  virtual void OnMemset(const MemsetEvent&) {}
  virtual void OnMemory(const MemoryEvent&) {}
  virtual void OnSync(const SyncEvent&) {}
  virtual void OnApi(const ApiEvent&) {}
  virtual void OnNvtxRange(const NvtxRangeEvent&) {}
  virtual void OnNvtxMarker(const NvtxMarkerEvent&) {}
  virtual void OnNccl(const NcclEvent&) {}
  virtual void OnMetricRange(const MetricRangeEvent&) {}
  virtual void OnGpuMetrics(const GpuMetricSamplesEvent&) {}
  virtual void OnCaptureWindow(const CaptureWindowEvent&) {}
  virtual void OnOverhead(const OverheadEvent&) {}
  virtual void OnStep(const StepEvent&) {}
  virtual void OnLoss(const LossReport&) {}
};

// Interned strings of one trace, id → text. Unknown ids (e.g. defined in a
// damaged chunk) resolve to "<unknown string N>" (the first 4096 distinct
// ones; after that to "<unknown string>").
//
// A view of a defined string stays valid until the next Set() (the reader
// calls it only between chunks, never while a visitor holds an event); a view
// of an unknown id's text stays valid as long as the table.
//
// Memory grows with the definitions only: ids are stored densely while they
// stay close to the number of definitions seen (the normal case: 1, 2, 3...)
// and in a hash map otherwise, so a hostile id of 4e9 costs one entry.
class StringTable {
 public:
  std::string_view Get(uint32_t id) const;
  bool Has(uint32_t id) const;
  // Defines (or redefines) `id`. Id 0 is always the empty string.
  void Set(uint32_t id, std::string value);
  // One past the largest densely stored id (>= 1).
  size_t size() const { return strings_.size(); }
  // Number of ids defined (id 0 excluded).
  size_t defined_count() const { return defined_count_; }

 private:
  std::vector<std::string> strings_{std::string()};
  std::vector<bool> defined_{true};
  std::unordered_map<uint32_t, std::string> sparse_;
  size_t defined_count_ = 0;
  // Texts handed out for unknown ids, stable for the table's life (a later
  // Get must not move what an earlier view points at). Bounded.
  static constexpr size_t kMaxUnknownTexts = 4096;
  mutable std::unordered_map<uint32_t, std::string> unknown_;
};

struct Integrity {
  bool complete = false;        // footer read and no damage anywhere
  std::string reason;           // why not complete, e.g. "truncated at byte 81234: ..."
  // Size of the input: of the file when opened, or, if it shrank while being
  // read, the bytes that were still there.
  uint64_t file_bytes = 0;
  uint64_t bytes_accepted = 0;  // bytes of preamble + valid frames
  uint64_t chunks_read = 0;
  uint64_t chunks_damaged = 0;  // CRC mismatch / undecodable, skipped
  uint64_t bytes_skipped = 0;   // damaged or unparseable bytes skipped
  uint64_t events_read = 0;
  std::array<uint64_t, kNumEventKinds> counts{};  // events read, by kind
  uint64_t invalid_events = 0;  // decoded events with end < start (kept, counted)
  // Span of the events read (ns, collector clock); 0 when no timed event.
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  bool truncated = false;       // the file ends inside a frame (writer killed mid-write)
  // The file got shorter while being read (rewritten or truncated by another
  // process): read as if truncated there; a problem names the offsets.
  bool shrank = false;
  uint64_t chunks_missing = 0;  // gaps in the chunk sequence numbers
  std::optional<FooterData> footer;
  // Footer's losses when present; else the last LossReport event seen.
  LossReport losses;
  // Events the footer says were written but that were not read (damage).
  uint64_t events_missing = 0;
  std::vector<std::string> problems;  // one line per damage found, with offsets
  // Work spent (for tests of the resync bound): bytes whose CRC was
  // computed, and of those, bytes of frames that failed it. Resync after
  // damage keeps crc_bytes under ~6x the file's size whatever the input
  // (see ReadFrame in reader.cc).
  uint64_t crc_bytes = 0;
  uint64_t crc_failed_bytes = 0;
  uint64_t frames_unverified = 0;  // candidates after damage skipped without a CRC
  uint64_t input_window_bytes = 0;  // bytes read or moved into the read window (file input)
};

struct ReaderOptions {
  // Skip damaged frames and resynchronise on the next frame magic (default),
  // or stop at the first damage.
  bool resync = true;
  // Open(): bytes read ahead per pread() (clamped to [64 B, 64 MiB]); a frame
  // larger than this is read whole. Tests use small values to exercise
  // frames that straddle reads.
  size_t read_block_bytes = size_t{4} << 20;
};

class TraceReader {
 public:
  // Opens a file: reads the preamble and header frame.
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path,
                                                           const ReaderOptions& options = {});
  // Reads from memory; `name` is used in messages. `data` must outlive the reader.
  static absl::StatusOr<std::unique_ptr<TraceReader>> FromBuffer(std::string name,
                                                                 std::string_view data,
                                                                 const ReaderOptions& options = {});
  ~TraceReader();

  const std::string& name() const;
  const TraceHeaderData& header() const;
  const StringTable& strings() const;
  // nullptr for unknown ids.
  const CallStack* stack(uint32_t id) const;

  // Decodes the next chunk and dispatches its events in file order. Returns
  // false once no more frames remain (then integrity() is final). An error
  // Status only for I/O failures (a failed read: DataLoss naming the file and
  // the offset); damage, including a file that shrank while being read, is
  // recorded in integrity() instead (or returned as DataLoss when
  // options.resync is false).
  absl::StatusOr<bool> NextChunk(EventVisitor& visitor);
  // NextChunk until the end.
  absl::Status ReadAll(EventVisitor& visitor);

  const Integrity& integrity() const;
  // Bytes consumed so far / total, for progress display.
  uint64_t position() const;

 private:
  struct Impl;
  explicit TraceReader(std::unique_ptr<Impl> impl);
  static absl::StatusOr<std::unique_ptr<TraceReader>> FromInput(
      std::string name, std::unique_ptr<internal::InputWindow> input,
      const ReaderOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_READER_H_
