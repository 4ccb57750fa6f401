// small_grid — fewer blocks than SMs: whole SMs stay idle for the kernel's
// duration (ncu launch rule). Works on plain traces (needs the SM count from
// the trace header). Saving: (SMs − blocks) / SMs of the kernel's time, the
// ANCHORS.md estimate (all SMs busy at the same per-SM speed).
#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const std::vector<KernelView> views = ConfigViews(ctx.model());
  const double total = TotalKernelTime(views);
  size_t emitted = 0;
  for (const KernelView& v : views) {
    if (emitted >= ctx.Param("max_kernels")) break;
    if (!Eligible(ctx, v) || v.device == nullptr || v.device->sm_count == 0) continue;
    const uint64_t blocks = v.config->config.blocks();
    const uint32_t sms = v.device->sm_count;
    if (blocks == 0 || blocks >= sms) continue;
    const double idle = double(sms - blocks) / double(sms);
    Finding f = NewKernelFinding(ctx, v, idle, total);
    f.title = ShortKernelName(v.name()) + ConfigSuffix(v) + ": grid of " + std::to_string(blocks) + " blocks on " +
              std::to_string(sms) + " SMs leaves " + Pct(100 * idle) + " of the SMs idle";
    f.Number("blocks", double(blocks), "count")
        .Number("sm_count", sms, "count")
        .Number("idle_sm_pct", 100 * idle, "pct");
    if (v.has_occupancy) f.Number("blocks_per_sm_possible", v.occupancy.active_blocks_per_sm, "count");
    f.recommendation =
        "Launch at least " + std::to_string(sms) + " blocks (ideally a multiple of " + std::to_string(sms) +
        " × blocks per SM): split the work into smaller blocks, parallelise an inner loop across blocks "
        "(split-K for reductions/GEMMs), or run independent kernels concurrently on other streams.";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(small_grid, "Grid smaller than the number of SMs", sightline::analysis::Run,
               {"min_share_pct", 0.5, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
