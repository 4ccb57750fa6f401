// sync_memcpy — synchronous memcpy / memset calls (nsys `cuda_memcpy_sync`,
// `cuda_memset_sync`): cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, cudaMemset...
// without "Async". The host blocks until the copy is done and the copy cannot
// overlap compute. Saving: the time inside those calls during which the GPU
// ran no compute or communication (the copy itself plus the drain before it)
// — what an async copy on a side stream from pinned memory hides.
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  double min_pct = ctx.Param("min_saving_pct");
  // Device of each synchronous call, through the GPU work it issued.
  std::map<uint32_t, uint32_t> device_of;  // api index → model device
  std::map<uint32_t, uint64_t> bytes_of;
  for (const GpuActivity& a : model.activities) {
    if (a.launch_api == kNone) continue;
    if ((model.api_calls[a.launch_api].flags & kApiMemcpySync) == 0) continue;
    device_of[a.launch_api] = model.DeviceOf(a);
    if (a.kind == ActivityKind::kMemcpy || a.kind == ActivityKind::kMemset) {
      bytes_of[a.launch_api] += model.copies[a.detail].bytes;
    }
  }
  uint64_t calls = 0, blocked = 0, saving = 0, bytes = 0, copy_gpu = 0;
  std::map<std::pair<std::string, std::string>, Offender> sites;
  for (size_t i = 0; i < model.api_calls.size(); ++i) {
    const ApiCall& c = model.api_calls[i];
    if ((c.flags & kApiMemcpySync) == 0) continue;
    ++calls;
    blocked += c.duration();
    auto d = device_of.find(static_cast<uint32_t>(i));
    uint64_t not_computing = 0;
    if (d != device_of.end()) {
      const DeviceTimeline& t = ctx.timeline().devices[d->second];
      uint64_t computing = t.compute.Union(t.comm).OverlapWith(c.start_ns, c.end_ns);
      not_computing = c.duration() - std::min(c.duration(), computing);
      copy_gpu += t.memory.OverlapWith(c.start_ns, c.end_ns);
      bytes += bytes_of[static_cast<uint32_t>(i)];
    }
    saving += not_computing;
    std::string name = ApiName(model, c.name);
    std::string stack = StackText(model, c.trace, c.stack_id);
    Offender& o = sites[{name, stack}];
    o.name = name;
    o.detail = stack.empty() ? "no call stack recorded" : stack;
    o.count++;
    o.total_ns += c.duration();
  }
  if (calls == 0 || ctx.PctOfWindow(saving) < min_pct) return;
  Finding f = ctx.NewFinding(saving);
  f.title = std::to_string(calls) + " synchronous memcpy/memset calls block the host for " +
            FormatNs(double(blocked)) + " with the GPU not computing";
  f.Number("sync_memcpy_calls", double(calls), "count")
      .Number("host_blocked_ns", double(blocked), "ns")
      .Number("host_blocked_pct", ctx.PctOfWindow(blocked), "pct")
      .Number("gpu_not_computing_ns", double(saving), "ns")
      .Number("copy_gpu_ns", double(copy_gpu), "ns")
      .Number("bytes", double(bytes), "bytes");
  for (auto& [key, o] : sites) {
    o.share_pct = PctOf(double(o.total_ns), double(blocked));
    f.offenders.push_back(o);
  }
  KeepTopOffenders(&f.offenders, 8);
  f.recommendation =
      "Use cudaMemcpyAsync / cudaMemsetAsync on a non-default stream from pinned host memory "
      "(cudaHostAlloc, tensor.pin_memory() + .to(device, non_blocking=True)) so copies overlap "
      "compute and the host keeps issuing work; synchronize only where the data is consumed.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(sync_memcpy, sightline::analysis::kRuleTimeline,
               "Synchronous memcpy/memset calls (nsys cuda_memcpy_sync)",
               sightline::analysis::Run,
               {"min_saving_pct", 1, "fire when the estimated saving reaches this % of window"});
