// lib/analysis/kernel_metrics.cc — see kernel_metrics.h.
#include "lib/analysis/kernel_metrics.h"

#include <regex.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "lib/analysis/rule_util.h"
#include "lib/analysis/rules/kernel_rule_util.h"

namespace sightline::analysis {
namespace {

using namespace kernel_rules;  // metric names, KernelView, ClassifySol

constexpr size_t kMaxMissing = 10;

// Metrics ncu reports per kernel that the pages below use beyond the rules'.
constexpr char kL1Throughput[] = "l1tex__throughput.avg.pct_of_peak_sustained_active";
constexpr char kL2Throughput[] = "lts__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr char kDramBytes[] = "dram__bytes.sum";
constexpr char kInstExecuted[] = "smsp__inst_executed.sum";
constexpr char kCyclesElapsed[] = "sm__cycles_elapsed.avg";
constexpr char kAnyTensorActive[] = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
constexpr char kGmmaInst[] = "sm__inst_executed_pipe_tensor_op_gmma.sum";

std::vector<KernelMetricValue> ValuesOf(const std::vector<MetricAggregate>& metrics) {
  std::vector<KernelMetricValue> out;
  out.reserve(metrics.size());
  for (const MetricAggregate& m : metrics) {
    if (m.samples == 0) continue;
    out.push_back(KernelMetricValue{m.name, m.mean, m.samples, m.min, m.max, m.kernel_replay});
  }
  return out;
}

uint64_t ConfigKey(uint32_t name, uint32_t config) { return (uint64_t{name} << 32) | config; }

std::string Dim3(uint32_t x, uint32_t y, uint32_t z) {
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
}

bool LaunchedByGraph(const TimelineModel& model, const GpuActivity& a) {
  if (a.launch_api == kNone || a.launch_api >= model.api_calls.size()) return false;
  return model.String(model.api_calls[a.launch_api].name).find("GraphLaunch") !=
         std::string_view::npos;
}

}  // namespace

void FillKernelMetrics(const TimelineModel& model, Report* report) {
  MetricsCoverage& cov = report->metrics_coverage;
  cov = MetricsCoverage{};
  for (const MetricSample& m : model.metric_samples) {
    if (!m.values.empty()) {
      cov.present = true;
      break;
    }
  }
  absl::flat_hash_map<std::string_view, const KernelAggregate*> by_name;
  for (const KernelAggregate& k : model.kernels) by_name.emplace(k.name_text, &k);
  for (KernelRow& row : report->kernels) {
    auto it = by_name.find(row.name);
    if (it == by_name.end()) continue;
    const KernelAggregate& k = *it->second;
    row.metric_samples = k.metric_samples;
    row.metrics = ValuesOf(k.metrics);
    std::vector<const LaunchConfigUse*> measured;
    for (const LaunchConfigUse& c : k.configs) {
      if (c.metric_samples > 0) measured.push_back(&c);
    }
    if (measured.size() < 2) continue;
    for (const LaunchConfigUse* c : measured) {
      KernelConfigMetrics km;
      km.grid = {c->config.grid_x, c->config.grid_y, c->config.grid_z};
      km.block = {c->config.block_x, c->config.block_y, c->config.block_z};
      km.shared_bytes = uint64_t{c->config.static_shared_bytes} + c->config.dynamic_shared_bytes;
      km.registers_per_thread = c->config.registers_per_thread;
      km.count = c->count;
      km.samples = c->metric_samples;
      km.metrics = ValuesOf(c->metrics);
      row.metrics_by_config.push_back(std::move(km));
    }
  }
  if (!cov.present) return;

  // Coverage over the window's kernel launches, by kernel name + configuration.
  absl::flat_hash_set<uint64_t> measured;
  absl::flat_hash_set<uint32_t> measured_names;
  for (const KernelAggregate& k : model.kernels) {
    for (const LaunchConfigUse& c : k.configs) {
      if (c.metric_samples > 0 && c.config_id != kNone) {
        measured.insert(ConfigKey(k.name, c.config_id));
        measured_names.insert(k.name);
      }
    }
  }
  struct MissingAcc {
    uint32_t name = 0;
    uint32_t config = kNone;
    uint64_t count = 0, total_ns = 0, graph = 0;
    bool comm = false;
  };
  std::map<uint64_t, MissingAcc> missing;
  absl::flat_hash_set<uint64_t> seen;
  for (const GpuActivity& a : model.activities) {
    if (a.kind != ActivityKind::kKernel) continue;
    const uint64_t d = a.duration();
    const uint64_t key = ConfigKey(a.name, a.detail);
    cov.kernel_ns += d;
    const bool fresh = seen.insert(key).second;
    if (measured.contains(key)) {
      cov.covered_ns += d;
      if (fresh) ++cov.configs_with;
      continue;
    }
    if (fresh) ++cov.configs_without;
    MissingAcc& m = missing[key];
    m.name = a.name;
    m.config = a.detail;
    m.count++;
    m.total_ns += d;
    m.comm = m.comm || a.klass == ActivityClass::kCommunication;
    m.graph += LaunchedByGraph(model, a) ? 1 : 0;
  }
  cov.kernel_time_pct = PctOf(double(cov.covered_ns), double(cov.kernel_ns));
  std::vector<MissingAcc> rows;
  for (auto& [key, m] : missing) rows.push_back(m);
  std::sort(rows.begin(), rows.end(), [](const MissingAcc& a, const MissingAcc& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.name < b.name;
  });
  for (const MissingAcc& m : rows) {
    if (cov.missing.size() >= kMaxMissing) break;
    MetricsCoverage::Missing out;
    out.name = std::string(model.String(m.name));
    if (m.config < model.launch_configs.size()) {
      const LaunchConfig& c = model.launch_configs[m.config];
      out.grid = {c.grid_x, c.grid_y, c.grid_z};
      out.block = {c.block_x, c.block_y, c.block_z};
    }
    out.count = m.count;
    out.total_ns = m.total_ns;
    out.share_pct = PctOf(double(m.total_ns), double(cov.kernel_ns));
    if (m.comm) {
      out.reason = "communication kernel (NCCL): not measured, its passes would stall the collective";
    } else if (m.graph == m.count) {
      out.reason = "runs inside CUDA graph launches, which the collector sees as one launch";
    } else if (measured_names.contains(m.name)) {
      out.reason = "this launch configuration was not measured (another configuration of the kernel was)";
    } else {
      out.reason = "not among the measured launches (outside the learned step or capture window, "
                   "or past the metrics budget)";
    }
    cov.missing.push_back(std::move(out));
  }
}

namespace {

std::string Num(double v, const char* fmt = "%.1f") {
  if (v < 0 || std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string PctOrNa(double v) { return v < 0 || std::isnan(v) ? "n/a" : FormatPct(v); }

std::string CountText(double v) {
  if (v < 0) return "n/a";
  char buf[64];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2f G", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f M", v / 1e6);
  } else if (v >= 1e4) {
    std::snprintf(buf, sizeof(buf), "%.1f K", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  }
  return buf;
}

double Ratio(double a, double b) { return a >= 0 && b > 0 ? a / b : -1; }

// The --metrics set that collects `metric` (lib/collect/metric_sets.cc).
const char* SetFor(std::string_view metric) {
  if (metric == kSmThroughput || metric == kIssueActive || metric == kThreadsPerInst ||
      metric == kTensorActive || metric == kInstExecuted || metric == kGmmaInst ||
      metric == kCyclesElapsed) {
    return "compute";
  }
  if (metric == kAchievedOccupancy) return "occupancy";
  return "memory";
}

// The metric values a page shows: its configuration's when that
// configuration was measured (a GEMM on two shapes has two sets of values),
// else the kernel's means over every measured launch.
struct PageValues {
  const std::vector<MetricAggregate>* list = nullptr;
  uint64_t samples = 0;
  bool per_config = false;
  explicit PageValues(const KernelView& v) {
    if (v.config != nullptr && v.config->metric_samples > 0) {
      list = &v.config->metrics;
      samples = v.config->metric_samples;
      per_config = true;
    } else {
      list = &v.kernel->metrics;
      samples = v.kernel->metric_samples;
    }
  }
  const MetricAggregate* Find(std::string_view name) const {
    for (const MetricAggregate& m : *list) {
      if (m.name == name && m.samples > 0) return &m;
    }
    return nullptr;
  }
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  double Metric(std::string_view name) const {
    const MetricAggregate* m = Find(name);
    return m != nullptr ? m->mean : -1;
  }
};

// A row for a metric value; a "not collected" note names the set with it.
KernelPageRow MetricRow(const PageValues& v, std::string label, std::string_view metric,
                        std::string value, std::string note) {
  if (!v.Has(metric)) {
    if (metric == kDuration) {
      return KernelPageRow{std::move(label), "n/a", "not collected (every --metrics set has it)"};
    }
    return KernelPageRow{std::move(label), "n/a",
                         std::string("not collected (--metrics ") + SetFor(metric) + " or full)"};
  }
  const MetricAggregate* m = v.Find(metric);
  if (m->kernel_replay) {
    // Sequence replay's --metrics-replay-top: in-place passes add DRAM
    // write-backs of their own, so these come from kernel replay.
    // At the kernel level other configurations' in-place sets may share
    // the mean (model.h MetricAggregate).
    note += std::string(note.empty() ? "" : "; ") +
            (m->replayed_sets < m->samples && !v.per_config ? "partly " : "") + "from " +
            std::to_string(m->replayed_sets) + " kernel-replayed launch" +
            (m->replayed_sets == 1 ? "" : "es") + " (in-place passes add write-backs)";
  }
  return KernelPageRow{std::move(label), std::move(value), std::move(note)};
}

KernelPage PageFor(const TimelineModel& model, const Report& report, const KernelView& v) {
  KernelPage page;
  page.name = v.name();
  page.display_name = DemangledKernelName(v.name());
  const KernelAggregate& k = *v.kernel;
  const LaunchConfig& c = v.config->config;
  const PageValues pv(v);

  // Speed of light.
  KernelPageSection sol{"GPU speed of light", {}};
  const double dur = pv.Metric(kDuration);
  const MetricAggregate* dur_agg = pv.Find(kDuration);
  // The spread of the launches the mean is over (ncu lists each launch).
  const std::string dur_spread =
      dur_agg != nullptr && dur_agg->samples > 1
          ? " (" + FormatNs(dur_agg->min) + " to " + FormatNs(dur_agg->max) + ")"
          : "";
  sol.rows.push_back(MetricRow(pv, "Duration (measured)", kDuration, FormatNs(dur),
                               "gpu__time_duration.sum, mean over " +
                                   std::to_string(dur_agg != nullptr ? dur_agg->samples : pv.samples) +
                                   " measured launches" +
                                   (pv.per_config ? " of this configuration" : "") + dur_spread));
  const double sm = pv.Metric(kSmThroughput);
  const double mem = std::max(pv.Metric(kMemoryThroughput), pv.Metric(kDramThroughput));
  sol.rows.push_back(MetricRow(pv, "Compute (SM) throughput", kSmThroughput, PctOrNa(sm),
                               "of peak, the busiest SM unit"));
  sol.rows.push_back(MetricRow(pv, "Memory throughput", kMemoryThroughput,
                               PctOrNa(pv.Metric(kMemoryThroughput)),
                               "of peak, the busiest of L1, L2 and DRAM"));
  sol.rows.push_back(MetricRow(pv, "DRAM throughput", kDramThroughput, PctOrNa(pv.Metric(kDramThroughput)), ""));
  sol.rows.push_back(MetricRow(pv, "L1/TEX throughput", kL1Throughput, PctOrNa(pv.Metric(kL1Throughput)), ""));
  sol.rows.push_back(MetricRow(pv, "L2 throughput", kL2Throughput, PctOrNa(pv.Metric(kL2Throughput)), ""));
  // The speed-of-light rules' classification (kernel_rule_util.h ClassifySol),
  // on this page's values.
  const SolClass sol_class = sm < 0 || mem < 0     ? SolClass::kUnknown
                             : std::max(sm, mem) < 60 ? SolClass::kLatency
                             : mem >= sm              ? SolClass::kMemory
                                                      : SolClass::kCompute;
  switch (sol_class) {
    case SolClass::kMemory:
      page.bound = "memory";
      sol.rows.push_back({"Bound", "memory", "memory at " + FormatPct(mem) +
                                                 " of peak (>= 60%) and above compute: move fewer "
                                                 "bytes (fuse, lower precision, reuse in cache)"});
      break;
    case SolClass::kCompute:
      page.bound = "compute";
      sol.rows.push_back({"Bound", "compute", "SM at " + FormatPct(sm) +
                                                  " of peak (>= 60%) and above memory: fewer or "
                                                  "cheaper instructions (tensor cores, lower precision)"});
      break;
    case SolClass::kLatency:
      page.bound = "latency";
      sol.rows.push_back({"Bound", "latency",
                          "neither compute nor memory reaches 60% of peak: too few warps, "
                          "dependent instructions or a small grid keep the units waiting"});
      break;
    case SolClass::kUnknown:
      break;
  }
  page.sections.push_back(std::move(sol));

  // Memory workload.
  KernelPageSection memw{"Memory workload", {}};
  const double dram_bytes = pv.Metric(kDramBytes);
  memw.rows.push_back(MetricRow(pv, "DRAM bytes", kDramBytes, FormatBytes(dram_bytes), ""));
  if (dram_bytes >= 0 && dur > 0) {
    const double gbps = dram_bytes / dur;  // bytes per ns = GB/s
    std::string note;
    if (v.device != nullptr && v.device->memory_bandwidth_gbps > 0) {
      note = FormatPct(100.0 * gbps / v.device->memory_bandwidth_gbps) + " of the device's " +
             Num(v.device->memory_bandwidth_gbps, "%.0f") + " GB/s";
    }
    if (pv.Find(kDramBytes)->kernel_replay) {
      note += std::string(note.empty() ? "" : "; ") + "replayed bytes over the in-place duration";
    }
    memw.rows.push_back({"DRAM bandwidth", Num(gbps, "%.1f") + " GB/s", note});
  }
  // Sectors per request; no request at all (loads through TMA or none) is
  // said as such, not as a missing metric.
  auto per_request = [&](const char* label, const char* sectors, const char* requests,
                         const char* ideal) {
    const double r = pv.Metric(requests);
    if (pv.Has(sectors) && pv.Has(requests) && r == 0) {
      memw.rows.push_back({label, "-", "no LSU requests (TMA or no global access)"});
      return;
    }
    memw.rows.push_back(
        MetricRow(pv, label, sectors, Num(Ratio(pv.Metric(sectors), r), "%.2f"), ideal));
  };
  per_request("Global load sectors per request", kLoadSectors, kLoadRequests,
              "4 for 32 consecutive 4-byte loads; up to 32 when uncoalesced");
  per_request("Global store sectors per request", kStoreSectors, kStoreRequests,
              "4 for 32 consecutive 4-byte stores");
  const double conflicts = pv.Metric(kBankConflicts);
  const double wavefronts = pv.Metric(kSharedWavefronts);
  memw.rows.push_back(MetricRow(pv, "Shared-memory bank conflicts", kBankConflicts, CountText(conflicts),
                                wavefronts > 0 ? FormatPct(100.0 * Ratio(conflicts, wavefronts)) +
                                                     " of shared-memory wavefronts"
                                               : ""));
  page.sections.push_back(std::move(memw));

  // Compute workload.
  KernelPageSection comp{"Compute workload", {}};
  comp.rows.push_back(MetricRow(pv, "Issue slots busy", kIssueActive, PctOrNa(pv.Metric(kIssueActive)),
                                "cycles a scheduler issued an instruction"));
  const double inst = pv.Metric(kInstExecuted);
  const double cycles = pv.Metric(kCyclesElapsed);
  const uint32_t sms = v.device != nullptr ? v.device->sm_count : 0;
  comp.rows.push_back(MetricRow(pv, "Warp instructions executed", kInstExecuted, CountText(inst), ""));
  if (inst >= 0 && cycles > 0 && sms > 0) {
    comp.rows.push_back({"Executed IPC (elapsed)", Num(inst / (cycles * sms), "%.2f"),
                         "warp instructions per cycle per SM (4 at most)"});
  }
  const double tpi = pv.Metric(kThreadsPerInst);
  comp.rows.push_back(MetricRow(pv, "Threads per instruction", kThreadsPerInst, Num(tpi, "%.1f"),
                                tpi >= 0 && tpi < 24 ? "of 32: divergent branches or partial warps"
                                                     : "of 32"));
  comp.rows.push_back(MetricRow(pv, "Tensor pipe (HMMA) active", kTensorActive,
                                PctOrNa(pv.Metric(kTensorActive)), ""));
  if (pv.Has(kAnyTensorActive)) {
    comp.rows.push_back({"Any tensor pipe active", PctOrNa(pv.Metric(kAnyTensorActive)), ""});
  }
  if (pv.Has(kGmmaInst)) {
    comp.rows.push_back({"Warpgroup MMA instructions", CountText(pv.Metric(kGmmaInst)), "Hopper wgmma"});
  }
  page.sections.push_back(std::move(comp));

  // Occupancy.
  KernelPageSection occ{"Occupancy", {}};
  if (v.has_occupancy) {
    occ.rows.push_back({"Theoretical occupancy", FormatPct(v.occupancy.theoretical_occupancy_pct),
                        "limited by " + std::string(OccupancyLimiterName(v.occupancy.limiter))});
    occ.rows.push_back({"Blocks per SM", std::to_string(v.occupancy.active_blocks_per_sm),
                        "registers " + std::to_string(v.occupancy.block_limit_registers) +
                            ", shared memory " + std::to_string(v.occupancy.block_limit_shared_memory) +
                            ", warps " + std::to_string(v.occupancy.block_limit_warps) + ", blocks " +
                            std::to_string(v.occupancy.block_limit_blocks)});
  } else {
    occ.rows.push_back({"Theoretical occupancy", "n/a", "the trace lacks the device's limits"});
  }
  const double achieved = pv.Metric(kAchievedOccupancy);
  std::string achieved_note;
  if (achieved >= 0 && v.has_occupancy && v.occupancy.theoretical_occupancy_pct > 0) {
    achieved_note = FormatPct(100.0 * achieved / v.occupancy.theoretical_occupancy_pct) +
                    " of theoretical";
  }
  occ.rows.push_back(MetricRow(pv, "Achieved occupancy", kAchievedOccupancy, PctOrNa(achieved),
                               achieved_note));
  page.sections.push_back(std::move(occ));

  // Launch statistics.
  KernelPageSection launch{"Launch statistics", {}};
  launch.rows.push_back({"Grid", Dim3(c.grid_x, c.grid_y, c.grid_z),
                         std::to_string(c.blocks()) + " blocks"});
  launch.rows.push_back({"Block", Dim3(c.block_x, c.block_y, c.block_z),
                         std::to_string(c.threads_per_block()) + " threads"});
  launch.rows.push_back({"Registers per thread", std::to_string(c.registers_per_thread), ""});
  launch.rows.push_back({"Shared memory per block",
                         FormatBytes(double(c.static_shared_bytes) + c.dynamic_shared_bytes),
                         "static " + FormatBytes(c.static_shared_bytes) + ", dynamic " +
                             FormatBytes(c.dynamic_shared_bytes)});
  if (v.has_occupancy && v.occupancy.active_blocks_per_sm > 0 && sms > 0) {
    const double waves = double(c.blocks()) / (double(v.occupancy.active_blocks_per_sm) * sms);
    launch.rows.push_back({"Waves per SM", Num(waves, "%.2f"),
                           waves < 1 ? "under one wave: some of the " + std::to_string(sms) +
                                           " SMs get no block"
                                     : "over " + std::to_string(sms) + " SMs"});
  }
  if (k.configs.size() > 1) {
    launch.rows.push_back({"Configurations", std::to_string(k.configs.size()),
                           pv.per_config ? "this page shows the most frequent one, its metrics too"
                                         : "this page shows the most frequent one; metrics are "
                                           "means over all measured configurations"});
  }
  page.sections.push_back(std::move(launch));

  // Run.
  KernelPageSection run{"In this run", {}};
  run.rows.push_back({"Launches", std::to_string(k.count),
                      k.replayed_count > 0 ? std::to_string(k.replayed_count) +
                                                 " more measured for metrics and not timed (replayed, or run untraced in a pass)"
                                           : ""});
  run.rows.push_back({"Total time", FormatNs(double(k.total_ns)), FormatPct(k.share_pct) + " of kernel time"});
  run.rows.push_back({"Mean (traced)", FormatNs(k.mean_ns),
                      "min " + FormatNs(double(k.min_ns)) + ", max " + FormatNs(double(k.max_ns))});
  for (const KernelRow& row : report.kernels) {
    if (row.name != k.name_text) continue;
    if (!row.python_site.empty()) run.rows.push_back({"Python call site", row.python_site, ""});
    if (!row.op.empty()) run.rows.push_back({"PyTorch op", row.op, ""});
    break;
  }
  page.sections.push_back(std::move(run));

  for (const Finding& f : report.findings) {
    bool names = false;
    for (const Offender& o : f.offenders) names = names || o.name == k.name_text;
    for (const EvidenceItem& e : f.evidence) {
      names = names || (e.key == "kernel" && e.text == k.name_text);
    }
    if (!names) continue;
    char saving[64];
    std::snprintf(saving, sizeof(saving), " (saves ~%s, %.1f%%)", FormatNs(double(f.est_saving_ns)).c_str(),
                  f.est_saving_pct);
    page.findings.push_back(f.rule + ": " + f.title + saving);
  }
  (void)model;
  return page;
}

}  // namespace

namespace {

// POSIX extended regex, as the collector's kernel filter
// (SIGHTLINE_METRICS_KERNELS): one dialect for kernel names everywhere.
class KernelPattern {
 public:
  ~KernelPattern() {
    if (compiled_) regfree(&re_);
  }
  absl::Status Compile(std::string_view pattern) {
    const std::string p(pattern);
    const int rc = regcomp(&re_, p.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char buf[256];
      regerror(rc, &re_, buf, sizeof(buf));
      return absl::InvalidArgumentError("invalid --kernel pattern '" + p + "': " + buf);
    }
    compiled_ = true;
    return absl::OkStatus();
  }
  bool Matches(const std::string& s) const {
    return compiled_ && regexec(&re_, s.c_str(), 0, nullptr, 0) == 0;
  }

 private:
  regex_t re_{};
  bool compiled_ = false;
};

}  // namespace

absl::Status CheckKernelPattern(std::string_view pattern) {
  KernelPattern p;
  return p.Compile(pattern);
}

absl::StatusOr<std::vector<KernelPage>> BuildKernelPages(const TimelineModel& model,
                                                         const Report& report,
                                                         std::string_view pattern, size_t limit) {
  KernelPattern re;
  const bool any = pattern.empty();
  if (!any) {
    if (absl::Status s = re.Compile(pattern); !s.ok()) return s;
  }
  std::vector<KernelPage> pages;
  for (const KernelView& v : KernelViews(model)) {
    if (limit > 0 && pages.size() >= limit) break;
    if (!any) {
      const std::string& raw = v.name();
      if (!re.Matches(raw) && !re.Matches(DemangledKernelName(raw)) &&
          !re.Matches(ShortKernelName(raw))) {
        continue;
      }
    }
    pages.push_back(PageFor(model, report, v));
  }
  return pages;
}

}  // namespace sightline::analysis
