// lib/collect/flight_recorder.cc — see flight_recorder.h.
#include "lib/collect/flight_recorder.h"

#include <utility>

namespace sightline::collect {

FlightRecorderSink::FlightRecorderSink(EventSink* out, uint64_t keep_ns, size_t max_bytes)
    : out_(out), keep_ns_(keep_ns), max_bytes_(max_bytes) {}

void FlightRecorderSink::Keep(Event e, uint64_t start, uint64_t end) {
  size_t bytes = sizeof(Held);
  if (const auto* m = std::get_if<MetricRangeEvent>(&e)) bytes += m->values.size() * sizeof(MetricValue);
  if (const auto* g = std::get_if<GpuMetricSamplesEvent>(&e)) {
    bytes += g->values.size() * sizeof(float) + g->num_samples() * 2 * sizeof(uint64_t) +
             g->metric_name_ids.size() * sizeof(uint32_t);
  }
  if (end > newest_end_ns_) newest_end_ns_ = end;
  ring_.push_back(Held{start, end, bytes, std::move(e)});
  stats_.held_bytes += bytes;
  // Oldest first out: by age behind the newest event, then by size. The ring
  // is in arrival order, which follows time closely but not exactly (a
  // buffer of kernel records may arrive after later API records, a long
  // range arrives at its end), so an event slightly out of order leaves
  // with its neighbours.
  while (!ring_.empty()) {
    const Held& front = ring_.front();
    bool old = keep_ns_ < newest_end_ns_ && front.end < newest_end_ns_ - keep_ns_;
    bool full = stats_.held_bytes > max_bytes_;
    if (!old && !full) break;
    ++(old ? stats_.discarded_by_age : stats_.discarded_by_size);
    stats_.held_bytes -= front.bytes;
    ring_.pop_front();
  }
  stats_.held = ring_.size();
}

void FlightRecorderSink::Write(const Event& e) {
  std::visit([this](const auto& x) { out_->Add(x); }, e);
}

uint64_t FlightRecorderSink::Open(uint64_t now_ns) {
  uint64_t oldest = 0;
  for (const Held& h : ring_) {
    if (oldest == 0 || h.start < oldest) oldest = h.start;
    Write(h.event);
  }
  if (oldest != 0 && now_ns > keep_ns_ && oldest < now_ns - keep_ns_) oldest = now_ns - keep_ns_;
  stats_.written_from_ring += ring_.size();
  ring_.clear();
  stats_.held = 0;
  stats_.held_bytes = 0;
  write_until_ns_ = std::numeric_limits<uint64_t>::max();
  return oldest;
}

void FlightRecorderSink::Close(uint64_t end_ns) { write_until_ns_ = end_ns; }

}  // namespace sightline::collect
