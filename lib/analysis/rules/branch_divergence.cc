// branch_divergence — active threads per executed warp instruction
// (smsp__thread_inst_executed_per_inst_executed.ratio, 32 = no divergence;
// ANCHORS.md) against the ceiling the launch allows (a block of 100 threads
// has a partly empty last warp: that is block_size_not_warp_multiple's
// finding, not divergence). Needs the `compute` metric set. Reported when the
// efficiency ratio / ceiling is below `min_efficiency_pct` (75%). Saving: the
// idle lane share weighted by SM speed of light (issue-bound share; 0.5 when
// not collected).
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
    if (!Eligible(ctx, v) || !v.Has(kThreadsPerInst)) continue;
    const double ratio = v.Metric(kThreadsPerInst);
    const uint64_t threads = v.config->config.threads_per_block();
    double ceiling = 32;
    if (threads > 0) {
      const uint64_t warps = (threads + 31) / 32;
      ceiling = 32.0 * double(threads) / double(warps * 32);
    }
    const double efficiency = ceiling > 0 ? ratio / ceiling : 1;
    if (100 * efficiency >= ctx.Param("min_efficiency_pct")) continue;
    const double sm = v.Metric(kSmThroughput);
    const double weight = sm >= 0 ? sm / 100.0 : 0.5;
    Finding f = NewKernelFinding(ctx, v, (1 - efficiency) * weight, total);
    f.title = ShortKernelName(v.name()) + ": branch divergence, " + std::to_string(ratio).substr(0, 4) +
              " of 32 threads active per instruction (" + Pct(100 * efficiency) + " efficiency)";
    f.Number("threads_per_instruction", ratio, "")
        .Number("launch_ceiling", ceiling, "")
        .Number("simt_efficiency_pct", 100 * efficiency, "pct");
    if (sm >= 0) f.Number("sm_sol_pct", sm, "pct");
    f.recommendation =
        "Lanes of a warp take different paths. Make the branch condition uniform per warp (branch on "
        "warp-sized groups, e.g. threadIdx.x / 32, or sort/bin the work so neighbouring threads take the "
        "same path), hoist divergent work out of loops, and prefer predication-friendly arithmetic "
        "(select instead of if/else) for short bodies.";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(branch_divergence, sightline::analysis::kRuleKernel,
               "Branch divergence", sightline::analysis::Run,
               {"min_efficiency_pct", 75.0, "report below this SIMT efficiency"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
