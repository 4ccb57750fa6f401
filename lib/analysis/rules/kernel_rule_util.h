// lib/analysis/rules/kernel_rule_util.h — what the kernel-level rules share
// (header-only: every rules/*.cc is a rule, so helpers cannot be .cc files
// here).
//
// A KernelView is one kernel name of the model with:
//  * its time: timed instances (KernelAggregate::total_ns) plus replayed
//    instances (excluded from the timeline because kernel replay distorts
//    their duration) valued at the replay-measured gpu__time_duration.sum
//    when that metric was collected — so a fully profiled trace still weighs
//    kernels by their real cost;
//  * its share of all kernel time (computed the same way), the weight every
//    kernel rule multiplies its local saving with;
//  * its most frequent launch configuration and, when the device is known,
//    the theoretical occupancy of that configuration (occupancy.h);
//  * its metrics (means over profiled instances), -1 when not collected.
//
// Savings: est_saving_ns = kernel time × local fraction; the percentage is of
// the analysed window, or of all kernel time when replay left the window
// shorter than that (every kernel profiled). Metric names follow ncu.
#ifndef SIGHTLINE_LIB_ANALYSIS_RULES_KERNEL_RULE_UTIL_H_
#define SIGHTLINE_LIB_ANALYSIS_RULES_KERNEL_RULE_UTIL_H_

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lib/analysis/occupancy.h"
#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"
#include "lib/trace/demangle.h"

namespace sightline::analysis::kernel_rules {

inline constexpr char kDuration[] = "gpu__time_duration.sum";
inline constexpr char kAchievedOccupancy[] = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr char kSmCyclesActiveAvg[] = "sm__cycles_active.avg";
inline constexpr char kSmCyclesActiveMax[] = "sm__cycles_active.max";
inline constexpr char kDramThroughput[] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kMemoryThroughput[] =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kSmThroughput[] = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kLoadSectors[] = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
inline constexpr char kLoadRequests[] = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
inline constexpr char kStoreSectors[] = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
inline constexpr char kStoreRequests[] = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
inline constexpr char kBankConflicts[] = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum";
inline constexpr char kSharedWavefronts[] = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";
inline constexpr char kThreadsPerInst[] = "smsp__thread_inst_executed_per_inst_executed.ratio";
inline constexpr char kIssueActive[] = "smsp__issue_active.avg.pct_of_peak_sustained_active";
inline constexpr char kTensorActive[] =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";

struct KernelView {
  const KernelAggregate* kernel = nullptr;
  const LaunchConfigUse* config = nullptr;  // most frequent configuration
  const DeviceInfo* device = nullptr;       // nullptr when the header lacks it
  double time_ns = 0;
  double share_pct = 0;
  uint64_t instances = 0;  // timed + replayed
  bool has_occupancy = false;
  ArchitectureLimits arch;
  LaunchResources launch;
  OccupancyResult occupancy;

  double Metric(std::string_view name) const { return kernel->Metric(name, -1); }
  bool Has(std::string_view name) const { return kernel->HasMetric(name); }
  const std::string& name() const { return kernel->name_text; }
};

// "_Z12matmul_naivePKfS0_Pfi" → "matmul_naive(float const*, ...)"; other
// names unchanged (traces may carry CUPTI's mangled names).
inline std::string DemangledKernelName(std::string_view name) { return trace::Demangle(name); }

// "matmul_naive(float const*, ...)" → "matmul_naive"; templates kept, a
// leading "void " (demangled template kernels) dropped; mangled names are
// demangled first.
inline std::string ShortKernelName(std::string_view raw) {
  const std::string demangled = DemangledKernelName(raw);
  std::string_view name = demangled;
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0 && i > 0) return std::string(name.substr(0, i));
  }
  return std::string(name);
}

inline LaunchResources ResourcesOf(const LaunchConfig& c) {
  LaunchResources r;
  r.threads_per_block = static_cast<uint32_t>(c.threads_per_block());
  r.registers_per_thread = c.registers_per_thread;
  r.static_shared_bytes = c.static_shared_bytes;
  r.dynamic_shared_bytes = c.dynamic_shared_bytes;
  r.shared_config_bytes = c.shared_memory_config_bytes;
  r.cluster_launch = c.launch_type == 3;
  return r;
}

namespace internal {

inline void FillOccupancy(const TimelineModel& model, KernelView* v) {
  const uint32_t device = v->config->config.device;
  if (device >= model.devices.size() || !model.devices[device].has_info) return;
  v->device = &model.devices[device].info;
  absl::StatusOr<ArchitectureLimits> arch = LimitsForDevice(*v->device);
  if (!arch.ok()) return;
  v->arch = *arch;
  v->launch = ResourcesOf(v->config->config);
  absl::StatusOr<OccupancyResult> occ = ComputeOccupancy(v->arch, v->launch);
  if (!occ.ok()) return;
  v->occupancy = *occ;
  v->has_occupancy = true;
}

// Mean duration of one instance: the replay-measured gpu__time_duration.sum
// when collected, else the timed mean.
inline double InstanceNs(const KernelAggregate& k) {
  const double replay_mean = k.Metric(kDuration, -1);
  if (replay_mean >= 0) return replay_mean;
  return k.count > 0 ? k.mean_ns : 0;
}

inline double ConfigTimeNs(const KernelAggregate& k, const LaunchConfigUse& c) {
  return double(c.total_ns) + double(c.replayed_count) * InstanceNs(k);
}

inline void Finish(std::vector<KernelView>* views, double total) {
  for (KernelView& v : *views) v.share_pct = total > 0 ? 100.0 * v.time_ns / total : 0;
  std::stable_sort(views->begin(), views->end(),
                   [](const KernelView& a, const KernelView& b) { return a.time_ns > b.time_ns; });
}

}  // namespace internal

// One view per compute kernel name (communication kernels are the NCCL
// rules' business), by time descending. `config` is the configuration with
// the most instances. Metric rules use these (metrics are per name).
inline std::vector<KernelView> KernelViews(const TimelineModel& model) {
  std::vector<KernelView> views;
  double total = 0;
  for (const KernelAggregate& k : model.kernels) {
    if (k.klass == ActivityClass::kCommunication || k.configs.empty()) continue;
    KernelView v;
    v.kernel = &k;
    v.config = &k.configs.front();
    for (const LaunchConfigUse& c : k.configs) {
      if (c.count + c.replayed_count > v.config->count + v.config->replayed_count) v.config = &c;
    }
    v.instances = k.count + k.replayed_count;
    v.time_ns = double(k.total_ns) + double(k.replayed_count) * internal::InstanceNs(k);
    internal::FillOccupancy(model, &v);
    total += v.time_ns;
    views.push_back(v);
  }
  internal::Finish(&views, total);
  return views;
}

// One view per (compute kernel, launch configuration), by time descending:
// the launch-configuration rules judge each configuration on its own (the
// same kernel often runs with a healthy and a starved grid).
inline std::vector<KernelView> ConfigViews(const TimelineModel& model) {
  std::vector<KernelView> views;
  double total = 0;
  for (const KernelAggregate& k : model.kernels) {
    if (k.klass == ActivityClass::kCommunication) continue;
    for (const LaunchConfigUse& c : k.configs) {
      KernelView v;
      v.kernel = &k;
      v.config = &c;
      v.instances = c.count + c.replayed_count;
      v.time_ns = internal::ConfigTimeNs(k, c);
      internal::FillOccupancy(model, &v);
      total += v.time_ns;
      views.push_back(v);
    }
  }
  internal::Finish(&views, total);
  return views;
}

inline double TotalKernelTime(const std::vector<KernelView>& views) {
  double t = 0;
  for (const KernelView& v : views) t += v.time_ns;
  return t;
}

// A finding scoped to one kernel, with the common evidence filled in.
inline Finding NewKernelFinding(const RuleContext& ctx, const KernelView& v, double local_fraction,
                                double total_kernel_ns) {
  local_fraction = std::clamp(local_fraction, 0.0, 1.0);
  const double saving = v.time_ns * local_fraction;
  Finding f = ctx.NewFinding(static_cast<uint64_t>(saving));
  const double base = std::max<double>(double(ctx.window_ns()), total_kernel_ns);
  f.est_saving_pct = base > 0 ? 100.0 * saving / base : 0;
  f.severity = SeverityForSavingPct(f.est_saving_pct);
  f.scope = "kernel " + ShortKernelName(v.name());
  f.Text("kernel", v.name())
      .Number("kernel_time_ns", v.time_ns, "ns")
      .Number("kernel_share_pct", v.share_pct, "pct")
      .Number("instances", double(v.instances), "count")
      .Number("local_saving_pct", 100.0 * local_fraction, "pct");
  Offender o;
  o.name = v.name();
  o.count = v.instances;  // of this kernel (or of this configuration, for ConfigViews)
  o.total_ns = static_cast<uint64_t>(v.time_ns);
  o.share_pct = v.share_pct;
  const LaunchConfig& c = v.config->config;
  o.detail = "grid (" + std::to_string(c.grid_x) + "," + std::to_string(c.grid_y) + "," +
             std::to_string(c.grid_z) + ") block (" + std::to_string(c.block_x) + "," +
             std::to_string(c.block_y) + "," + std::to_string(c.block_z) + "), " +
             std::to_string(c.registers_per_thread) + " regs/thread, " +
             std::to_string(c.static_shared_bytes + c.dynamic_shared_bytes) + " B shared/block";
  f.offenders.push_back(o);
  return f;
}

// " (grid 16×1×1, block 256×1×1)" — names the configuration in titles of
// kernels launched with several.
inline std::string ConfigSuffix(const KernelView& v) {
  if (v.kernel->configs.size() < 2) return "";
  const LaunchConfig& c = v.config->config;
  return " (grid " + std::to_string(c.grid_x) + "×" + std::to_string(c.grid_y) + "×" +
         std::to_string(c.grid_z) + ", block " + std::to_string(c.block_x) + "×" +
         std::to_string(c.block_y) + "×" + std::to_string(c.block_z) + ")";
}

// Kernels a rule looks at: share >= min_share_pct, at most max_kernels
// findings (the callers stop emitting after that many).
inline bool Eligible(const RuleContext& ctx, const KernelView& v) {
  return v.share_pct >= ctx.Param("min_share_pct") && v.time_ns > 0;
}

// Speed-of-light figures: memory = the larger of the memory-pipeline and
// DRAM percentages (ncu's "Memory Throughput" is the max over memory units).
inline double MemorySol(const KernelView& v) {
  return std::max(v.Metric(kMemoryThroughput), v.Metric(kDramThroughput));
}

inline std::string Pct(double v) { return FormatPct(v); }

// Speed-of-light classification (ncu's SOL breakdown): the higher of SM and
// memory throughput at or above `knee_pct` names the bound unit; both below
// it means neither unit is kept busy — latency-bound.
enum class SolClass { kUnknown, kMemory, kCompute, kLatency };
inline SolClass ClassifySol(const KernelView& v, double knee_pct) {
  const double sm = v.Metric(kSmThroughput), mem = MemorySol(v);
  if (sm < 0 || mem < 0) return SolClass::kUnknown;
  if (std::max(sm, mem) < knee_pct) return SolClass::kLatency;
  return mem >= sm ? SolClass::kMemory : SolClass::kCompute;
}

// Evidence common to the three speed-of-light rules.
inline void AddSolEvidence(const KernelView& v, Finding* f) {
  f->Number("sm_sol_pct", v.Metric(kSmThroughput), "pct")
      .Number("memory_sol_pct", MemorySol(v), "pct");
  if (v.Has(kDramThroughput)) f->Number("dram_sol_pct", v.Metric(kDramThroughput), "pct");
  if (v.Has(kMemoryThroughput)) f->Number("memory_pipes_sol_pct", v.Metric(kMemoryThroughput), "pct");
  if (v.Has(kIssueActive)) f->Number("issue_active_pct", v.Metric(kIssueActive), "pct");
  if (v.Has(kAchievedOccupancy)) f->Number("achieved_occupancy_pct", v.Metric(kAchievedOccupancy), "pct");
}

}  // namespace sightline::analysis::kernel_rules

#endif  // SIGHTLINE_LIB_ANALYSIS_RULES_KERNEL_RULE_UTIL_H_
