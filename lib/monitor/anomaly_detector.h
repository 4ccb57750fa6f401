// lib/monitor/anomaly_detector.h — robust detectors for the monitor mode.
//
// Pure logic, no I/O, no clock: the monitor agent feeds them step times and
// NVML samples and acts on what they answer (count the anomaly, start a
// capture). Tested on the CPU with synthetic series.
//
//  * StepTimeDetector: a sign test of the last `consecutive` steps (the
//    recent group) against the `window` steps before them (the baseline):
//    the group is slow when most of its steps pass a limit — 1 +
//    min_rel_increase, 1.25, 1.5 or 2 x the baseline's median, or its upper
//    quartile or decile x (1 + min_rel_increase) — and the binomial chance
//    of that many, if each passed with the 95 % upper bound (Clopper-
//    Pearson) of the baseline's own share over the limit, times the number
//    of limits, is below `p_value`. Distribution-free: the baseline's noise
//    shape (bimodal host-side steps of a GPU-bound loop, an exponential
//    tail) is what it compares with; one hiccup (a checkpoint, an eval
//    step) is never a majority. On simulated series (tests) it gave no
//    false alarm in 200 000 steps (3 seeds x 66 666) per noise shape. Blind spot: a series whose
//    steps alternate periodically between short and long (a long step every
//    few steps) slowed down uniformly, when most single steps stay under
//    every limit; a test of group means was tried and raised false alarms
//    on random long steps, whose runs 64 steps cannot bound. A step enters
//    the baseline when it leaves the recent group. A level that moves (an
//    anomaly; a group significantly *faster* than the baseline, by the
//    mirrored test, which is no anomaly; Restart() after a capture)
//    re-levels the baseline instead of forgetting it: its steps keep their
//    noise shape around the new level (Relevel()), so a lasting slowdown
//    fires once and then is the new normal, and the next change is judged
//    from the next group on, not after a new warm-up (in a 10-minute H200
//    run a slowdown 20 steps after a capture had cleared the baseline was
//    learnt as normal). The baseline needs `warmup` steps (judging starts
//    after warmup + consecutive steps).
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
  double p_value = 1e-5;         // chance under the baseline's noise, below which it fires
  double min_rel_increase = 0.10;
  uint32_t consecutive = 8;      // recent steps judged together (the recent group)
};

class StepTimeDetector {
 public:
  explicit StepTimeDetector(StepDetectorOptions options = {});
  // One step's duration in seconds. True (and *anomaly filled) when this step
  // completes an anomaly.
  bool Add(double seconds, Anomaly* anomaly);
  // Forgets the level, not the noise shape: the steps from now on are a new
  // normal (after a capture, which leaves the process slower by the
  // profiler's doing). The next group of steps sets the level, the
  // baseline's steps are re-levelled to it, and judging resumes with the
  // group after. Without a full baseline (fewer than `warmup` steps),
  // forgets it all: judged again after `warmup` steps and a group.
  void Restart();
  // Rolling median of the baseline (0 before the first step).
  double median() const { return median_; }
  // The baseline holds its `warmup` steps: median() is the baseline's, not
  // that of the first few (start-up) steps.
  bool has_baseline() const { return window_.size() >= o_.warmup; }
  // Steps judged together: `consecutive`, raised to the smallest group that
  // can be unlikely enough under `p_value` (5 at the defaults).
  uint32_t group_steps() const { return o_.consecutive; }
  // The baseline's share of steps above median x (1 + min_rel_increase):
  // how noisy it is at the smallest slowdown judged (0 before judging).
  double exceed_share() const { return exceed_share_; }

 private:
  StepDetectorOptions o_;
  std::deque<double> window_;  // baseline
  std::deque<double> recent_;  // the last `consecutive` steps, not yet in the baseline
  double median_ = 0;  // median step of the baseline
  double exceed_share_ = 0;
  bool leveling_ = false;  // after Restart(): recent_ collects the new level's group
  // The baseline re-levelled to `level`, then `steps` appended (the oldest
  // re-levelled ones leave first).
  void RelevelTo(double level, const std::deque<double>& steps);
};

// `values` (a baseline whose median is `from`) moved to the median `to`:
// each value's distance from the median is kept, scaled by to / from when
// the level rises (noise that grows with the step), never narrowed when it
// falls (a narrower spread would make normal steps look anomalous); never
// below 0.
std::vector<double> Relevel(const std::vector<double>& values, double from, double to);

// P(X >= k) for X ~ Binomial(n, p).
double BinomialTail(uint32_t n, uint32_t k, double p);
// Clopper-Pearson upper bound of p after x successes in n trials.
double BinomialUpperBound(uint32_t n, uint32_t x, double confidence);

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
