// copy_compute_overlap — memcpy time (H2D, D2H, ...) not overlapped with
// compute kernels on the same device. Fires when the exposed copy time is at
// least `min_exposed_pct` of the device window and the device computes at all.
// Saving: min(exposed copy time, compute time not already overlapping copies)
// — copies can only hide behind compute that exists.
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  double min_pct = ctx.Param("min_exposed_pct");
  for (const DeviceTimeline& t : ctx.timeline().devices) {
    if (t.window_ns() == 0 || t.copies.empty() || t.compute.empty()) continue;
    uint64_t copy = t.copies.total();
    uint64_t overlapped = t.copies.Intersect(t.compute).total();
    uint64_t exposed = copy - overlapped;
    double exposed_pct = PctOf(double(exposed), double(t.window_ns()));
    if (exposed_pct < min_pct) continue;
    uint64_t compute_free = t.compute.total() - overlapped;
    uint64_t saving = std::min(exposed, compute_free);
    // Exposed time per copy direction.
    std::map<std::string, Offender> by_kind;
    const DeviceTimelineInfo& info = model.devices[t.device];
    uint64_t bytes = 0;
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      const GpuActivity& a = model.activities[i];
      if (a.kind != ActivityKind::kMemcpy) continue;
      const CopyDetail& c = model.copies[a.detail];
      bytes += c.bytes;
      uint64_t hidden = t.compute.OverlapWith(a.start_ns, a.end_ns);
      Offender& o = by_kind[CopyKindName(c.copy_kind)];
      o.name = std::string("memcpy ") + CopyKindName(c.copy_kind);
      o.count++;
      o.total_ns += a.duration() - std::min(a.duration(), hidden);
    }
    Finding f = ctx.NewFinding(saving);
    f.scope = DeviceLabel(model, t.device);
    f.title = f.scope + ": " + FormatPct(PctOf(double(exposed), double(copy))) +
              " of copy time (" + FormatNs(double(exposed)) + ") is not overlapped with compute";
    f.Number("copy_ns", double(copy), "ns")
        .Number("overlapped_ns", double(overlapped), "ns")
        .Number("exposed_ns", double(exposed), "ns")
        .Number("exposed_pct_of_window", exposed_pct, "pct")
        .Number("overlap_pct", PctOf(double(overlapped), double(copy)), "pct")
        .Number("compute_ns", double(t.compute.total()), "ns")
        .Number("bytes", double(bytes), "bytes");
    for (auto& [k, o] : by_kind) {
      o.share_pct = PctOf(double(o.total_ns), double(exposed));
      o.detail = "exposed " + FormatNs(double(o.total_ns));
      f.offenders.push_back(o);
    }
    KeepTopOffenders(&f.offenders, 8);
    f.recommendation =
        "Overlap transfers with compute: issue H2D copies for the next batch and D2H copies of "
        "results with cudaMemcpyAsync on a separate stream from pinned memory while kernels run "
        "(double buffering), ordering with events instead of synchronizations.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(copy_compute_overlap, sightline::analysis::kRuleTimeline,
               "Memory copies not overlapped with compute",
               sightline::analysis::Run,
               {"min_exposed_pct", 5, "fire when exposed copy time reaches this % of window"});
