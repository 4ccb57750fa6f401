// tests/kernel/range_metrics_trace_test.cc — golden test on real PyTorch
// training profiled on the H200 with `--metrics full --metrics-range
// nvtx:train_step` (tests/data/metrics/README.md): the transformer LM
// (eager, 50 steps) and the bf16 CNN (36 steps). Each metric set comes from
// 11 successive step instances, one pass each; nothing is replayed and no
// kernel has metrics of its own. The check that ties the values to the
// trace: a set's gpu__time_duration.sum (GPU time of one instance, push to
// pop) lies within the GPU spans of its own instances as the trace's
// kernels, copies and memsets show them (first start after the push to the
// last end before the next push).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

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

double Metric(const std::vector<KernelMetricValue>& v, const std::string& name) {
  for (const KernelMetricValue& m : v) {
    if (m.name == name) return m.value;
  }
  return -1;
}

struct Expect {
  const char* file;
  uint64_t sets, complete, instances;
};

class RangeMetricsTrace : public ::testing::TestWithParam<Expect> {};

TEST_P(RangeMetricsTrace, SetsOfElevenInstancesAndNoKernelMetrics) {
  absl::StatusOr<Report> r = Analyze({DataPath(GetParam().file)}, AnalysisOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->summary.scope, "steady_state");
  ASSERT_EQ(r->range_metrics.size(), 1u);
  const RangeMetricsRow& row = r->range_metrics[0];
  EXPECT_EQ(row.range, "train_step");
  EXPECT_EQ(row.sets, GetParam().sets);
  EXPECT_EQ(row.complete, GetParam().complete);
  EXPECT_EQ(row.instances, GetParam().instances);
  // The first set holds the warm-up steps (cuDNN autotuning, lazy loading):
  // outside the steady-state window, out of the mean.
  ASSERT_FALSE(row.set_rows.empty());
  EXPECT_FALSE(row.set_rows.front().in_window);
  EXPECT_TRUE(row.from_window);
  EXPECT_EQ(row.complete_in_window, GetParam().complete - 1);
  for (const RangeMetricSetRow& s : row.set_rows) {
    EXPECT_EQ(s.passes_needed, 11u);
    if (s.complete) {
      EXPECT_EQ(s.instances, 11u);
      EXPECT_EQ(s.metrics.size(), 22u);
    } else {
      EXPECT_LT(s.passes_collected, 11u);
      EXPECT_TRUE(s.metrics.empty());
    }
  }
  EXPECT_FALSE(r->metrics_coverage.present);
  for (const KernelRow& k : r->kernels) EXPECT_TRUE(k.metrics.empty()) << k.name;
  for (const TraceSummary& t : r->traces) {
    EXPECT_EQ(t.replayed_kernels, 0u);
  }
  const std::string text = exporter::RenderReportText(*r);
  EXPECT_TRUE(absl::StrContains(text, "Metrics of NVTX range 'train_step' as a whole:")) << text;
}

TEST_P(RangeMetricsTrace, GpuTimeOfASetIsThatOfItsInstances) {
  absl::StatusOr<TimelineModel> model = BuildModel({DataPath(GetParam().file)});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<uint64_t> pushes;
  for (const NvtxRange& n : model->nvtx_ranges) {
    if (model->String(n.name) == "train_step") pushes.push_back(n.start_ns);
  }
  std::sort(pushes.begin(), pushes.end());
  ASSERT_EQ(pushes.size(), GetParam().instances);
  std::vector<const GpuActivity*> work;
  for (const GpuActivity& a : model->activities) work.push_back(&a);
  std::sort(work.begin(), work.end(),
            [](const GpuActivity* a, const GpuActivity* b) { return a->start_ns < b->start_ns; });
  // GPU span of the instance pushed at pushes[i].
  auto span = [&](size_t i) {
    const uint64_t from = pushes[i];
    const uint64_t to = i + 1 < pushes.size() ? pushes[i + 1] : UINT64_MAX;
    uint64_t first = 0, last = 0;
    for (const GpuActivity* a : work) {
      if (a->start_ns < from || a->start_ns >= to) continue;
      if (first == 0) first = a->start_ns;
      last = std::max(last, a->end_ns);
    }
    return first == 0 ? 0.0 : double(last - first);
  };
  size_t checked = 0;
  for (const RangeMetricSet& s : model->range_metric_sets) {
    if (s.values.empty()) continue;
    double lo = 1e300, hi = 0;
    uint32_t n = 0;
    for (size_t i = 0; i < pushes.size(); ++i) {
      // The set starts at the hook's clock reading inside the push callback,
      // a few µs after the NVTX record's start: 1 ms of slack.
      if (pushes[i] + 1000000 < s.start_ns || pushes[i] > s.end_ns) continue;
      lo = std::min(lo, span(i));
      hi = std::max(hi, span(i));
      ++n;
    }
    EXPECT_EQ(n, s.instances) << "set at " << s.start_ns;
    double gpu_time = -1;
    for (const auto& [metric, value] : s.values) {
      if (model->String(metric) == "gpu__time_duration.sum") gpu_time = value;
    }
    EXPECT_GE(gpu_time, 0.9 * lo) << "set at " << s.start_ns;
    EXPECT_LE(gpu_time, 1.1 * hi) << "set at " << s.start_ns;
    ++checked;
  }
  EXPECT_EQ(checked, GetParam().complete);
}

// What the steady-state sets say about each model (H200, 2026-12-03): the
// eager LM leaves the GPU idle (launch-bound: SM throughput under 1 % of the
// step), the CNN moves ~27 GB of DRAM a step with the tensor pipe busy.
TEST(RangeMetricsTraceValues, TheTwoModelsDiffer) {
  absl::StatusOr<Report> lm = Analyze({DataPath("lm_range_h200.sltrace")}, AnalysisOptions{});
  absl::StatusOr<Report> cnn = Analyze({DataPath("cnn_range_h200.sltrace")}, AnalysisOptions{});
  ASSERT_TRUE(lm.ok() && cnn.ok());
  ASSERT_EQ(lm->range_metrics.size(), 1u);
  ASSERT_EQ(cnn->range_metrics.size(), 1u);
  const auto& l = lm->range_metrics[0].metrics;
  const auto& c = cnn->range_metrics[0].metrics;
  const char* sm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
  const char* tensor = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
  EXPECT_LT(Metric(l, sm), 1.0);
  EXPECT_GT(Metric(c, sm), 15.0);
  EXPECT_GT(Metric(c, tensor), 10 * Metric(l, tensor));
  EXPECT_GT(Metric(c, "dram__bytes.sum"), 20e9);
  EXPECT_LT(Metric(l, "dram__bytes.sum"), 1e9);
}

INSTANTIATE_TEST_SUITE_P(H200, RangeMetricsTrace,
                         ::testing::Values(Expect{"lm_range_h200.sltrace", 5, 4, 50},
                                           Expect{"cnn_range_h200.sltrace", 4, 3, 36}));

}  // namespace
}  // namespace sightline::analysis
