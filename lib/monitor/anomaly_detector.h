// lib/monitor/anomaly_detector.h — robust detectors for the monitor mode.
//
// Pure logic, no I/O, no clock: the monitor agent feeds them step times and
// NVML samples and acts on what they answer (count the anomaly, start a
// capture). Tested on the CPU with synthetic series.
//
//  * StepTimeDetector: a step is slow when it exceeds the rolling median of
//    the last `window` normal steps by `mad_k` robust standard deviations
//    (1.4826 x MAD, floored at `mad_floor_frac` of the median so a perfectly
//    steady loop does not fire on jitter) AND by `min_rel_increase` of the
//    median. `consecutive` slow steps in a row make an anomaly. Slow steps
//    never enter the baseline; after an anomaly the baseline restarts, so a
//    lasting slowdown fires once and then becomes the new normal.
//  * UtilizationDropDetector: GPU utilization (0..1) below the rolling median
//    of the last `window` samples by `min_drop` for `consecutive` samples.
//  * MemoryGrowthDetector: memory used above the lowest value of the last
//    `window` samples by `min_growth_frac` (and `min_growth_bytes`); fires once
//    per growth, then the baseline restarts.
// Thread-safety: none; one owner (the agent thread).
#ifndef SIGHTLINE_LIB_MONITOR_ANOMALY_DETECTOR_H_
#define SIGHTLINE_LIB_MONITOR_ANOMALY_DETECTOR_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace sightline::monitor {

struct Anomaly {
  std::string kind;     // "step_time", "utilization_drop", "memory_growth", "manual"
  std::string message;  // one line with the numbers
  double value = 0;     // the observation (s, ratio, bytes)
  double baseline = 0;  // the robust reference it was compared with
};

// Median of a copy (n log n is fine for windows of a few hundred).
double Median(std::vector<double> values);
// Median absolute deviation around `median`.
double MedianAbsoluteDeviation(const std::vector<double>& values, double median);

struct StepDetectorOptions {
  uint32_t window = 64;          // normal steps kept for the baseline
  uint32_t warmup = 16;          // steps needed before judging
  double mad_k = 5.0;            // robust z above which a step is slow
  double mad_floor_frac = 0.01;  // MAD floor, as a fraction of the median
  double min_rel_increase = 0.10;
  uint32_t consecutive = 5;      // slow steps in a row that make an anomaly
};

class StepTimeDetector {
 public:
  explicit StepTimeDetector(StepDetectorOptions options = {});
  // One step's duration in seconds. True (and *anomaly filled) when this step
  // completes an anomaly.
  bool Add(double seconds, Anomaly* anomaly);
  // Rolling median of the baseline (0 before the first step).
  double median() const { return median_; }
  uint64_t slow_run() const { return slow_run_; }

 private:
  StepDetectorOptions o_;
  std::deque<double> window_;
  double median_ = 0;
  uint32_t slow_run_ = 0;
  double slow_sum_ = 0;
};

struct UtilizationDetectorOptions {
  uint32_t window = 60;  // samples
  uint32_t warmup = 10;
  double min_drop = 0.25;  // absolute, in utilization ratio
  uint32_t consecutive = 3;
};

class UtilizationDropDetector {
 public:
  explicit UtilizationDropDetector(UtilizationDetectorOptions options = {});
  bool Add(double ratio, Anomaly* anomaly);

 private:
  UtilizationDetectorOptions o_;
  std::deque<double> window_;
  uint32_t low_run_ = 0;
};

struct MemoryDetectorOptions {
  uint32_t window = 120;  // samples
  uint32_t warmup = 10;
  double min_growth_frac = 0.10;
  double min_growth_bytes = 256.0 * 1024 * 1024;
};

class MemoryGrowthDetector {
 public:
  explicit MemoryGrowthDetector(MemoryDetectorOptions options = {});
  bool Add(double bytes, Anomaly* anomaly);

 private:
  MemoryDetectorOptions o_;
  std::deque<double> window_;
};

}  // namespace sightline::monitor

#endif  // SIGHTLINE_LIB_MONITOR_ANOMALY_DETECTOR_H_
