// lib/history/trend.cc — see trend.h.
#include "lib/history/trend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace sightline::history {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Mad(const std::vector<double>& v) {
  double m = Median(v);
  std::vector<double> d;
  for (double x : v) d.push_back(std::fabs(x - m));
  return Median(d);
}

double Spread(const std::vector<double>& a, const std::vector<double>& b, double level) {
  double s = 1.4826 * std::max(a.size() > 1 ? Mad(a) : 0.0, b.size() > 1 ? Mad(b) : 0.0);
  return std::max(s, 0.01 * std::fabs(level));
}

double Ms(double ns) { return ns < 0 ? kNaN : ns / 1e6; }

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

struct Finder {
  const std::vector<double>& x;  // compacted values
  double pct, z;
  std::vector<size_t> cuts;      // change point indexes into x
  void Search(size_t lo, size_t hi) {  // [lo, hi)
    if (hi - lo < 2) return;
    double best = 0;
    size_t best_k = 0;
    for (size_t k = lo + 1; k < hi; ++k) {
      std::vector<double> l(x.begin() + static_cast<long>(lo), x.begin() + static_cast<long>(k));
      std::vector<double> r(x.begin() + static_cast<long>(k), x.begin() + static_cast<long>(hi));
      double ml = Median(l), mr = Median(r);
      if (ml == 0) continue;
      double rel = std::fabs(mr - ml) / std::fabs(ml) * 100;
      double score = std::fabs(mr - ml) / Spread(l, r, ml);
      if (rel >= pct && score >= z && score > best) {
        best = score;
        best_k = k;
      }
    }
    if (best_k == 0) return;
    cuts.push_back(best_k);
    Search(lo, best_k);
    Search(best_k, hi);
  }
};

}  // namespace

const std::vector<QuantityDef>& Quantities() {
  static const std::vector<QuantityDef> q = {
      {"step_p50_ms", "Step time p50", "ms", true,
       [](const RunRecord& r) { return Ms(r.step_p50_ns); }},
      {"step_p99_ms", "Step time p99", "ms", true,
       [](const RunRecord& r) { return Ms(r.step_p99_ns); }},
      {"gpu_utilization_pct", "GPU utilization", "%", false,
       [](const RunRecord& r) { return r.gpu_utilization_pct < 0 ? kNaN : r.gpu_utilization_pct; }},
      {"memory_peak_mib", "GPU memory peak", "MiB", true,
       [](const RunRecord& r) {
         return r.memory_peak_bytes < 0 ? kNaN : r.memory_peak_bytes / 1048576.0;
       }},
  };
  return q;
}

const QuantityDef* FindQuantity(const std::string& name) {
  for (const QuantityDef& q : Quantities()) {
    if (name == q.name) return &q;
  }
  return nullptr;
}

std::vector<PointMark> MarkSeries(const std::vector<double>& values, bool higher_is_worse,
                                  const TrendOptions& o) {
  std::vector<PointMark> marks(values.size());
  std::vector<double> x;
  std::vector<size_t> where;  // x index -> values index
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) {
      x.push_back(values[i]);
      where.push_back(i);
    }
  }
  if (x.size() < 2) return marks;
  Finder f{x, o.threshold_pct, o.min_z, {}};
  f.Search(0, x.size());
  std::sort(f.cuts.begin(), f.cuts.end());
  std::vector<size_t> bounds = {0};
  bounds.insert(bounds.end(), f.cuts.begin(), f.cuts.end());
  bounds.push_back(x.size());
  for (size_t s = 1; s + 1 < bounds.size(); ++s) {
    size_t k = bounds[s];
    std::vector<double> l(x.begin() + static_cast<long>(bounds[s - 1]),
                          x.begin() + static_cast<long>(k));
    std::vector<double> r(x.begin() + static_cast<long>(k),
                          x.begin() + static_cast<long>(bounds[s + 1]));
    double ml = Median(l), mr = Median(r);
    PointMark& m = marks[where[k]];
    m.change_point = true;
    m.change_pct = (mr - ml) / std::fabs(ml) * 100;
    bool worse = higher_is_worse ? mr > ml : mr < ml;
    (worse ? m.regression : m.improvement) = true;
    m.why = std::string("level changed ") + Fmt("%+.1f%%", m.change_pct) + " from " +
            Fmt("%.4g", ml) + " to " + Fmt("%.4g", mr) + " (change point)";
  }
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    size_t lo = bounds[s], hi = bounds[s + 1];
    if (hi - lo < 4) continue;
    for (size_t i = lo; i < hi; ++i) {
      std::vector<double> others;
      for (size_t j = lo; j < hi; ++j) {
        if (j != i) others.push_back(x[j]);
      }
      double med = Median(others);
      if (med == 0) continue;
      double spread = std::max(1.4826 * Mad(others), 0.01 * std::fabs(med));
      double rel = (x[i] - med) / std::fabs(med) * 100;
      if (std::fabs(rel) < o.threshold_pct || std::fabs(x[i] - med) / spread < o.min_z) continue;
      PointMark& m = marks[where[i]];
      if (m.change_point) continue;
      m.outlier = true;
      m.change_pct = rel;
      bool worse = higher_is_worse ? x[i] > med : x[i] < med;
      (worse ? m.regression : m.improvement) = true;
      m.why = Fmt("%+.1f%%", rel) + " against the median " + Fmt("%.4g", med) +
              " of the runs around it (outlier)";
    }
  }
  return marks;
}

NewestCheck CheckNewest(const Series& s, const TrendOptions& o) {
  NewestCheck c;
  if (s.values.empty() || !std::isfinite(s.values.back())) return c;
  std::vector<double> base;
  for (size_t i = s.values.size() - 1; i-- > 0 && base.size() < o.baseline_runs;) {
    if (std::isfinite(s.values[i]) && !s.marks[i].outlier) base.push_back(s.values[i]);
  }
  if (base.empty()) return c;
  c.available = true;
  c.value = s.values.back();
  c.baseline = Median(base);
  if (c.baseline != 0) {
    double rel = (c.value - c.baseline) / std::fabs(c.baseline) * 100;
    c.worse_pct = s.quantity->higher_is_worse ? rel : -rel;
  }
  return c;
}

Trend BuildTrend(std::vector<RunRecord> runs, const TrendOptions& o) {
  Trend t;
  t.runs = std::move(runs);
  for (const QuantityDef& q : Quantities()) {
    Series s;
    s.quantity = &q;
    for (const RunRecord& r : t.runs) s.values.push_back(q.get(r));
    s.marks = MarkSeries(s.values, q.higher_is_worse, o);
    t.series.push_back(std::move(s));
  }
  return t;
}

absl::StatusOr<double> ParsePercent(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v <= 0 ||
      v > 10000) {
    return absl::InvalidArgumentError(flag + " '" + text +
                                      "' is not a finite percentage above 0 and at most 10000");
  }
  return v;
}

}  // namespace sightline::history
