// cpu_bound — CPU/GPU imbalance: the share of GPU idle caused by the host
// launching late (host-wait gaps, timeline.h), and the CPU-side spans that
// cover those gaps on the launching thread: the innermost NVTX range at each
// instant ("clip.encode on the CPU makes the GPU wait") and CUDA API calls
// other than the launch itself. What no span covers is reported as
// uninstrumented CPU time. With Python stacks, each gap's time also goes to
// the user's line of the launch that ends it (python_sites.h: the line the
// host was working towards): uninstrumented time is split by that line, and
// an NVTX range names the line most of its time led to. Saving: the
// host-wait idle time.
#include <algorithm>
#include <map>
#include <optional>

#include "lib/analysis/python_sites.h"
#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"
#include "lib/analysis/text_util.h"

namespace sightline::analysis {
namespace {

struct Attribution {
  std::map<std::string, Offender> by_name;
  std::map<std::string, std::map<std::string, uint64_t>> sites;  // offender key → site → ns
  uint64_t uncovered = 0;
};

// `site`: the user's Python line of the launch that ends the gap (or null).
void AttributeGap(const TimelineModel& model, const IdleGap& gap, uint32_t thread,
                  uint32_t launch_api, const std::string* site, Attribution* out) {
  const ThreadInfo& t = model.threads[thread];
  IntervalSet covered;
  // NVTX ranges overlapping the gap, innermost first.
  std::vector<const NvtxRange*> ranges;
  const NvtxRange* base = model.nvtx_ranges.data();
  const NvtxRange* it = std::lower_bound(base + t.nvtx_begin, base + t.nvtx_end, gap.end_ns,
                                         [](const NvtxRange& r, uint64_t v) {
                                           return r.start_ns < v;
                                         });
  for (int walked = 0; it != base + t.nvtx_begin && walked < 4096; ++walked) {
    --it;
    if (it->end_ns > gap.start_ns) ranges.push_back(&*it);
    if (it->depth == 0 && it->end_ns <= gap.start_ns) break;
  }
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const NvtxRange* a, const NvtxRange* b) { return a->depth > b->depth; });
  for (const NvtxRange* r : ranges) {
    uint64_t lo = std::max(r->start_ns, gap.start_ns), hi = std::min(r->end_ns, gap.end_ns);
    if (lo >= hi) continue;
    IntervalSet piece;
    piece.AddSorted(lo, hi);
    uint64_t fresh = piece.Subtract(covered).total();
    covered = covered.Union(piece);
    if (fresh == 0) continue;
    // Instances of one op or record_function group under one name (PyTorch's
    // ranges carry ", op_id = N" each).
    const std::string name(RangeGroupName(model.String(r->name)));
    Offender& o = out->by_name["nvtx:" + name];
    o.name = name;
    o.detail = "NVTX range";
    o.count++;
    o.total_ns += fresh;
    if (site != nullptr) out->sites["nvtx:" + name][*site] += fresh;
  }
  // CUDA API calls on the thread inside the gap (not the launch that ends it).
  const ApiCall* abase = model.api_calls.data();
  const ApiCall* a = std::lower_bound(abase + t.api_begin, abase + t.api_end, gap.start_ns,
                                      [](const ApiCall& c, uint64_t v) { return c.start_ns < v; });
  if (a != abase + t.api_begin) --a;  // a call that began before the gap
  for (; a != abase + t.api_end && a->start_ns < gap.end_ns; ++a) {
    if (static_cast<uint32_t>(a - abase) == launch_api) continue;
    uint64_t lo = std::max(a->start_ns, gap.start_ns), hi = std::min(a->end_ns, gap.end_ns);
    if (lo >= hi) continue;
    Offender& o = out->by_name["api:" + ApiName(model, a->name)];
    o.name = ApiName(model, a->name);
    o.detail = "CUDA API";
    o.count++;
    o.total_ns += hi - lo;
  }
  const uint64_t uncovered = gap.length() - std::min(gap.length(), covered.total());
  out->uncovered += uncovered;
  if (site != nullptr && uncovered > 0) {
    Offender& o = out->by_name["uncovered:" + *site];
    o.name = "(CPU work outside NVTX ranges and CUDA calls)";
    o.detail = "uninstrumented, before this line's launch";
    o.python_site = *site;
    o.count++;
    o.total_ns += uncovered;
  }
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  double min_pct = ctx.Param("min_host_wait_pct");
  double min_share = ctx.Param("min_share_of_idle_pct");
  std::optional<PythonAttribution> python;  // only for traces with Python stacks
  bool python_done = false;
  for (const DeviceTimeline& t : ctx.timeline().devices) {
    if (t.window_ns() == 0) continue;
    uint64_t idle = 0, host_wait = 0, gaps = 0;
    for (const IdleGap& g : t.gaps) {
      idle += g.length();
      if (g.cause == IdleCause::kHostWait) {
        host_wait += g.length();
        ++gaps;
      }
    }
    double share = PctOf(double(host_wait), double(idle));
    double pct = PctOf(double(host_wait), double(t.window_ns()));
    if (host_wait == 0 || pct < min_pct || share < min_share) continue;
    Attribution attribution;
    if (!python_done) {  // once, for the first device that fires
      python = AttributePythonIfStacks(model);
      python_done = true;
    }
    for (const IdleGap& g : t.gaps) {
      if (g.cause != IdleCause::kHostWait || g.next_activity == kNone) continue;
      const GpuActivity& next = model.activities[g.next_activity];
      const ApiCall* launch = model.LaunchOf(next);
      if (launch == nullptr) continue;
      const std::string* site = python ? python->SiteOf(next.launch_api) : nullptr;
      AttributeGap(model, g, launch->thread, next.launch_api, site, &attribution);
    }
    Finding f = ctx.NewFinding(host_wait);
    f.scope = DeviceLabel(model, t.device);
    f.title = f.scope + ": the CPU makes the GPU wait " + FormatPct(pct) + " of the time (" +
              FormatPct(share) + " of GPU idle is host-wait)";
    f.Number("host_wait_ns", double(host_wait), "ns")
        .Number("host_wait_pct_of_window", pct, "pct")
        .Number("host_wait_pct_of_idle", share, "pct")
        .Number("idle_ns", double(idle), "ns")
        .Number("host_wait_gaps", double(gaps), "count")
        .Number("uncovered_ns", double(attribution.uncovered), "ns");
    uint64_t uncovered_by_site = 0;
    for (auto& [key, o] : attribution.by_name) {
      o.share_pct = PctOf(double(o.total_ns), double(host_wait));
      if (auto it = attribution.sites.find(key); it != attribution.sites.end()) {
        const auto top = std::max_element(it->second.begin(), it->second.end(),
                                          [](const auto& a, const auto& b) {
                                            return a.second < b.second;
                                          });
        o.python_site = top->first;
      }
      if (StartsWith(key, "uncovered:")) uncovered_by_site += o.total_ns;
      f.offenders.push_back(o);
    }
    if (attribution.uncovered > uncovered_by_site) {  // gaps without a Python line
      Offender o;
      o.name = "(CPU work outside NVTX ranges and CUDA calls)";
      o.total_ns = attribution.uncovered - uncovered_by_site;
      o.share_pct = PctOf(double(o.total_ns), double(host_wait));
      o.detail = "uninstrumented";
      f.offenders.push_back(o);
    }
    KeepTopOffenders(&f.offenders, 8);
    std::string top = f.offenders.empty() ? std::string() : f.offenders.front().name;
    if (!f.offenders.empty() && !f.offenders.front().python_site.empty()) {
      top += "' before the launches at '" + f.offenders.front().python_site;
    }
    f.recommendation =
        "The GPU waits for the CPU" + (top.empty() ? std::string(".") : " (mostly during '" + top + "').") +
        " Move that CPU work off the launch path: run preprocessing in DataLoader workers or a "
        "separate thread, prefetch the next batch while the GPU computes, use pinned memory "
        "with non_blocking copies, or move the preprocessing itself onto the GPU.";
    out->push_back(std::move(f));
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(cpu_bound, sightline::analysis::kRuleTimeline,
               "CPU/GPU imbalance: GPU idle caused by the host launching late",
               sightline::analysis::Run,
               {"min_host_wait_pct", 5, "fire when host-wait idle reaches this % of the window"},
               {"min_share_of_idle_pct", 30, "... and this share of all GPU idle"});
