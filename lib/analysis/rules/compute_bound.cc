// compute_bound — the SM side of the speed-of-light breakdown is the bound:
// SM throughput % of peak ≥ `knee_pct` (60%) and above memory's. Needs the
// SOL metrics. A classification (severity info, no saving claimed): the
// remedies are fewer or cheaper instructions; tensor_core_idle and
// branch_divergence carry the savings when they apply.
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
    if (!Eligible(ctx, v) || ClassifySol(v, ctx.Param("knee_pct")) != SolClass::kCompute) continue;
    Finding f = NewKernelFinding(ctx, v, 0, total);
    f.title = ShortKernelName(v.name()) + ": compute-bound, SM at " + Pct(v.Metric(kSmThroughput)) +
              " of peak (memory " + Pct(MemorySol(v)) + ")";
    AddSolEvidence(v, &f);
    f.recommendation =
        "The SM pipelines are the wall: execute fewer instructions (use tensor cores for matrix math, "
        "lower precision, fast-math intrinsics, hoist invariant work out of loops, unroll to cut index "
        "arithmetic, remove divergence).";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(compute_bound, sightline::analysis::kRuleKernel,
               "Compute-bound kernel (speed of light)", sightline::analysis::Run,
               {"knee_pct", 60.0, "a unit at or above this % of peak is the bound"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
