// launch_bound — the host issues GPU work slower than the GPU runs it, one
// small launch at a time (eager PyTorch, batch-1 decoding): the step is as
// long as its launch path — Python, the framework's dispatch and the launch
// calls — and the GPU waits between kernels. Saving: the what-if replay of
// the analysed window with the launches replayed as CUDA graphs (whatif.h,
// kFixGraph: launch calls and the short host pauses between them vanish, one
// graph launch per run remains; synchronizing calls and pageable copies end
// a run). Already graphed steps gain nothing and do not fire. Offenders:
// where the launch path's host time goes — per launch, the host time since
// the thread's previous CUDA call (pauses shorter than host_gap_ns: longer
// ones are cpu_bound's work) plus the launch call up to the replay's launch
// cost — by the user's Python line of the launch (python_sites.h) when the
// trace has Python stacks, else by kernel.
#include <algorithm>
#include <map>
#include <optional>

#include "lib/analysis/python_sites.h"
#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"
#include "lib/analysis/whatif.h"

namespace sightline::analysis {
namespace {

void AddLaunchPathOffenders(const TimelineModel& model, const WhatIfParams& p, Finding* f) {
  const std::optional<PythonAttribution> python = AttributePythonIfStacks(model);
  std::vector<uint32_t> kernel_of(model.api_calls.size(), kNone);  // launch → a kernel's name
  if (!python) {
    for (const GpuActivity& a : model.activities) {
      if (a.kind == ActivityKind::kKernel && a.launch_api != kNone) kernel_of[a.launch_api] = a.name;
    }
  }
  std::map<std::string, Offender> by_key;
  uint64_t total = 0;
  for (const ThreadInfo& t : model.threads) {
    uint64_t prev_end = 0;
    for (uint32_t i = t.api_begin; i < t.api_end; ++i) {
      const ApiCall& c = model.api_calls[i];
      const uint64_t gap = prev_end != 0 && c.start_ns > prev_end ? c.start_ns - prev_end : 0;
      prev_end = std::max(prev_end, c.end_ns);
      if (!(c.flags & kApiLaunch) || (c.flags & kApiSync)) continue;
      const uint64_t host = (gap < p.host_gap_ns ? gap : 0) +
                            std::min<uint64_t>(c.duration(), p.launch_overhead_ns);
      std::string key, site;
      if (python) {
        if (const std::string* s = python->SiteOf(i)) site = *s;
        // "train.py:42" (the full site is python_site).
        std::string_view file_line = std::string_view(site).substr(0, site.find(" in "));
        if (size_t slash = file_line.rfind('/'); slash != std::string_view::npos) {
          file_line.remove_prefix(slash + 1);
        }
        key = site.empty() ? "(no Python line)" : std::string(file_line);
      } else {
        key = kernel_of[i] != kNone ? std::string(model.String(kernel_of[i])) : ApiName(model, c.name);
      }
      Offender& o = by_key[python ? site : key];
      o.name = key;
      o.python_site = site;
      o.detail = "host launch path";
      o.count++;
      o.total_ns += host;
      total += host;
    }
  }
  for (auto& [key, o] : by_key) {
    o.share_pct = PctOf(double(o.total_ns), double(total));
    f->offenders.push_back(std::move(o));
  }
  KeepTopOffenders(&f->offenders, 8);
  f->Number("launch_path_ns", double(total), "ns");
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  WhatIfParams p;
  p.host_gap_ns = static_cast<uint64_t>(ctx.Param("host_gap_ns"));
  const WhatIf& w = ctx.what_if(p);
  if (w.empty()) return;
  uint64_t window = ctx.window_ns();
  uint64_t saving = w.Saving(kFixGraph, kFixNone, window);
  if (ctx.PctOfWindow(saving) < ctx.Param("min_saving_pct")) return;
  uint64_t launches = 0, graph_launches = 0, launch_ns = 0, kernels = 0, kernel_ns = 0;
  for (const ApiCall& c : model.api_calls) {
    if (!(c.flags & kApiLaunch)) continue;
    ++launches;
    launch_ns += c.duration();
    if (c.flags & kApiGraphLaunch) ++graph_launches;
  }
  for (const GpuActivity& a : model.activities) {
    if (a.kind != ActivityKind::kKernel) continue;
    ++kernels;
    kernel_ns += a.duration();
  }
  const StepSummary& steps = ctx.report().summary.steps;
  double per_step = steps.count > 0 ? double(launches) / double(steps.count) : 0;
  Finding f = ctx.NewFinding(saving);
  f.title = "Launch-bound: the host issues " +
            (steps.count > 0 ? std::to_string(static_cast<uint64_t>(per_step + 0.5)) +
                                   " launches per step"
                             : std::to_string(launches) + " launches") +
            " slower than the GPU runs them; as a CUDA graph the window would be " +
            FormatPct(ctx.PctOfWindow(saving)) + " shorter";
  f.Number("launches", double(launches), "count")
      .Number("graph_launches", double(graph_launches), "count")
      .Number("mean_launch_call_ns", launches ? double(launch_ns) / double(launches) : 0, "ns")
      .Number("kernels", double(kernels), "count")
      .Number("mean_kernel_ns", kernels ? double(kernel_ns) / double(kernels) : 0, "ns")
      .Number("replay_ns", double(w.baseline()), "ns")
      .Number("replay_graphed_ns", double(w.Replay(kFixGraph)), "ns")
      .Text("what_if", "launches replayed as CUDA graphs (whatif.h kFixGraph)");
  if (steps.count > 0) f.Number("launches_per_step", per_step, "count");
  AddLaunchPathOffenders(model, p, &f);
  f.recommendation =
      "Capture the step in a CUDA graph (torch.compile(mode=\"reduce-overhead\"), or "
      "torch.cuda.CUDAGraph / torch.cuda.graph around a static-shape step), fuse small ops "
      "(torch.compile), or give each launch more work (larger batch). Keep .item()/.cpu() "
      "and pageable copies out of the captured region.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(launch_bound, sightline::analysis::kRuleTimeline,
               "Launch-bound steps: a CUDA graph of the step would save time (what-if replay)",
               sightline::analysis::Run,
               {"min_saving_pct", 5, "fire when the graphed replay saves this % of the window"},
               {"host_gap_ns", 200000, "host pauses at least this long are work, not launch overhead"});
