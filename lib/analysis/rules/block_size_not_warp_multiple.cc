// block_size_not_warp_multiple — threads per block not a multiple of the warp
// size: the last warp of every block runs partly empty (ncu launch rule).
// Works on plain traces. Saving: the wasted lane fraction
// (warps × 32 − threads) / (warps × 32) of the kernel's time — an upper bound
// reached when the kernel is issue-bound.
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
    if (!Eligible(ctx, v)) continue;
    const uint64_t threads = v.config->config.threads_per_block();
    const uint32_t warp = v.device != nullptr && v.device->warp_size > 0 ? v.device->warp_size : 32;
    if (threads == 0 || threads % warp == 0) continue;
    const uint64_t warps = (threads + warp - 1) / warp;
    const double wasted = double(warps * warp - threads) / double(warps * warp);
    Finding f = NewKernelFinding(ctx, v, wasted, total);
    const uint64_t up = warps * warp, down = (threads / warp) * warp;
    f.title = ShortKernelName(v.name()) + ConfigSuffix(v) + ": " + std::to_string(threads) +
              " threads per block is not a multiple of " + std::to_string(warp) + " (" +
              Pct(100 * wasted) + " of lanes idle)";
    f.Number("threads_per_block", double(threads), "count")
        .Number("warps_per_block", double(warps), "count")
        .Number("idle_lane_pct", 100 * wasted, "pct");
    f.recommendation = "Use " + std::to_string(up) + (down > 0 ? " (or " + std::to_string(down) + ")" : "") +
                       " threads per block and guard the extra threads with a bounds check, so every "
                       "warp is full.";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(block_size_not_warp_multiple, sightline::analysis::kRuleKernel,
               "Block size not a multiple of the warp size",
               sightline::analysis::Run,
               {"min_share_pct", 0.5, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
