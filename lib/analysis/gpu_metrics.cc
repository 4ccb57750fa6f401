// lib/analysis/gpu_metrics.cc — see gpu_metrics.h.
#include "lib/analysis/gpu_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/trace/pm_quantities.h"

namespace sightline::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kMaxRows = 10;
constexpr size_t kMaxBuckets = 600;

// Overlap-weighted sums of a series' samples over spans.
class Weigher {
 public:
  explicit Weigher(const GpuMetricSeries& g)
      : g_(g), metrics_(g.metric_names.size()), sums_(metrics_, 0), weights_(metrics_, 0) {}

  void Add(uint64_t a, uint64_t b) {
    if (b <= a || g_.size() == 0) return;
    // The first sample that may overlap: the last one starting at or before a.
    size_t i = static_cast<size_t>(std::upper_bound(g_.start_ns.begin(), g_.start_ns.end(), a) -
                                   g_.start_ns.begin());
    if (i > 0) --i;
    for (; i < g_.size() && g_.start_ns[i] < b; ++i) {
      const uint64_t lo = std::max(a, g_.start_ns[i]), hi = std::min(b, g_.end_ns[i]);
      if (hi <= lo) continue;
      const double w = static_cast<double>(hi - lo);
      for (size_t j = 0; j < metrics_; ++j) {
        const float v = g_.value(i, j);
        if (std::isnan(v)) continue;
        sums_[j] += w * v;
        weights_[j] += w;
      }
    }
  }
  std::vector<double> Means() const {
    std::vector<double> out(metrics_, kNaN);
    for (size_t j = 0; j < metrics_; ++j) {
      if (weights_[j] > 0) out[j] = sums_[j] / weights_[j];
    }
    return out;
  }

 private:
  const GpuMetricSeries& g_;
  size_t metrics_;
  std::vector<double> sums_, weights_;
};

double Percentile(std::vector<float>* v, double p) {
  if (v->empty()) return kNaN;
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(p * static_cast<double>(v->size())));
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(k), v->end());
  return (*v)[k];
}

// Launches of one device, by the start of their launching call: projects
// host intervals onto the GPU.
struct Launch {
  uint64_t call_start = 0;
  uint32_t thread = 0;
  uint64_t gpu_start = 0, gpu_end = 0;
};

std::vector<Launch> LaunchesOf(const TimelineModel& model, uint32_t device) {
  std::vector<Launch> out;
  const DeviceTimelineInfo& dev = model.devices[device];
  for (uint32_t i = dev.activity_begin; i < dev.activity_end; ++i) {
    const GpuActivity& a = model.activities[i];
    const ApiCall* call = model.LaunchOf(a);
    if (call == nullptr) continue;
    out.push_back({call->start_ns, call->thread, a.start_ns, a.end_ns});
  }
  std::sort(out.begin(), out.end(),
            [](const Launch& a, const Launch& b) { return a.call_start < b.call_start; });
  return out;
}

// GPU span of the work launched in [start, end) (by `thread` when not kNone);
// the host interval itself when nothing was launched.
std::pair<uint64_t, uint64_t> Project(const std::vector<Launch>& launches, uint64_t start,
                                      uint64_t end, uint32_t thread) {
  auto it = std::lower_bound(launches.begin(), launches.end(), start,
                             [](const Launch& l, uint64_t t) { return l.call_start < t; });
  uint64_t lo = UINT64_MAX, hi = 0;
  for (; it != launches.end() && it->call_start < end; ++it) {
    if (thread != kNone && it->thread != thread) continue;
    lo = std::min(lo, it->gpu_start);
    hi = std::max(hi, it->gpu_end);
  }
  if (hi <= lo) return {start, end};
  return {lo, hi};
}

// The recorded part of [ws, we): its overlap with the trace's capture
// windows (samples are kept only inside them), or all of it without any.
uint64_t RecordedTime(const TimelineModel& model, uint32_t trace, uint64_t ws, uint64_t we) {
  uint64_t total = 0, reach = ws;
  bool any = false;
  for (const CaptureWindow& w : model.capture_windows) {  // sorted by start
    if (w.trace != trace) continue;
    any = true;
    const uint64_t lo = std::max({w.start_ns, ws, reach}), hi = std::min(w.end_ns, we);
    if (hi > lo) total += hi - lo;
    reach = std::max(reach, hi);
  }
  return any ? total : we - ws;
}

void FillDevice(const TimelineModel& model, const GpuMetricSeries& g, uint64_t ws, uint64_t we,
                const StepSummary& steps, GpuMetricsDevice* out) {
  const DeviceTimelineInfo& dev = model.devices[g.device];
  out->trace = g.trace;
  out->device_id = dev.device_id;
  out->device_name = dev.info.name;
  out->samples_total = g.size();
  out->samples_missing = model.traces[g.trace].losses.gpu_metric_samples_dropped;
  out->interval_asked_ns = g.interval_ns;
  if (ws == 0 && we == 0 && g.size() > 0) {
    ws = g.start_ns.front();
    we = *std::max_element(g.end_ns.begin(), g.end_ns.end());
  }
  const size_t m = g.metric_names.size();
  // Stats: the samples overlapping the window.
  std::vector<std::vector<float>> in_window(m);
  std::vector<double> busy(m, 0), saturated(m, 0), weight(m, 0);
  std::vector<uint64_t> durations;
  uint64_t covered = 0;
  Weigher whole(g);
  whole.Add(ws, we);
  for (size_t i = 0; i < g.size(); ++i) {
    const uint64_t lo = std::max(ws, g.start_ns[i]), hi = std::min(we, g.end_ns[i]);
    if (hi <= lo) continue;
    ++out->samples;
    covered += hi - lo;
    durations.push_back(g.end_ns[i] - g.start_ns[i]);
    const double w = static_cast<double>(hi - lo);
    for (size_t j = 0; j < m; ++j) {
      const float v = g.value(i, j);
      if (std::isnan(v)) continue;
      in_window[j].push_back(v);
      weight[j] += w;
      if (v >= kGpuMetricBusyPct) busy[j] += w;
      if (v >= kGpuMetricSaturatedPct) saturated[j] += w;
    }
  }
  if (!durations.empty()) {
    std::nth_element(durations.begin(), durations.begin() + durations.size() / 2, durations.end());
    out->interval_ns = static_cast<double>(durations[durations.size() / 2]);
  }
  // Gaps between consecutive samples inside the window (one's end, the next
  // one's start): the recorded part of a gap (inside capture windows: none
  // are taken between them) of more than half an interval held samples that
  // never arrived.
  uint64_t prev_end = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.end_ns[i] <= ws || g.start_ns[i] >= we) continue;
    const uint64_t a = prev_end, b = g.start_ns[i];
    prev_end = std::max(prev_end, g.end_ns[i]);
    if (a == 0 || g.interval_ns == 0 || b <= a + g.interval_ns / 2) continue;
    const uint64_t gap = RecordedTime(model, g.trace, a, b);
    if (gap > g.interval_ns / 2) {
      out->samples_missing_in_window += (gap + g.interval_ns / 2) / g.interval_ns;
    }
  }
  const uint64_t recorded = we > ws ? RecordedTime(model, g.trace, ws, we) : 0;
  out->coverage_pct =
      recorded > 0 ? std::min(100.0, 100.0 * static_cast<double>(covered) / recorded) : 0;
  const std::vector<double> means = whole.Means();
  std::vector<bool> seen(kNumPmQuantities, false);
  for (size_t j = 0; j < m; ++j) {
    GpuMetricStat st;
    st.metric = std::string(model.String(g.metric_names[j]));
    PmQuantity q;
    const bool known = PmQuantityForMetric(st.metric, &q);
    if (known) {
      const PmQuantityInfo& info = PmQuantityOf(q);
      seen[static_cast<size_t>(q)] = true;
      st.key = info.key;
      st.label = info.label;
      st.unit = PmUnitName(info.unit);
    } else {
      st.key = st.label = st.metric;
    }
    st.mean = means[j];
    st.p50 = Percentile(&in_window[j], 0.5);
    st.p95 = Percentile(&in_window[j], 0.95);
    st.max = in_window[j].empty() ? kNaN
                                  : *std::max_element(in_window[j].begin(), in_window[j].end());
    if (st.unit == "%" && weight[j] > 0) {
      st.busy_pct = 100.0 * busy[j] / weight[j];
      st.saturated_pct = 100.0 * saturated[j] / weight[j];
    }
    out->stats.push_back(std::move(st));
  }
  for (size_t q = 0; q < kNumPmQuantities; ++q) {
    if (!seen[q]) out->unavailable.push_back(PmQuantities()[q].key);
  }

  // Timeline buckets (sample midpoints).
  if (we > ws && out->samples > 0) {
    const size_t buckets = std::min<size_t>(kMaxBuckets, out->samples);
    const double width = static_cast<double>(we - ws) / static_cast<double>(buckets);
    std::vector<std::vector<double>> sum(m, std::vector<double>(buckets, 0));
    std::vector<std::vector<uint32_t>> count(m, std::vector<uint32_t>(buckets, 0));
    for (size_t i = 0; i < g.size(); ++i) {
      const uint64_t mid = g.start_ns[i] + (g.end_ns[i] - g.start_ns[i]) / 2;
      if (mid < ws || mid >= we) continue;
      const size_t b = std::min(buckets - 1, static_cast<size_t>((mid - ws) / width));
      for (size_t j = 0; j < m; ++j) {
        const float v = g.value(i, j);
        if (std::isnan(v)) continue;
        sum[j][b] += v;
        ++count[j][b];
      }
    }
    out->timeline_ns.resize(buckets);
    for (size_t b = 0; b < buckets; ++b) {
      out->timeline_ns[b] = ws + static_cast<uint64_t>(width * (static_cast<double>(b) + 0.5));
    }
    out->timeline.assign(m, std::vector<float>(buckets, std::numeric_limits<float>::quiet_NaN()));
    for (size_t j = 0; j < m; ++j) {
      for (size_t b = 0; b < buckets; ++b) {
        if (count[j][b] > 0) out->timeline[j][b] = static_cast<float>(sum[j][b] / count[j][b]);
      }
    }
  }

  const std::vector<Launch> launches = LaunchesOf(model, g.device);
  // Steps of this trace's window.
  // NVTX and marker steps are host intervals; the others are GPU spans already.
  const bool host_steps = steps.source == "nvtx" || steps.source == "step_marker";
  for (const StepRow& s : steps.steps) {
    auto [lo, hi] = host_steps ? Project(launches, s.start_ns, s.end_ns, kNone)
                               : std::make_pair(s.start_ns, s.end_ns);
    Weigher w(g);
    w.Add(lo, hi);
    GpuMetricSpanRow row;
    row.index = s.index;
    row.start_ns = lo;
    row.end_ns = hi;
    row.instances = 1;
    row.time_ns = hi - lo;
    row.values = w.Means();
    out->steps.push_back(std::move(row));
  }
  // Spans of NVTX ranges and kernels, summed by name.
  struct Acc {
    explicit Acc(const GpuMetricSeries& g) : w(g) {}
    Weigher w;
    uint64_t instances = 0, time_ns = 0;
  };
  auto add = [&](std::unordered_map<uint32_t, Acc>* by_name, uint32_t name, uint64_t lo,
                 uint64_t hi) {
    lo = std::max(lo, ws);
    hi = std::min(hi, we);
    if (hi <= lo) return;
    Acc& a = by_name->try_emplace(name, g).first->second;
    a.w.Add(lo, hi);
    ++a.instances;
    a.time_ns += hi - lo;
  };
  auto rows = [&](const std::unordered_map<uint32_t, Acc>& by_name,
                  std::vector<GpuMetricSpanRow>* into) {
    for (const auto& [name, a] : by_name) {
      GpuMetricSpanRow row;
      row.name = std::string(model.String(name));
      row.instances = a.instances;
      row.time_ns = a.time_ns;
      row.values = a.w.Means();
      row.resolved = out->interval_ns > 0 &&
                     static_cast<double>(a.time_ns) / static_cast<double>(a.instances) >=
                         2 * out->interval_ns;
      into->push_back(std::move(row));
    }
  };
  // NVTX ranges of this trace inside the window (their own thread's launches).
  std::unordered_map<uint32_t, Acc> ranges;
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.trace != g.trace || r.end_ns <= ws || r.start_ns >= we) continue;
    auto [lo, hi] = Project(launches, r.start_ns, r.end_ns, r.thread);
    add(&ranges, r.name, lo, hi);
  }
  rows(ranges, &out->ranges);
  // Kernels on this device inside the window.
  std::unordered_map<uint32_t, Acc> kernels;
  for (uint32_t i = dev.activity_begin; i < dev.activity_end; ++i) {
    const GpuActivity& a = model.activities[i];
    if (a.kind == ActivityKind::kKernel) add(&kernels, a.name, a.start_ns, a.end_ns);
  }
  rows(kernels, &out->kernels);
  auto by_time = [](const GpuMetricSpanRow& a, const GpuMetricSpanRow& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
  };
  for (auto* rows : {&out->ranges, &out->kernels}) {
    std::sort(rows->begin(), rows->end(), by_time);
    if (rows->size() > kMaxRows) rows->resize(kMaxRows);
  }
}

}  // namespace

void FillGpuMetrics(const TimelineModel& model, uint64_t window_start_ns, uint64_t window_end_ns,
                    Report* report) {
  for (const GpuMetricSeries& g : model.gpu_metrics) {
    if (g.size() == 0 || g.device >= model.devices.size()) continue;
    GpuMetricsDevice d;
    FillDevice(model, g, window_start_ns, window_end_ns, report->summary.steps, &d);
    report->gpu_metrics.push_back(std::move(d));
  }
  std::sort(report->gpu_metrics.begin(), report->gpu_metrics.end(),
            [](const GpuMetricsDevice& a, const GpuMetricsDevice& b) {
              return a.trace != b.trace ? a.trace < b.trace : a.device_id < b.device_id;
            });
}

}  // namespace sightline::analysis
