// stream_serialization — (1) several streams carry kernels but their kernels
// (almost) never run at the same time: independent work is serialised by
// dependencies, the default stream, or launch order. Per device: streams whose
// kernel busy time is at least `min_stream_share_pct` of the device's kernel
// busy time; overlap achieved = time with 2+ kernels running; overlap
// possible = sum of the streams' busy time minus the largest. Fires when the
// achieved overlap is under `max_overlap_pct` of the possible. Saving: the
// missing overlap × `expected_overlap_fraction` (kernels that fill the GPU
// cannot fully overlap, so this is an estimate, not a bound). (2) A single
// stream runs kernels that each fill only a small part of the GPU, one at a
// time (see SingleStream); saving: the SM time those kernels leave idle,
// Σ duration × (1 − blocks / SMs), the time packing them side by side on
// the idle SMs would save (small_grid's model, over their sequence).
#include <algorithm>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

// One stream (or one dominant stream) whose kernels each fill less than
// `max_fill_pct` of the SMs and run long enough (>= `min_kernel_ns`) that
// running several side by side would pay: independent work serialised on a
// single stream. The trace cannot prove independence, so the finding says so.
// Communication kernels (NCCL) are left out: they use one block per channel
// by design and are bound by the links, not the SMs (comm_compute_overlap
// judges them). It counts the small kernels that were launched before the previous kernel
// of their stream started (queued_small_kernels / queued_pct): work that was
// ready and waited in the queue while SMs sat idle — the ranking (analyze.cc)
// puts this finding before small_grid on the same kernels when most were.
void SingleStream(const RuleContext& ctx, const DeviceSummary& ds, uint64_t kernel_busy,
                  uint64_t achieved, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  const DeviceTimelineInfo& info = model.devices[ds.index];
  if (!info.has_info || info.info.sm_count == 0 || kernel_busy == 0) return;
  double max_fill = ctx.Param("max_fill_pct");
  uint64_t min_kernel = static_cast<uint64_t>(ctx.Param("min_kernel_ns"));
  uint64_t small_ns = 0, small_count = 0, queued = 0;
  double idle_sm_ns = 0;  // Σ duration × share of the SMs the kernel leaves idle
  std::vector<Offender> by_name(model.strings.size());
  // Start of the previous kernel on each stream (kNoStart: none yet).
  constexpr uint64_t kNoStart = ~uint64_t{0};
  std::vector<uint64_t> previous_start(model.streams.size(), kNoStart);
  for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
    const GpuActivity& a = model.activities[i];
    if (a.kind != ActivityKind::kKernel) continue;
    const uint64_t before = previous_start[a.stream];
    previous_start[a.stream] = a.start_ns;
    if (a.detail == kNone || a.klass == ActivityClass::kCommunication) continue;
    if (a.duration() < min_kernel) continue;
    const LaunchConfig& c = model.launch_configs[a.detail];
    if (PctOf(double(c.blocks()), double(info.info.sm_count)) >= max_fill) continue;
    small_ns += a.duration();
    ++small_count;
    idle_sm_ns += double(a.duration()) *
                  (1.0 - double(c.blocks()) / double(info.info.sm_count));
    // Launched before the previous kernel of its stream even started: it
    // waited in the stream's queue while that kernel ran alone.
    const ApiCall* launch = model.LaunchOf(a);
    if (launch != nullptr && before != kNoStart && launch->end_ns <= before) ++queued;
    Offender& o = by_name[a.name];  // named at the end
    if (o.count == 0) {
      o.detail = std::to_string(c.blocks()) + " blocks on " +
                 std::to_string(info.info.sm_count) + " SMs";
    }
    o.count++;
    o.total_ns += a.duration();
  }
  if (small_count < 2) return;
  if (PctOf(double(small_ns), double(kernel_busy)) < ctx.Param("min_stream_share_pct")) return;
  double achieved_pct = PctOf(double(achieved), double(small_ns));
  if (achieved_pct >= ctx.Param("max_overlap_pct")) return;
  uint64_t missing = small_ns > achieved ? small_ns - achieved : 0;
  // The idle SM time of the share of their time not yet overlapped.
  uint64_t saving = static_cast<uint64_t>(idle_sm_ns * double(missing) / double(small_ns));
  if (ctx.PctOfWindow(saving) < ctx.Param("min_saving_pct")) return;
  Finding f = ctx.NewFinding(saving);
  f.scope = DeviceLabel(model, ds.index);
  f.title = f.scope + ": " + std::to_string(small_count) +
            " kernels that each fill a small part of the GPU run one at a time (" +
            FormatNs(double(small_ns)) + ")";
  f.Text("mode", "single_stream")
      .Number("small_kernels", double(small_count), "count")
      .Number("small_kernel_ns", double(small_ns), "ns")
      .Number("overlap_achieved_ns", double(achieved), "ns")
      .Number("overlap_achieved_pct", achieved_pct, "pct")
      .Number("queued_small_kernels", double(queued), "count")
      .Number("queued_pct", PctOf(double(queued), double(small_count)), "pct")
      .Number("kernel_busy_ns", double(kernel_busy), "ns")
      .Number("sm_count", double(info.info.sm_count), "count")
      .Number("idle_sm_ns", idle_sm_ns, "ns")
      .Number("mean_fill_pct", PctOf(double(small_ns) - idle_sm_ns, double(small_ns)), "pct");
  for (size_t name = 0; name < by_name.size(); ++name) {
    Offender& o = by_name[name];
    if (o.count == 0) continue;
    o.name = std::string(model.String(static_cast<uint32_t>(name)));
    o.share_pct = PctOf(double(o.total_ns), double(small_ns));
    f.offenders.push_back(o);
  }
  KeepTopOffenders(&f.offenders, 8);
  f.recommendation =
      "These kernels leave most SMs idle and never run concurrently. If they are independent "
      "(different layers of a batch, separate chains of work), issue them on several streams "
      "(one per independent chain, ordered with cudaStreamWaitEvent) so they share the GPU; "
      "otherwise give each kernel more parallelism (more blocks).";
  out->push_back(std::move(f));
}

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
    // Streaming unions (activities are sorted by start): no interval sets.
    for (uint32_t s : info.streams) {
      uint64_t busy = 0, kernels = 0, cur_start = 0, cur_end = 0;
      for (uint32_t i : model.streams[s].activities) {
        const GpuActivity& a = model.activities[i];
        if (a.kind != ActivityKind::kKernel && a.kind != ActivityKind::kNccl) continue;
        if (kernels == 0 || a.start_ns > cur_end) {
          busy += cur_end - cur_start;
          cur_start = a.start_ns;
          cur_end = a.end_ns;
        } else {
          cur_end = std::max(cur_end, a.end_ns);
        }
        ++kernels;
      }
      busy += cur_end - cur_start;
      if (kernels > 0) streams.push_back({model.streams[s].stream_id, busy, kernels});
    }
    uint64_t kernel_busy_all = 0;
    {
      uint64_t cur_start = 0, cur_end = 0;
      bool any = false;
      for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
        const GpuActivity& a = model.activities[i];
        if (a.kind != ActivityKind::kKernel && a.kind != ActivityKind::kNccl) continue;
        if (!any || a.start_ns > cur_end) {
          kernel_busy_all += cur_end - cur_start;
          cur_start = a.start_ns;
          cur_end = a.end_ns;
          any = true;
        } else {
          cur_end = std::max(cur_end, a.end_ns);
        }
      }
      kernel_busy_all += cur_end - cur_start;
    }
    std::vector<StreamBusy> used;
    for (const StreamBusy& s : streams) {
      if (PctOf(double(s.busy), double(kernel_busy_all)) >= min_share) used.push_back(s);
    }
    uint64_t achieved = ds.concurrency_ns[2] + ds.concurrency_ns[3];
    if (used.size() < 2) {
      SingleStream(ctx, ds, kernel_busy_all, achieved, out);
      continue;
    }
    uint64_t sum = 0, largest = 0;
    for (const StreamBusy& s : used) {
      sum += s.busy;
      largest = std::max(largest, s.busy);
    }
    uint64_t possible = sum - largest;
    double achieved_pct = PctOf(double(achieved), double(possible));
    if (possible == 0 || achieved_pct >= max_overlap) continue;
    uint64_t missing = possible > achieved ? possible - achieved : 0;
    uint64_t saving = static_cast<uint64_t>(double(missing) * fraction);
    if (ctx.PctOfWindow(saving) < ctx.Param("min_saving_pct")) continue;
    Finding f = ctx.NewFinding(saving);
    f.scope = DeviceLabel(model, ds.index);
    f.title = f.scope + ": " + std::to_string(used.size()) +
              " streams carry kernels but overlap only " + FormatPct(achieved_pct) +
              " of the time they could";
    f.Text("mode", "multi_stream");
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

SIGHTLINE_RULE(stream_serialization,
               sightline::analysis::kRuleTimeline | sightline::analysis::kRuleScheduling,
               "Streams used but never overlapping; independent small kernels serialised",
               sightline::analysis::Run,
               {"min_stream_share_pct", 5, "streams under this share of kernel busy are ignored"},
               {"max_overlap_pct", 10, "fire when achieved overlap is under this % of possible"},
               {"expected_overlap_fraction", 0.5, "fraction of the missing overlap counted saved"},
               {"max_fill_pct", 50, "single stream: kernels whose grid fills under this % of SMs"},
               {"min_kernel_ns", 10e3, "single stream: ignore kernels shorter than this"},
               {"min_saving_pct", 1, "fire when the estimated saving reaches this % of window"});
