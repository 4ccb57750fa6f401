// small_grid — fewer blocks than SMs: whole SMs stay idle for the kernel's
// duration (ncu launch rule). Works on plain traces (needs the SM count from
// the trace header). Saving: the SM-time the kernel leaves idle, the
// ANCHORS.md estimate (SMs − blocks) / SMs of its time (all SMs busy at the
// same per-SM speed) — but counting the kernels that ran beside it: SMs that
// a concurrent kernel (another stream) occupies are not idle. Per device, a
// sweep over the kernels keeps the blocks running at each instant; in a
// stretch where they leave I of the S SMs idle, each small-grid kernel
// running is charged I/S of the stretch in proportion to its blocks, so the
// charges of concurrent kernels add up to the idle SM-time, never more. A
// kernel alone on the device gets exactly (S − blocks)/S of its duration.
// Kernels without a recorded launch configuration are taken to fill the GPU;
// replayed instances (no timeline) are valued as running alone.
#include <algorithm>
#include <map>
#include <utility>

#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;

// Idle SM-time (ns × fraction of the device's SMs) charged to each
// (kernel name, launch configuration) over its timed instances.
using IdleByConfig = std::map<std::pair<uint32_t, uint32_t>, double>;

IdleByConfig ChargeIdleSms(const TimelineModel& model) {
  IdleByConfig charged;
  for (const DeviceTimelineInfo& info : model.devices) {
    if (!info.has_info || info.info.sm_count == 0) continue;
    const uint64_t sms = info.info.sm_count;
    struct Running {
      uint64_t end_ns;
      uint64_t blocks;  // capped at sms
      double* charge;   // nullptr: not a small grid
    };
    std::vector<Running> running;
    uint64_t total_blocks = 0, small_blocks = 0;
    auto charge_until = [&](uint64_t from, uint64_t to) {
      if (to <= from || small_blocks == 0 || total_blocks >= sms) return;
      const double idle = double(to - from) * double(sms - total_blocks) / double(sms);
      for (const Running& r : running) {
        if (r.charge != nullptr) *r.charge += idle * double(r.blocks) / double(small_blocks);
      }
    };
    auto retire_until = [&](uint64_t t, uint64_t* now) {
      // Ends in time order up to t, charging the stretch before each.
      while (!running.empty()) {
        auto first = std::min_element(running.begin(), running.end(),
                                      [](const Running& a, const Running& b) {
                                        return a.end_ns < b.end_ns;
                                      });
        if (first->end_ns > t) break;
        charge_until(*now, first->end_ns);
        *now = std::max(*now, first->end_ns);
        total_blocks -= first->blocks;
        if (first->charge != nullptr) small_blocks -= first->blocks;
        *first = running.back();
        running.pop_back();
      }
    };
    uint64_t now = 0;
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      const GpuActivity& a = model.activities[i];
      // Replayed kernels are weighed by their measured duration in Run.
      if (a.kind != ActivityKind::kKernel || a.end_ns <= a.start_ns || model.IsReplayed(a)) continue;
      retire_until(a.start_ns, &now);
      if (!running.empty()) charge_until(now, a.start_ns);
      now = a.start_ns;
      uint64_t blocks = sms;  // unknown configuration: assume it fills the GPU
      double* charge = nullptr;
      if (a.detail != kNone && a.detail < model.launch_configs.size()) {
        blocks = std::min<uint64_t>(model.launch_configs[a.detail].blocks(), sms);
        if (blocks > 0 && blocks < sms && a.klass != ActivityClass::kCommunication) {
          charge = &charged[{a.name, a.detail}];
        }
        if (blocks == 0) blocks = sms;
      }
      running.push_back({a.end_ns, blocks, charge});
      total_blocks += blocks;
      if (charge != nullptr) small_blocks += blocks;
    }
    retire_until(UINT64_MAX, &now);
  }
  return charged;
}

uint32_t LaunchConfigIndex(const TimelineModel& model, const LaunchConfig& c) {
  for (size_t i = 0; i < model.launch_configs.size(); ++i) {
    if (model.launch_configs[i] == c) return static_cast<uint32_t>(i);
  }
  return kNone;
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  const std::vector<KernelView> views = ConfigViews(model);
  const double total = TotalKernelTime(views);
  bool charged_ready = false;
  IdleByConfig charged;
  size_t emitted = 0;
  for (const KernelView& v : views) {
    if (emitted >= ctx.Param("max_kernels")) break;
    if (!Eligible(ctx, v) || v.device == nullptr || v.device->sm_count == 0) continue;
    const uint64_t blocks = v.config->config.blocks();
    const uint32_t sms = v.device->sm_count;
    if (blocks == 0 || blocks >= sms) continue;
    if (!charged_ready) {
      charged = ChargeIdleSms(model);
      charged_ready = true;
    }
    const double own_idle = double(sms - blocks) / double(sms);
    double idle_ns = double(v.config->replayed_count) * internal::InstanceNs(*v.kernel) * own_idle;
    auto it = charged.find({v.kernel->name, LaunchConfigIndex(model, v.config->config)});
    if (it != charged.end()) idle_ns += it->second;
    const double idle = v.time_ns > 0 ? idle_ns / v.time_ns : 0;
    if (100 * idle < ctx.Param("min_idle_sm_pct")) continue;
    Finding f = NewKernelFinding(ctx, v, idle, total);
    f.title = ShortKernelName(v.name()) + ConfigSuffix(v) + ": grid of " + std::to_string(blocks) + " blocks on " +
              std::to_string(sms) + " SMs leaves " + Pct(100 * own_idle) + " of the SMs idle";
    if (100 * (own_idle - idle) >= 0.5) {
      f.title += " (" + Pct(100 * idle) + " counting the kernels that ran beside it)";
    }
    f.Number("blocks", double(blocks), "count")
        .Number("sm_count", sms, "count")
        .Number("idle_sm_pct", 100 * own_idle, "pct")
        .Number("idle_sm_pct_with_concurrent", 100 * idle, "pct");
    if (v.has_occupancy) f.Number("blocks_per_sm_possible", v.occupancy.active_blocks_per_sm, "count");
    f.recommendation =
        "Launch at least " + std::to_string(sms) + " blocks (ideally a multiple of " + std::to_string(sms) +
        " × blocks per SM): split the work into smaller blocks, parallelise an inner loop across blocks "
        "(split-K for reductions/GEMMs), or run independent kernels concurrently on other streams.";
    out->push_back(std::move(f));
    ++emitted;
  }
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(small_grid,
               sightline::analysis::kRuleKernel | sightline::analysis::kRuleIdleSmKernel,
               "Grid smaller than the number of SMs", sightline::analysis::Run,
               {"min_share_pct", 0.5, "ignore kernels under this share of kernel time"},
               {"max_kernels", 5.0, "at most this many findings"},
               {"min_idle_sm_pct", 10,
                "fire when the SMs left idle while the kernel runs (counting concurrent kernels) "
                "average at least this %"});
