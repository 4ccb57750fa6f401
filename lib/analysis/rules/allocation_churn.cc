// allocation_churn — synchronous allocations and releases inside the steady
// state (cudaMalloc/cudaFree, cuMemAlloc/cuMemFree, pinned host
// allocations): cudaFree synchronizes the device and both calls cost the host
// far more than a launch. In PyTorch the caching allocator avoids them once
// warmed up; torch.cuda.empty_cache() in the loop, a changing set of tensor
// sizes or a cache limit brings them back. Saving: the host time of those
// calls (the root-cause pass replaces it with the what-if replay without
// them, kFixAllocations).
#include <cstdio>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

std::string PerStep(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v >= 10 ? "%.0f" : "%.1f", v);
  return buf;
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  const uint64_t steps = ctx.report().summary.steps.count;
  for (const MemoryDevice& d : ctx.report().memory.devices) {
    const uint64_t calls = d.scope_allocations + d.scope_releases;
    if (calls == 0) continue;
    if (steps > 0 ? d.allocations_per_step < ctx.Param("min_per_step")
                  : double(calls) < ctx.Param("min_calls")) {
      continue;
    }
    if (ctx.PctOfWindow(d.scope_alloc_call_ns) < ctx.Param("min_saving_pct")) continue;
    Finding f = ctx.NewFinding(d.scope_alloc_call_ns);
    f.scope = DeviceLabel(model, d.device_index);
    f.title = std::to_string(d.scope_allocations) + " allocations and " +
              std::to_string(d.scope_releases) + " releases inside the analysed steps" +
              (steps > 0 ? " (" + PerStep(d.allocations_per_step) + " per step)" : "") +
              " cost the host " + FormatNs(double(d.scope_alloc_call_ns));
    f.Number("allocations", double(d.scope_allocations), "count")
        .Number("releases", double(d.scope_releases), "count")
        .Number("calls_per_step", d.allocations_per_step, "count")
        .Number("call_ns", double(d.scope_alloc_call_ns), "ns")
        .Number("call_pct", ctx.PctOfWindow(d.scope_alloc_call_ns), "pct");
    for (const MemorySite& s : d.churn_sites) {
      Offender o = MemorySiteOffender(s.site);
      o.count = s.allocations;
      o.total_ns = s.call_ns;
      o.share_pct = PctOf(double(s.call_ns), double(d.scope_alloc_call_ns));
      o.detail = FormatBytes(double(s.bytes)) + " allocated or released";
      f.offenders.push_back(std::move(o));
    }
    f.recommendation =
        "Keep device memory allocated across steps: remove torch.cuda.empty_cache() and "
        "similar cache flushes from the loop, allocate buffers once outside it and reuse them, "
        "keep tensor shapes stable (or pad to a few sizes) so the caching allocator can reuse "
        "blocks; in CUDA code use stream-ordered allocation (cudaMallocAsync with a pool "
        "release threshold) instead of cudaMalloc/cudaFree per step.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(allocation_churn, sightline::analysis::kRuleTimeline,
               "Synchronous cudaMalloc/cudaFree inside the steady state",
               sightline::analysis::Run,
               {"min_per_step", 0.5, "fire at this many allocation calls per analysed step"},
               {"min_calls", 20, "without steps: fire at this many calls in the window"},
               {"min_saving_pct", 0.1, "and when their host time reaches this % of the window"});
