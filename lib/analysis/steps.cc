// Step detection, warm-up and the analysed scope (steps.h).
#include "lib/analysis/steps.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/analysis/text_util.h"

namespace sightline::analysis {

namespace {

uint32_t FindString(const TimelineModel& model, std::string_view s) {
  for (size_t i = 1; i < model.strings.size(); ++i) {
    if (model.strings[i] == s) return static_cast<uint32_t>(i);
  }
  return 0;
}

std::vector<DetectedStep> StepsFromMarkers(const TimelineModel& model, std::string* name) {
  // Per trace, the (thread, name) group with the most markers; a step runs
  // from one marker of the group to the next.
  std::map<std::tuple<uint16_t, uint32_t, uint32_t>, std::vector<uint64_t>> groups;
  for (const StepMarker& m : model.step_markers) {
    groups[{m.trace, m.thread, m.name}].push_back(m.timestamp_ns);
  }
  std::map<uint16_t, const std::vector<uint64_t>*> best;
  std::map<uint16_t, uint32_t> best_name;
  for (const auto& [key, times] : groups) {
    uint16_t trace = std::get<0>(key);
    auto it = best.find(trace);
    if (it == best.end() || times.size() > it->second->size()) {
      best[trace] = &times;
      best_name[trace] = std::get<2>(key);
    }
  }
  std::vector<DetectedStep> steps;
  for (const auto& [trace, times] : best) {
    *name = std::string(model.String(best_name[trace]));
    for (size_t i = 1; i < times->size(); ++i) {
      if ((*times)[i] > (*times)[i - 1]) steps.push_back({(*times)[i - 1], (*times)[i], trace});
    }
  }
  return steps;
}

std::vector<DetectedStep> StepsFromNvtx(const TimelineModel& model, uint32_t name,
                                        bool top_level_only) {
  std::vector<DetectedStep> steps;
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.name != name || (top_level_only && r.depth != 0) || r.cut_at_window_end) continue;
    steps.push_back({r.start_ns, r.end_ns, r.trace});
  }
  return steps;
}

// Libraries that wrap each of their API calls in an NVTX range of their own
// domain: one range per call, never the application's step.
bool IsLibraryDomain(std::string_view domain) {
  for (std::string_view lib : {"NCCL", "cuBLAS", "cuDNN", "cuFFT", "cuSPARSE", "NVSHMEM"}) {
    if (domain == lib) return true;
  }
  return false;
}

// PyTorch's op ranges (--pytorch / emit_nvtx) are "aten::add, seq = 12" and
// similar: one per op, never a step.
bool IsOpRangeName(std::string_view name) {
  return name.rfind("aten::", 0) == 0 || name.find(", seq = ") != std::string_view::npos ||
         name.find("sizes = [") != std::string_view::npos;
}

uint32_t AutoDetectStepRange(const TimelineModel& model) {
  absl::flat_hash_map<uint32_t, std::pair<uint64_t, uint64_t>> counts;  // name → (n, total)
  for (const NvtxRange& r : model.nvtx_ranges) {
    if (r.depth != 0 || r.name == 0 || r.cut_at_window_end) continue;  // a cut range is part of a step
    if (r.domain != 0 && IsLibraryDomain(model.String(r.domain))) continue;
    if (IsOpRangeName(model.String(r.name))) continue;
    auto& c = counts[r.name];
    c.first++;
    c.second += r.end_ns - r.start_ns;
  }
  uint32_t best = 0;
  std::tuple<bool, uint64_t, uint64_t> best_key{false, 0, 0};
  for (const auto& [name, c] : counts) {
    if (c.first < 2) continue;
    std::string_view text = model.String(name);
    bool stepish = ContainsIgnoreCase(text, "step") || ContainsIgnoreCase(text, "iter");
    std::tuple<bool, uint64_t, uint64_t> key{stepish, c.first, c.second};
    if (best == 0 || key > best_key || (key == best_key && text < model.String(best))) {
      best = name;
      best_key = key;
    }
  }
  return best;
}

// ---- Launch pattern ---------------------------------------------------------

struct Launch {
  uint32_t symbol;   // what was launched (kernel / copy name; graph launches by API name)
  uint32_t api;      // index into api_calls
  uint64_t host_gap; // time since the previous API call on the thread ended
  uint64_t gpu_start;  // first GPU activity of the launch
};

// The launches of `trace` in launch order (correlation id).
std::vector<Launch> LaunchSequence(const TimelineModel& model, uint16_t trace) {
  absl::flat_hash_map<uint32_t, uint32_t> symbol_of_api;  // api → first activity name
  absl::flat_hash_map<uint32_t, uint64_t> first_start;
  for (const GpuActivity& a : model.activities) {
    if (a.trace != trace || a.launch_api == kNone) continue;
    auto [it, fresh] = first_start.try_emplace(a.launch_api, a.start_ns);
    if (fresh || a.start_ns < it->second) {
      it->second = a.start_ns;
      symbol_of_api[a.launch_api] = a.name;
    }
  }
  std::vector<Launch> seq;
  seq.reserve(symbol_of_api.size());
  for (const auto& [api, name] : symbol_of_api) {
    const ApiCall& c = model.api_calls[api];
    uint32_t symbol = (c.flags & kApiGraphLaunch) ? (c.name | 0x80000000u) : name;
    const ThreadInfo& t = model.threads[c.thread];
    uint64_t gap = 0;
    if (api > t.api_begin) {
      const ApiCall& prev = model.api_calls[api - 1];
      gap = c.start_ns > prev.end_ns ? c.start_ns - prev.end_ns : 0;
    }
    seq.push_back({symbol, api, gap, first_start[api]});
  }
  std::sort(seq.begin(), seq.end(), [&](const Launch& x, const Launch& y) {
    const ApiCall& a = model.api_calls[x.api];
    const ApiCall& b = model.api_calls[y.api];
    return std::tie(a.correlation_id, a.start_ns) < std::tie(b.correlation_id, b.start_ns);
  });
  return seq;
}

double MatchRate(const std::vector<Launch>& seq, size_t from, size_t period) {
  if (period == 0 || from + period >= seq.size()) return 0;
  size_t n = seq.size() - period - from, same = 0;
  for (size_t i = from; i + period < seq.size(); ++i) same += seq[i].symbol == seq[i + period].symbol;
  return n ? double(same) / double(n) : 0;
}

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The steps of `trace`'s repeating launch sequence (empty when none repeats).
std::vector<DetectedStep> StepsFromLaunchPatternOf(const TimelineModel& model, uint16_t trace,
                                                   StepDetection* out) {
  std::vector<Launch> seq = LaunchSequence(model, trace);
  const size_t n = seq.size();
  if (n < 12) return {};
  // The loop is the end of the run: look at the last half, else the last
  // quarter, eighth or sixteenth (a long start-up: eager warm-up, graph
  // capture), and keep the longest suffix that repeats.
  size_t half = n / 2;
  double best_rate = 0;
  std::vector<std::pair<size_t, double>> rated;
  for (size_t fraction = 2; fraction <= 16; fraction *= 2) {
    size_t from = n - n / fraction;
    if (n - from < 12) break;
    // Candidate periods: distances between consecutive occurrences of one
    // operation in the suffix, most frequent first; at least 4 periods fit.
    absl::flat_hash_map<uint32_t, size_t> last_seen;
    absl::flat_hash_map<size_t, uint64_t> distance_count;
    for (size_t i = from; i < n; ++i) {
      auto [it, fresh] = last_seen.try_emplace(seq[i].symbol, i);
      if (!fresh) {
        distance_count[i - it->second]++;
        it->second = i;
      }
    }
    std::vector<std::pair<uint64_t, size_t>> candidates;
    for (const auto& [d, c] : distance_count) {
      if (d * 4 <= n - from) candidates.push_back({c, d});
    }
    std::sort(candidates.rbegin(), candidates.rend());
    if (candidates.size() > 48) candidates.resize(48);
    std::vector<std::pair<size_t, double>> here;
    double best_here = 0;
    for (const auto& [count, d] : candidates) {
      double r = MatchRate(seq, from, d);
      here.push_back({d, r});
      best_here = std::max(best_here, r);
    }
    if (best_here >= 0.8) {
      half = from;
      best_rate = best_here;
      rated = std::move(here);
      break;
    }
  }
  if (best_rate < 0.8) return {};
  size_t period = 0;
  for (const auto& [d, r] : rated) {
    if (r >= best_rate - 0.02 && (period == 0 || d < period)) period = d;
  }
  // Step boundary: the phase of the period whose launch follows the longest
  // host pause (median over the second half's periods).
  size_t best_phase = 0;
  uint64_t best_gap = 0;
  for (size_t phase = 0; phase < period; ++phase) {
    std::vector<uint64_t> gaps;
    for (size_t i = half + phase; i < n; i += period) gaps.push_back(seq[i].host_gap);
    uint64_t m = Median(std::move(gaps));
    if (phase == 0 || m > best_gap) {
      best_gap = m;
      best_phase = phase;
    }
  }
  // Align the phase to an index in the second half.
  size_t anchor_index = half + best_phase;
  uint32_t anchor = seq[anchor_index].symbol;
  // Once per period? Then every occurrence of it is a boundary (warm-up
  // steps included, whatever their launch sequence looked like).
  size_t in_second_half = 0;
  for (size_t i = half; i < n; ++i) in_second_half += seq[i].symbol == anchor;
  size_t periods_in_half = (n - half) / period;
  bool once_per_period =
      in_second_half >= periods_in_half && in_second_half <= periods_in_half + 1;
  std::vector<size_t> boundaries;
  if (once_per_period) {
    for (size_t i = 0; i < n; ++i) {
      if (seq[i].symbol == anchor) boundaries.push_back(i);
    }
  } else {
    // Walk back from the anchor while whole periods still repeat.
    size_t first = anchor_index % period;
    size_t start = anchor_index;
    while (start >= period + first) {
      size_t prev = start - period, same = 0;
      for (size_t k = 0; k < period; ++k) same += seq[prev + k].symbol == seq[start + k].symbol;
      if (double(same) < 0.8 * double(period)) break;
      start = prev;
    }
    for (size_t i = start; i < n; i += period) boundaries.push_back(i);
  }
  std::vector<DetectedStep> steps;
  for (size_t k = 0; k + 1 < boundaries.size(); ++k) {
    uint64_t a = model.api_calls[seq[boundaries[k]].api].start_ns;
    uint64_t b = model.api_calls[seq[boundaries[k + 1]].api].start_ns;
    uint64_t ga = seq[boundaries[k]].gpu_start, gb = seq[boundaries[k + 1]].gpu_start;
    if (b > a) steps.push_back({a, b, trace, ga, gb > ga ? gb : 0});
  }
  out->period = static_cast<uint32_t>(period);
  out->match_pct = 100.0 * best_rate;
  uint32_t name = anchor & 0x7fffffffu;
  out->name = std::string(model.String(name));
  return steps;
}

// Launches per trace (GPU work with a launch call).
std::vector<uint64_t> LaunchesPerTrace(const TimelineModel& model) {
  std::vector<uint64_t> per_trace(model.traces.size(), 0);
  for (const GpuActivity& a : model.activities) {
    if (a.launch_api != kNone && a.trace < per_trace.size()) per_trace[a.trace]++;
  }
  return per_trace;
}

// The trace with the most launches (one rank's loop is every rank's loop).
std::vector<DetectedStep> StepsFromLaunchPattern(const TimelineModel& model, StepDetection* out) {
  std::vector<uint64_t> per_trace = LaunchesPerTrace(model);
  if (per_trace.empty()) return {};
  uint16_t trace = static_cast<uint16_t>(
      std::max_element(per_trace.begin(), per_trace.end()) - per_trace.begin());
  return StepsFromLaunchPatternOf(model, trace, out);
}

// The `steps` that lie whole inside one of `windows` (one trace's capture
// windows); `most` gets the largest number inside a single window.
std::vector<DetectedStep> StepsInsideWindows(const std::vector<DetectedStep>& windows,
                                             const std::vector<DetectedStep>& steps,
                                             size_t* most) {
  std::vector<DetectedStep> inside;
  std::vector<size_t> per_window(windows.size(), 0);
  for (const DetectedStep& st : steps) {
    for (size_t w = 0; w < windows.size(); ++w) {
      if (st.start_ns >= windows[w].start_ns && st.end_ns <= windows[w].end_ns) {
        inside.push_back(st);
        ++per_window[w];
        break;
      }
    }
  }
  *most = per_window.empty() ? 0 : *std::max_element(per_window.begin(), per_window.end());
  return inside;
}

// Per step of `steps` (all of one trace): whether it launched a kernel that
// was measured for hardware metrics (a sequence or spread pass, a kernel
// replay, a top replay) or overlaps a per-range metric set's instances
// (--metrics-range). Such a step runs under the profiler's passes, not as
// the application runs.
std::vector<bool> StepsHoldingMetricLaunches(const TimelineModel& model,
                                             const std::vector<const DetectedStep*>& steps) {
  std::vector<bool> out(steps.size(), false);
  if (steps.empty()) return out;
  const uint16_t trace = steps.front()->trace;
  for (const RangeMetricSet& r : model.range_metric_sets) {
    if (r.trace != trace) continue;
    for (size_t i = 0; i < steps.size(); ++i) {
      out[i] = out[i] || (steps[i]->start_ns < r.end_ns && r.start_ns < steps[i]->end_ns);
    }
  }
  if (model.metric_samples.empty()) return out;
  // The launches a metric set names, and every kernel measured without a
  // timestamp of its own: replayed, or run untraced in a sequence pass (a
  // set names one pass's launch of each position; the others are untraced).
  absl::flat_hash_set<uint32_t> measured;
  for (const MetricSample& m : model.metric_samples) {
    if (m.trace == trace && m.correlation_id != 0) measured.insert(m.correlation_id);
  }
  if (measured.empty()) return out;
  for (uint64_t key : model.replayed_activities) {
    if ((key >> 32) == trace) measured.insert(static_cast<uint32_t>(key));
  }
  std::vector<uint64_t> launches;  // start of each measured kernel's launch call
  for (const ApiCall& c : model.api_calls) {
    if (c.trace == trace && c.correlation_id != 0 && measured.contains(c.correlation_id)) {
      launches.push_back(c.start_ns);
    }
  }
  std::sort(launches.begin(), launches.end());
  for (size_t i = 0; i < steps.size(); ++i) {
    auto it = std::lower_bound(launches.begin(), launches.end(), steps[i]->start_ns);
    out[i] = it != launches.end() && *it < steps[i]->end_ns;
  }
  return out;
}

}  // namespace

size_t WarmupSteps(const std::vector<uint64_t>& d) {
  const size_t n = d.size();
  if (n < 2) return 0;
  std::vector<uint64_t> tail(d.begin() + n / 2, d.end());
  double ref = double(Median(tail));
  auto within = [&](double v) { return ref > 0 && std::fabs(v - ref) <= 0.25 * ref; };
  auto settled = [&](size_t k) {
    if (!within(double(d[k]))) return false;
    std::vector<uint64_t> w;
    for (size_t j = k; j < std::min(n, k + 3); ++j) w.push_back(d[j]);
    return within(double(Median(w)));
  };
  for (size_t k = 1; k < n; ++k) {
    if (settled(k)) return k;
  }
  return 1;
}

StepDetection DetectSteps(const TimelineModel& model, const std::string& step_range_name,
                          std::vector<std::string>* notes) {
  StepDetection out;
  std::vector<DetectedStep>& steps = out.steps;
  if (!step_range_name.empty()) {
    uint32_t name = FindString(model, step_range_name);
    if (name != 0) steps = StepsFromNvtx(model, name, /*top_level_only=*/false);
    out.source = "nvtx";
    out.name = step_range_name;
    if (steps.empty() && notes != nullptr) {
      notes->push_back("no NVTX range named '" + step_range_name +
                       "' found; no iterations reported");
    }
  } else {
    if (!model.step_markers.empty()) {
      steps = StepsFromMarkers(model, &out.name);
      out.source = "step_marker";
    }
    if (steps.empty()) {
      uint32_t name = AutoDetectStepRange(model);
      if (name != 0) {
        steps = StepsFromNvtx(model, name, /*top_level_only=*/true);
        out.source = "nvtx";
        out.name = std::string(model.String(name));
      }
    }
    if (steps.empty()) {
      // A capture window is a step when the program brackets each
      // iteration (cudaProfilerStart/Stop or an NVTX capture range per
      // step). One window around many iterations (nsys-style
      // --capture-range cudaProfilerApi over a training loop) is not: when
      // the launch pattern of every trace with windows finds at least two
      // steps inside one of its windows, those steps are the iterations
      // (each rank's own: ranks' host timelines differ), the ones inside a
      // window: a step from one window into the next holds unrecorded time.
      std::map<uint16_t, std::vector<DetectedStep>> windows;
      for (const CaptureWindow& w : model.capture_windows) {
        if (w.trigger == CaptureTrigger::kWholeRun) continue;
        windows[w.trace].push_back({w.start_ns, w.end_ns, w.trace});
      }
      if (!windows.empty()) {
        const std::vector<uint64_t> launches = LaunchesPerTrace(model);
        std::vector<DetectedStep> found;
        StepDetection named;  // the pattern of the trace with the most launches
        uint64_t named_launches = 0;
        bool all = true;
        for (const auto& [trace, list] : windows) {
          StepDetection pattern;
          size_t most = 0;
          std::vector<DetectedStep> own =
              StepsInsideWindows(list, StepsFromLaunchPatternOf(model, trace, &pattern), &most);
          if (most < 2) {
            all = false;
            break;
          }
          const uint64_t n = trace < launches.size() ? launches[trace] : 0;
          if (named.name.empty() || n > named_launches) {
            named = std::move(pattern);
            named_launches = n;
          }
          // A step across the unrecorded time between two windows is none.
          found.insert(found.end(), own.begin(), own.end());
        }
        if (all) {
          steps = std::move(found);
          out.source = "launch_pattern";
          out.name = std::move(named.name);
          out.period = named.period;
          out.match_pct = named.match_pct;
        } else {
          for (auto& [trace, list] : windows) steps.insert(steps.end(), list.begin(), list.end());
          out.source = "capture_window";
          out.name.clear();
        }
      }
    }
    if (steps.empty()) {
      out.name.clear();
      steps = StepsFromLaunchPattern(model, &out);
      out.source = steps.empty() ? "" : "launch_pattern";
    }
  }
  if (steps.empty()) {
    if (step_range_name.empty()) out.source.clear();
    return out;
  }
  std::sort(steps.begin(), steps.end(), [](const DetectedStep& a, const DetectedStep& b) {
    return std::tie(a.start_ns, a.trace) < std::tie(b.start_ns, b.trace);
  });
  // Warm-up on the steps of the trace with the most steps (ranks run the
  // same loop; a capture window per rank is not a warm-up step).
  std::map<uint16_t, std::vector<const DetectedStep*>> per_trace;
  for (const DetectedStep& s : steps) per_trace[s.trace].push_back(&s);
  const std::vector<const DetectedStep*>* ref = nullptr;
  for (const auto& [t, list] : per_trace) {
    if (ref == nullptr || list.size() > ref->size()) ref = &list;
  }
  std::vector<uint64_t> durations;
  for (const DetectedStep* s : *ref) durations.push_back(s->duration());
  // Steps that ran metric passes or replays (sightline's own, at the start
  // of a --metrics run) are not the application's steady state: it begins
  // after the last of them, when at least two steps follow (else the steps
  // are kept and a note says their times include the passes).
  const std::vector<bool> measured = StepsHoldingMetricLaunches(model, *ref);
  size_t after_metrics = 0, measured_count = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    if (measured[i]) {
      after_metrics = i + 1;
      ++measured_count;
    }
  }
  if (after_metrics > 0 && durations.size() - after_metrics >= 2) {
    std::vector<uint64_t> rest(durations.begin() + after_metrics, durations.end());
    out.warmup = after_metrics + WarmupSteps(rest);
    out.metrics_steps = measured_count;
  } else {
    out.warmup = WarmupSteps(durations);
    if (after_metrics > 0 && notes != nullptr) {
      notes->push_back(absl::StrCat(
          measured_count, " of ", durations.size(),
          " steps ran hardware-metric passes or replays, the last of them step ",
          after_metrics - 1,
          ", and fewer than 2 steps follow: the steady state keeps them, so its step times "
          "include the profiler's passes (run more steps after the passes)"));
    }
  }
  out.steady_start_ns = out.warmup < ref->size() ? (*ref)[out.warmup]->start_ns : 0;
  if (out.warmup > 0) {
    // Index among all steps: the first step (any trace) starting there or later.
    size_t i = 0;
    while (i < steps.size() && steps[i].start_ns < out.steady_start_ns) ++i;
    out.warmup = i;
  }
  return out;
}

absl::StatusOr<WindowSpec> ParseWindowSpec(std::string_view text) {
  WindowSpec spec;
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--window '", std::string(text), "': ", std::string(why),
        " (use steady, all, steps:A-B, capture:N or T0..T1 with units ns/us/ms/s)"));
  };
  if (text == "steady" || text.empty()) return spec;
  if (text == "all" || text == "whole") {
    spec.kind = WindowSpec::kAll;
    return spec;
  }
  if (text.rfind("steps:", 0) == 0) {
    std::string_view r = text.substr(6);
    size_t dash = r.find('-');
    std::string_view a = r.substr(0, dash), b = dash == std::string_view::npos ? a : r.substr(dash + 1);
    uint64_t x = 0, y = 0;
    if (!absl::SimpleAtoi(std::string(a), &x) || !absl::SimpleAtoi(std::string(b), &y)) {
      return bad("step numbers expected");
    }
    if (y < x) return bad("last step before first");
    spec.kind = WindowSpec::kSteps;
    spec.first = x;
    spec.last = y;
    return spec;
  }
  if (text.rfind("capture:", 0) == 0) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(std::string(text.substr(8)), &n) || n == 0) {
      return bad("a capture number from 1 expected");
    }
    spec.kind = WindowSpec::kCapture;
    spec.first = spec.last = n;
    return spec;
  }
  size_t dots = text.find("..");
  if (dots == std::string_view::npos) return bad("unknown window");
  auto time = [](std::string_view t, uint64_t* ns) {
    double scale = 1e9;
    for (auto [suffix, s] : {std::pair<std::string_view, double>{"ns", 1}, {"us", 1e3},
                             {"ms", 1e6}, {"s", 1e9}}) {
      if (t.size() > suffix.size() && t.substr(t.size() - suffix.size()) == suffix) {
        scale = s;
        t.remove_suffix(suffix.size());
        break;
      }
    }
    double v = 0;
    if (!absl::SimpleAtod(std::string(t), &v) || !std::isfinite(v) || v < 0 || v * scale > 1e18) return false;
    *ns = static_cast<uint64_t>(v * scale);
    return true;
  };
  uint64_t t0 = 0, t1 = 0;
  if (!time(text.substr(0, dots), &t0) || !time(text.substr(dots + 2), &t1)) {
    return bad("times must be finite, non-negative numbers");
  }
  if (t1 <= t0) return bad("end not after start");
  spec.kind = WindowSpec::kTime;
  spec.first = t0;
  spec.last = t1;
  return spec;
}

namespace {

struct RecordingGroup {
  uint64_t start_ns = 0, end_ns = 0;
  size_t groups = 0;         // most groups of one trace
  size_t skipped_short = 0;  // later groups passed over: fewer than 2 complete steps
  std::vector<uint16_t> traces;          // traces analysed together
  std::vector<uint16_t> omitted_traces;  // traces whose chosen group is elsewhere in time
};

uint64_t MedianOf(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The capture windows of each trace fall into groups: recordings separated
// by unrecorded time in which steps ran. A gap between two windows splits
// them when it is longer than the shorter of the two windows and longer
// than two steps (the median start-to-start time of consecutive steps in one
// window) -- or, when no window holds two steps and the trace has at least
// three gaps, longer than four times its median gap: windows opened step
// after step (an NVTX capture range that repeats, a profiler started and
// stopped every iteration) are one recording however their gaps compare
// with the windows. With fewer gaps and no step period, a gap longer than
// four times the longer window splits. (Windows of one step each, opened at regular
// intervals far apart, stay one recording: nothing in the trace tells them
// from windows opened every step.) Each trace's
// chosen group is its last with at least two complete steps (a capture the
// process's exit cut short is passed over), else its last; the traces
// whose chosen groups overlap the latest of them are analysed together, the
// others named. nullopt when no trace has more than one group.
std::optional<RecordingGroup> LastRecordingGroup(const TimelineModel& model,
                                                 const StepDetection& steps) {
  std::map<uint16_t, std::vector<const CaptureWindow*>> by_trace;
  for (const CaptureWindow& w : model.capture_windows) {
    if (w.trigger != CaptureTrigger::kWholeRun && w.end_ns > w.start_ns) {
      by_trace[w.trace].push_back(&w);
    }
  }
  if (by_trace.empty()) return std::nullopt;
  // Step period inside windows.
  std::vector<uint64_t> periods;
  for (auto& [trace, windows] : by_trace) {
    std::stable_sort(windows.begin(), windows.end(),
                     [](const CaptureWindow* a, const CaptureWindow* b) {
                       return a->start_ns < b->start_ns;
                     });
    std::vector<const DetectedStep*> own;
    for (const DetectedStep& st : steps.steps) {
      if (st.trace == trace) own.push_back(&st);  // sorted by start
    }
    for (size_t i = 1; i < own.size(); ++i) {
      for (const CaptureWindow* w : windows) {
        if (own[i - 1]->start_ns >= w->start_ns && own[i]->end_ns <= w->end_ns) {
          periods.push_back(own[i]->start_ns - own[i - 1]->start_ns);
          break;
        }
      }
    }
  }
  const uint64_t period = MedianOf(periods);
  struct Span {
    uint64_t start_ns, end_ns;
    size_t complete_steps;
  };
  struct Chosen {
    Span span;
    size_t groups, skipped;
  };
  std::map<uint16_t, Chosen> chosen;
  size_t most_groups = 0;
  for (const auto& [trace, windows] : by_trace) {
    std::vector<uint64_t> gaps;
    uint64_t reach = 0;
    for (size_t i = 0; i < windows.size(); ++i) {
      if (i > 0 && windows[i]->start_ns > reach) gaps.push_back(windows[i]->start_ns - reach);
      reach = std::max(reach, windows[i]->end_ns);
    }
    const uint64_t median_gap = MedianOf(gaps);
    std::vector<Span> spans;
    uint64_t last_len = 0;
    for (const CaptureWindow* w : windows) {
      const uint64_t len = w->end_ns - w->start_ns;
      bool split = false;
      if (!spans.empty() && w->start_ns > spans.back().end_ns) {
        const uint64_t gap = w->start_ns - spans.back().end_ns;
        const uint64_t far = period > 0        ? 2 * period
                             : gaps.size() >= 3 ? 4 * median_gap
                                                : 4 * std::max(len, last_len);
        split = gap > std::min(len, last_len) && gap > far;
      }
      if (spans.empty() || split) {
        spans.push_back({w->start_ns, w->end_ns, 0});
      } else {
        spans.back().end_ns = std::max(spans.back().end_ns, w->end_ns);
      }
      last_len = len;
    }
    for (Span& sp : spans) {
      for (const DetectedStep& st : steps.steps) {
        if (st.trace == trace && st.start_ns >= sp.start_ns && st.end_ns <= sp.end_ns) {
          ++sp.complete_steps;
        }
      }
    }
    size_t pick = spans.size() - 1, skipped = 0;
    for (size_t i = spans.size(); i-- > 0;) {
      if (spans[i].complete_steps >= 2) {
        pick = i;
        skipped = spans.size() - 1 - i;
        break;
      }
    }
    chosen[trace] = {spans[pick], spans.size(), skipped};
    most_groups = std::max(most_groups, spans.size());
  }
  const Chosen* latest = nullptr;
  for (const auto& [trace, ch] : chosen) {
    if (latest == nullptr || ch.span.start_ns > latest->span.start_ns) latest = &ch;
  }
  RecordingGroup g;
  g.start_ns = latest->span.start_ns;
  g.end_ns = latest->span.end_ns;
  g.groups = most_groups;
  for (const auto& [trace, ch] : chosen) {
    if (ch.span.start_ns < latest->span.end_ns && ch.span.end_ns > latest->span.start_ns) {
      g.start_ns = std::min(g.start_ns, ch.span.start_ns);
      g.end_ns = std::max(g.end_ns, ch.span.end_ns);
      g.skipped_short = std::max(g.skipped_short, ch.skipped);
      g.traces.push_back(trace);
    } else {
      g.omitted_traces.push_back(trace);
    }
  }
  // One recording per trace, all at the same time: nothing to choose.
  if (most_groups < 2 && g.omitted_traces.empty()) return std::nullopt;
  if (g.groups < 2) g.groups = 2;  // ranks recorded once each, at different times
  return g;
}

// Steps first..last timed on the GPU (each one): their GPU span on `c`.
void SetGpuSpan(const StepDetection& steps, int64_t first, int64_t last, ScopeChoice* c) {
  if (first < 0 || last < first || static_cast<size_t>(last) >= steps.steps.size()) return;
  uint64_t lo = 0, hi = 0;
  for (int64_t i = first; i <= last; ++i) {
    const DetectedStep& s = steps.steps[static_cast<size_t>(i)];
    if (s.gpu_end_ns <= s.gpu_start_ns) return;
    lo = lo == 0 ? s.gpu_start_ns : std::min(lo, s.gpu_start_ns);
    hi = std::max(hi, s.gpu_end_ns);
  }
  c->gpu_start_ns = lo;
  c->gpu_end_ns = hi;
}

}  // namespace

ScopeChoice ChooseScope(const TimelineModel& model, const StepDetection& steps,
                        const WindowSpec& spec, std::vector<std::string>* notes) {
  ScopeChoice c;
  auto note = [&](std::string s) {
    if (notes != nullptr) notes->push_back(std::move(s));
  };
  switch (spec.kind) {
    case WindowSpec::kAll:
      return c;
    case WindowSpec::kTime:
      c.kind = "time";
      c.start_ns = model.first_ns + spec.first;
      c.end_ns = model.first_ns + spec.last;
      return c;
    case WindowSpec::kCapture: {
      std::vector<const CaptureWindow*> windows;
      for (const CaptureWindow& w : model.capture_windows) windows.push_back(&w);
      std::stable_sort(windows.begin(), windows.end(),
                       [](const CaptureWindow* a, const CaptureWindow* b) {
                         return a->start_ns < b->start_ns;
                       });
      // Windows the collector numbered are found by number only; unnumbered
      // ones (older traces, synthetic ones) by position.
      bool any_numbered = false, found = false;
      for (const CaptureWindow* x : windows) {
        any_numbered |= x->index != 0;
        found |= x->index == spec.first;
      }
      if (spec.first == 0 || (any_numbered && !found) ||
          (!any_numbered && spec.first > windows.size())) {
        note(absl::StrCat("--window capture:", spec.first, ": the trace has ", windows.size(),
                          " capture windows; analysing the whole trace"));
        return c;
      }
      // The window the collector numbered N (a monitor capture's event names
      // it), else the N-th by start.
      const CaptureWindow* chosen = nullptr;
      for (const CaptureWindow* x : windows) {
        if (x->index == spec.first) chosen = x;
      }
      if (chosen == nullptr) chosen = windows[spec.first - 1];  // unnumbered, in range
      const CaptureWindow& w = *chosen;
      c.kind = "time";
      c.start_ns = w.start_ns;
      c.end_ns = w.end_ns > w.start_ns ? w.end_ns : model.last_ns;
      note(absl::StrCat("scope: capture window ", spec.first, " of ", windows.size()));
      return c;
    }
    case WindowSpec::kSteps:
      if (steps.steps.empty() || spec.first >= steps.steps.size()) {
        note(absl::StrCat("--window steps:", spec.first, "-", spec.last, ": the trace has ",
                          steps.steps.size(), " steps; analysing the whole trace"));
        return c;
      }
      c.kind = "steps";
      c.first_step = static_cast<int64_t>(spec.first);
      c.last_step = static_cast<int64_t>(std::min<uint64_t>(spec.last, steps.steps.size() - 1));
      c.start_ns = steps.steps[c.first_step].start_ns;
      c.end_ns = steps.steps[c.last_step].end_ns;
      SetGpuSpan(steps, c.first_step, c.last_step, &c);
      return c;
    case WindowSpec::kSteady:
      break;
  }
  // Recorded in windows far apart (monitor captures, `--capture-range`
  // windows minutes apart): the time between them was not recorded, and a
  // scope across it reads as idle GPU (a 10-minute monitored run's default
  // report: "cpu_bound 34.5 %, step 49.09 ms -> ~1.16 ms expected"). The
  // default scope is then the steps of the last recording.
  if (std::optional<RecordingGroup> g = LastRecordingGroup(model, steps)) {
    // Every trace's whole steps inside the recording (a trace recorded at
    // that time is analysed with it, whichever recording it chose; one
    // without capture windows too). A step range (indices into steps
    // sorted across traces) only when no other step lies between them;
    // else the kept steps' time span.
    int64_t first = -1, last = -1;
    size_t kept = 0;
    uint64_t kept_start = 0, kept_end = 0;
    for (size_t i = 0; i < steps.steps.size(); ++i) {
      const DetectedStep& st = steps.steps[i];
      if (st.start_ns < g->start_ns || st.end_ns > g->end_ns) continue;
      // A trace with a step here is analysed here, not named as left out.
      g->omitted_traces.erase(
          std::remove(g->omitted_traces.begin(), g->omitted_traces.end(), st.trace),
          g->omitted_traces.end());
      if (first < 0) first = static_cast<int64_t>(i);
      last = static_cast<int64_t>(i);
      kept_start = kept == 0 ? st.start_ns : std::min(kept_start, st.start_ns);
      kept_end = std::max(kept_end, st.end_ns);
      ++kept;
    }
    if (first >= 0 && kept == static_cast<size_t>(last - first + 1)) {
      c.kind = "steps";
      c.first_step = first;
      c.last_step = last;
      c.start_ns = kept_start;
      c.end_ns = kept_end;
      SetGpuSpan(steps, first, last, &c);
    } else if (first >= 0) {
      c.kind = "time";
      c.start_ns = kept_start;
      c.end_ns = kept_end;
    } else {
      c.kind = "time";
      c.start_ns = g->start_ns;
      c.end_ns = g->end_ns;
    }
    std::string which = g->skipped_short > 0
                            ? absl::StrCat("the last with at least 2 steps (", g->skipped_short,
                                           " later ", g->skipped_short == 1 ? "one has" : "ones have",
                                           " fewer)")
                            : "the last";
    std::string omitted;
    if (!g->omitted_traces.empty()) {
      omitted = "; not in it: the recording of ";
      for (size_t i = 0; i < g->omitted_traces.size(); ++i) {
        const uint16_t t = g->omitted_traces[i];
        absl::StrAppend(&omitted, i ? ", " : "",
                        t < model.traces.size() ? model.traces[t].name : absl::StrCat("trace ", t));
      }
      absl::StrAppend(&omitted, " (at another time)");
    }
    note(absl::StrCat("recorded in ", g->groups, " groups of capture windows with unrecorded time "
                      "between them: analysing ", which, omitted,
                      " (--window capture:N for one window, --window all for the whole trace)"));
    return c;
  }
  if (steps.steps.size() < 2 || steps.warmup >= steps.steps.size()) return c;
  c.kind = "steady_state";
  c.first_step = static_cast<int64_t>(steps.warmup);
  c.last_step = static_cast<int64_t>(steps.steps.size() - 1);
  c.start_ns = steps.steps[c.first_step].start_ns;
  c.end_ns = 0;
  for (size_t i = c.first_step; i < steps.steps.size(); ++i) {
    c.end_ns = std::max(c.end_ns, steps.steps[i].end_ns);
  }
  SetGpuSpan(steps, c.first_step, c.last_step, &c);
  uint64_t begin = model.first_ns;
  for (const TraceSource& t : model.traces) {
    uint64_t s = t.header.start_realtime_ns;
    if (s != 0 && s < begin && begin - s < 3600ull * 1'000'000'000) begin = s;
  }
  c.startup_ns = c.start_ns > begin ? c.start_ns - begin : 0;
  return c;
}

}  // namespace sightline::analysis
