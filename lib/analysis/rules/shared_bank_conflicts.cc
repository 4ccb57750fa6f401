// shared_bank_conflicts — shared-memory bank conflicts
// (l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum, ANCHORS.md) as a share
// of the shared-memory wavefronts (l1tex__data_pipe_lsu_wavefronts_mem_shared.sum):
// every conflict is an extra wavefront the data stage serialises. Needs the
// `memory` metric set. Reported when conflicts exceed `min_conflict_pct` of
// the wavefronts and `min_conflicts` in absolute terms (a few thousand
// arbitration conflicts appear even in conflict-free kernels). Saving: the
// conflict share of wavefronts weighted by the busier of the SM / memory
// speed of light (0.5 when not collected).
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
    if (!Eligible(ctx, v) || !v.Has(kBankConflicts) || !v.Has(kSharedWavefronts)) continue;
    const double conflicts = v.Metric(kBankConflicts), wavefronts = v.Metric(kSharedWavefronts);
    if (wavefronts <= 0 || conflicts < ctx.Param("min_conflicts")) continue;
    const double share = conflicts / wavefronts;
    if (100 * share < ctx.Param("min_conflict_pct")) continue;
    const double sol = std::max(MemorySol(v), v.Metric(kSmThroughput));
    const double weight = sol >= 0 ? sol / 100.0 : 0.5;
    Finding f = NewKernelFinding(ctx, v, share * weight, total);
    const double ways = wavefronts > conflicts ? wavefronts / (wavefronts - conflicts) : 32;
    f.title = ShortKernelName(v.name()) + ": shared-memory bank conflicts, " + Pct(100 * share) +
              " of wavefronts (≈" + std::to_string(ways).substr(0, 4) + "-way)";
    f.Number("bank_conflicts", conflicts, "count")
        .Number("shared_wavefronts", wavefronts, "count")
        .Number("conflict_pct_of_wavefronts", 100 * share, "pct")
        .Number("average_ways", ways, "");
    f.recommendation =
        "Threads of a warp hit the same bank with different addresses. Pad shared arrays by one element per "
        "row (float tile[32][33]) for column access, swizzle the index (XOR with the row), or change the "
        "access so consecutive threads read consecutive 4-byte words.";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(shared_bank_conflicts, sightline::analysis::kRuleKernel,
               "Shared-memory bank conflicts", sightline::analysis::Run,
               {"min_conflict_pct", 10.0, "report when conflicts exceed this share of wavefronts"},
               {"min_conflicts", 10000.0, "... and at least this many conflicts"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
