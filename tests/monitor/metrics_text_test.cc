// The exposition of the monitor's metrics (lib/monitor/metrics_text.h).
#include "lib/monitor/metrics_text.h"

#include <gtest/gtest.h>

namespace sightline::monitor {
namespace {

MetricsSnapshot Sample() {
  MetricsSnapshot s;
  s.job = "train \"big\"\\run";
  s.rank = "3";
  s.steps.Observe(0.012);
  s.steps.Observe(0.030);
  s.steps.Observe(100);  // beyond the last bound: +Inf only
  s.step_median_seconds = 0.03;
  s.nvml_up = true;
  DeviceSample d;
  d.index = 1;
  d.has_utilization = true;
  d.utilization_ratio = 0.87;
  d.has_memory = true;
  d.memory_used_bytes = 1024;
  d.memory_total_bytes = 4096;
  s.devices.push_back(d);
  s.anomalies["step_time"] = 2;
  s.captures = 1;
  TorchMemoryGauge t;
  t.cuda_device = 0;
  t.allocated = 1000;
  t.max_allocated = 3000;
  t.reserved = 4096;
  s.torch_memory.push_back(t);
  return s;
}

TEST(MetricsText, PrometheusTextFormat) {
  std::string t = RenderMetrics(Sample(), false);
  const std::string base = "job=\"train \\\"big\\\"\\\\run\",rank=\"3\"";
  EXPECT_NE(t.find("# TYPE sightline_step_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(t.find("sightline_step_duration_seconds_bucket{" + base + ",le=\"0.01\"} 0\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("sightline_step_duration_seconds_bucket{" + base + ",le=\"0.015\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("sightline_step_duration_seconds_bucket{" + base + ",le=\"60\"} 2\n"),
            std::string::npos);
  EXPECT_NE(t.find("sightline_step_duration_seconds_bucket{" + base + ",le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_NE(t.find("sightline_step_duration_seconds_count{" + base + "} 3\n"), std::string::npos);
  EXPECT_NE(t.find("sightline_gpu_utilization_ratio{" + base + ",device=\"1\"} 0.87"),
            std::string::npos);
  EXPECT_NE(t.find("sightline_gpu_memory_used_bytes{" + base + ",device=\"1\"} 1024\n"),
            std::string::npos);
  // Quantities NVML did not give are left out, not zero.
  EXPECT_EQ(t.find("sightline_gpu_power_watts{"), std::string::npos);
  EXPECT_NE(t.find("# TYPE sightline_anomalies_total counter\n"), std::string::npos);
  EXPECT_NE(t.find("sightline_anomalies_total{" + base + ",kind=\"step_time\"} 2\n"),
            std::string::npos);
  EXPECT_NE(t.find("sightline_anomalies_total{" + base + ",kind=\"memory_growth\"} 0\n"),
            std::string::npos);
  EXPECT_NE(t.find("sightline_captures_total{" + base + "} 1\n"), std::string::npos);
  // PyTorch's allocator, by torch's device index (not NVML's).
  EXPECT_NE(t.find("# TYPE sightline_pytorch_memory_allocated_bytes gauge\n"), std::string::npos);
  EXPECT_NE(t.find("sightline_pytorch_memory_allocated_bytes{" + base + ",cuda_device=\"0\"} 1000\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("sightline_pytorch_memory_max_allocated_bytes{" + base + ",cuda_device=\"0\"} 3000\n"),
            std::string::npos);
  EXPECT_NE(t.find("sightline_pytorch_memory_reserved_bytes{" + base + ",cuda_device=\"0\"} 4096\n"),
            std::string::npos);
  EXPECT_EQ(t.find("# EOF"), std::string::npos);
  EXPECT_EQ(std::string(MetricsContentType(false)), "text/plain; version=0.0.4; charset=utf-8");
}

// The median gauge has no sample until the detector has its baseline (the
// first steps' median, start-up included, read 2.12 s on the H200).
TEST(MetricsText, NoMedianSampleBeforeTheBaseline) {
  MetricsSnapshot s = Sample();
  EXPECT_NE(RenderMetrics(s, false).find("sightline_step_duration_median_seconds{"),
            std::string::npos);
  s.step_median_seconds = 0;
  std::string t = RenderMetrics(s, false);
  EXPECT_NE(t.find("# TYPE sightline_step_duration_median_seconds gauge\n"), std::string::npos);
  EXPECT_EQ(t.find("sightline_step_duration_median_seconds{"), std::string::npos) << t;
}

TEST(MetricsText, OpenMetricsFamiliesAndEof) {
  std::string t = RenderMetrics(Sample(), true);
  EXPECT_NE(t.find("# TYPE sightline_anomalies counter\n"), std::string::npos);
  EXPECT_NE(t.find("# TYPE sightline_captures counter\n"), std::string::npos);
  EXPECT_NE(t.find("sightline_captures_total{"), std::string::npos);
  ASSERT_GE(t.size(), 6u);
  EXPECT_EQ(t.substr(t.size() - 6), "# EOF\n");
}

TEST(MetricsText, NoRankIsMinusOne) {
  MetricsSnapshot s;
  s.job = "j";
  std::string t = RenderMetrics(s, false);
  EXPECT_NE(t.find("sightline_captures_total{job=\"j\",rank=\"-1\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("sightline_nvml_up{job=\"j\",rank=\"-1\"} 0\n"), std::string::npos);
  EXPECT_EQ(t.find("sightline_pytorch_memory_allocated_bytes{"), std::string::npos)
      << "no sample yet: no gauge, not a zero";
}

}  // namespace
}  // namespace sightline::monitor
