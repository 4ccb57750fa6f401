// kernel_fragmentation — many short kernels (< `short_kernel_ns`, 50 µs by
// default, the seed's threshold): their count and share, their launch
// overhead (launch API time) against their GPU time, and the idle gaps in
// front of them. Saving: the host-wait and kernel-wait idle immediately
// before short kernels — what CUDA Graphs (one launch for the sequence) or
// fusion removes. Kernels launched through cudaGraphLaunch are counted apart
// (graph_launched_short_kernels): the graph already removed their launches.
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  uint64_t short_ns = static_cast<uint64_t>(ctx.Param("short_kernel_ns"));
  double min_share = ctx.Param("min_short_share_pct");
  uint64_t min_count = static_cast<uint64_t>(ctx.Param("min_count"));

  uint64_t kernels = 0, short_count = 0, short_gpu = 0, short_launch_ns = 0, launches_seen = 0;
  uint64_t gap_before = 0, all_kernel_ns = 0, graph_short = 0;
  std::vector<Offender> by_name(model.strings.size());  // indexed by name
  for (const DeviceTimeline& t : ctx.timeline().devices) {
    const DeviceTimelineInfo& info = model.devices[t.device];
    size_t g = 0;  // gaps are sorted by start; walk them alongside activities
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      const GpuActivity& a = model.activities[i];
      if (a.kind != ActivityKind::kKernel) continue;
      ++kernels;
      all_kernel_ns += a.duration();
      if (a.duration() >= short_ns) continue;
      const ApiCall* launch = model.LaunchOf(a);
      if (launch != nullptr && (launch->flags & kApiGraphLaunch)) {
        // Already one launch for the whole sequence: CUDA Graphs applied.
        ++graph_short;
        continue;
      }
      ++short_count;
      short_gpu += a.duration();
      if (launch != nullptr) {
        short_launch_ns += launch->duration();
        ++launches_seen;
      }
      while (g < t.gaps.size() && t.gaps[g].end_ns < a.start_ns) ++g;
      if (g < t.gaps.size() && t.gaps[g].end_ns == a.start_ns && t.gaps[g].next_activity == i &&
          (t.gaps[g].cause == IdleCause::kHostWait ||
           t.gaps[g].cause == IdleCause::kKernelWait)) {
        gap_before += t.gaps[g].length();
      }
      Offender& o = by_name[a.name];  // named at the end (no string per kernel)
      o.count++;
      o.total_ns += a.duration();
    }
  }
  double share = PctOf(double(short_count), double(kernels));
  if (short_count < min_count || share < min_share) return;
  if (ctx.PctOfWindow(gap_before) < ctx.Param("min_saving_pct")) return;
  Finding f = ctx.NewFinding(gap_before);
  f.title = std::to_string(short_count) + " kernels (" + FormatPct(share) + " of launches) run " +
            "under " + FormatNs(double(short_ns)) + "; mean " +
            FormatNs(double(short_gpu) / double(short_count));
  f.Number("short_kernels", double(short_count), "count")
      .Number("kernels", double(kernels), "count")
      .Number("short_share_pct", share, "pct")
      .Number("short_kernel_ns", double(short_ns), "ns")
      .Number("short_gpu_ns", double(short_gpu), "ns")
      .Number("short_gpu_pct_of_kernel_time", PctOf(double(short_gpu), double(all_kernel_ns)), "pct")
      .Number("mean_short_kernel_ns", double(short_gpu) / double(short_count), "ns")
      .Number("launch_api_ns", double(short_launch_ns), "ns")
      .Number("mean_launch_api_ns",
              launches_seen ? double(short_launch_ns) / double(launches_seen) : 0, "ns")
      .Number("launch_overhead_ratio",
              short_gpu ? double(short_launch_ns) / double(short_gpu) : 0, "")
      .Number("idle_before_short_kernels_ns", double(gap_before), "ns")
      .Number("graph_launched_short_kernels", double(graph_short), "count");
  for (size_t name = 0; name < by_name.size(); ++name) {
    Offender& o = by_name[name];
    if (o.count == 0) continue;
    o.name = std::string(model.String(static_cast<uint32_t>(name)));
    o.share_pct = PctOf(double(o.count), double(short_count));
    o.detail = "mean " + FormatNs(double(o.total_ns) / double(o.count));
    f.offenders.push_back(o);
  }
  std::stable_sort(f.offenders.begin(), f.offenders.end(),
                   [](const Offender& a, const Offender& b) { return a.count > b.count; });
  if (f.offenders.size() > 8) f.offenders.resize(8);
  f.recommendation =
      "Launch overhead dominates these kernels. Capture the repeated launch sequence in a CUDA "
      "Graph (torch.cuda.graphs / torch.compile mode=\"reduce-overhead\"), fuse elementwise "
      "kernels (torch.compile, custom fused kernels), or batch the work so each launch does more.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(kernel_fragmentation, sightline::analysis::kRuleTimeline,
               "Many short kernels: launch overhead dominates",
               sightline::analysis::Run,
               {"short_kernel_ns", 50e3, "kernels shorter than this are short"},
               {"min_short_share_pct", 50, "fire when short kernels are this share of launches"},
               {"min_count", 100, "... and at least this many"},
               {"min_saving_pct", 1, "fire when the estimated saving reaches this % of window"});
