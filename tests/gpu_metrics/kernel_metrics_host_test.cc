// tests/gpu_metrics/kernel_metrics_host_test.cc — runs without a GPU:
//  * metric-set resolution and its errors (lib/collect/metric_sets.h);
//  * the chip tables against CUPTI 13's own metric database for GA100 and
//    GH100 (cuptiProfilerHost* accepts a chip name without a device), and the
//    number of replay passes each named set needs on each chip;
//  * kernel selection for replay (first K per configuration, every Nth,
//    name regex on mangled or demangled names, NCCL exclusion, budget).
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/collect/metric_sets.h"
#include "lib/collect/cupti_params.h"
#include "lib/collect/range_profiler.h"
#include "lib/collect/range_profiler_sequence.h"

namespace sightline::collect {
namespace {

class CuptiHost {
 public:
  explicit CuptiHost(const char* chip) {
    auto p = MakeParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip;
    if (cuptiProfilerHostInitialize(&p) == CUPTI_SUCCESS) host_ = p.pHostObject;
  }
  ~CuptiHost() {
    if (host_ == nullptr) return;
    auto p = MakeParams<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    p.pHostObject = host_;
    cuptiProfilerHostDeinitialize(&p);
  }
  bool ok() const { return host_ != nullptr; }
  bool Exists(const std::string& metric) {
    auto p = MakeParams<CUpti_Profiler_Host_GetMetricProperties_Params>(
        CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
    p.pHostObject = host_;
    p.pMetricName = metric.c_str();
    return cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
  }
  // Passes for the metrics (a fresh host object: AddMetrics accumulates).
  static size_t Passes(const char* chip, const std::vector<std::string>& metrics) {
    CuptiHost h(chip);
    if (!h.ok()) return 0;
    std::vector<const char*> names;
    for (const auto& m : metrics) names.push_back(m.c_str());
    auto a = MakeParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    a.pHostObject = h.host_;
    a.ppMetricNames = names.data();
    a.numMetrics = names.size();
    if (cuptiProfilerHostConfigAddMetrics(&a) != CUPTI_SUCCESS) return 0;
    auto s = MakeParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    s.pHostObject = h.host_;
    if (cuptiProfilerHostGetConfigImageSize(&s) != CUPTI_SUCCESS) return 0;
    std::vector<uint8_t> image(s.configImageSize);
    auto g = MakeParams<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    g.pHostObject = h.host_;
    g.configImageSize = image.size();
    g.pConfigImage = image.data();
    if (cuptiProfilerHostGetConfigImage(&g) != CUPTI_SUCCESS) return 0;
    auto n = MakeParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    n.configImageSize = image.size();
    n.pConfigImage = image.data();
    if (cuptiProfilerHostGetNumOfPasses(&n) != CUPTI_SUCCESS) return 0;
    return n.numOfPasses;
  }

 private:
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

TEST(MetricSets, NamedSetsResolvePerChip) {
  for (const char* chip : {"GA100", "GH100"}) {
    MetricSelection occupancy, memory, compute, full;
    std::string error;
    ASSERT_TRUE(ResolveMetricSelection("occupancy", chip, &occupancy, &error)) << error;
    ASSERT_TRUE(ResolveMetricSelection("memory", chip, &memory, &error)) << error;
    ASSERT_TRUE(ResolveMetricSelection("compute", chip, &compute, &error)) << error;
    ASSERT_TRUE(ResolveMetricSelection("full", chip, &full, &error)) << error;
    EXPECT_EQ(occupancy.metrics.front(), "gpu__time_duration.sum");
    // full is the union without duplicates.
    EXPECT_EQ(full.metrics.size(), occupancy.metrics.size() + memory.metrics.size() +
                                       compute.metrics.size() - 2);
    EXPECT_TRUE(full.unchecked.empty());
  }
  MetricSelection ga, gh;
  std::string error;
  ASSERT_TRUE(ResolveMetricSelection("compute", "GA100", &ga, &error));
  ASSERT_TRUE(ResolveMetricSelection("compute", "GH100", &gh, &error));
  EXPECT_EQ(gh.metrics.size(), ga.metrics.size() + 1);  // HGMMA counter exists on Hopper only
}

TEST(MetricSets, ExplicitListsAndErrors) {
  MetricSelection s;
  std::string error;
  ASSERT_TRUE(ResolveMetricSelection(" memory , sm__cycles_active.max,dram__bytes.sum ", "GH100", &s, &error));
  EXPECT_NE(std::find(s.metrics.begin(), s.metrics.end(), "dram__bytes.sum"), s.metrics.end());
  EXPECT_TRUE(s.unchecked.empty());

  ASSERT_TRUE(ResolveMetricSelection("lts__t_sectors.sum", "GA100", &s, &error));
  EXPECT_EQ(s.unchecked, std::vector<std::string>{"lts__t_sectors.sum"});

  EXPECT_FALSE(ResolveMetricSelection("full", "TU102", &s, &error));
  EXPECT_EQ(error, "metrics: no metric table for chip 'TU102' (supported: GA100, GH100)");
  EXPECT_FALSE(ResolveMetricSelection("sm__inst_executed_pipe_tensor_op_gmma.sum", "GA100", &s, &error));
  EXPECT_EQ(error, "metrics: metric 'sm__inst_executed_pipe_tensor_op_gmma.sum' does not exist on GA100");
  EXPECT_FALSE(ResolveMetricSelection("fulll", "GH100", &s, &error));
  EXPECT_NE(error.find("'fulll' is neither a metric set"), std::string::npos) << error;
  EXPECT_FALSE(ResolveMetricSelection("  ", "GH100", &s, &error));
  EXPECT_NE(error.find("empty metric spec"), std::string::npos);
  EXPECT_FALSE(ResolveMetricSelection(",,", "GH100", &s, &error));
  EXPECT_NE(error.find("names no metric"), std::string::npos);
  EXPECT_FALSE(IsWellFormedMetricName("SM__Throughput"));
  EXPECT_FALSE(IsWellFormedMetricName("throughput"));
  EXPECT_TRUE(IsWellFormedMetricName("sm__throughput.avg.pct_of_peak_sustained_elapsed"));
}

TEST(MetricSets, TableAgreesWithCuptiMetricDatabase) {
  for (const std::string& chip : SupportedChips()) {
    CuptiHost host(chip.c_str());
    ASSERT_TRUE(host.ok()) << "CUPTI host API does not know " << chip;
    const uint32_t bit = ChipBitOf(chip);
    for (const MetricDefinition& def : MetricTable()) {
      EXPECT_EQ(host.Exists(def.name), (def.chips & bit) != 0) << def.name << " on " << chip;
    }
    EXPECT_FALSE(host.Exists("sm__no_such_metric.sum"));
  }
}

TEST(MetricSets, PassesPerSetPerChip) {
  for (const std::string& chip : SupportedChips()) {
    size_t full_passes = 0, max_part = 0;
    for (const std::string& set : MetricSetNames()) {
      MetricSelection s;
      std::string error;
      ASSERT_TRUE(ResolveMetricSelection(set, chip, &s, &error)) << error;
      const size_t passes = CuptiHost::Passes(chip.c_str(), s.metrics);
      std::printf("%s %-9s %2zu metrics %2zu passes\n", chip.c_str(), set.c_str(), s.metrics.size(), passes);
      EXPECT_GT(passes, 0u) << set << " on " << chip;
      if (set == "full") full_passes = passes;
      else max_part = std::max(max_part, passes);
    }
    EXPECT_GE(full_passes, max_part);
  }
}

// --metrics-replay-top replays the dram__ metrics of the set and the
// duration (ReplayMetrics), so a replay is one pass: with more, CUPTI restores the
// kernel's memory between passes and the DRAM bytes no longer describe the
// L2 state the application left (bench/metrics/README.md, run CA).
TEST(MetricSets, TopReplayMetricsFitOnePass) {
  for (const std::string& chip : SupportedChips()) {
    for (const std::string& set : MetricSetNames()) {
      MetricSelection s;
      std::string error;
      ASSERT_TRUE(ResolveMetricSelection(set, chip, &s, &error)) << error;
      std::vector<std::string> replay = ReplayMetrics(s.metrics);
      if (replay.empty()) {
        bool dram = false;
        for (const std::string& m : s.metrics) dram = dram || m.rfind("dram__", 0) == 0;
        if (!dram) continue;  // nothing to replay
        replay = s.metrics;   // DRAM-only already
      }
      const size_t passes = CuptiHost::Passes(chip.c_str(), replay);
      std::printf("%s %-9s top replay: %zu metrics, %zu pass(es)\n", chip.c_str(), set.c_str(),
                  replay.size(), passes);
      EXPECT_EQ(passes, 1u) << set << " on " << chip;
    }
  }
}

TEST(KernelSelector, FirstKPerConfigurationAndEveryNth) {
  KernelSelector sel;
  std::string error;
  KernelSelectorOptions o;
  o.launches_per_kernel = 2;
  o.every_nth = 3;
  ASSERT_TRUE(sel.Init(o, &error)) << error;
  std::vector<int> profiled;
  for (int i = 0; i < 12; ++i) {
    if (sel.Decide("gemm", 64, 1, 1, 256, 1, 1) == SelectDecision::kProfile) profiled.push_back(i);
  }
  EXPECT_EQ(profiled, (std::vector<int>{0, 3}));  // every 3rd, at most 2
  // A different grid is a different configuration with its own quota.
  EXPECT_EQ(sel.Decide("gemm", 128, 1, 1, 256, 1, 1), SelectDecision::kProfile);
  EXPECT_EQ(sel.Decide("gemm", 128, 1, 1, 256, 1, 1), SelectDecision::kSkipNth);
  EXPECT_EQ(sel.profiled(), 3u);
  EXPECT_EQ(sel.skipped(SelectDecision::kSkipQuota), 2u);  // launches 6 and 9
}

TEST(KernelSelector, RegexNcclAndBudget) {
  KernelSelector sel;
  std::string error;
  KernelSelectorOptions o;
  o.name_regex = "^matmul_(naive|tiled)";
  o.max_ranges = 2;
  ASSERT_TRUE(sel.Init(o, &error)) << error;
  // Mangled name matches through its demangled form.
  EXPECT_EQ(sel.Decide("_Z12matmul_naivePKfS0_Pfi", 1, 1, 1, 32, 1, 1), SelectDecision::kProfile);
  EXPECT_EQ(sel.Decide("transpose", 1, 1, 1, 32, 1, 1), SelectDecision::kSkipName);
  EXPECT_EQ(sel.Decide("ncclDevKernel_AllReduce_Sum_f32", 1, 1, 1, 32, 1, 1), SelectDecision::kSkipNccl);
  EXPECT_EQ(sel.Decide("matmul_tiled", 2, 1, 1, 32, 1, 1), SelectDecision::kProfile);
  EXPECT_EQ(sel.Decide("matmul_tiled", 3, 1, 1, 32, 1, 1), SelectDecision::kSkipBudget);

  KernelSelector bad;
  o.name_regex = "matmul(";
  EXPECT_FALSE(bad.Init(o, &error));
  EXPECT_NE(error.find("bad kernel-name regex 'matmul('"), std::string::npos) << error;

  KernelSelector with_nccl;
  KernelSelectorOptions keep;
  keep.exclude_nccl = false;
  ASSERT_TRUE(with_nccl.Init(keep, &error));
  EXPECT_EQ(with_nccl.Decide("ncclKernel_x", 1, 1, 1, 32, 1, 1), SelectDecision::kProfile);
}

TEST(KernelSelector, OptionsComeFromTheConfigOnly) {
  // SIGHTLINE_METRICS_LAUNCHES / _EVERY are CollectorConfig fields now
  // (tests/collect/config_test.cc); the hook no longer reads them itself.
  setenv("SIGHTLINE_METRICS_LAUNCHES", "5", 1);
  setenv("SIGHTLINE_METRICS_EVERY", "10", 1);
  KernelLaunchHookConfig c;
  KernelSelectorOptions o = SelectorOptionsFromConfig(c);
  EXPECT_EQ(o.launches_per_kernel, 0u);
  EXPECT_EQ(o.every_nth, 1u);
  c.launches_per_kernel = 1;
  c.every_nth = 2;
  o = SelectorOptionsFromConfig(c);
  EXPECT_EQ(o.launches_per_kernel, 1u);
  EXPECT_EQ(o.every_nth, 2u);
  unsetenv("SIGHTLINE_METRICS_LAUNCHES");
  unsetenv("SIGHTLINE_METRICS_EVERY");
}

TEST(KernelSelector, DynamicSharedMemoryIsPartOfTheKey) {
  KernelSelector s;
  KernelSelectorOptions o;
  o.launches_per_kernel = 1;
  std::string error;
  ASSERT_TRUE(s.Init(o, &error));
  EXPECT_EQ(s.Decide("k", 1, 1, 1, 32, 1, 1, 0), SelectDecision::kProfile);
  EXPECT_EQ(s.Decide("k", 1, 1, 1, 32, 1, 1, 0), SelectDecision::kSkipQuota);
  EXPECT_EQ(s.Decide("k", 1, 1, 1, 32, 1, 1, 4096), SelectDecision::kProfile);
}

TEST(KernelSelector, Demangle) {
  EXPECT_EQ(DemangleKernelName("_Z12matmul_naivePKfS0_Pfi"), "matmul_naive(float const*, float const*, float*, int)");
  EXPECT_EQ(DemangleKernelName("plain_c_kernel"), "plain_c_kernel");
}

}  // namespace
}  // namespace sightline::collect
