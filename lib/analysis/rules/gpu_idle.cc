// gpu_idle — GPU idle gaps (nsys `gpu_gaps`, with HTA-style cause attribution).
//
// Per device, every gap with no GPU activity that is at least `min_gap_ns`
// long inside the device window (first to last activity; profiler overhead
// counts as busy). Fires when those gaps add up to `min_idle_pct` of the
// window. Saving: the idle time of those gaps, less the gaps during which
// the host was inside the profiler (cause `profiler`: not the app's, shown
// in the evidence). Evidence splits it by cause (timeline.h): host-wait,
// sync-wait, kernel-wait, other, profiler.
#include <algorithm>
#include <array>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  uint64_t min_gap = static_cast<uint64_t>(ctx.Param("min_gap_ns"));
  double min_idle_pct = ctx.Param("min_idle_pct");
  for (const DeviceTimeline& t : ctx.timeline().devices) {
    if (t.window_ns() == 0) continue;
    std::array<uint64_t, kNumIdleCauses> by_cause{};
    std::array<uint64_t, kNumIdleCauses> count_by_cause{};
    uint64_t idle = 0, count = 0, longest = 0;
    std::vector<const IdleGap*> gaps;
    for (const IdleGap& g : t.gaps) {
      if (g.length() < min_gap) continue;
      idle += g.length();
      ++count;
      longest = std::max(longest, g.length());
      by_cause[static_cast<size_t>(g.cause)] += g.length();
      count_by_cause[static_cast<size_t>(g.cause)]++;
      gaps.push_back(&g);
    }
    const size_t profiler = static_cast<size_t>(IdleCause::kProfiler);
    uint64_t actionable = idle - by_cause[profiler];
    double idle_pct = PctOf(double(idle), double(t.window_ns()));
    if (count == count_by_cause[profiler] ||
        PctOf(double(actionable), double(t.window_ns())) < min_idle_pct) {
      continue;
    }
    // The dominant cause among the application's own (profiler excluded).
    size_t dominant =
        std::max_element(by_cause.begin(), by_cause.begin() + profiler) - by_cause.begin();
    Finding f = ctx.NewFinding(actionable);
    f.scope = DeviceLabel(model, t.device);
    f.title = f.scope + " is idle " + FormatPct(idle_pct) + " of its window in " +
              std::to_string(count) + " gaps >= " + FormatNs(double(min_gap)) + " (mostly " +
              IdleCauseName(static_cast<IdleCause>(dominant)) + ")";
    f.Number("gap_count", double(count), "count")
        .Number("idle_ns", double(idle), "ns")
        .Number("idle_pct", idle_pct, "pct")
        .Number("window_ns", double(t.window_ns()), "ns")
        .Number("longest_gap_ns", double(longest), "ns")
        .Number("mean_gap_ns", double(idle) / double(count), "ns")
        .Number("min_gap_ns", double(min_gap), "ns")
        .Number("actionable_idle_ns", double(actionable), "ns");
    for (size_t c = 0; c < kNumIdleCauses; ++c) {
      std::string name = IdleCauseName(static_cast<IdleCause>(c));
      f.Number(name + "_ns", double(by_cause[c]), "ns");
      f.Number(name + "_pct", PctOf(double(by_cause[c]), double(idle)), "pct");
      f.Number(name + "_gaps", double(count_by_cause[c]), "count");
    }
    f.Text("dominant_cause", IdleCauseName(static_cast<IdleCause>(dominant)));
    std::sort(gaps.begin(), gaps.end(),
              [](const IdleGap* a, const IdleGap* b) { return a->length() > b->length(); });
    for (size_t i = 0; i < gaps.size() && i < 5; ++i) {
      const IdleGap& g = *gaps[i];
      Offender o;
      o.name = "gap at +" + FormatNs(double(g.start_ns - t.window_start_ns));
      o.count = 1;
      o.total_ns = g.length();
      o.share_pct = PctOf(double(g.length()), double(idle));
      o.detail = std::string("cause ") + IdleCauseName(g.cause);
      if (g.next_activity != kNone) {
        o.detail += "; next: " + std::string(model.String(model.activities[g.next_activity].name));
      }
      if (g.blocking_api != kNone) {
        o.detail += "; after " + ApiName(model, model.api_calls[g.blocking_api].name);
      }
      f.offenders.push_back(std::move(o));
    }
    switch (static_cast<IdleCause>(dominant)) {
      case IdleCause::kHostWait:
        f.recommendation =
            "The CPU issues work too late: the GPU finishes and waits for the next launch. "
            "Move CPU-side preprocessing off the critical path (DataLoader workers, "
            "pin_memory, prefetching), launch the next step's work before host-side "
            "bookkeeping, or capture the launch sequence in a CUDA Graph.";
        break;
      case IdleCause::kSyncWait:
        f.recommendation =
            "The host blocks in synchronizing calls and the GPU drains its queue. Remove "
            "cudaDeviceSynchronize/cudaStreamSynchronize from the loop, use events "
            "(cudaEventRecord + cudaStreamWaitEvent) for ordering, and read results back "
            "asynchronously once per step.";
        break;
      case IdleCause::kKernelWait:
        f.recommendation =
            "Gaps are launch latency between short kernels: fuse kernels or use CUDA Graphs "
            "to remove per-launch overhead.";
        break;
      case IdleCause::kOther:
      case IdleCause::kProfiler:
        f.recommendation =
            "Work was issued but the GPU waited on a dependency (event waits, another "
            "stream, or host callbacks). Check inter-stream dependencies and move the "
            "dependent work to overlap with independent work.";
        break;
    }
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(gpu_idle, sightline::analysis::kRuleTimeline | sightline::analysis::kRuleOverview,
               "GPU idle gaps with their cause (nsys gpu_gaps)",
               sightline::analysis::Run,
               {"min_gap_ns", 100e3, "only gaps at least this long (nsys default: 500 ms)"},
               {"min_idle_pct", 5.0, "fire when the gaps add up to this % of the device window"});
