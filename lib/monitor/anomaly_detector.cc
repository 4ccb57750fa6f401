// lib/monitor/anomaly_detector.cc — see anomaly_detector.h.
#include "lib/monitor/anomaly_detector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sightline::monitor {
namespace {

constexpr size_t kStepLimits = 6;  // the sign test's limits (Bonferroni)

std::string Format(const char* fmt, double a, double b, double c) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c);
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
  if (!(o_.p_value > 0)) o_.p_value = 1e-5;
  // A group too small to ever be unlikely enough would silently never fire:
  // even all of it over a limit no baseline step passed has the chance
  // 6 x u^k (u: the 95 % bound of 0 in `window` steps, 4.6 % for 64). At
  // the defaults the smallest group is 5.
  const double u = BinomialUpperBound(o_.window, 0, 0.95);
  uint32_t smallest = 1;
  while (smallest < 1000 && kStepLimits * std::pow(u, smallest) >= o_.p_value) ++smallest;
  if (o_.consecutive < smallest) o_.consecutive = smallest;
}

double BinomialTail(uint32_t n, uint32_t k, double p) {
  if (k == 0) return 1;
  if (k > n) return 0;
  if (!(p > 0)) return 0;
  if (p >= 1) return 1;
  // pmf(j) in logs, built term by term (no lgamma: it writes glibc's global
  // signgam, and this runs beside the application's threads).
  const double lp = std::log(p), lq = std::log1p(-p);
  double log_c = 0;  // log C(n, j)
  double tail = 0;
  for (uint32_t j = 0; j <= n; ++j) {
    if (j > 0) log_c += std::log(static_cast<double>(n - j + 1) / j);
    if (j >= k) tail += std::exp(log_c + j * lp + (n - j) * lq);
  }
  return std::min(tail, 1.0);
}

double BinomialUpperBound(uint32_t n, uint32_t x, double confidence) {
  if (n == 0 || x >= n) return 1;
  // Clopper-Pearson: the p at which P(X <= x) = 1 - confidence, by
  // bisection above x / n (where P(X <= x) > 1 - confidence for any
  // confidence >= 0.5, as used here).
  const double alpha = 1 - confidence;
  double lo = static_cast<double>(x) / n, hi = 1;
  for (int i = 0; i < 60; ++i) {
    double mid = (lo + hi) / 2;
    double cdf = 1 - BinomialTail(n, x + 1, mid);  // P(X <= x)
    if (cdf > alpha) lo = mid;
    else hi = mid;
  }
  return hi;
}

std::vector<double> Relevel(const std::vector<double>& values, double from, double to) {
  const double spread = from > 0 && to > from ? to / from : 1.0;
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(std::max(0.0, to + (v - from) * spread));
  return out;
}

void StepTimeDetector::RelevelTo(double level, const std::deque<double>& steps) {
  std::vector<double> moved =
      Relevel(std::vector<double>(window_.begin(), window_.end()), median_, level);
  window_.assign(moved.begin(), moved.end());
  window_.insert(window_.end(), steps.begin(), steps.end());
  while (window_.size() > o_.window) window_.pop_front();
  median_ = Median(std::vector<double>(window_.begin(), window_.end()));
}

void StepTimeDetector::Restart() {
  recent_.clear();
  leveling_ = window_.size() >= o_.warmup && median_ > 0;
  if (!leveling_) window_.clear();
}

bool StepTimeDetector::Add(double seconds, Anomaly* anomaly) {
  if (!std::isfinite(seconds) || seconds < 0) return false;
  const uint32_t k = o_.consecutive;
  recent_.push_back(seconds);
  if (leveling_) {
    // After Restart(): this group is the new level, not judged.
    if (recent_.size() < k) return false;
    RelevelTo(Median(std::vector<double>(recent_.begin(), recent_.end())), recent_);
    recent_.clear();
    leveling_ = false;
    return false;
  }
  if (recent_.size() > k) {
    window_.push_back(recent_.front());
    recent_.pop_front();
    while (window_.size() > o_.window) window_.pop_front();
    median_ = Median(std::vector<double>(window_.begin(), window_.end()));
  } else if (window_.empty()) {
    median_ = Median(std::vector<double>(recent_.begin(), recent_.end()));
  }
  if (window_.size() < o_.warmup || recent_.size() < k || median_ <= 0) return false;
  const double n = static_cast<double>(window_.size());
  const double rel = 1 + o_.min_rel_increase;
  std::vector<double> base(window_.begin(), window_.end());
  std::sort(base.begin(), base.end());
  auto quantile = [&](double q) {
    double i = (n - 1) * q;
    size_t lo = static_cast<size_t>(i), hi = std::min(lo + 1, base.size() - 1);
    return base[lo] + (base[hi] - base[lo]) * (i - static_cast<double>(lo));
  };
  {
    uint32_t above = 0;
    for (double v : window_) above += v > median_ * rel;
    exceed_share_ = above / n;
  }
  // A sign test: most of the recent steps past a limit that the baseline's
  // steps rarely pass. The chance a normal step passes is the 95 % upper
  // bound of the baseline's share (a few dozen steps estimate it), times
  // the number of limits (Bonferroni).
  struct SignTest {
    double p = 2, share = 0;
    uint32_t count = 0;
  };
  auto sign_test = [&](const double (&limits)[kStepLimits], bool above) {
    SignTest best;
    for (double limit : limits) {
      uint32_t base_past = 0, recent_past = 0;
      for (double v : window_) base_past += above ? v > limit : v < limit;
      for (double v : recent_) recent_past += above ? v > limit : v < limit;
      if (2 * recent_past <= k) continue;
      double p0 = BinomialUpperBound(static_cast<uint32_t>(n), base_past, 0.95);
      double p = BinomialTail(k, recent_past, p0) * static_cast<double>(kStepLimits);
      if (p < best.p) best = {p, base_past / n, recent_past};
    }
    return best;
  };
  // Slower: multiples of the median, and the upper quartile and decile with
  // the margin (a baseline with many long steps).
  const double slow_limits[] = {median_ * rel, median_ * std::max(rel, 1.25),
                                median_ * std::max(rel, 1.5),  median_ * std::max(rel, 2.0),
                                quantile(0.75) * rel,          quantile(0.90) * rel};
  static_assert(std::size(slow_limits) == kStepLimits, "the constructor's smallest group uses it");
  const SignTest slow_test = sign_test(slow_limits, true);
  const double group_level = Median(std::vector<double>(recent_.begin(), recent_.end()));
  if (slow_test.p >= o_.p_value) {
    // Faster (mirrored limits): the baseline moves down to the group's level
    // at once (a burst of slow steps that ended, a slowdown that went away),
    // so a slowdown after it is judged against the level it left.
    const double fast_limits[] = {median_ / rel, median_ / std::max(rel, 1.25),
                                  median_ / std::max(rel, 1.5),  median_ / std::max(rel, 2.0),
                                  quantile(0.25) / rel,          quantile(0.10) / rel};
    if (sign_test(fast_limits, false).p < o_.p_value) {
      RelevelTo(group_level, recent_);
      recent_.clear();
    }
    return false;
  }
  std::vector<double> slow;
  for (double v : recent_) {
    if (v > median_ * rel) slow.push_back(v);
  }
  if (slow.empty()) slow.assign(recent_.begin(), recent_.end());
  const double level = Median(slow);
  if (anomaly != nullptr) {
    char buf[400];
    std::snprintf(buf, sizeof(buf),
                  "step time %.3f ms over %zu of the last %u steps vs a rolling median of "
                  "%.3f ms (+%.0f%%; %u of %u steps above a limit that %.0f%% of the %.0f "
                  "normal steps passed: chance %.1g)",
                  level * 1e3, slow.size(), k, median_ * 1e3, (level / median_ - 1) * 100,
                  slow_test.count, k, slow_test.share * 100, n, std::max(slow_test.p, 1e-99));
    anomaly->kind = "step_time";
    anomaly->value = level;
    anomaly->baseline = median_;
    anomaly->message = buf;
  }
  // The recent group is the new level: the baseline re-levelled to it.
  RelevelTo(group_level, recent_);
  recent_.clear();
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
