// achieved_occupancy_gap — achieved occupancy
// (sm__warps_active.avg.pct_of_peak_sustained_active, ncu's definition) far
// below the theoretical one: more than `min_gap_pct` points and more than
// `min_relative_gap_pct` of the theoretical value. Needs the `occupancy`
// metric set. The evidence says which cause the counters support:
//   imbalance   the busiest SM was active much longer than the average SM
//               (sm__cycles_active.max / .avg ≥ 1 + `imbalance_threshold`):
//               uneven work per block, or a tail of blocks on few SMs;
//   tail        few waves of blocks (the last partial wave leaves SMs idle);
//   scheduling  neither: warps finish at different times inside blocks
//               (divergent loop trip counts, barriers) or launch overhead.
// Saving (heuristic): the lost warp slots, half-weighted: (1 − achieved /
// theoretical) × 0.5 of the kernel's time.
#include <cmath>

#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const std::vector<KernelView> views = KernelViews(ctx.model());
  const double total = TotalKernelTime(views);
  size_t emitted = 0;
  for (const KernelView& v : views) {
    if (emitted >= ctx.Param("max_kernels")) break;
    if (!Eligible(ctx, v) || !v.has_occupancy || !v.Has(kAchievedOccupancy)) continue;
    const double theoretical = v.occupancy.theoretical_occupancy_pct;
    const double achieved = v.Metric(kAchievedOccupancy);
    if (theoretical <= 0) continue;
    const double gap = theoretical - achieved;
    if (gap < ctx.Param("min_gap_pct") || 100.0 * gap / theoretical < ctx.Param("min_relative_gap_pct")) {
      continue;
    }
    std::string cause = "scheduling";
    double imbalance = -1;
    if (v.Has(kSmCyclesActiveAvg) && v.Has(kSmCyclesActiveMax) && v.Metric(kSmCyclesActiveAvg) > 0) {
      imbalance = v.Metric(kSmCyclesActiveMax) / v.Metric(kSmCyclesActiveAvg);
    }
    double waves = -1;
    if (v.device != nullptr && v.device->sm_count > 0 && v.occupancy.active_blocks_per_sm > 0) {
      waves = double(v.config->config.blocks()) /
              (double(v.occupancy.active_blocks_per_sm) * v.device->sm_count);
    }
    if (imbalance >= 1.0 + ctx.Param("imbalance_threshold")) {
      cause = "imbalance";
    } else if (waves > 0 && waves < 2.0 && waves != std::floor(waves)) {
      cause = "tail";
    }
    const double fraction = (1.0 - achieved / theoretical) * 0.5;
    Finding f = NewKernelFinding(ctx, v, fraction, total);
    f.title = ShortKernelName(v.name()) + ": achieved occupancy " + Pct(achieved) + " vs theoretical " +
              Pct(theoretical) + " (" + cause + ")";
    f.Number("achieved_occupancy_pct", achieved, "pct")
        .Number("theoretical_occupancy_pct", theoretical, "pct")
        .Number("gap_pct", gap, "pct")
        .Text("likely_cause", cause);
    if (imbalance > 0) f.Number("sm_active_max_over_avg", imbalance, "");
    if (waves > 0) f.Number("waves_per_sm", waves, "");
    if (cause == "imbalance") {
      f.recommendation =
          "Work is unevenly spread over the SMs (the busiest SM was active " + Pct(100 * (imbalance - 1)) +
          " longer than the average one). Balance the work per block (split long blocks, grid-stride "
          "loops with an even share per block) or launch more, smaller blocks.";
    } else if (cause == "tail") {
      f.recommendation = "Only " + std::to_string(waves).substr(0, 4) +
                         " waves of blocks: the partial last wave leaves warp slots empty. Launch more "
                         "blocks (smaller blocks, or split the work) so the tail is a small fraction.";
    } else {
      f.recommendation =
          "Warps inside blocks finish at different times or blocks start late: look for divergent loop "
          "trip counts, barriers waiting on slow warps, and very short kernels whose launch ramp dominates.";
    }
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(achieved_occupancy_gap, sightline::analysis::kRuleKernel,
               "Achieved occupancy far below theoretical",
               sightline::analysis::Run,
               {"min_gap_pct", 10.0, "report when theoretical − achieved exceeds this many points"},
               {"min_relative_gap_pct", 20.0, "... and this share of the theoretical occupancy"},
               {"imbalance_threshold", 0.15, "sm__cycles_active max/avg above 1 + this = imbalance"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
