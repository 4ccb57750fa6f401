// Rule registry, parameters, ranking and the Analyze entry points.
#include <set>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/api_names.h"
#include "lib/analysis/rule.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::ms;
using testing::TraceBuilder;
using testing::us;

TEST(RegistryTest, EverySystemRuleIsRegisteredOnceWithItsFileName) {
  std::set<std::string> ids;
  for (const RuleInfo& r : Rules()) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_NE(r.run, nullptr) << r.id;
    EXPECT_FALSE(r.description.empty()) << r.id;
    std::set<std::string> keys;
    for (const RuleParam& p : r.params) {
      EXPECT_TRUE(keys.insert(p.key).second) << r.id << "." << p.key;
      EXPECT_FALSE(p.help.empty()) << r.id << "." << p.key;
    }
  }
  // The timeline rules (skipped on metrics traces) are exactly these; the
  // ranking's special roles are traits too, not names in analyze.cc.
  std::set<std::string> timeline;
  for (const RuleInfo& r : Rules()) {
    if ((r.traits & kRuleTimeline) != 0) timeline.insert(r.id);
  }
  EXPECT_EQ(timeline, (std::set<std::string>{"gpu_idle", "gpu_low_utilization", "cpu_bound",
                                             "kernel_fragmentation", "sync_api", "sync_memcpy",
                                             "pageable_memcpy", "stream_serialization",
                                             "copy_compute_overlap", "comm_compute_overlap",
                                             "nccl_straggler", "launch_latency", "launch_bound",
                                             "allocation_churn"}));
  // Memory rules judge bytes, not timing: they run on metrics traces too.
  EXPECT_EQ(FindRule("memory_growth")->traits & kRuleTimeline, 0u);
  EXPECT_EQ(FindRule("memory_peak")->traits & kRuleTimeline, 0u);
  EXPECT_NE(FindRule("memory_growth")->traits & kRuleCapacity, 0u);
  EXPECT_NE(FindRule("memory_peak")->traits & kRuleCapacity, 0u);
  auto traits = [](const char* id) { return FindRule(id) != nullptr ? FindRule(id)->traits : 0u; };
  EXPECT_NE(traits("gpu_idle") & kRuleOverview, 0u);
  EXPECT_NE(traits("gpu_low_utilization") & kRuleOverview, 0u);
  EXPECT_NE(traits("stream_serialization") & kRuleScheduling, 0u);
  EXPECT_NE(traits("small_grid") & kRuleIdleSmKernel, 0u);
  EXPECT_EQ(traits("small_grid") & kRuleTimeline, 0u);
  EXPECT_EQ(traits("uncoalesced_global"), static_cast<uint32_t>(kRuleKernel));
  EXPECT_TRUE(std::is_sorted(Rules().begin(), Rules().end(),
                             [](const RuleInfo& a, const RuleInfo& b) { return a.id < b.id; }));
}

TEST(ApiNamesTest, ClassifiesCuptiNamesWithVersionSuffixes) {
  EXPECT_EQ(StripApiVersionSuffix("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(StripApiVersionSuffix("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
  EXPECT_EQ(StripApiVersionSuffix("cudaMemcpyAsync_ptsz"), "cudaMemcpyAsync");
  EXPECT_EQ(StripApiVersionSuffix("cudaStreamSynchronize_v3020"), "cudaStreamSynchronize");
  EXPECT_EQ(StripApiVersionSuffix("cuda_v"), "cuda_v");
  EXPECT_TRUE(IsLaunchApi("cudaLaunchKernel_v7000"));
  EXPECT_TRUE(IsLaunchApi("cuLaunchKernelEx"));
  EXPECT_TRUE(IsLaunchApi("cudaGraphLaunch_v10000"));
  EXPECT_TRUE(IsGraphLaunchApi("cudaGraphLaunch_v10000"));
  EXPECT_TRUE(IsAllocatingApi("cudaMalloc_v3020"));
  EXPECT_TRUE(IsAllocatingApi("cuMemAlloc_v2"));
  EXPECT_TRUE(IsAllocatingApi("cudaHostAlloc_v3020"));
  EXPECT_FALSE(IsAllocatingApi("cudaMallocAsync_v11020"));  // stream-ordered: cheap
  EXPECT_TRUE(IsReleasingApi("cudaFree_v3020"));
  EXPECT_TRUE(IsReleasingApi("cuMemFree_v2"));
  EXPECT_FALSE(IsReleasingApi("cudaFreeAsync_v11020"));
  EXPECT_NE(ApiFlagsForName("cudaFree_v3020") & kApiAlloc, 0);
  EXPECT_EQ(ApiFlagsForName("cudaLaunchKernel_v7000") & kApiAlloc, 0);
  EXPECT_FALSE(IsLaunchApi("cudaMalloc_v3020"));
  EXPECT_TRUE(IsSyncApi("cudaStreamSynchronize_v3020"));
  EXPECT_TRUE(IsSyncApi("cuCtxSynchronize"));
  EXPECT_FALSE(IsSyncApi("cudaStreamWaitEvent_v3020"));
  EXPECT_TRUE(IsSyncMemcpyApi("cudaMemcpy_v3020"));
  EXPECT_TRUE(IsSyncMemcpyApi("cuMemcpyDtoH_v2"));
  EXPECT_TRUE(IsSyncMemcpyApi("cudaMemset_v3020"));
  EXPECT_FALSE(IsSyncMemcpyApi("cudaMemcpyAsync_v3020"));
  EXPECT_FALSE(IsSyncMemcpyApi("cudaMalloc"));
  EXPECT_TRUE(IsMemcpyApi("cudaMemcpyAsync_v3020"));
}

TEST(RegistryTest, ParametersParseWithUnitsAndRejectUnknownKeys) {
  AnalysisOptions o;
  EXPECT_TRUE(o.SetFromString("gpu_idle.min_gap_ns=2ms").ok());
  EXPECT_DOUBLE_EQ(o.params["gpu_idle.min_gap_ns"], 2e6);
  EXPECT_TRUE(o.SetFromString(" kernel_fragmentation.short_kernel_ns = 20us ").ok());
  EXPECT_DOUBLE_EQ(o.params["kernel_fragmentation.short_kernel_ns"], 20e3);
  EXPECT_TRUE(o.SetFromString("gpu_idle.min_idle_pct=2.5%").ok());
  EXPECT_DOUBLE_EQ(o.params["gpu_idle.min_idle_pct"], 2.5);
  EXPECT_TRUE(o.SetFromString("min_saving_pct=3").ok());
  EXPECT_TRUE(o.SetFromString("kernel_wait_ns=1.5s").ok());
  EXPECT_DOUBLE_EQ(o.params["kernel_wait_ns"], 1.5e9);
  for (const char* bad : {"gpu_idle.nope=1", "nope.min_gap_ns=1", "gpu_idle.min_gap_ns=abc",
                          "gpu_idle.min_gap_ns=", "=3", "novalue", "unknown_global=1",
                          "gpu_idle.min_idle_pct=5ms"}) {
    absl::Status s = o.SetFromString(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// A trace where several rules fire with different savings.
SyntheticTrace Mixed() {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    uint64_t start = ms(1) + i * ms(2);
    b.Kernel("k", start, start + ms(1));
    b.Memcpy(CopyKind::kHtoD, MemoryKind::kPageable, 1'000'000, start + ms(1),
             start + ms(1) + us(200), 9, "cudaMemcpyAsync", start, start + us(5), true);
  }
  return b.trace();
}

TEST(RankingTest, FindingsAreRankedBySavingWithOverviewRulesLast) {
  Report r = AnalyzeModel(*testing::Build({Mixed()}, testing::BuildPath::kDirect), {});
  ASSERT_GE(r.findings.size(), 2u);
  auto key = [](const Finding& f) {
    bool overview = f.rule == "gpu_idle" || f.rule == "gpu_low_utilization";
    return double(f.est_saving_ns) * (overview ? kOverviewRankWeight : 1.0);
  };
  for (size_t i = 1; i < r.findings.size(); ++i) {
    EXPECT_GE(key(r.findings[i - 1]), key(r.findings[i])) << i;
  }
  for (const Finding& f : r.findings) {
    EXPECT_NEAR(f.est_saving_pct, 100.0 * double(f.est_saving_ns) / double(r.summary.window_ns),
                1e-9);
    EXPECT_FALSE(f.title.empty());
    EXPECT_FALSE(f.recommendation.empty());
  }
}

TEST(RankingTest, OnlyDisabledAndMinimumSaving) {
  TimelineModel m = *testing::Build({Mixed()}, testing::BuildPath::kDirect);
  AnalysisOptions only;
  only.only_rules = {"pageable_memcpy"};
  Report r = AnalyzeModel(m, only);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, "pageable_memcpy");

  AnalysisOptions disabled;
  disabled.disabled_rules = {"pageable_memcpy"};
  EXPECT_EQ(testing::FindFinding(AnalyzeModel(m, disabled), "pageable_memcpy"), nullptr);

  AnalysisOptions strict;
  strict.params["min_saving_pct"] = 99;
  EXPECT_TRUE(AnalyzeModel(m, strict).findings.empty());
}

TEST(AnalyzeTest, ErrorsNameTheFile) {
  auto r = Analyze(std::vector<std::string>{"/nonexistent/dir/x.sltrace"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("/nonexistent/dir/x.sltrace"),
            std::string::npos);
  AnalysisOptions bad;
  bad.only_rules = {"no_such_rule"};
  auto r2 = Analyze(std::vector<std::string>{"/nonexistent/dir/x.sltrace"}, bad);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Analyze(std::vector<std::string>{}, {}).ok());
}

TEST(AnalyzeTest, AnalyzesFilesWithProgress) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/analysis_progress.sltrace";
  std::string bytes = testing::EncodeTrace(Mixed(), 512);
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  AnalysisOptions o;
  int calls = 0;
  uint64_t last = 0;
  o.progress = [&](const ReadProgress& p) {
    ++calls;
    EXPECT_EQ(p.trace_count, 1u);
    EXPECT_GE(p.bytes_done, last);
    last = p.bytes_done;
    EXPECT_EQ(p.bytes_total, bytes.size());
  };
  auto r = Analyze(std::vector<std::string>{path}, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(calls, 1);
  EXPECT_EQ(last, bytes.size());
  EXPECT_EQ(r->schema, "sightline.report.v1");
  ASSERT_EQ(r->traces.size(), 1u);
  EXPECT_TRUE(r->traces[0].complete);
  EXPECT_EQ(r->traces[0].path, path);
  EXPECT_NE(testing::FindFinding(*r, "pageable_memcpy"), nullptr);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sightline::analysis
