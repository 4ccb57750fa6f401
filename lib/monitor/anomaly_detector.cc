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

void StepTimeDetector::Reset() {
  window_.clear();
  recent_.clear();
  median_ = 0;
  exceed_share_ = 0;
}

double BinomialTail(uint32_t n, uint32_t k, double p) {
  if (k == 0) return 1;
  if (k > n) return 0;
  p = std::clamp(p, 0.0, 1.0);
  double tail = 0;
  for (uint32_t j = k; j <= n; ++j) {
    // C(n, j) p^j (1-p)^(n-j) in logs (n is a few dozen at most).
    double log_term = std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(n - j + 1.0);
    if (p > 0) log_term += j * std::log(p);
    else if (j > 0) continue;
    if (p < 1) log_term += (n - j) * std::log1p(-p);
    else if (n > j) continue;
    tail += std::exp(log_term);
  }
  return std::min(tail, 1.0);
}

bool StepTimeDetector::Add(double seconds, Anomaly* anomaly) {
  if (!std::isfinite(seconds) || seconds < 0) return false;
  const uint32_t k = o_.consecutive;
  recent_.push_back(seconds);
  if (recent_.size() > k) {
    window_.push_back(recent_.front());
    recent_.pop_front();
    if (window_.size() > o_.window) window_.pop_front();
    median_ = Median(std::vector<double>(window_.begin(), window_.end()));
  } else if (window_.empty()) {
    median_ = Median(std::vector<double>(recent_.begin(), recent_.end()));
  }
  if (window_.size() < o_.warmup || recent_.size() < k || median_ <= 0) return false;
  // Limits from the smallest slowdown judged up; more limits, more tests
  // (Bonferroni).
  std::vector<double> factors = {1 + o_.min_rel_increase};
  for (double f : {1.25, 1.5, 2.0}) {
    if (f > factors.back()) factors.push_back(f);
  }
  const double n = static_cast<double>(window_.size());
  double best_p = 2;
  uint32_t best_count = 0;
  double best_share = 0;
  for (size_t i = 0; i < factors.size(); ++i) {
    const double limit = median_ * factors[i];
    uint32_t base_above = 0, recent_above = 0;
    for (double v : window_) base_above += v > limit;
    for (double v : recent_) recent_above += v > limit;
    // Add half a step to each side: a baseline with no step above the limit
    // still allows that one might be.
    const double p0 = (base_above + 0.5) / (n + 1);
    if (i == 0) exceed_share_ = base_above / n;
    if (2 * recent_above <= k) continue;
    double p = BinomialTail(k, recent_above, p0) * static_cast<double>(factors.size());
    if (p < best_p) {
      best_p = p;
      best_count = recent_above;
      best_share = p0;
    }
  }
  if (best_p >= o_.p_value) return false;
  const double limit = median_ * factors[0];
  std::vector<double> slow;
  for (double v : recent_) {
    if (v > limit) slow.push_back(v);
  }
  if (slow.empty()) slow.assign(recent_.begin(), recent_.end());
  const double level = Median(slow);
  if (anomaly != nullptr) {
    char buf[320];
    std::snprintf(buf, sizeof(buf),
                  "step time %.3f ms over %zu of the last %u steps vs a rolling median of %.3f ms "
                  "(+%.0f%%; %u of %u steps above a limit that %.0f%% of normal steps passed: "
                  "chance %.1g)",
                  level * 1e3, slow.size(), k, median_ * 1e3, (level / median_ - 1) * 100,
                  best_count, k, best_share * 100, std::max(best_p, 1e-99));
    anomaly->kind = "step_time";
    anomaly->value = level;
    anomaly->baseline = median_;
    anomaly->message = buf;
  }
  // The new level becomes the baseline from now on.
  window_.assign(slow.begin(), slow.end());
  recent_.clear();
  median_ = level;
  return true;
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
