// lib/collect/pm_spans.h — PM sampling's batches of samples and the
// recording spans (capture windows) that decide which samples are kept. No
// CUPTI: the collector's CPU tests link it (pm_sampler.h is the CUPTI side).
#ifndef SIGHTLINE_LIB_COLLECT_PM_SPANS_H_
#define SIGHTLINE_LIB_COLLECT_PM_SPANS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lib/trace/events.h"

namespace sightline::collect {

// One batch of consecutive samples of a device: the trace event without its
// metric_name_ids and span, which the writer thread fills (it interns
// `metric_names`, shared by every batch of the device).
struct PmSampleBatch {
  std::shared_ptr<const std::vector<std::string>> metric_names;
  GpuMetricSamplesEvent event;
};

// The recording spans (capture windows) in CUPTI timestamps, and the filter
// that keeps the samples inside them. Thread-safe; a leaf lock.
class RecordingSpans {
 public:
  struct GapState {  // one device's previous kept sample
    uint64_t last_end = 0;
    size_t span = SIZE_MAX;
  };
  void Open(uint64_t now_ns);   // no-op while one is open
  void Close(uint64_t now_ns);  // no-op while none is open
  // Whether [start, end] overlaps a span.
  bool Overlaps(uint64_t start, uint64_t end) const;
  // Drops the samples of `batch` that overlap no span; returns the samples
  // missing between consecutive kept samples of one span.
  uint64_t Filter(PmSampleBatch* batch, GapState* state) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<uint64_t, uint64_t>> spans_;  // [start, end]; end open: UINT64_MAX
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_PM_SPANS_H_
