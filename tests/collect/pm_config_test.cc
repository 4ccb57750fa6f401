// PM-sampling metric choice for GA100 (A100) and GH100 (H100/H200) offline
// (lib/collect/pm_config.h: libcupti's profiler host API and libnvperf_host,
// no GPU): every quantity gets one of its candidate names and all of them
// fit one pass. On the H200 the collector chose the same names (with the
// device's availability image NVLink was refused there: no NVLink peers).
#include "lib/collect/pm_config.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/trace/pm_quantities.h"

namespace sightline::collect {
namespace {

std::vector<std::string> Names(const PmMetricChoice& c) {
  return std::vector<std::string>(c.metrics.begin(), c.metrics.end());
}

class PmConfigTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PmConfigTest, EveryQuantityInOnePass) {
  HostObject host;
  PmMetricChoice c;
  const std::string error = ChoosePmMetrics(GetParam(), {}, nullptr, &host, &c);
  if (error.find("cuptiProfilerHostInitialize") != std::string::npos) {
    GTEST_SKIP() << "no profiler host for " << GetParam() << ": " << error;
  }
  ASSERT_EQ(error, "");
  EXPECT_TRUE(c.missing.empty()) << c.missing.front();
  ASSERT_EQ(c.metrics.size(), kNumPmQuantities);
  EXPECT_FALSE(c.config.empty());
  EXPECT_NE(host.get(), nullptr);  // configured: evaluates samples
  // Each quantity's name is one of its candidates, in PmQuantity order.
  for (size_t q = 0; q < kNumPmQuantities; ++q) {
    PmQuantity got;
    ASSERT_TRUE(PmQuantityForMetric(c.metrics[q], &got)) << c.metrics[q];
    EXPECT_EQ(static_cast<size_t>(got), q) << c.metrics[q];
  }
}

TEST_P(PmConfigTest, TheNamesSampledOnTheH200) {
  HostObject host;
  PmMetricChoice c;
  const std::string error = ChoosePmMetrics(GetParam(), {}, nullptr, &host, &c);
  if (!error.empty()) GTEST_SKIP() << error;
  const std::vector<std::string> want = {
      "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
      "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
      "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
      "dram__read_throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__write_throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__bytes_read.sum.per_second",
      "dram__bytes_write.sum.per_second",
      "pcie__read_bytes.sum.per_second",
      "pcie__write_bytes.sum.per_second",
      "nvlrx__bytes.sum.per_second",
      "nvltx__bytes.sum.per_second",
      "gpc__cycles_elapsed.avg.per_second"};
  EXPECT_EQ(Names(c), want);
}

TEST(PmConfig, AFilterAndAnUnknownChip) {
  HostObject host;
  PmMetricChoice c;
  auto only_sm = [](const char* key) { return std::string(key) == "sm_active"; };
  ASSERT_EQ(ChoosePmMetrics("GH100", {}, only_sm, &host, &c), "");
  ASSERT_EQ(c.metrics.size(), 1u);
  EXPECT_TRUE(c.missing.empty());  // filtered out is not missing
  HostObject other;
  EXPECT_NE(ChoosePmMetrics("NOT_A_CHIP", {}, nullptr, &other, &c), "");
}

INSTANTIATE_TEST_SUITE_P(Chips, PmConfigTest, ::testing::Values("GA100", "GH100"));

}  // namespace
}  // namespace sightline::collect
