// lib/collect/flight_recorder.h — the flight recorder of monitor mode
// (`sightline monitor --flight-recorder SECONDS`, issue 15).
//
// CUPTI stays on for the whole run, but converted events are not written:
// they wait in memory, those that ended in the last `keep_ns` (by their own
// timestamps; at most `max_bytes`), and older ones are discarded as newer
// ones arrive.
// When a capture opens (an anomaly, `sightline trigger`, SIGUSR2) the ring is
// written out oldest first and every later event goes to the trace, so the
// capture holds the lead-up to its trigger; when it closes at time T, events
// of T or earlier (records CUPTI delivers late) are still written, later ones
// go to the ring again.
//
// Strings and call stacks are interned through to the trace at once (ids
// stay valid across the ring; a definition written for an event that was
// then discarded costs a few bytes). Loss reports and capture windows are
// written at once. Used from one thread (the collector's writer thread).
#ifndef SIGHTLINE_LIB_COLLECT_FLIGHT_RECORDER_H_
#define SIGHTLINE_LIB_COLLECT_FLIGHT_RECORDER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <variant>

#include "lib/collect/event_sink.h"

namespace sightline::collect {

struct FlightRecorderStats {
  uint64_t discarded_by_age = 0;   // ended keep_ns or more before the newest event
  uint64_t discarded_by_size = 0;  // the ring was at max_bytes
  uint64_t written_from_ring = 0;  // events written out of the ring at Open()
  size_t held = 0;                 // events in the ring now
  size_t held_bytes = 0;           // their approximate size in memory
};

class FlightRecorderSink final : public EventSink {
 public:
  // `out` (not owned) receives what is written.
  FlightRecorderSink(EventSink* out, uint64_t keep_ns, size_t max_bytes);

  // A capture opens at `now_ns`: the ring is written to `out`, oldest first,
  // and every event until Close goes straight to `out`. Returns where the
  // capture's window starts: the oldest event written from the ring, but not
  // before now_ns - keep_ns (an hour-long range that ended just before the
  // trigger does not stretch the window); 0 when the ring was empty.
  uint64_t Open(uint64_t now_ns);
  // The capture closed at `end_ns`: events with timestamps up to it are
  // still written; later ones are kept in the ring.
  void Close(uint64_t end_ns);
  bool open() const { return write_until_ns_ == std::numeric_limits<uint64_t>::max(); }

  const FlightRecorderStats& stats() const { return stats_; }

  uint32_t Intern(std::string_view s) override { return out_->Intern(s); }
  uint32_t InternStack(const CallStack& stack) override { return out_->InternStack(stack); }
  void Add(const KernelEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const MemcpyEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const MemsetEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const MemoryEvent& e) override { Route(e, e.timestamp_ns, e.timestamp_ns); }
  void Add(const SyncEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const ApiEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const NvtxRangeEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const NvtxMarkerEvent& e) override { Route(e, e.timestamp_ns, e.timestamp_ns); }
  void Add(const NcclEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const MetricRangeEvent& e) override {
    Route(e, e.start_ns != 0 ? e.start_ns : e.end_ns, e.end_ns);
  }
  void Add(const GpuMetricSamplesEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const CaptureWindowEvent& e) override { out_->Add(e); }
  void Add(const OverheadEvent& e) override { Route(e, e.start_ns, e.end_ns); }
  void Add(const StepEvent& e) override { Route(e, e.timestamp_ns, e.timestamp_ns); }
  void Add(const LossReport& e) override { out_->Add(e); }

 private:
  using Event = std::variant<KernelEvent, MemcpyEvent, MemsetEvent, MemoryEvent, SyncEvent, ApiEvent,
                             NvtxRangeEvent, NvtxMarkerEvent, NcclEvent, MetricRangeEvent,
                             GpuMetricSamplesEvent, OverheadEvent, StepEvent>;
  // An event is written after a close when it started by then, and leaves
  // the ring when it ended more than keep_ns before the newest end (a long
  // range that ends inside the lead-up stays).
  struct Held {
    uint64_t start = 0;
    uint64_t end = 0;
    size_t bytes = 0;
    Event event;
  };

  template <typename E>
  void Route(const E& e, uint64_t start, uint64_t end) {
    if (start <= write_until_ns_) {
      out_->Add(e);
      return;
    }
    Keep(Event(e), start, end < start ? start : end);
  }
  void Keep(Event e, uint64_t start, uint64_t end);
  void Write(const Event& e);

  EventSink* out_;
  uint64_t keep_ns_;
  size_t max_bytes_;
  uint64_t write_until_ns_ = 0;  // events at or before it are written; max() = open
  uint64_t newest_end_ns_ = 0;
  std::deque<Held> ring_;
  FlightRecorderStats stats_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_FLIGHT_RECORDER_H_
