// lib/monitor/anomaly_detector.cc — see anomaly_detector.h.
#include "lib/monitor/anomaly_detector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sightline::monitor {
namespace {

std::string Format(const char* fmt, double a, double b, double c) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c);
  return buf;
}
std::string Format(const char* fmt, double a, double b) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b);
  return buf;
}

}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + static_cast<long>(mid));
  return (lower + upper) / 2;
}

double MedianAbsoluteDeviation(const std::vector<double>& values, double median) {
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double v : values) dev.push_back(std::fabs(v - median));
  return Median(std::move(dev));
}

StepTimeDetector::StepTimeDetector(StepDetectorOptions options) : o_(options) {
  if (o_.window < 3) o_.window = 3;
  if (o_.warmup < 3) o_.warmup = 3;
  if (o_.warmup > o_.window) o_.warmup = o_.window;
  if (o_.consecutive < 1) o_.consecutive = 1;
}

bool StepTimeDetector::Add(double seconds, Anomaly* anomaly) {
  if (!std::isfinite(seconds) || seconds < 0) return false;
  if (window_.size() >= o_.warmup) {
    std::vector<double> base(window_.begin(), window_.end());
    double median = Median(base);
    double sigma = std::max(1.4826 * MedianAbsoluteDeviation(base, median),
                            o_.mad_floor_frac * median);
    bool slow = sigma > 0 && (seconds - median) / sigma > o_.mad_k &&
                seconds > median * (1 + o_.min_rel_increase);
    if (slow) {
      ++slow_run_;
      slow_sum_ += seconds;
      if (slow_run_ >= o_.consecutive) {
        double mean_slow = slow_sum_ / slow_run_;
        if (anomaly != nullptr) {
          anomaly->kind = "step_time";
          anomaly->value = mean_slow;
          anomaly->baseline = median;
          anomaly->message =
              Format("step time %.3f ms over the last %.0f steps vs a rolling median of %.3f ms",
                     mean_slow * 1e3, static_cast<double>(slow_run_), median * 1e3) +
              Format(" (+%.0f%%, robust z %.1f)", (mean_slow / median - 1) * 100,
                     (mean_slow - median) / sigma);
        }
        window_.clear();  // the new level becomes the baseline from now on
        slow_run_ = 0;
        slow_sum_ = 0;
        median_ = seconds;
        return true;
      }
      return false;
    }
    slow_run_ = 0;
    slow_sum_ = 0;
  }
  window_.push_back(seconds);
  if (window_.size() > o_.window) window_.pop_front();
  median_ = Median(std::vector<double>(window_.begin(), window_.end()));
  return false;
}

UtilizationDropDetector::UtilizationDropDetector(UtilizationDetectorOptions options)
    : o_(options) {
  if (o_.warmup < 3) o_.warmup = 3;
  if (o_.window < o_.warmup) o_.window = o_.warmup;
  if (o_.consecutive < 1) o_.consecutive = 1;
}

bool UtilizationDropDetector::Add(double ratio, Anomaly* anomaly) {
  if (!std::isfinite(ratio)) return false;
  if (window_.size() >= o_.warmup) {
    double median = Median(std::vector<double>(window_.begin(), window_.end()));
    if (ratio < median - o_.min_drop) {
      if (++low_run_ >= o_.consecutive) {
        if (anomaly != nullptr) {
          anomaly->kind = "utilization_drop";
          anomaly->value = ratio;
          anomaly->baseline = median;
          anomaly->message = Format(
              "GPU utilization %.0f%% for %.0f samples vs a rolling median of %.0f%%",
              ratio * 100, static_cast<double>(low_run_), median * 100);
        }
        window_.clear();
        low_run_ = 0;
        return true;
      }
      return false;
    }
    low_run_ = 0;
  }
  window_.push_back(ratio);
  if (window_.size() > o_.window) window_.pop_front();
  return false;
}

MemoryGrowthDetector::MemoryGrowthDetector(MemoryDetectorOptions options) : o_(options) {
  if (o_.warmup < 2) o_.warmup = 2;
  if (o_.window < o_.warmup) o_.window = o_.warmup;
}

bool MemoryGrowthDetector::Add(double bytes, Anomaly* anomaly) {
  if (!std::isfinite(bytes) || bytes < 0) return false;
  window_.push_back(bytes);
  if (window_.size() > o_.window) window_.pop_front();
  if (window_.size() < o_.warmup) return false;
  double low = *std::min_element(window_.begin(), window_.end());
  double growth = bytes - low;
  if (growth > o_.min_growth_bytes && growth > o_.min_growth_frac * low) {
    if (anomaly != nullptr) {
      anomaly->kind = "memory_growth";
      anomaly->value = bytes;
      anomaly->baseline = low;
      anomaly->message = Format("GPU memory used grew to %.1f MiB from %.1f MiB (+%.0f%%)",
                                bytes / 1048576.0, low / 1048576.0,
                                low > 0 ? growth / low * 100 : 100.0);
    }
    window_.clear();
    window_.push_back(bytes);
    return true;
  }
  return false;
}

}  // namespace sightline::monitor
