// launch_latency — HTA launch statistics: launch API calls longer than
// `long_launch_ns` (50 µs) and launch delays (GPU start − end of the launching
// call) longer than `long_delay_ns` (100 µs). A delay behind a busy stream is
// only queueing; the rule counts the device idle time inside the long delays
// (their union, so launches queued together count once). Saving: long launch
// time beyond the median launch + idle inside long delays. Profiler overhead
// recorded inside a launch call (CUPTI's own kinds) is excluded.
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  uint64_t long_launch = static_cast<uint64_t>(ctx.Param("long_launch_ns"));
  uint64_t long_delay = static_cast<uint64_t>(ctx.Param("long_delay_ns"));
  // Median launch duration (µs-scale values; saturate at 4.29 s to keep
  // 4 bytes per launch).
  std::vector<uint32_t> durations;
  // At most one per call: no doubling (~2.5 x the launches' 4 bytes at its
  // peak); the pages of calls that are not launches are never written.
  durations.reserve(model.api_calls.size());
  for (const ApiCall& c : model.api_calls) {
    if (c.flags & kApiLaunch) {
      durations.push_back(static_cast<uint32_t>(std::min<uint64_t>(c.duration(), UINT32_MAX)));
    }
  }
  if (durations.empty()) return;
  std::nth_element(durations.begin(), durations.begin() + durations.size() / 2, durations.end());
  uint64_t median = durations[durations.size() / 2];
  const size_t launches = durations.size();
  durations = {};
  uint64_t long_count = 0, long_excess = 0, profiler_excluded = 0;
  std::map<std::string, Offender> offenders;
  // Host-side profiler overhead inside a launch call (CUPTI's activity
  // buffer request at the first launch after activity tracing was enabled:
  // 5.35 ms on the H200 at a capture start) is the profiler's, not the
  // app's: it is taken out before judging the call long. Overhead spans are
  // few (sorted by start), long calls are few: the scan stays cheap.
  auto profiler_time_in = [&](const ApiCall& c) {
    uint64_t sum = 0;
    auto end = std::lower_bound(model.overheads.begin(), model.overheads.end(), c.end_ns,
                                [](const OverheadSpan& o, uint64_t t) { return o.start_ns < t; });
    for (auto it = model.overheads.begin(); it != end; ++it) {
      if (it->trace != c.trace || it->device != kNone || it->thread != c.thread ||
          it->end_ns <= c.start_ns || !IsProfilerOverheadKind(it->kind)) {
        continue;
      }
      sum += std::min(it->end_ns, c.end_ns) - std::max(it->start_ns, c.start_ns);
    }
    return std::min(sum, c.duration());
  };
  for (const ApiCall& c : model.api_calls) {
    if ((c.flags & kApiLaunch) == 0 || c.duration() <= long_launch) continue;
    uint64_t own = c.duration() - profiler_time_in(c);
    profiler_excluded += c.duration() - own;
    if (own <= long_launch) continue;
    ++long_count;
    long_excess += own - std::min(own, median);
    Offender& o = offenders["launch|" + ApiName(model, c.name)];
    o.name = ApiName(model, c.name);
    o.detail = "launch call > " + FormatNs(double(long_launch));
    o.count++;
    o.total_ns += own;
  }
  // Long delays; the idle time they explain is the union of their windows
  // minus the device's busy time (many launches queued at once share one
  // idle period, which must be counted once). A device's activities are
  // sorted by start, i.e. its delay windows by end: walking them backwards
  // merges the windows in O(1) memory.
  uint64_t delay_count = 0, delay_idle = 0, delay_total = 0;
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const DeviceTimelineInfo& info = model.devices[d];
    const DeviceTimeline& t = ctx.timeline().devices[d];
    uint64_t cur_lo = 0, cur_hi = 0, cur_count = 0;
    uint32_t cur_name = 0;
    bool open = false;
    auto close = [&] {
      if (!open) return;
      open = false;
      uint64_t len = cur_hi - cur_lo;
      uint64_t idle = len - std::min(len, t.busy.OverlapWith(cur_lo, cur_hi));
      if (idle == 0) return;
      delay_idle += idle;
      Offender& o = offenders["delay|" + std::string(model.String(cur_name))];
      o.name = std::string(model.String(cur_name));
      o.detail = "launch delays > " + FormatNs(double(long_delay)) + " on an idle GPU";
      o.count += cur_count;
      o.total_ns += idle;
    };
    for (uint32_t i = info.activity_end; i-- > info.activity_begin;) {
      const GpuActivity& a = model.activities[i];
      const ApiCall* launch = model.LaunchOf(a);
      if (launch == nullptr || (launch->flags & kApiLaunch) == 0) continue;
      // A graph's nodes queue behind each other by design: not a launch delay.
      if (launch->flags & kApiGraphLaunch) continue;
      if (a.start_ns <= launch->end_ns || a.start_ns - launch->end_ns <= long_delay) continue;
      ++delay_count;
      uint64_t lo = launch->end_ns, hi = a.start_ns;
      delay_total += hi - lo;
      if (open && hi >= cur_lo) {
        cur_lo = std::min(cur_lo, lo);
        ++cur_count;
      } else {
        close();
        cur_lo = lo;
        cur_hi = hi;
        cur_name = a.name;  // the latest kernel of the merged window
        cur_count = 1;
        open = true;
      }
    }
    close();
  }
  // Slow launch calls on several host threads can add up to more than the
  // window; no change saves more than the whole window.
  uint64_t saving = std::min<uint64_t>(long_excess + delay_idle, ctx.window_ns());
  if ((long_count == 0 && delay_idle == 0) || ctx.PctOfWindow(saving) < ctx.Param("min_saving_pct")) {
    return;
  }
  Finding f = ctx.NewFinding(saving);
  f.title = std::to_string(long_count) + " launch calls over " + FormatNs(double(long_launch)) +
            ", " + std::to_string(delay_count) + " launch delays over " +
            FormatNs(double(long_delay));
  f.Number("launches", double(launches), "count")
      .Number("median_launch_ns", double(median), "ns")
      .Number("long_launches", double(long_count), "count")
      .Number("long_launch_excess_ns", double(long_excess), "ns")
      .Number("profiler_overhead_excluded_ns", double(profiler_excluded), "ns")
      .Number("long_delays", double(delay_count), "count")
      .Number("long_delay_total_ns", double(delay_total), "ns")
      .Number("long_delay_idle_ns", double(delay_idle), "ns")
      .Number("long_launch_ns", double(long_launch), "ns")
      .Number("long_delay_ns", double(long_delay), "ns");
  for (auto& [k, o] : offenders) f.offenders.push_back(o);
  KeepTopOffenders(&f.offenders, 8);
  f.recommendation =
      "Slow launch calls usually mean lazy module loading, JIT compilation, first-use "
      "allocation or a contended driver lock: warm up before measuring "
      "(CUDA_MODULE_LOADING=EAGER), avoid launching from many threads at once, and capture "
      "steady-state sequences in CUDA Graphs.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(launch_latency, sightline::analysis::kRuleTimeline,
               "Long launch calls and launch delays (HTA launch statistics)",
               sightline::analysis::Run,
               {"long_launch_ns", 50e3, "launch API calls longer than this"},
               {"long_delay_ns", 100e3, "GPU start later than this after the launch returned"},
               {"min_saving_pct", 1, "fire when the estimated saving reaches this % of window"});
