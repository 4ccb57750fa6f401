// occupancy_limited — theoretical occupancy below `max_occupancy_pct` (50% by
// default), with the limiter (registers, shared memory, warps per block vs
// warps per SM, the resident-block cap; ties listed) and the single change that
// reaches the next occupancy step: registers per thread, shared memory per
// block, or a block size (occupancy.h NextOccupancyStep). Works on plain
// traces: it needs only the launch configuration and the device limits.
//
// Saving (heuristic, stated in the evidence): occupancy hides latency, so the
// local saving is the relative occupancy gain (1 − current/next), counted in
// full when metrics show the kernel latency-bound (speed of light of both SM
// and memory under 60%) and half otherwise (without metrics, or when a
// throughput limit would eat part of the gain). Kernels whose achieved
// occupancy is far below the theoretical one are achieved_occupancy_gap's.
#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;

std::string LimiterList(const OccupancyResult& r) {
  std::string out;
  for (OccupancyLimiter l : {OccupancyLimiter::kWarps, OccupancyLimiter::kRegisters,
                             OccupancyLimiter::kSharedMemory, OccupancyLimiter::kBlocks}) {
    if (!r.limited_by(l)) continue;
    if (!out.empty()) out += ",";
    out += OccupancyLimiterName(l);
  }
  return out;
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const std::vector<KernelView> views = ConfigViews(ctx.model());
  const double total = TotalKernelTime(views);
  const double threshold = ctx.Param("max_occupancy_pct");
  size_t emitted = 0;
  for (const KernelView& v : views) {
    if (emitted >= ctx.Param("max_kernels")) break;
    if (!Eligible(ctx, v) || !v.has_occupancy) continue;
    const OccupancyResult& occ = v.occupancy;
    if (occ.active_blocks_per_sm == 0 || occ.theoretical_occupancy_pct >= threshold) continue;
    const OccupancyStep step = NextOccupancyStep(v.arch, v.launch, occ);
    double next_pct = std::max(step.target_occupancy_pct, step.block_size_occupancy_pct);
    if (next_pct <= occ.theoretical_occupancy_pct) continue;  // nothing reachable to suggest
    const bool has_sol = v.Has(kSmThroughput) && (v.Has(kMemoryThroughput) || v.Has(kDramThroughput));
    const bool latency_bound = has_sol && v.Metric(kSmThroughput) < 60 && MemorySol(v) < 60;
    const double gain = 1.0 - occ.theoretical_occupancy_pct / next_pct;
    const double fraction = gain * (latency_bound ? 1.0 : 0.5);
    Finding f = NewKernelFinding(ctx, v, fraction, total);
    const std::string limiter = OccupancyLimiterName(occ.limiter);
    f.title = ShortKernelName(v.name()) + ConfigSuffix(v) + ": theoretical occupancy " +
              Pct(occ.theoretical_occupancy_pct) + " limited by " + limiter + " (" +
              std::to_string(occ.active_blocks_per_sm) + " blocks × " +
              std::to_string(occ.warps_per_block) + " warps of " +
              std::to_string(occ.max_warps_per_sm) + " per SM)";
    f.Number("theoretical_occupancy_pct", occ.theoretical_occupancy_pct, "pct")
        .Text("limiter", limiter)
        .Text("limiters", LimiterList(occ))
        .Number("active_blocks_per_sm", occ.active_blocks_per_sm, "count")
        .Number("active_warps_per_sm", occ.active_warps_per_sm, "count")
        .Number("block_limit_registers", occ.block_limit_registers, "count")
        .Number("block_limit_shared_memory", occ.block_limit_shared_memory, "count")
        .Number("block_limit_warps", occ.block_limit_warps, "count")
        .Number("block_limit_blocks", occ.block_limit_blocks, "count")
        .Number("threads_per_block", v.launch.threads_per_block, "count")
        .Number("registers_per_thread", v.launch.registers_per_thread, "count")
        .Number("shared_bytes_per_block",
                double(v.launch.static_shared_bytes + v.launch.dynamic_shared_bytes), "bytes")
        .Number("shared_carveout_bytes", double(occ.shared_carveout_bytes), "bytes")
        .Number("next_occupancy_pct", next_pct, "pct")
        .Text("latency_bound", has_sol ? (latency_bound ? "yes" : "no") : "unknown (no metrics)");
    if (v.Has(kAchievedOccupancy)) f.Number("achieved_occupancy_pct", v.Metric(kAchievedOccupancy), "pct");
    std::string rec;
    if (step.registers_per_thread > 0) {
      f.Number("registers_per_thread_for_next_step", step.registers_per_thread, "count");
      rec += "Cut registers to ≤ " + std::to_string(step.registers_per_thread) +
             " per thread (__launch_bounds__(" + std::to_string(v.launch.threads_per_block) + ", " +
             std::to_string(step.target_blocks_per_sm) + ") or -maxrregcount) to run " +
             std::to_string(step.target_blocks_per_sm) + " blocks per SM (" +
             Pct(step.target_occupancy_pct) + "). ";
    }
    if (step.shared_bytes_per_block > 0) {
      f.Number("shared_bytes_for_next_step", double(step.shared_bytes_per_block), "bytes");
      rec += "Use ≤ " + std::to_string(step.shared_bytes_per_block) +
             " B of shared memory per block (smaller tiles, or fewer stages) to run " +
             std::to_string(step.target_blocks_per_sm) + " blocks per SM (" +
             Pct(step.target_occupancy_pct) + "). ";
    }
    if (step.block_size > 0) {
      f.Number("block_size_for_best_occupancy", step.block_size, "count")
          .Number("block_size_occupancy_pct", step.block_size_occupancy_pct, "pct");
      rec += "A block of " + std::to_string(step.block_size) + " threads reaches " +
             Pct(step.block_size_occupancy_pct) + " with the same per-thread resources. ";
    }
    if (occ.limited_by(OccupancyLimiter::kBlocks) && step.block_size == 0) {
      rec += "The resident-block cap binds: use larger blocks. ";
    }
    rec += "Occupancy matters when the kernel is latency-bound; check achieved occupancy and stall "
           "reasons (sightline --metrics occupancy) before trading registers for spills.";
    f.recommendation = rec;
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(occupancy_limited, sightline::analysis::kRuleKernel,
               "Theoretical occupancy limited by a per-SM resource",
               sightline::analysis::Run,
               {"max_occupancy_pct", 50.0, "report kernels whose theoretical occupancy is below this"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
