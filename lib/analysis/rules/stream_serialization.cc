// stream_serialization — several streams carry kernels but their kernels
// (almost) never run at the same time: independent work is serialised by
// dependencies, the default stream, or launch order. Per device: streams whose
// kernel busy time is at least `min_stream_share_pct` of the device's kernel
// busy time; overlap achieved = time with 2+ kernels running; overlap
// possible = sum of the streams' busy time minus the largest. Fires when the
// achieved overlap is under `max_overlap_pct` of the possible. Saving: the
// missing overlap × `expected_overlap_fraction` (kernels that fill the GPU
// cannot fully overlap, so this is an estimate, not a bound).
#include <algorithm>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  double min_share = ctx.Param("min_stream_share_pct");
  double max_overlap = ctx.Param("max_overlap_pct");
  double fraction = ctx.Param("expected_overlap_fraction");
  for (const DeviceSummary& ds : ctx.report().summary.devices) {
    const DeviceTimelineInfo& info = model.devices[ds.index];
    struct StreamBusy {
      uint32_t stream_id;
      uint64_t busy;
      uint64_t kernels;
    };
    std::vector<StreamBusy> streams;
    uint64_t kernel_busy_all = 0;
    IntervalSet all;
    for (uint32_t s : info.streams) {
      IntervalSet busy;
      uint64_t kernels = 0;
      for (uint32_t i : model.streams[s].activities) {
        const GpuActivity& a = model.activities[i];
        if (a.kind != ActivityKind::kKernel && a.kind != ActivityKind::kNccl) continue;
        busy.AddSorted(a.start_ns, a.end_ns);
        ++kernels;
      }
      if (kernels == 0) continue;
      streams.push_back({model.streams[s].stream_id, busy.total(), kernels});
      all = all.Union(busy);
    }
    kernel_busy_all = all.total();
    std::vector<StreamBusy> used;
    for (const StreamBusy& s : streams) {
      if (PctOf(double(s.busy), double(kernel_busy_all)) >= min_share) used.push_back(s);
    }
    if (used.size() < 2) continue;
    uint64_t sum = 0, largest = 0;
    for (const StreamBusy& s : used) {
      sum += s.busy;
      largest = std::max(largest, s.busy);
    }
    uint64_t possible = sum - largest;
    uint64_t achieved = ds.concurrency_ns[2] + ds.concurrency_ns[3];
    double achieved_pct = PctOf(double(achieved), double(possible));
    if (possible == 0 || achieved_pct >= max_overlap) continue;
    uint64_t missing = possible > achieved ? possible - achieved : 0;
    Finding f = ctx.NewFinding(static_cast<uint64_t>(double(missing) * fraction));
    f.scope = DeviceLabel(model, ds.index);
    f.title = f.scope + ": " + std::to_string(used.size()) +
              " streams carry kernels but overlap only " + FormatPct(achieved_pct) +
              " of the time they could";
    f.Number("streams_used", double(used.size()), "count")
        .Number("overlap_achieved_ns", double(achieved), "ns")
        .Number("overlap_possible_ns", double(possible), "ns")
        .Number("overlap_achieved_pct", achieved_pct, "pct")
        .Number("kernel_busy_ns", double(kernel_busy_all), "ns")
        .Number("expected_overlap_fraction", fraction, "");
    for (const StreamBusy& s : used) {
      Offender o;
      o.name = "stream " + std::to_string(s.stream_id);
      o.count = s.kernels;
      o.total_ns = s.busy;
      o.share_pct = PctOf(double(s.busy), double(kernel_busy_all));
      o.detail = "kernel busy " + FormatNs(double(s.busy));
      f.offenders.push_back(o);
    }
    KeepTopOffenders(&f.offenders, 8);
    f.recommendation =
        "The streams run one after another. Make sure independent work is not on the legacy "
        "default stream (use cudaStreamNonBlocking or --default-stream per-thread), replace "
        "cudaDeviceSynchronize / blocking events between the streams with "
        "cudaStreamWaitEvent on exactly the dependencies, and interleave the launches so "
        "each stream has work queued while the other runs.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(stream_serialization, "Streams used but never overlapping",
               sightline::analysis::Run,
               {"min_stream_share_pct", 5, "streams under this share of kernel busy are ignored"},
               {"max_overlap_pct", 10, "fire when achieved overlap is under this % of possible"},
               {"expected_overlap_fraction", 0.5, "fraction of the missing overlap counted saved"});
