// gpu_low_utilization — time chunks with low GPU time-utilization (nsys
// `gpu_time_util`): the device window is split into `num_chunks` equal chunks
// and each chunk whose busy time is under `util_threshold_pct` is flagged.
// Time utilization, not SM utilization. Saving: the idle time inside the
// flagged chunks, less idle gaps caused by the profiler itself (cause
// `profiler`, timeline.h); chunk utilization stays nsys's.
#include <algorithm>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  uint64_t chunks = static_cast<uint64_t>(std::max(1.0, ctx.Param("num_chunks")));
  double threshold = ctx.Param("util_threshold_pct");
  double min_pct = ctx.Param("min_idle_pct");
  for (const DeviceTimeline& t : ctx.timeline().devices) {
    uint64_t window = t.window_ns();
    if (window < chunks) continue;
    struct Chunk {
      uint64_t index, start, end, busy;
    };
    std::vector<Chunk> flagged;
    uint64_t idle_in_flagged = 0, profiler_in_flagged = 0;
    IntervalSet profiler_gaps;
    for (const IdleGap& g : t.gaps) {
      if (g.cause == IdleCause::kProfiler) profiler_gaps.AddSorted(g.start_ns, g.end_ns);
    }
    double min_util = 100;
    for (uint64_t c = 0; c < chunks; ++c) {
      // 128-bit: window * c overflows 64 bits when timestamps span the
      // int64 range (a damaged or hostile trace), which made chunks overlap
      // and the flagged idle exceed the window.
      uint64_t start = t.window_start_ns + MulDiv(window, c, chunks);
      uint64_t end = t.window_start_ns + MulDiv(window, c + 1, chunks);
      uint64_t busy = t.busy.OverlapWith(start, end);
      double util = PctOf(double(busy), double(end - start));
      min_util = std::min(min_util, util);
      if (util < threshold) {
        flagged.push_back({c, start, end, busy});
        idle_in_flagged += (end - start) - busy;
        profiler_in_flagged += profiler_gaps.OverlapWith(start, end);
      }
    }
    uint64_t actionable = idle_in_flagged - std::min(idle_in_flagged, profiler_in_flagged);
    if (flagged.empty() || ctx.PctOfWindow(actionable) < min_pct) continue;
    Finding f = ctx.NewFinding(actionable);
    f.scope = DeviceLabel(model, t.device);
    f.title = f.scope + ": " + std::to_string(flagged.size()) + " of " + std::to_string(chunks) +
              " time chunks under " + FormatPct(threshold) + " GPU utilization";
    double flagged_busy = 0, flagged_len = 0;
    for (const Chunk& c : flagged) {
      flagged_busy += double(c.busy);
      flagged_len += double(c.end - c.start);
    }
    f.Number("chunks_flagged", double(flagged.size()), "count")
        .Number("num_chunks", double(chunks), "count")
        .Number("chunk_ns", double(window) / double(chunks), "ns")
        .Number("util_threshold_pct", threshold, "pct")
        .Number("flagged_mean_util_pct", PctOf(flagged_busy, flagged_len), "pct")
        .Number("min_chunk_util_pct", min_util, "pct")
        .Number("idle_in_flagged_ns", double(idle_in_flagged), "ns")
        .Number("profiler_idle_in_flagged_ns", double(profiler_in_flagged), "ns");
    std::sort(flagged.begin(), flagged.end(), [](const Chunk& a, const Chunk& b) {
      return double(a.busy) / double(a.end - a.start) < double(b.busy) / double(b.end - b.start);
    });
    for (size_t i = 0; i < flagged.size() && i < 5; ++i) {
      const Chunk& c = flagged[i];
      Offender o;
      o.name = "chunk " + std::to_string(c.index) + " [+" +
               FormatNs(double(c.start - t.window_start_ns)) + ", +" +
               FormatNs(double(c.end - t.window_start_ns)) + ")";
      o.count = 1;
      o.total_ns = (c.end - c.start) - c.busy;
      o.share_pct = PctOf(double(c.busy), double(c.end - c.start));
      o.detail = "utilization " + FormatPct(o.share_pct);
      f.offenders.push_back(std::move(o));
    }
    f.recommendation =
        "Look at what the CPU does during the flagged chunks (NVTX ranges, API calls): "
        "initialisation, data loading, checkpointing or synchronisation. Overlap it with GPU "
        "work or move it out of the measured loop.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(gpu_low_utilization,
               sightline::analysis::kRuleTimeline | sightline::analysis::kRuleOverview,
               "Time chunks with low GPU time-utilization (nsys gpu_time_util)",
               sightline::analysis::Run,
               {"num_chunks", 30, "equal chunks the device window is split into", 1, 100000},
               {"util_threshold_pct", 50, "flag chunks under this time-utilization"},
               {"min_idle_pct", 1, "fire when idle in flagged chunks reaches this % of window"});
