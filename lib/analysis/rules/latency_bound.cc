// latency_bound — neither the SM nor memory reaches `knee_pct` (60%) of peak
// throughput: the kernel waits (dependent memory loads, too few warps to hide
// latency, barriers, too few blocks). Needs the SOL metrics. Saving
// (heuristic): reaching the knee, (1 − max SOL / knee), half-weighted because
// the cause is found by the more specific rules (occupancy, small grid,
// uncoalesced accesses) which then carry the full saving.
#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const std::vector<KernelView> views = KernelViews(ctx.model());
  const double total = TotalKernelTime(views);
  const double knee = ctx.Param("knee_pct");
  size_t emitted = 0;
  for (const KernelView& v : views) {
    if (emitted >= ctx.Param("max_kernels")) break;
    if (!Eligible(ctx, v) || ClassifySol(v, knee) != SolClass::kLatency) continue;
    const double top = std::max(v.Metric(kSmThroughput), MemorySol(v));
    Finding f = NewKernelFinding(ctx, v, 0.5 * (1.0 - top / knee), total);
    f.title = ShortKernelName(v.name()) + ": latency-bound, SM " + Pct(v.Metric(kSmThroughput)) +
              " and memory " + Pct(MemorySol(v)) + " of peak";
    AddSolEvidence(v, &f);
    std::string hint;
    if (v.has_occupancy) {
      f.Number("theoretical_occupancy_pct", v.occupancy.theoretical_occupancy_pct, "pct");
      if (v.occupancy.theoretical_occupancy_pct < 50) hint = " Theoretical occupancy is low: see occupancy_limited.";
    }
    if (v.device != nullptr && v.config->config.blocks() < v.device->sm_count) {
      hint += " The grid does not cover the SMs: see small_grid.";
    }
    f.recommendation =
        "Neither compute nor memory is kept busy: expose more parallelism (more warps per SM, more blocks, "
        "independent loads in flight per thread via unrolling/ILP), avoid dependent global-memory chains, "
        "and cut barrier waits." + hint;
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(latency_bound, sightline::analysis::kRuleKernel,
               "Latency-bound kernel (speed of light)", sightline::analysis::Run,
               {"knee_pct", 60.0, "both units under this % of peak = latency-bound"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
