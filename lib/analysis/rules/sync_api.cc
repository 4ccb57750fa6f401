// sync_api — synchronizing API calls (nsys `cuda_api_sync`):
// cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize and
// their driver forms. Count, host time blocked, GPU idle they cause (sync-wait
// gaps whose blocking call is one of them, timeline.h), and their call sites
// when stacks were recorded. Fires when that idle, or the host's time
// blocked in them, reaches min_idle_pct of the window: a sync that waits for
// a busy GPU idles nothing itself, but the host work after it (preparing the
// next batch) no longer overlaps the GPU, whose idle then reads as host
// work (on the H200 a per-step synchronize() + .item() in a GPU-bound loop
// with CPU batch preparation: 12 % of the window blocked, no sync-wait gap,
// first finding cpu_bound). Saving: the sync-wait idle they cause; the
// what-if replay (root_cause.cc) then measures what removing the waits
// saves, overlap regained included, and folds the finding if that is
// nothing.
#include <algorithm>
#include <map>
#include <set>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  double min_idle_pct = ctx.Param("min_idle_pct");
  uint64_t calls = 0, blocked = 0;
  // The host threads that call them, across processes (ranks block side by
  // side: their blocked times add up to more than the window).
  std::set<std::pair<uint16_t, uint32_t>> threads;  // (trace, thread)
  std::map<std::pair<std::string, std::string>, Offender> sites;  // (name, stack)
  std::map<uint32_t, Offender*> by_api;  // api index → its site
  std::map<const Offender*, uint64_t> blocked_by_site;
  for (size_t i = 0; i < model.api_calls.size(); ++i) {
    const ApiCall& c = model.api_calls[i];
    if ((c.flags & kApiSync) == 0) continue;
    ++calls;
    blocked += c.duration();
    threads.insert({c.trace, c.thread});
    std::string name = ApiName(model, c.name);
    std::string stack = StackText(model, c.trace, c.stack_id);
    Offender& o = sites[{name, stack}];
    o.name = name;
    o.detail = stack.empty() ? "no call stack recorded" : stack;
    o.count++;
    blocked_by_site[&o] += c.duration();
    by_api[static_cast<uint32_t>(i)] = &o;
  }
  if (calls == 0) return;
  uint64_t caused = 0, gaps = 0;
  for (const DeviceTimeline& t : ctx.timeline().devices) {
    for (const IdleGap& g : t.gaps) {
      if (g.cause != IdleCause::kSyncWait || g.blocking_api == kNone) continue;
      auto it = by_api.find(g.blocking_api);
      if (it == by_api.end()) continue;  // a synchronous memcpy: sync_memcpy's
      caused += g.length();
      ++gaps;
      it->second->total_ns += g.length();
    }
  }
  double idle_pct = ctx.PctOfWindow(caused);
  // Blocked share of the calling threads' time: the window once per thread.
  const double blocked_pct = ctx.PctOfWindow(blocked) / double(threads.size());
  if ((caused == 0 || idle_pct < min_idle_pct) && blocked_pct < min_idle_pct) return;
  Finding f = ctx.NewFinding(caused);
  // Which threshold fired: the idle the calls cause, or only the host time
  // they block (then the what-if replay gives the saving, root_cause.cc).
  const bool idle_fired = caused > 0 && idle_pct >= min_idle_pct;
  f.title = std::to_string(calls) + " synchronizing calls block the host for " +
            FormatNs(double(blocked)) + " (" + FormatPct(blocked_pct) +
            (threads.size() == 1 ? std::string(" of the window)")
                                 : " of the time of the " + std::to_string(threads.size()) +
                                       " threads that call them)");
  // Fired on blocked time only, the GPU was busy while they waited: what they
  // cost is the overlap lost after them (the next launches come only once the
  // host is done with the work between), which "idle 0 ns" misstated.
  f.title += idle_fired ? " and leave the GPU idle " + FormatNs(double(caused)) + " (" +
                              FormatPct(idle_pct) + ")"
                        : std::string(caused > 0 ? " while the GPU mostly works (idle " +
                                                       FormatNs(double(caused)) + ")"
                                                 : " while the GPU works") +
                              "; the host's work after each no longer overlaps the GPU's";
  f.Text("fired_on", idle_fired ? "gpu_idle" : "host_blocked");
  f.Number("sync_calls", double(calls), "count")
      .Number("host_blocked_ns", double(blocked), "ns")
      .Number("host_blocked_pct", blocked_pct, "pct")
      .Number("calling_threads", double(threads.size()), "count")
      .Number("gpu_idle_caused_ns", double(caused), "ns")
      .Number("gpu_idle_caused_pct", idle_pct, "pct")
      .Number("sync_wait_gaps", double(gaps), "count")
      .Number("cupti_sync_records", double(model.host_syncs.size()), "count");
  for (auto& [key, o] : sites) {
    // Fired on blocked time only: the sites rank by the host time they block.
    if (!idle_fired) o.total_ns = blocked_by_site[&o];
    o.share_pct = PctOf(double(o.total_ns), double(idle_fired ? caused : blocked));
    f.offenders.push_back(o);
  }
  KeepTopOffenders(&f.offenders, 8);
  f.recommendation =
      "Each synchronization drains the GPU queue, so the next launch starts from an idle GPU. "
      "Drop synchronizations inside the loop (e.g. .item(), .cpu(), printing losses every "
      "step), order streams with cudaEventRecord + cudaStreamWaitEvent instead, and read "
      "results back asynchronously once per step or every N steps.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(sync_api, sightline::analysis::kRuleTimeline,
               "Synchronizing API calls that idle the GPU (nsys cuda_api_sync)",
               sightline::analysis::Run,
               {"min_idle_pct", 1,
                "fire when the GPU idle they cause, or the host time blocked in them, reaches "
                "this % of window"});
