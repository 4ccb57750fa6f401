// pageable_memcpy — asynchronous memcpy from/to pageable host memory (nsys
// `cuda_memcpy_async`): the driver stages it through a pinned bounce buffer,
// so it runs at a fraction of the bandwidth and silently becomes synchronous.
// A copy counts when its host side is pageable and it was issued
// asynchronously (the record's async flag, or an *Async API). Saving: for each
// such copy, its time minus the time at pinned bandwidth (the bandwidth of the
// trace's own pinned copies in that direction, else `assumed_pinned_gbps`;
// 0, the default: the device's host link, PinnedGbpsFor in whatif.h).
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"
#include "lib/analysis/text_util.h"
#include "lib/analysis/whatif.h"

namespace sightline::analysis {
namespace {

bool HostSidePageable(const CopyDetail& c) {
  switch (c.copy_kind) {
    case CopyKind::kHtoD:
    case CopyKind::kHtoA: return c.src_kind == MemoryKind::kPageable;
    case CopyKind::kDtoH:
    case CopyKind::kAtoH: return c.dst_kind == MemoryKind::kPageable;
    case CopyKind::kHtoH:
      return c.src_kind == MemoryKind::kPageable || c.dst_kind == MemoryKind::kPageable;
    default: return false;
  }
}

bool HostSidePinned(const CopyDetail& c) {
  switch (c.copy_kind) {
    case CopyKind::kHtoD:
    case CopyKind::kHtoA: return c.src_kind == MemoryKind::kPinned;
    case CopyKind::kDtoH:
    case CopyKind::kAtoH: return c.dst_kind == MemoryKind::kPinned;
    default: return false;
  }
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  // Observed pinned bandwidth per direction (bytes / ns = GB/s).
  std::map<CopyKind, std::pair<uint64_t, uint64_t>> pinned;  // kind → (bytes, ns)
  for (const GpuActivity& a : model.activities) {
    if (a.kind != ActivityKind::kMemcpy) continue;
    const CopyDetail& c = model.copies[a.detail];
    if (HostSidePinned(c) && c.bytes >= (1u << 20)) {
      pinned[c.copy_kind].first += c.bytes;
      pinned[c.copy_kind].second += a.duration();
    }
  }
  double assumed = ctx.Param("assumed_pinned_gbps");
  for (const DeviceTimelineInfo& d : model.devices) {
    if (assumed <= 0 && d.has_info) assumed = PinnedGbpsFor(d.info.cc_major, d.info.cc_minor);
  }
  if (assumed <= 0) assumed = PinnedGbpsFor(0, 0);
  uint64_t count = 0, bytes = 0, time = 0, saving = 0;
  std::map<std::string, Offender> by_kind;
  std::map<std::string, Offender> by_api;
  for (const GpuActivity& a : model.activities) {
    if (a.kind != ActivityKind::kMemcpy) continue;
    const CopyDetail& c = model.copies[a.detail];
    if (!HostSidePageable(c)) continue;
    const ApiCall* api = model.LaunchOf(a);
    bool async = c.async || (api != nullptr && Contains(model.String(api->name), "Async"));
    if (!async) continue;
    ++count;
    bytes += c.bytes;
    time += a.duration();
    auto p = pinned.find(c.copy_kind);
    double gbps = (p != pinned.end() && p->second.second > 0)
                      ? double(p->second.first) / double(p->second.second)
                      : assumed;
    double pinned_ns = gbps > 0 ? double(c.bytes) / gbps : double(a.duration());
    uint64_t s = a.duration() > pinned_ns ? a.duration() - static_cast<uint64_t>(pinned_ns) : 0;
    saving += s;
    Offender& o = by_kind[CopyKindName(c.copy_kind)];
    o.name = std::string(CopyKindName(c.copy_kind)) + " from/to pageable memory";
    o.count++;
    o.total_ns += a.duration();
    if (api != nullptr) {
      std::string stack = StackText(model, api->trace, api->stack_id);
      Offender& site = by_api[ApiName(model, api->name) + "|" + stack];
      site.name = ApiName(model, api->name);
      site.detail = stack.empty() ? "call site" : stack;
      site.count++;
      site.total_ns += a.duration();
    }
  }
  if (count == 0) return;
  Finding f = ctx.NewFinding(saving);
  f.title = std::to_string(count) + " asynchronous copies use pageable host memory (" +
            FormatNs(double(time)) + ", " +
            FormatNs(double(saving)) + " slower than pinned)";
  f.Number("pageable_async_copies", double(count), "count")
      .Number("bytes", double(bytes), "bytes")
      .Number("copy_ns", double(time), "ns")
      .Number("observed_gbps", time ? double(bytes) / double(time) : 0, "GB/s")
      .Number("assumed_pinned_gbps", assumed, "GB/s");
  for (auto& [k, o] : by_kind) {
    o.detail = FormatNs(double(o.total_ns)) + " total";
    f.offenders.push_back(o);
  }
  for (auto& [k, o] : by_api) f.offenders.push_back(o);
  KeepTopOffenders(&f.offenders, 8);
  f.recommendation =
      "Allocate the host buffers as pinned memory (cudaHostAlloc / cudaHostRegister, "
      "tensor.pin_memory(), DataLoader(pin_memory=True)) so cudaMemcpyAsync is truly "
      "asynchronous and runs at full bandwidth.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(pageable_memcpy, sightline::analysis::kRuleTimeline,
               "Async memcpy using pageable memory (nsys cuda_memcpy_async)",
               sightline::analysis::Run,
               {"assumed_pinned_gbps", 0,
                "pinned bandwidth (GB/s) when the trace has no pinned copy of that direction; "
                "0: the device's host link (Hopper and later, PCIe Gen5 x16: 50; else 25)"});
