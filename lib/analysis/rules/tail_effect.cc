// tail_effect — the last partial wave of blocks: with W = blocks /
// (blocks per SM × SMs) waves, full = ⌊W⌋ and the last wave filling a
// fraction p = W − full of the GPU, the GPU runs full + 1 waves for W waves
// of work, so the idle fraction is (1 − p) / (full + 1) (ANCHORS.md: "about
// 1/(1 + full waves)", exact here). Reported at ≥ `min_tail_pct` (20%) for
// kernels with at least one full wave (fewer blocks than one wave is
// small_grid's or occupancy's business). Works on plain traces; blocks per SM
// come from the occupancy calculator. Saving: that idle fraction.
#include <cmath>

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
    if (!Eligible(ctx, v) || !v.has_occupancy || v.device == nullptr || v.device->sm_count == 0) continue;
    const uint32_t per_sm = v.occupancy.active_blocks_per_sm;
    if (per_sm == 0) continue;
    const double slots = double(per_sm) * v.device->sm_count;
    const double waves = double(v.config->config.blocks()) / slots;
    const double full = std::floor(waves);
    const double partial = waves - full;
    if (full < 1 || partial <= 1e-9) continue;
    const double idle = (1.0 - partial) / (full + 1.0);
    if (100 * idle < ctx.Param("min_tail_pct")) continue;
    Finding f = NewKernelFinding(ctx, v, idle, total);
    f.title = ShortKernelName(v.name()) + ConfigSuffix(v) + ": " + std::to_string(waves).substr(0, 5) +
              " waves of blocks; the partial last wave idles " + Pct(100 * idle) + " of the GPU";
    const uint64_t blocks = v.config->config.blocks();
    const uint64_t next_full = static_cast<uint64_t>((full + 1) * slots);
    f.Number("waves", waves, "")
        .Number("full_waves", full, "count")
        .Number("last_wave_fill_pct", 100 * partial, "pct")
        .Number("blocks", double(blocks), "count")
        .Number("blocks_per_wave", slots, "count")
        .Number("tail_idle_pct", 100 * idle, "pct");
    f.recommendation = "Make the block count a multiple of one wave (" + std::to_string(uint64_t(slots)) +
                       " blocks = " + std::to_string(per_sm) + " per SM × " +
                       std::to_string(v.device->sm_count) + " SMs): e.g. " + std::to_string(next_full) +
                       " smaller blocks, or fewer larger ones, or a persistent-block loop.";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(tail_effect, sightline::analysis::kRuleKernel,
               "Partial last wave of blocks (tail effect)", sightline::analysis::Run,
               {"min_tail_pct", 20.0, "report when the tail idles at least this share of the GPU"},
               {"min_share_pct", 1.0, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"});
