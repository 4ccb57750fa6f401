// What changed between a baseline window and a later one
// (lib/analysis/baseline_compare.h), on hand-made reports.
#include "lib/analysis/baseline_compare.h"

#include <initializer_list>

#include <gtest/gtest.h>

namespace sightline::analysis {
namespace {

Report Window(uint64_t steps, uint64_t step_ns, double gpu_pct) {
  Report r;
  r.summary.steps.count = steps;
  r.summary.steps.p50_ns = step_ns;
  r.summary.steps.mean_gpu_utilization_pct = gpu_pct;
  r.summary.window_ns = steps * step_ns;
  return r;
}

ApiRow Api(const char* name, uint64_t count, uint64_t total_ns) {
  ApiRow a;
  a.name = name;
  a.count = count;
  a.total_ns = total_ns;
  return a;
}

// A finding of RULE saving PCT % whose offenders are NAMES, in order.
Finding MakeFinding(const char* rule, double pct, std::initializer_list<const char*> names = {}) {
  Finding f;
  f.rule = rule;
  f.est_saving_pct = pct;
  for (const char* name : names) {
    f.offenders.push_back(Offender{});
    f.offenders.back().name = name;
  }
  return f;
}

// The H200 monitor run's shape: a per-step sync appears, launches stay.
TEST(BaselineCompare, NamesTheCallThatAppearedAndTheNewFindings) {
  Report base = Window(10, 37'400'000, 98);
  base.apis = {Api("cudaLaunchKernel", 4500, 40'000'000)};
  Report now = Window(10, 47'500'000, 77);
  now.apis = {Api("cudaLaunchKernel", 4490, 41'700'000),
              Api("cudaDeviceSynchronize", 10, 56'000'000)};
  const Finding occupancy = MakeFinding("occupancy_limited", 2.2);
  base.findings = {occupancy};
  now.findings = {MakeFinding("cpu_bound", 18.7), MakeFinding("sync_api", 9.4), occupancy,
                  MakeFinding("small_grid", 0.5)};  // small_grid under 1 %: not news

  BaselineComparison c = CompareWithBaseline(base, now);
  ASSERT_TRUE(c.per_step);
  ASSERT_EQ(c.changes.size(), 1u) << "launches grew by 0.17 ms a step: under 2 % of 37.4 ms";
  EXPECT_EQ(c.changes[0].name, "cudaDeviceSynchronize");
  EXPECT_TRUE(c.changes[0].is_new);
  EXPECT_DOUBLE_EQ(c.changes[0].now_count, 1.0);
  EXPECT_DOUBLE_EQ(c.changes[0].now_ns, 5'600'000);
  ASSERT_EQ(c.new_findings.size(), 2u);
  EXPECT_EQ(c.new_findings[0]->rule, "cpu_bound");
  EXPECT_EQ(c.new_findings[1]->rule, "sync_api");

  // The finding that names the new call comes first, then the other new one.
  now.findings[1].offenders.push_back(Offender{});
  now.findings[1].offenders.back().name = "cudaDeviceSynchronize";
  c = CompareWithBaseline(base, now);
  std::vector<const Finding*> order = FindingsByChange(c, now);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0]->rule, "sync_api");
  EXPECT_EQ(order[1]->rule, "cpu_bound");
  EXPECT_EQ(order[2]->rule, "occupancy_limited");
  EXPECT_EQ(order[3]->rule, "small_grid");

  std::vector<std::string> lines = DescribeComparison(c);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "step 37.400 ms -> 47.500 ms (+27 %), GPU busy 98 -> 77 % of the step");
  EXPECT_EQ(lines[1], "new: CUDA call cudaDeviceSynchronize 1.0 calls and 5.600 ms per step");
  EXPECT_EQ(lines[2], "findings new since the baseline: cpu_bound (18.7 %), sync_api (9.4 %)");
}

// The H200 10-minute run's capture: the host got slower too, so cpu_bound
// is new as well and names the launch call, which grew by ~1.3 ms a step;
// the sync that appeared takes ~8 ms a step and comes first.
TEST(BaselineCompare, TheFindingNamingTheLargestGrowthComesFirst) {
  Report base = Window(10, 29'400'000, 89);
  base.apis = {Api("cudaLaunchKernel", 1050, 27'900'000)};
  Report now = Window(10, 66'800'000, 55);
  now.apis = {Api("cudaLaunchKernel", 1050, 40'700'000),
              Api("cudaDeviceSynchronize", 10, 79'500'000)};
  now.findings = {MakeFinding("cpu_bound", 32.6, {"cudaLaunchKernel"}),
                  MakeFinding("sync_api", 9.0, {"cudaDeviceSynchronize"})};
  BaselineComparison c = CompareWithBaseline(base, now);
  ASSERT_EQ(c.changes.size(), 2u);
  ASSERT_EQ(c.new_findings.size(), 2u);
  std::vector<const Finding*> order = FindingsByChange(c, now);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0]->rule, "sync_api");
  EXPECT_EQ(order[1]->rule, "cpu_bound");
  // Had the launches grown more (10 ms a step), cpu_bound would explain more.
  now.apis[0].total_ns = 27'900'000 + 100'000'000;
  c = CompareWithBaseline(base, now);
  order = FindingsByChange(c, now);
  EXPECT_EQ(order[0]->rule, "cpu_bound");

  // As the H200 traces have it: cpu_bound's offenders are where the host
  // time goes (the step range, host work outside calls, then the sync), so
  // it names the same growth as sync_api but is not about it.
  now.apis[0].total_ns = 40'700'000;
  now.findings[0] = MakeFinding("cpu_bound", 32.6,
                                {"train_step", "(CPU work outside NVTX ranges and CUDA calls)",
                                 "cudaDeviceSynchronize"});
  c = CompareWithBaseline(base, now);
  order = FindingsByChange(c, now);
  EXPECT_EQ(order[0]->rule, "sync_api");
  EXPECT_EQ(order[1]->rule, "cpu_bound");
}

TEST(BaselineCompare, GrownKernelsAndPerSecondWithoutSteps) {
  Report base = Window(0, 0, 0);
  base.summary.window_ns = 2'000'000'000;  // 2 s
  KernelRow k;
  k.name = "gemm";
  k.count = 200;
  k.total_ns = 400'000'000;  // 200 ms per second
  base.kernels = {k};
  Report now = Window(0, 0, 0);
  now.summary.window_ns = 1'000'000'000;
  k.count = 100;
  k.total_ns = 300'000'000;  // 300 ms per second: the same launches, 1.5x longer
  now.kernels = {k};
  BaselineComparison c = CompareWithBaseline(base, now);
  EXPECT_FALSE(c.per_step);
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_FALSE(c.changes[0].is_new);
  EXPECT_DOUBLE_EQ(c.changes[0].base_ns, 200'000'000);
  EXPECT_DOUBLE_EQ(c.changes[0].now_ns, 300'000'000);
  std::vector<std::string> lines = DescribeComparison(c);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "grown: kernel gemm 200.000 ms -> 300.000 ms per s (100 -> 100 launches)");
}

// A capture opens mid-step: 10 whole steps in a range of 10.5 median steps.
// Per step is over the range (10.5), not the whole steps (10), so the same
// work per step reads the same on both sides; and 2 % of a 100 ms step is
// the bar, over the 0.2 ms floor.
TEST(BaselineCompare, PartialStepsAtTheEdgesAndTheShareOfTheStep) {
  Report base = Window(10, 100'000'000, 90);
  base.summary.scope_start_ns = 0;
  base.summary.scope_end_ns = 1'000'000'000;  // exactly 10 steps
  base.apis = {Api("cudaLaunchKernel", 10'000, 50'000'000)};  // 5 ms a step
  Report now = Window(10, 100'000'000, 90);
  now.summary.scope_start_ns = 0;
  now.summary.scope_end_ns = 1'050'000'000;  // 10.5 steps' worth recorded
  now.apis = {Api("cudaLaunchKernel", 10'500, 52'500'000),
              Api("cudaMemsetAsync", 105, 10'500'000)};  // new, 1 ms a step: under 2 %
  BaselineComparison c = CompareWithBaseline(base, now);
  EXPECT_TRUE(c.changes.empty()) << c.changes.size() << " " << c.changes[0].name;
  now.apis.push_back(Api("cudaStreamSynchronize", 105, 315'000'000));  // 30 ms a step
  c = CompareWithBaseline(base, now);
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_EQ(c.changes[0].name, "cudaStreamSynchronize");
  EXPECT_NEAR(c.changes[0].now_ns, 30'000'000, 1);
  EXPECT_NEAR(c.changes[0].now_count, 10, 1e-9);
}

TEST(BaselineCompare, WithoutStepsTheBarIsAShareOfASecond) {
  Report base = Window(0, 0, 0);
  base.summary.window_ns = 1'000'000'000;
  base.apis = {Api("cudaLaunchKernel", 1000, 100'000'000)};
  Report now = base;
  now.apis = {Api("cudaLaunchKernel", 1000, 110'000'000)};  // +10 ms a second: under 2 %
  EXPECT_TRUE(CompareWithBaseline(base, now).changes.empty());
  now.apis = {Api("cudaLaunchKernel", 1000, 130'000'000)};  // +30 ms a second
  EXPECT_EQ(CompareWithBaseline(base, now).changes.size(), 1u);
}

TEST(BaselineCompare, NothingChangedSaysNothing) {
  Report base = Window(10, 20'000'000, 90);
  base.apis = {Api("cudaLaunchKernel", 1000, 10'000'000)};
  Report now = base;
  BaselineComparison c = CompareWithBaseline(base, now);
  EXPECT_TRUE(c.changes.empty());
  EXPECT_TRUE(c.new_findings.empty());
  ASSERT_EQ(DescribeComparison(c).size(), 1u);  // the step line only
}

}  // namespace
}  // namespace sightline::analysis
