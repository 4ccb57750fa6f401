// tests/kernel/pytorch_metrics_trace_test.cc — golden test on real PyTorch
// training steps profiled on the H200 with `--metrics full --metrics-replay
// sequence` (tests/data/metrics/README.md): the transformer LM (eager) and
// the bf16 channels-last CNN of examples/pytorch. Sequence replay learned the
// step and measured every kernel of it: the steady-state window's kernel time
// is fully covered, every compute kernel has its metrics in the report (per
// configuration where it ran with several), and the details pages say what
// bounds each kernel (cuDNN's implicit-GEMM convolution: compute, tensor
// cores busy; the LM's tiny kernels: latency).
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/kernel_metrics.h"
#include "lib/export/report_render.h"

namespace sightline::analysis {
namespace {

std::string DataPath(const std::string& name) {
  const char* root = std::getenv("SIGHTLINE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/data/metrics/" + name;
}

Report Load(const std::string& name, const std::string& kernel_pattern = "") {
  AnalysisOptions options;
  options.kernel_pages_pattern = kernel_pattern;
  options.kernel_pages_limit = kernel_pattern.empty() ? 5 : 0;
  absl::StatusOr<Report> r = Analyze({DataPath(name)}, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : Report{};
}

const KernelPageRow* Find(const KernelPage& p, const std::string& label) {
  for (const KernelPageSection& s : p.sections) {
    for (const KernelPageRow& row : s.rows) {
      if (row.label == label) return &row;
    }
  }
  return nullptr;
}

class PytorchMetricsTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(PytorchMetricsTrace, EveryKernelOfTheStepHasItsMetrics) {
  Report r = Load(GetParam());
  EXPECT_EQ(r.summary.scope, "steady_state");
  ASSERT_TRUE(r.metrics_coverage.present);
  EXPECT_GE(r.metrics_coverage.kernel_time_pct, 95.0);
  EXPECT_EQ(r.metrics_coverage.configs_without, 0u);
  EXPECT_GT(r.metrics_coverage.configs_with, 50u);
  size_t compute = 0, with = 0, by_config = 0;
  for (const KernelRow& k : r.kernels) {
    if (k.klass != "compute") continue;
    ++compute;
    with += !k.metrics.empty();
    by_config += !k.metrics_by_config.empty();
  }
  EXPECT_EQ(with, compute);
  EXPECT_GT(by_config, 0u);
  // JSON: the values per kernel and the coverage.
  const std::string json = exporter::RenderReportJson(r);
  EXPECT_NE(json.find("\"metrics_coverage_pct\": 100"), std::string::npos);
  EXPECT_NE(json.find("\"sm__throughput.avg.pct_of_peak_sustained_elapsed\": "), std::string::npos);
  // The report's own pages: its heaviest kernels, each with a verdict.
  ASSERT_EQ(r.kernel_pages.size(), 5u);
  for (const KernelPage& p : r.kernel_pages) EXPECT_FALSE(p.bound.empty()) << p.name;
}

INSTANTIATE_TEST_SUITE_P(H200, PytorchMetricsTrace,
                         ::testing::Values("lm_eager_sequence_h200.sltrace",
                                           "cnn_fixed_sequence_h200.sltrace"));

TEST(PytorchMetricsTrace, TheConvolutionIsComputeBoundOnTensorCores) {
  Report r = Load("cnn_fixed_sequence_h200.sltrace", "fprop_implicit_gemm");
  ASSERT_FALSE(r.kernel_pages.empty());
  const KernelPage& p = r.kernel_pages[0];
  EXPECT_EQ(p.bound, "compute");
  const KernelPageRow* tensor = Find(p, "Tensor pipe (HMMA) active");
  ASSERT_NE(tensor, nullptr);
  EXPECT_GT(std::atof(tensor->value.c_str()), 50.0) << tensor->value;
  const KernelPageRow* waves = Find(p, "Waves per SM");
  ASSERT_NE(waves, nullptr);
  const std::string text = exporter::RenderKernelPagesText(r.kernel_pages, 100);
  EXPECT_NE(text.find("Findings on this kernel"), std::string::npos);
}

// One launch configuration of cuDNN's persistent implicit-GEMM kernel (one
// block per SM, grid 132) is five positions of the step doing different
// work: the range of each averaged metric says so (JSON metrics_range, the
// page's duration line).
TEST(PytorchMetricsTrace, ARangeShowsAConfigurationThatIsSeveralWorkloads) {
  Report r = Load("cnn_fixed_sequence_h200.sltrace", "fprop_implicit_gemm");
  const KernelConfigMetrics* five = nullptr;
  for (const KernelRow& k : r.kernels) {
    if (k.name.find("execute_segment_k_off") == std::string::npos ||
        k.name.find("fprop_implicit_gemm") == std::string::npos) {
      continue;
    }
    for (const KernelConfigMetrics& c : k.metrics_by_config) {
      if (c.grid[0] == 132 && c.samples == 5) five = &c;
    }
  }
  ASSERT_NE(five, nullptr);
  bool found = false;
  for (const KernelMetricValue& m : five->metrics) {
    if (m.name != "smsp__inst_executed.sum") continue;
    found = true;
    EXPECT_DOUBLE_EQ(m.min, 8785678);
    EXPECT_DOUBLE_EQ(m.max, 24002039);
    EXPECT_GT(m.value, m.min);
    EXPECT_LT(m.value, m.max);
  }
  EXPECT_TRUE(found);
  const std::string json = exporter::RenderReportJson(r);
  EXPECT_NE(json.find("\"metrics_range\": {"), std::string::npos);
  const size_t at = json.find("8785678,");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(json.substr(at, 60).find("24002039"), std::string::npos);  // [min, max]
  const std::string text = exporter::RenderKernelPagesText(r.kernel_pages, 100);
  EXPECT_NE(text.find("(29.7 us to 112.3 us)"), std::string::npos) << text.substr(0, 800);
}

TEST(PytorchMetricsTrace, TheLanguageModelsSmallKernelsAreLatencyBound) {
  Report r = Load("lm_eager_sequence_h200.sltrace", "reduce_kernel");
  ASSERT_FALSE(r.kernel_pages.empty());
  for (const KernelPage& p : r.kernel_pages) EXPECT_EQ(p.bound, "latency") << p.name;
}

// Sequence passes measured with no kernel kind enabled (the default since
// run AO, SIGHTLINE_METRICS_INPLACE_TRACE=auto; H100, metrics workload, 16
// repetitions): the passes' launches are in the trace as untraced kernels,
// listed with their configuration (registers from a traced launch), not
// timed, and carry every kernel's metric set.
TEST(UntracedSequenceTrace, PassKernelsAreListedWithTheirMetricsNotTimed) {
  AnalysisOptions options;
  options.window = "all";
  absl::StatusOr<Report> loaded =
      Analyze({DataPath("workload_sequence_untraced_h100.sltrace")}, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Report& r = *loaded;
  EXPECT_EQ(r.summary.scope, "whole");
  ASSERT_EQ(r.traces.size(), 1u);
  EXPECT_EQ(r.traces[0].untraced_kernels, 99u);
  EXPECT_EQ(r.traces[0].replayed_kernels, 0u);
  EXPECT_EQ(r.traces[0].lost_records, 0u);
  ASSERT_TRUE(r.metrics_coverage.present);
  EXPECT_DOUBLE_EQ(r.metrics_coverage.kernel_time_pct, 100.0);
  uint64_t timed = 0, untimed = 0;
  for (const KernelRow& k : r.kernels) {
    timed += k.count;
    untimed += k.replayed_count;
    EXPECT_EQ(k.metrics.size(), 22u) << k.name;
    // One configuration a kernel: the untraced launches took the traced
    // launches' registers and shared memory, so they do not split it.
    // (saxpy_loop runs with two grids.)
    EXPECT_EQ(k.launch_configs, k.name.find("saxpy_loop") != std::string::npos ? 2u : 1u)
        << k.name;
    EXPECT_GT(k.registers_per_thread, 0u) << k.name;
  }
  EXPECT_EQ(timed, 45u);
  EXPECT_EQ(untimed, 99u);
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("without being traced") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace sightline::analysis
