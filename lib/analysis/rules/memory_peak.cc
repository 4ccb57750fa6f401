// memory_peak — the program's device memory peak comes close to the device's
// capacity: the next larger batch, sequence or model runs out of memory, and
// a caching allocator near the limit starts freeing and retrying (slow). The
// evidence names what was live at the peak, by call site.
#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  for (const MemoryDevice& d : ctx.report().memory.devices) {
    if (d.capacity_bytes == 0 || d.peak_bytes == 0) continue;
    const double pct = PctOf(double(d.peak_bytes), double(d.capacity_bytes));
    if (pct < ctx.Param("near_capacity_pct")) continue;
    Finding f = ctx.NewFinding(0);
    f.severity = pct >= 97 ? Severity::kHigh : Severity::kMedium;
    f.scope = DeviceLabel(model, d.device_index);
    f.title = "Device memory peaks at " + FormatBytes(double(d.peak_bytes)) + ", " +
              FormatPct(pct) + " of the device's " + FormatBytes(double(d.capacity_bytes));
    f.Number("peak_bytes", double(d.peak_bytes), "bytes")
        .Number("capacity_bytes", double(d.capacity_bytes), "bytes")
        .Number("peak_pct", pct, "pct")
        .Number("peak_ns", double(d.peak_ns), "ns");
    if (d.torch_samples > 0) {  // --pytorch: the tensors' peak next to what the allocator kept
      f.Number("torch_allocated_peak_bytes", double(d.torch_allocated_peak_bytes), "bytes")
          .Number("torch_reserved_peak_bytes", double(d.torch_reserved_peak_bytes), "bytes");
    }
    for (const MemorySite& s : d.peak_sites) {
      Offender o = MemorySiteOffender(s.site);
      o.count = s.allocations;
      o.share_pct = PctOf(double(s.bytes), double(d.peak_bytes));
      o.detail = FormatBytes(double(s.bytes)) + " live at the peak";
      f.offenders.push_back(std::move(o));
    }
    f.recommendation =
        "Lower the peak where the sites above allocate: activations dominate training peaks "
        "(activation checkpointing, a smaller micro-batch with gradient accumulation, bf16 "
        "autocast), optimizer state next (fused or 8-bit optimizers, sharding); free what is "
        "no longer needed before the peak (del, set_to_none=True), and with a fragmented "
        "cache try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(memory_peak, sightline::analysis::kRuleCapacity,  // not timing: runs on metrics traces too
               "Device memory peak close to the device's capacity",
               sightline::analysis::Run,
               {"near_capacity_pct", 90, "fire when the peak reaches this % of capacity"});
