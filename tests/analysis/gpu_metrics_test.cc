// lib/analysis/gpu_metrics.h on synthetic traces: PM samples (--gpu-metrics)
// read back from the trace (both build paths), weighted over the window, the
// steps, the NVTX ranges and the kernels; capture windows and losses; the
// JSON and text outputs.
#include "lib/analysis/gpu_metrics.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/export/report_render.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::ms;
using testing::TraceBuilder;
using testing::us;

constexpr char kSm[] = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed";
constexpr char kDram[] = "dram__read_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr char kClock[] = "gpc__cycles_elapsed.avg.per_second";

bool InGemm(uint64_t t) {  // the kernel of each step: [t0 + 100 us, t0 + 700 us)
  if (t < ms(10) || t >= ms(20)) return false;
  const uint64_t in_step = (t - ms(10)) % ms(1);
  return in_step >= us(100) && in_step < us(700);
}

// Samples of 100 us over [from, to): SM active 90 % and DRAM read 30 % while
// the gemm runs, 5 % and 0 % otherwise; the clock at 1.98 GHz. Batches of
// 16 samples; sample `nan_at` (a time) has no SM value.
void Samples(TraceBuilder* b, uint64_t from, uint64_t to, uint64_t nan_at = 0) {
  GpuMetricSamplesEvent e;
  e.device_id = 0;
  e.interval_ns = us(100);
  for (const char* m : {kSm, kDram, kClock}) e.metric_name_ids.push_back(b->trace().Intern(m));
  auto flush = [&] {
    if (e.sample_start_ns.empty()) return;
    e.start_ns = e.sample_start_ns.front();
    e.end_ns = e.sample_end_ns.back();
    b->trace().gpu_metrics.push_back(e);
    e.sample_start_ns.clear();
    e.sample_end_ns.clear();
    e.values.clear();
  };
  for (uint64_t t = from; t < to; t += us(100)) {
    const bool busy = InGemm(t);
    e.sample_start_ns.push_back(t);
    e.sample_end_ns.push_back(t + us(100));
    e.values.push_back(t == nan_at ? std::nanf("") : busy ? 90.0f : 5.0f);
    e.values.push_back(busy ? 30.0f : 0.0f);
    e.values.push_back(1.98e9f);
    if (e.sample_start_ns.size() == 16) flush();
  }
  flush();
}

// 10 steps of 1 ms from 10 ms, each an NVTX range "train_step" that launches
// one gemm of 600 us.
TraceBuilder Steps() {
  TraceBuilder b;
  b.trace().header.devices.push_back(testing::H200());
  for (int i = 0; i < 10; ++i) {
    const uint64_t t = ms(10) + static_cast<uint64_t>(i) * ms(1);
    b.Nvtx("train_step", t, t + us(950));
    b.Kernel("gemm", t + us(100), t + us(700), 7, t + us(10), us(5));
  }
  return b;
}

class GpuMetricsTest : public ::testing::TestWithParam<testing::BuildPath> {};

TEST_P(GpuMetricsTest, WindowStepsRangesAndKernels) {
  TraceBuilder b = Steps();
  Samples(&b, ms(5), ms(25));
  LossReport loss;
  loss.gpu_metric_samples_dropped = 3;
  b.trace().losses.push_back(loss);
  Report r = testing::AnalyzeTraces({b.trace()}, GetParam());
  ASSERT_EQ(r.gpu_metrics.size(), 1u);
  const GpuMetricsDevice& d = r.gpu_metrics[0];
  EXPECT_EQ(d.device_id, 0u);
  EXPECT_EQ(d.samples_total, 200u);
  EXPECT_EQ(d.samples_missing, 3u);
  EXPECT_EQ(d.samples_missing_in_window, 0u);
  EXPECT_EQ(d.interval_asked_ns, us(100));
  EXPECT_DOUBLE_EQ(d.interval_ns, 100000.0);
  EXPECT_NEAR(d.coverage_pct, 100.0, 1e-9);
  ASSERT_EQ(d.stats.size(), 3u);
  EXPECT_EQ(d.stats[0].key, "sm_active");
  EXPECT_EQ(d.stats[0].unit, "%");
  EXPECT_EQ(d.stats[1].key, "dram_read");
  EXPECT_EQ(d.stats[2].key, "gpc_clock");
  EXPECT_EQ(d.stats[2].unit, "Hz");
  EXPECT_EQ(d.stats[2].busy_pct, -1);  // not a percentage
  EXPECT_TRUE(absl::c_linear_search(d.unavailable, "tensor_active"));
  EXPECT_FALSE(absl::c_linear_search(d.unavailable, "sm_active"));

  // The window's time-weighted means: 6 ms of gemm in it, the rest idle.
  const double w = static_cast<double>(r.summary.window_end_ns - r.summary.window_start_ns);
  double gemm = 0;
  for (uint64_t t = r.summary.window_start_ns; t < r.summary.window_end_ns; t += us(1)) {
    gemm += InGemm(t) ? us(1) : 0;
  }
  ASSERT_GT(gemm, 0);
  EXPECT_NEAR(d.stats[0].mean, (90 * gemm + 5 * (w - gemm)) / w, 0.1);
  EXPECT_NEAR(d.stats[0].busy_pct, 100 * gemm / w, 0.5);
  EXPECT_NEAR(d.stats[0].saturated_pct, 100 * gemm / w, 0.5);
  EXPECT_NEAR(d.stats[1].saturated_pct, 0, 1e-9);  // 30 % is busy, not saturated
  EXPECT_NEAR(d.stats[1].busy_pct, 100 * gemm / w, 0.5);
  EXPECT_DOUBLE_EQ(d.stats[0].max, 90);
  EXPECT_NEAR(d.stats[2].mean, 1.98e9, 1e3);

  // Steps (NVTX, host intervals) projected onto their gemm: 90 % each.
  ASSERT_EQ(d.steps.size(), r.summary.steps.steps.size());
  ASSERT_FALSE(d.steps.empty());
  for (const GpuMetricSpanRow& s : d.steps) {
    EXPECT_EQ(s.time_ns, us(600)) << s.index;
    EXPECT_NEAR(s.values[0], 90, 1e-6) << s.index;
    EXPECT_NEAR(s.values[1], 30, 1e-6) << s.index;
  }
  ASSERT_EQ(d.ranges.size(), 1u);
  EXPECT_EQ(d.ranges[0].name, "train_step");
  EXPECT_NEAR(d.ranges[0].values[0], 90, 1e-6);
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_EQ(d.kernels[0].name, "gemm");
  EXPECT_TRUE(d.kernels[0].resolved);  // 600 us: six samples
  EXPECT_NEAR(d.kernels[0].values[0], 90, 1e-6);

  // The timeline: buckets over the window, one series per quantity.
  ASSERT_EQ(d.timeline.size(), 3u);
  EXPECT_FALSE(d.timeline_ns.empty());
  EXPECT_LE(d.timeline_ns.size(), 600u);
  EXPECT_EQ(d.timeline[0].size(), d.timeline_ns.size());
}

TEST_P(GpuMetricsTest, NanSamplesAndShortKernels) {
  TraceBuilder b = Steps();
  b.Kernel("tiny", ms(20) + us(10), ms(20) + us(30), 7, ms(20), us(5));
  Samples(&b, ms(5), ms(25), /*nan_at=*/ms(10) + us(100));
  Report r = testing::AnalyzeTraces({b.trace()}, GetParam());
  ASSERT_EQ(r.gpu_metrics.size(), 1u);
  const GpuMetricsDevice& d = r.gpu_metrics[0];
  // The NaN sample is left out of the first step's SM mean, not read as 0.
  ASSERT_FALSE(d.steps.empty());
  EXPECT_NEAR(d.steps[0].values[0], 90, 1e-6);
  const GpuMetricSpanRow* tiny = nullptr;
  for (const GpuMetricSpanRow& k : d.kernels) tiny = k.name == "tiny" ? &k : tiny;
  ASSERT_NE(tiny, nullptr);
  EXPECT_FALSE(tiny->resolved);  // 20 us inside one 100 us sample
  const std::string text = exporter::RenderReportText(r);
  EXPECT_TRUE(absl::StrContains(text, "last less than two samples")) << text;
}

TEST_P(GpuMetricsTest, CoverageCountsOnlyTheCaptureWindows) {
  TraceBuilder b = Steps();
  b.Capture(ms(10), ms(13), CaptureTrigger::kNvtx, 0);
  b.Capture(ms(13) + us(150), ms(16), CaptureTrigger::kNvtx, 1);
  Samples(&b, ms(10), ms(13) + us(100));  // the last one overlaps the first window's end
  Samples(&b, ms(13) + us(200), ms(16));  // 13.1..13.2 ms lies between the windows
  Report r = testing::AnalyzeTraces({b.trace()}, GetParam());
  ASSERT_EQ(r.gpu_metrics.size(), 1u);
  EXPECT_EQ(r.gpu_metrics[0].samples_total, 59u);
  EXPECT_GT(r.gpu_metrics[0].coverage_pct, 95.0);
  EXPECT_EQ(r.gpu_metrics[0].samples_missing_in_window, 0u);  // between windows: not missing
}

TEST_P(GpuMetricsTest, GapsInsideTheWindowAreMissingSamples) {
  TraceBuilder b = Steps();
  Samples(&b, ms(5), ms(14));
  Samples(&b, ms(14) + us(300), ms(25));  // 3 samples never arrived
  Report r = testing::AnalyzeTraces({b.trace()}, GetParam());
  ASSERT_EQ(r.gpu_metrics.size(), 1u);
  EXPECT_EQ(r.gpu_metrics[0].samples_missing_in_window, 3u);
  EXPECT_LT(r.gpu_metrics[0].coverage_pct, 100.0);
}

TEST_P(GpuMetricsTest, JsonAndText) {
  TraceBuilder b = Steps();
  Samples(&b, ms(5), ms(25));
  Report r = testing::AnalyzeTraces({b.trace()}, GetParam());
  const std::string json = exporter::RenderReportJson(r);
  const size_t at = json.find("\"gpu_metrics\": [");
  ASSERT_NE(at, std::string::npos);
  const std::string part = json.substr(at);
  EXPECT_TRUE(absl::StrContains(part, "\"key\": \"sm_active\"")) << part;
  EXPECT_TRUE(absl::StrContains(part, "\"metric\": \"" + std::string(kSm) + "\"")) << part;
  EXPECT_TRUE(absl::StrContains(part, "\"busy_pct\": ")) << part;
  EXPECT_TRUE(absl::StrContains(part, "\"samples_total\": 200")) << part;
  EXPECT_TRUE(absl::StrContains(part, "\"timeline\": {")) << part;
  const std::string text = exporter::RenderReportText(r);
  EXPECT_TRUE(absl::StrContains(text, "GPU metrics (PM sampling) of device 0")) << text;
  if (std::getenv("SHOW")) std::printf("%s", text.c_str());
  EXPECT_TRUE(absl::StrContains(text, "SM active")) << text;
  EXPECT_TRUE(absl::StrContains(text, "Step    GPU span  SM act  DRAM rd")) << text;
  EXPECT_TRUE(absl::StrContains(text, "train_step x10")) << text;
  // Without samples: an empty table and no text block.
  Report none;
  EXPECT_TRUE(absl::StrContains(exporter::RenderReportJson(none), "\"gpu_metrics\": []"));
  EXPECT_FALSE(absl::StrContains(exporter::RenderReportText(none), "PM sampling"));
}

INSTANTIATE_TEST_SUITE_P(BothPaths, GpuMetricsTest,
                         ::testing::Values(testing::BuildPath::kDirect,
                                           testing::BuildPath::kWireFormat));

}  // namespace
}  // namespace sightline::analysis
