// comm_compute_overlap — communication (NCCL) time and its overlap with
// compute, per rank (HTA: overlap = |comm ∩ compute| / comm). Fires when
// communication is at least `min_comm_pct` of the device's busy time and the
// overlap achieved is under `min_overlap_pct` of the overlap possible,
// min(comm, compute) — when compute is shorter than communication, HTA's
// ratio cannot reach 100% however well the code overlaps. Saving: the exposed
// communication that compute could hide, min(comm − overlap, compute −
// overlap).
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  double min_comm = ctx.Param("min_comm_pct");
  double min_overlap = ctx.Param("min_overlap_pct");
  for (const DeviceTimeline& t : ctx.timeline().devices) {
    if (t.window_ns() == 0 || t.comm.empty()) continue;
    uint64_t comm = t.comm.total();
    uint64_t compute = t.compute.total();
    uint64_t overlap = t.comm.Intersect(t.compute).total();
    uint64_t busy = t.busy.total();
    double comm_pct = PctOf(double(comm), double(t.window_ns()));
    double comm_pct_of_busy = PctOf(double(comm), double(busy));
    double overlap_pct = PctOf(double(overlap), double(comm));
    double overlap_of_possible = PctOf(double(overlap), double(std::min(comm, compute)));
    if (compute == 0 || comm_pct_of_busy < min_comm || overlap_of_possible >= min_overlap) {
      continue;
    }
    uint64_t exposed = comm - overlap;
    uint64_t compute_free = t.compute.total() - overlap;
    Finding f = ctx.NewFinding(std::min(exposed, compute_free));
    f.scope = DeviceLabel(model, t.device);
    f.title = f.scope + ": communication is " + FormatPct(comm_pct_of_busy) +
              " of GPU busy time and only " + FormatPct(overlap_pct) + " of it overlaps compute";
    f.Number("comm_ns", double(comm), "ns")
        .Number("comm_pct", comm_pct, "pct")
        .Number("comm_pct_of_busy", comm_pct_of_busy, "pct")
        .Number("overlap_ns", double(overlap), "ns")
        .Number("overlap_pct", overlap_pct, "pct")
        .Number("overlap_of_possible_pct", overlap_of_possible, "pct")
        .Number("exposed_comm_ns", double(exposed), "ns")
        .Number("compute_ns", double(t.compute.total()), "ns")
        .Number("rank", double(model.traces[model.devices[t.device].trace].rank), "");
    std::map<uint32_t, Offender> by_name;
    const DeviceTimelineInfo& info = model.devices[t.device];
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      const GpuActivity& a = model.activities[i];
      if (a.klass != ActivityClass::kCommunication) continue;
      Offender& o = by_name[a.name];
      if (o.count == 0) o.name = std::string(model.String(a.name));
      o.count++;
      o.total_ns += a.duration() - std::min(a.duration(), t.compute.OverlapWith(a.start_ns, a.end_ns));
    }
    for (auto& [n, o] : by_name) {
      o.share_pct = PctOf(double(o.total_ns), double(exposed));
      o.detail = "exposed " + FormatNs(double(o.total_ns));
      f.offenders.push_back(o);
    }
    KeepTopOffenders(&f.offenders, 8);
    f.recommendation =
        "Overlap communication with computation: bucket gradients and launch all-reduces as "
        "soon as each bucket is ready (DDP bucket_cap_mb, FSDP prefetch), run NCCL on its own "
        "stream, and avoid synchronizing between the backward pass and the collectives.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(comm_compute_overlap, sightline::analysis::kRuleTimeline,
               "Communication not overlapped with compute (HTA)",
               sightline::analysis::Run,
               {"min_comm_pct", 10, "fire when communication is this % of GPU busy time"},
               {"min_overlap_pct", 50, "... and overlap is under this % of min(comm, compute)"});
