// tests/kernel/gpu_metrics_trace_test.cc — golden test on PM sampling
// (`sightline profile --gpu-metrics`) recorded on the H200
// (tests/data/metrics/README.md):
//  * naive_matmul at 10 kHz: the samples line up with the trace's kernels
//    (the naive matmul's own samples read SM active ~100 %, DRAM read ~13 %
//    of peak; the window mean is lower by the copies and gaps around them);
//  * the eager transformer LM with --capture-range nvtx:train_step (skip 10,
//    5 windows) at the default 1 kHz: samples only inside the windows, one
//    row per steady-state step, the NVTX range's row, no sample missing.
#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/model.h"
#include "lib/export/report_render.h"

namespace sightline::analysis {
namespace {

std::string DataPath(const std::string& name) {
  const char* root = std::getenv("SIGHTLINE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/data/metrics/" + name;
}

const GpuMetricStat* Stat(const GpuMetricsDevice& d, const std::string& key) {
  for (const GpuMetricStat& s : d.stats) {
    if (s.key == key) return &s;
  }
  return nullptr;
}
double Value(const GpuMetricsDevice& d, const GpuMetricSpanRow& row, const std::string& key) {
  for (size_t j = 0; j < d.stats.size() && j < row.values.size(); ++j) {
    if (d.stats[j].key == key) return row.values[j];
  }
  return std::nan("");
}

TEST(GpuMetricsTrace, NaiveMatmulSamplesLineUpWithItsKernel) {
  absl::StatusOr<Report> r =
      Analyze({DataPath("matmul_gm_h200.sltrace")}, AnalysisOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->gpu_metrics.size(), 1u);
  const GpuMetricsDevice& d = r->gpu_metrics[0];
  EXPECT_EQ(d.device_name, "NVIDIA H200");
  EXPECT_EQ(d.interval_asked_ns, 100000u);
  EXPECT_NEAR(d.interval_ns, 100000, 100);
  EXPECT_EQ(d.samples_total, 1967u);
  EXPECT_EQ(d.samples_missing, 0u);
  EXPECT_EQ(d.samples_missing_in_window, 0u);
  EXPECT_NEAR(d.coverage_pct, 100, 0.1);
  EXPECT_EQ(d.stats.size(), 10u);  // NVLink is not sampled on this H200 (no NVLink peers)
  EXPECT_EQ(d.unavailable, (std::vector<std::string>{"nvlink_rx_bytes", "nvlink_tx_bytes"}));
  ASSERT_NE(Stat(d, "sm_active"), nullptr);
  EXPECT_NEAR(Stat(d, "sm_active")->mean, 88.1, 0.5);
  EXPECT_NEAR(Stat(d, "sm_active")->saturated_pct, 87.9, 0.5);
  EXPECT_NEAR(Stat(d, "gpc_clock")->mean, 1.979e9, 0.01e9);
  // The kernel lasts ~26 ms: resolved, its own samples.
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_TRUE(absl::StrContains(d.kernels[0].name, "MatmulNaive"));
  EXPECT_TRUE(d.kernels[0].resolved);
  EXPECT_EQ(d.kernels[0].instances, 6u);
  EXPECT_GT(Value(d, d.kernels[0], "sm_active"), 99.5);
  EXPECT_NEAR(Value(d, d.kernels[0], "dram_read"), 13.3, 0.3);
  EXPECT_LT(Value(d, d.kernels[0], "tensor_active"), 0.1);  // FP32 FMA, no tensor cores
  const std::string text = exporter::RenderReportText(*r);
  EXPECT_TRUE(absl::StrContains(text, "GPU metrics (PM sampling) of device 0 (NVIDIA H200)"))
      << text;
  EXPECT_TRUE(absl::StrContains(text, "MatmulNaive")) << text;
}

TEST(GpuMetricsTrace, CaptureWindowsOfTheTransformerSteps) {
  absl::StatusOr<Report> r =
      Analyze({DataPath("lm_cap_gm_h200.sltrace")}, AnalysisOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->gpu_metrics.size(), 1u);
  const GpuMetricsDevice& d = r->gpu_metrics[0];
  EXPECT_EQ(d.interval_asked_ns, 1000000u);
  EXPECT_EQ(d.samples_total, 93u);  // 5 windows of ~15 ms, 1 ms samples
  EXPECT_EQ(d.samples_missing, 0u);
  EXPECT_EQ(d.samples_missing_in_window, 0u);
  EXPECT_NEAR(d.coverage_pct, 100, 0.1);
  EXPECT_EQ(r->summary.scope, "steady_state");
  ASSERT_EQ(d.steps.size(), r->summary.steps.steps.size());
  ASSERT_EQ(d.steps.size(), 4u);  // the first window is the warm-up
  for (const GpuMetricSpanRow& s : d.steps) {
    // A launch-bound step of small kernels: the SMs are mostly idle.
    EXPECT_GT(Value(d, s, "sm_active"), 1.5) << s.index;
    EXPECT_LT(Value(d, s, "sm_active"), 4) << s.index;
    EXPECT_GT(s.time_ns, 15000000u) << s.index;
  }
  ASSERT_EQ(d.ranges.size(), 1u);
  EXPECT_EQ(d.ranges[0].name, "train_step");
  EXPECT_EQ(d.ranges[0].instances, 4u);
  // The LM's kernels are short: none lasts two 1 ms samples.
  ASSERT_FALSE(d.kernels.empty());
  for (const GpuMetricSpanRow& k : d.kernels) EXPECT_FALSE(k.resolved) << k.name;
}

}  // namespace
}  // namespace sightline::analysis
