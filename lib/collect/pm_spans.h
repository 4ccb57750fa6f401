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

namespace sightline::collect {

// One batch of consecutive samples of a device, metric names as strings (the
// writer thread interns them).
struct PmSampleBatch {
  uint32_t device_id = 0;
  uint32_t interval_ns = 0;
  std::shared_ptr<const std::vector<std::string>> metric_names;
  std::vector<uint64_t> start_ns;
  std::vector<uint64_t> end_ns;
  std::vector<float> values;  // row-major: sample × metric
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
