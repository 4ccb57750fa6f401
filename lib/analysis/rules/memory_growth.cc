// memory_growth — device memory in use grows step over step: a leak across
// iterations (tensors kept alive by a Python list, a loss kept with its
// autograd graph, a cache without a bound). The series is the memory in use
// at the end of each analysed step (memory.h); the finding needs a positive
// Theil–Sen slope, a total growth of at least min_growth_mib and
// min_growth_pct of the peak, and a series that rises in at least
// min_increasing_steps step-to-step changes spread over at least half of the
// steps, and far more often than it falls (PyTorch's caching allocator grows
// in segments: on the H200 an 8 MiB-per-step leak raised the memory in use
// by 128 MiB every ~17 steps; one buffer that stays is not a leak).
// No time saving: the cost is the out-of-memory error ahead, estimated in
// steps from the slope and the device's capacity.
#include <algorithm>
#include <cmath>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  for (const MemoryDevice& d : ctx.report().memory.devices) {
    const size_t n = d.step_end_bytes.size();
    if (n < static_cast<size_t>(ctx.Param("min_steps"))) continue;
    const uint64_t first = d.step_end_bytes.front(), last = d.step_end_bytes.back();
    if (last <= first || d.growth_bytes_per_step <= 0) continue;
    const uint64_t growth = last - first;
    if (double(growth) < ctx.Param("min_growth_mib") * 1048576.0) continue;
    if (double(growth) < ctx.Param("min_growth_pct") / 100.0 * double(d.peak_bytes)) continue;
    if (d.steps_decreasing * 4 > d.steps_increasing) continue;
    // A growth spread over the steps, not one allocation that stayed: at
    // least min_increasing_steps rises, the first and the last at least half
    // the analysed steps apart.
    if (double(d.steps_increasing) < ctx.Param("min_increasing_steps")) continue;
    size_t first_rise = n, last_rise = 0;
    for (size_t i = 1; i < n; ++i) {
      if (d.step_end_bytes[i] > d.step_end_bytes[i - 1]) {
        first_rise = std::min(first_rise, i);
        last_rise = i;
      }
    }
    if (first_rise >= n || 2 * (last_rise - first_rise) < n - 1) continue;
    Finding f = ctx.NewFinding(0);
    f.scope = DeviceLabel(model, d.device_index);
    const double slope = d.growth_bytes_per_step;
    f.title = "GPU memory grows " + FormatBytes(slope) + " per step (" + FormatBytes(double(growth)) +
              " over " + std::to_string(n) + " steps): something from each step stays alive";
    f.Number("growth_bytes_per_step", slope, "bytes")
        .Number("growth_bytes", double(growth), "bytes")
        .Number("steps", double(n), "count")
        .Number("first_step_end_bytes", double(first), "bytes")
        .Number("last_step_end_bytes", double(last), "bytes")
        .Number("steps_increasing", double(d.steps_increasing), "count")
        .Number("steps_decreasing", double(d.steps_decreasing), "count")
        .Number("peak_bytes", double(d.peak_bytes), "bytes");
    f.severity = Severity::kMedium;
    if (d.capacity_bytes > last) {
      double steps_left = std::floor(double(d.capacity_bytes - last) / slope);
      f.Number("capacity_bytes", double(d.capacity_bytes), "bytes")
          .Number("steps_until_full", steps_left, "count");
      if (steps_left < ctx.Param("high_severity_steps")) f.severity = Severity::kHigh;
    }
    bool allocator = false;  // PyTorch's caching allocator grew: sites are where, not who
    for (const MemorySource& s : d.sources) {
      allocator |= s.source == "libc10_cuda.so" && s.end_bytes > 0;
    }
    for (const MemorySite& s : d.scope_live_sites) {
      Offender o = MemorySiteOffender(s.site);
      o.count = s.allocations;
      o.share_pct = PctOf(double(s.bytes), double(growth));
      o.detail = FormatBytes(double(s.bytes)) + " allocated in the analysed steps, still live at the end";
      f.offenders.push_back(std::move(o));
    }
    f.recommendation =
        std::string(allocator
                        ? "PyTorch's caching allocator took new memory at the lines above: "
                          "whichever allocation found its cache full, not necessarily the tensor "
                          "that stays alive. To see which tensors stay, record "
                          "torch.cuda.memory._record_memory_history() for a few steps and look "
                          "at the snapshot's live blocks (torch.cuda.memory._dump_snapshot). "
                        : "The sites above allocated memory inside the analysed steps that was "
                          "never released. ") +
        "Typical causes: a list that keeps each step's outputs, logits or losses on the GPU "
        "(keep a running GPU sum, or .item()/.cpu() every N steps; a loss kept with its "
        "autograd graph holds its activations), caches or histories without a bound, tensors "
        "captured by closures or hooks. torch.cuda.memory_allocated() printed per step "
        "confirms the fix.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(memory_growth, sightline::analysis::kRuleCapacity,  // not timing: runs on metrics traces too
               "Device memory grows step over step (a leak across iterations)",
               sightline::analysis::Run,
               {"min_steps", 5, "analysed steps needed to judge a trend", 2, 1e6},
               {"min_growth_mib", 16, "ignore growth below this many MiB over the steps", 0, 1e9},
               {"min_growth_pct", 1, "ignore growth below this % of the peak"},
               {"min_increasing_steps", 3, "steps whose end is above the previous one's", 1, 1e9},
               {"high_severity_steps", 10000,
                "high severity when the device would be full within this many steps", 0, 1e12});
