// memory_bound — the memory side of the speed-of-light breakdown is the
// bound: max(memory-pipeline, DRAM throughput % of peak) ≥ `knee_pct` (60%)
// and above the SM's. Needs the `memory` and `compute` sets (SOL metrics). A
// classification, not a defect: no saving is claimed (severity info) — the
// specific findings (uncoalesced_global, shared_bank_conflicts) carry the
// savings; the evidence says whether DRAM or the on-chip pipes are the wall.
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
    if (!Eligible(ctx, v) || ClassifySol(v, ctx.Param("knee_pct")) != SolClass::kMemory) continue;
    Finding f = NewKernelFinding(ctx, v, 0, total);
    const double dram = v.Metric(kDramThroughput), pipes = v.Metric(kMemoryThroughput);
    const bool dram_wall = dram >= 0 && dram >= pipes - 5;
    f.title = ShortKernelName(v.name()) + ": memory-bound, memory at " + Pct(MemorySol(v)) +
              " of peak (SM " + Pct(v.Metric(kSmThroughput)) + ")";
    AddSolEvidence(v, &f);
    f.Text("memory_wall", dram_wall ? "dram" : "on-chip (L1/shared/L2 pipes)");
    f.recommendation =
        dram_wall ? "DRAM bandwidth is the wall: move fewer bytes (fuse kernels, lower precision, reuse data "
                    "from shared memory or L2 with tiling, avoid re-reading inputs)."
                  : "The on-chip memory pipes are the wall while DRAM is not: cut wasted L1/L2 traffic (coalesce "
                    "accesses, remove bank conflicts, vectorize loads with float4, cache reused values in "
                    "registers).";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(memory_bound, sightline::analysis::kRuleKernel,
               "Memory-bound kernel (speed of light)", sightline::analysis::Run,
               {"knee_pct", 60.0, "a unit at or above this % of peak is the bound"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
