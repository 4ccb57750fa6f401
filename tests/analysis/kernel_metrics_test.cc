// lib/analysis/kernel_metrics.h on synthetic traces: per-kernel and
// per-configuration metric values, the coverage of kernel time and why the
// uncovered configurations have no metrics, and the details pages.
#include "lib/analysis/kernel_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/analysis/steps.h"
#include "lib/export/report_render.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::ms;
using testing::TraceBuilder;
using testing::us;

constexpr char kSm[] = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr char kMem[] = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr char kDram[] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr char kBytes[] = "dram__bytes.sum";
constexpr char kDur[] = "gpu__time_duration.sum";

KernelEvent Config(uint32_t grid) {
  KernelEvent k;
  k.grid_x = grid;
  k.block_x = 256;
  k.registers_per_thread = 32;
  return k;
}

const KernelRow* Row(const Report& r, const std::string& name) {
  for (const KernelRow& k : r.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

double Value(const std::vector<KernelMetricValue>& v, const std::string& name) {
  for (const KernelMetricValue& m : v) {
    if (m.name == name) return m.value;
  }
  return -1;
}

// One metric set (one range, all its values) for the launch `correlation_id`.
void Set(TraceBuilder* b, uint32_t correlation_id,
         const std::vector<std::pair<std::string, double>>& values) {
  MetricRangeEvent m;
  m.correlation_id = correlation_id;
  for (const auto& [name, value] : values) m.values.push_back({b->trace().Intern(name), value});
  m.num_passes = 1;
  b->trace().metric_ranges.push_back(m);
}

// A trace of the 'full' set on one H200, for the replay tests.
TraceBuilder FullSetOnH200() {
  TraceBuilder b;
  b.trace().header.devices.push_back(testing::H200());
  b.trace().header.metric_set = "full";
  return b;
}

// A kernel-replayed launch of `config` (CUPTI reports it without timestamps).
uint32_t ReplayedKernel(TraceBuilder* b, const std::string& name, uint64_t t, KernelEvent config) {
  config.replayed = true;
  uint32_t corr = b->KernelWithConfig(name, t, t + us(10), config);
  b->trace().kernels.back().start_ns = b->trace().kernels.back().end_ns = 0;
  return corr;
}

// gemm on grids 10 and 20 (both measured, different values) and 30 (not
// measured); "copy" never measured; an NCCL kernel; a kernel of a graph launch.
std::vector<SyntheticTrace> Trace() {
  TraceBuilder b;
  b.trace().header.devices.push_back(testing::H200());
  uint64_t t = ms(1);
  for (int i = 0; i < 4; ++i) {
    uint32_t a = b.KernelWithConfig("gemm", t, t + us(100), Config(10));
    t += us(110);
    uint32_t c = b.KernelWithConfig("gemm", t, t + us(100), Config(20));
    t += us(110);
    b.KernelWithConfig("gemm", t, t + us(50), Config(30));
    t += us(60);
    b.Kernel("copy", t, t + us(20));
    t += us(30);
    b.NcclKernel(t, t + us(20));
    t += us(30);
    uint32_t g = b.Kernel("graph_node_kernel", t, t + us(10));
    for (ApiEvent& api : b.trace().apis) {
      if (api.correlation_id == g) api.name_id = b.trace().Intern("cudaGraphLaunch_v10000");
    }
    t += us(20);
    if (i == 0) {
      Set(&b, a, {{kSm, 80}, {kMem, 20}, {kDram, 10}});
      Set(&b, c, {{kSm, 30}, {kMem, 40}, {kDram, 35}});
    }
  }
  return {b.trace()};
}

TEST(KernelMetrics, PerKernelAndPerConfigurationValues) {
  Report r = testing::AnalyzeTraces(Trace(), testing::BuildPath::kWireFormat);
  const KernelRow* gemm = Row(r, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->metric_samples, 2u);
  EXPECT_DOUBLE_EQ(Value(gemm->metrics, kSm), 55);  // mean of the two sets
  for (const KernelMetricValue& m : gemm->metrics) {  // and their spread
    if (m.name != kSm) continue;
    EXPECT_DOUBLE_EQ(m.min, 30);
    EXPECT_DOUBLE_EQ(m.max, 80);
  }
  ASSERT_EQ(gemm->metrics_by_config.size(), 2u);
  for (const KernelConfigMetrics& c : gemm->metrics_by_config) {
    EXPECT_EQ(c.samples, 1u);
    EXPECT_EQ(c.count, 4u);
    EXPECT_DOUBLE_EQ(Value(c.metrics, kSm), c.grid[0] == 10 ? 80 : 30);
    for (const KernelMetricValue& m : c.metrics) EXPECT_EQ(m.min, m.max) << m.name;  // one set
  }
  const KernelRow* copy = Row(r, "copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(copy->metrics.empty());
  EXPECT_TRUE(copy->metrics_by_config.empty());
}

TEST(KernelMetrics, CoverageSaysWhichKernelTimeHasMetricsAndWhyTheRestHasNot) {
  Report r = testing::AnalyzeTraces(Trace(), testing::BuildPath::kDirect);
  const MetricsCoverage& c = r.metrics_coverage;
  ASSERT_TRUE(c.present);
  // Per step: 200 us measured of 100+100+50+20+20+10 = 300 us.
  EXPECT_EQ(c.covered_ns, 4 * us(200));
  EXPECT_EQ(c.kernel_ns, 4 * us(300));
  EXPECT_NEAR(c.kernel_time_pct, 66.67, 0.01);
  EXPECT_EQ(c.configs_with, 2u);
  EXPECT_EQ(c.configs_without, 4u);
  ASSERT_EQ(c.missing.size(), 4u);
  EXPECT_EQ(c.missing[0].name, "gemm");  // heaviest first
  EXPECT_EQ(c.missing[0].grid[0], 30u);
  EXPECT_NE(c.missing[0].reason.find("another configuration of the kernel was"), std::string::npos);
  for (const MetricsCoverage::Missing& m : c.missing) {
    if (m.name == "copy") {
      EXPECT_NE(m.reason.find("not among the measured launches"), std::string::npos);
    }
    if (m.name == "graph_node_kernel") {
      EXPECT_NE(m.reason.find("CUDA graph"), std::string::npos);
    }
    if (m.name.find("nccl") != std::string::npos) {
      EXPECT_NE(m.reason.find("NCCL"), std::string::npos);
    }
  }
  // No metrics in the trace: no coverage claimed.
  TraceBuilder plain;
  plain.Kernel("k", ms(1), ms(2));
  Report none = testing::AnalyzeTraces({plain.trace()}, testing::BuildPath::kDirect);
  EXPECT_FALSE(none.metrics_coverage.present);
  EXPECT_NE(exporter::RenderReportJson(none).find("\"metrics_coverage_pct\": null"), std::string::npos);
}

TEST(KernelMetrics, DetailsPagesNameTheBoundAndSayWhatWasNotCollected) {
  std::vector<SyntheticTrace> traces = Trace();
  TimelineModel model = *testing::Build(traces, testing::BuildPath::kDirect);
  Report r = AnalyzeModel(model, AnalysisOptions{});
  absl::StatusOr<std::vector<KernelPage>> pages = BuildKernelPages(model, r, "^gem", 0);
  ASSERT_TRUE(pages.ok());
  ASSERT_EQ(pages->size(), 1u);
  const KernelPage& p = (*pages)[0];
  EXPECT_EQ(p.name, "gemm");
  // The page shows its configuration's values (grid 10: SM 80 %, memory
  // 20 %), not the kernel's means over both shapes (SM 55 %, memory 30 %:
  // neither at the 60 % knee).
  EXPECT_EQ(p.bound, "compute");
  std::string text = exporter::RenderKernelPagesText(*pages, 100);
  for (const char* s : {"GPU speed of light", "Memory workload", "Compute workload", "Occupancy",
                        "Launch statistics", "In this run", "Findings on this kernel",
                        "not collected (--metrics compute or full)",
                        "the most frequent one, its metrics too"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
  // Every kernel, the heaviest first; a bad pattern is an error.
  pages = BuildKernelPages(model, r, "", 0);
  ASSERT_TRUE(pages.ok());
  EXPECT_EQ((*pages)[0].name, "gemm");
  EXPECT_FALSE(BuildKernelPages(model, r, "(", 0).ok());
  EXPECT_FALSE(CheckKernelPattern("[").ok());
  EXPECT_TRUE(CheckKernelPattern("nvjet|gemm").ok());
  // The report keeps pages of its heaviest kernels (the HTML report's).
  EXPECT_FALSE(r.kernel_pages.empty());
}

// Sequence replay's --metrics-replay-top: a configuration with in-place
// sets and a kernel-replayed one takes its dram__* values from the replay
// (in-place passes add write-backs) and every other value from the
// in-place sets; a configuration measured only in place keeps all of its.
TEST(KernelMetrics, DramValuesComeFromTheReplayWhereBothKindsExist) {
  TraceBuilder b = FullSetOnH200();
  uint64_t t = ms(1);
  KernelEvent in_place = Config(10);
  in_place.shared_memory_config_bytes = 16384;
  for (int i = 0; i < 3; ++i) {
    uint32_t a = b.KernelWithConfig("gemm", t, t + us(100), in_place);
    Set(&b, a, {{kBytes, 1200}, {kDur, 100000}, {kSm, 70 + 2 * i}});
    t += us(110);
    uint32_t c = b.KernelWithConfig("gemm", t, t + us(50), Config(20));
    Set(&b, c, {{kBytes, 500}, {kDur, 50000}, {kSm, 40}});
    t += us(60);
  }
  // CUPTI's kernel replay runs the launch under a carveout of its own
  // (run CA, H100): still grid 10's configuration.
  KernelEvent replayed = Config(10);
  replayed.shared_memory_config_bytes = 32768;
  uint32_t r = ReplayedKernel(&b, "gemm", t, replayed);
  Set(&b, r, {{kBytes, 1000}, {kDur, 130000}, {kSm, 60}});
  // A replay of a launch shape never measured in place (other registers)
  // keeps its own configuration and all its values.
  KernelEvent other = Config(10);
  other.registers_per_thread = 40;
  uint32_t o = ReplayedKernel(&b, "gemm", t, other);
  Set(&b, o, {{kBytes, 900}, {kDur, 90000}, {kSm, 50}});
  for (testing::BuildPath path : {testing::BuildPath::kDirect, testing::BuildPath::kWireFormat}) {
    TimelineModel model = *testing::Build({b.trace()}, path);
    Report rep = AnalyzeModel(model, AnalysisOptions{});
    const KernelRow* gemm = Row(rep, "gemm");
    ASSERT_NE(gemm, nullptr);
    ASSERT_EQ(gemm->metrics_by_config.size(), 3u);
    for (const KernelConfigMetrics& c : gemm->metrics_by_config) {
      const bool regs40 = c.registers_per_thread == 40;
      for (const KernelMetricValue& m : c.metrics) {
        EXPECT_EQ(m.kernel_replay, c.grid[0] == 10 && !regs40 && m.name == kBytes) << m.name;
      }
      if (regs40) {
        EXPECT_EQ(c.samples, 1u);
        EXPECT_DOUBLE_EQ(Value(c.metrics, kBytes), 900);
        EXPECT_DOUBLE_EQ(Value(c.metrics, kSm), 50);
      } else if (c.grid[0] == 10) {
        EXPECT_EQ(c.samples, 4u);
        EXPECT_DOUBLE_EQ(Value(c.metrics, kBytes), 1000);   // the replay's
        EXPECT_DOUBLE_EQ(Value(c.metrics, kDur), 100000);   // in place
        EXPECT_DOUBLE_EQ(Value(c.metrics, kSm), 72);        // in place, mean of 70, 72, 74
      } else {
        EXPECT_DOUBLE_EQ(Value(c.metrics, kBytes), 500);
      }
    }
    // The kernel's means: bytes from the replay (grid 10) and grid 20's in-place sets;
    // grid 10's replayed value weighs as its 3 in-place sets, as in the other means.
    EXPECT_DOUBLE_EQ(Value(gemm->metrics, kBytes), (3 * 1000.0 + 3 * 500 + 900) / 7);
    EXPECT_DOUBLE_EQ(Value(gemm->metrics, kDur), (3 * 100000.0 + 3 * 50000 + 90000) / 7);
    const std::string json = exporter::RenderReportJson(rep);
    // The kernel's list and grid 10's name the bytes; grid 20's is empty.
    size_t at = json.find("\"metrics_from_kernel_replay\"");
    ASSERT_NE(at, std::string::npos);
    std::string list = json.substr(at, json.find(']', at) - at);
    EXPECT_NE(list.find("dram__bytes.sum"), std::string::npos) << list;
    EXPECT_EQ(list.find("gpu__time"), std::string::npos) << list;
    absl::StatusOr<std::vector<KernelPage>> pages = BuildKernelPages(model, rep, "^gemm$", 0);
    ASSERT_TRUE(pages.ok());
    ASSERT_EQ(pages->size(), 1u);
    const std::string text = exporter::RenderKernelPagesText(*pages, 140);
    EXPECT_NE(text.find("from 1 kernel-replayed launch (in-place passes add write-backs)"),
              std::string::npos) << text;
  }
}

// --metrics-replay-top with --metrics-sequences 3: each top configuration
// gets three replayed launches measuring the dram__ metrics and the
// duration alone (one pass). The configuration's bytes are their mean and
// its other values stay the in-place ones; at the kernel level the replays'
// mean weighs as the configuration's in-place sets, however many launches
// were replayed.
TEST(KernelMetrics, SeveralDramOnlyReplaysWeighAsTheirConfiguration) {
  TraceBuilder b = FullSetOnH200();
  uint64_t t = ms(1);
  for (int i = 0; i < 3; ++i) {
    uint32_t a = b.KernelWithConfig("add", t, t + us(10), Config(10));
    Set(&b, a, {{kBytes, 1500}, {kDram, 30}, {kDur, 10000}, {kSm, 20}});
    t += us(20);
    uint32_t c = b.KernelWithConfig("add", t, t + us(5), Config(20));
    Set(&b, c, {{kBytes, 500}, {kDram, 10}, {kDur, 5000}, {kSm, 10}});
    t += us(20);
  }
  for (double bytes : {900.0, 1000.0, 1100.0}) {
    uint32_t r = ReplayedKernel(&b, "add", t, Config(10));
    // The DRAM metrics and the duration (which places the replay on the timeline).
    Set(&b, r, {{kBytes, bytes}, {kDram, bytes / 50}, {kDur, 13000}});
    t += us(20);
  }
  for (testing::BuildPath path : {testing::BuildPath::kDirect, testing::BuildPath::kWireFormat}) {
    TimelineModel model = *testing::Build({b.trace()}, path);
    Report rep = AnalyzeModel(model, AnalysisOptions{});
    const KernelRow* add = Row(rep, "add");
    ASSERT_NE(add, nullptr);
    ASSERT_EQ(add->metrics_by_config.size(), 2u);
    for (const KernelConfigMetrics& c : add->metrics_by_config) {
      if (c.grid[0] != 10) continue;
      EXPECT_DOUBLE_EQ(Value(c.metrics, kBytes), 1000);  // the replays' mean
      EXPECT_DOUBLE_EQ(Value(c.metrics, kDram), 20);
      EXPECT_DOUBLE_EQ(Value(c.metrics, kDur), 10000);   // in place
      EXPECT_DOUBLE_EQ(Value(c.metrics, kSm), 20);
    }
    EXPECT_DOUBLE_EQ(Value(add->metrics, kBytes), (3 * 1000.0 + 3 * 500) / 6);
    EXPECT_DOUBLE_EQ(Value(add->metrics, kDram), (3 * 20.0 + 3 * 10) / 6);
    EXPECT_DOUBLE_EQ(Value(add->metrics, kDur), (3 * 10000.0 + 3 * 5000) / 6);
    absl::StatusOr<std::vector<KernelPage>> pages = BuildKernelPages(model, rep, "^add$", 0);
    ASSERT_TRUE(pages.ok());
    ASSERT_EQ(pages->size(), 1u);
    const std::string text = exporter::RenderKernelPagesText(*pages, 140);
    EXPECT_NE(text.find("from 3 kernel-replayed launches"), std::string::npos) << text;
  }
}

// Kernel replay: CUPTI reports a replayed kernel without timestamps. The
// model places it at its launch call's start for the duration its metric
// range measured: on the timeline and in the device's kernel count, not in
// the kernel table's timing (listed as replayed).
TEST(KernelMetrics, ReplayedKernelsAreOnTheTimelineAtTheirLaunch) {
  TraceBuilder b;
  b.trace().header.metric_set = "full";
  uint32_t corr = b.Kernel("replayed_gemm", ms(1), ms(2), 7, ms(1), ms(200));
  KernelEvent& k = b.trace().kernels.back();
  k.start_ns = k.end_ns = 0;
  k.replayed = true;
  Set(&b, corr, {{"gpu__time_duration.sum", 12345}, {kSm, 50}});
  uint32_t other = b.Kernel("replayed_gemm", ms(300), ms(301), 7, ms(300), ms(200));
  b.trace().kernels.back().start_ns = 0;
  b.trace().kernels.back().end_ns = 0;
  b.trace().kernels.back().replayed = true;  // no measured duration: listed only
  (void)other;
  for (testing::BuildPath path : {testing::BuildPath::kDirect, testing::BuildPath::kWireFormat}) {
    TimelineModel model = *testing::Build({b.trace()}, path);
    ASSERT_EQ(model.activities.size(), 1u);
    const GpuActivity& a = model.activities[0];
    EXPECT_EQ(a.start_ns, ms(1));
    EXPECT_EQ(a.duration(), 12345u);
    EXPECT_TRUE(model.IsReplayed(a));
    ASSERT_EQ(model.kernels.size(), 1u);
    EXPECT_EQ(model.kernels[0].count, 0u);  // not timed
    EXPECT_EQ(model.kernels[0].replayed_count, 2u);
    AnalysisOptions o;
    o.window = "all";
    Report r = AnalyzeModel(model, o);
    ASSERT_EQ(r.summary.devices.size(), 1u);
    EXPECT_EQ(r.summary.devices[0].kernels, 1u);
    EXPECT_GT(r.summary.window_ns, 0u);
  }
}

// A scope (a capture window, the steady state) counts replayed kernels where
// they were placed; one without a position (no measured duration) is carried
// into every scope as the whole model lists it, and a kernel whose scoped
// instances are all replayed stays in the table with count 0.
TEST(KernelMetrics, AScopeKeepsItsReplayedKernelsAndTheUnplacedOnes) {
  TraceBuilder b;
  b.trace().header.metric_set = "full";
  uint32_t corr = b.Kernel("replayed_gemm", ms(1), ms(2), 7, ms(1), ms(200));
  b.trace().kernels.back().start_ns = b.trace().kernels.back().end_ns = 0;
  b.trace().kernels.back().replayed = true;
  Set(&b, corr, {{"gpu__time_duration.sum", 12345}, {kSm, 50}});
  b.Kernel("replayed_gemm", ms(300), ms(301), 7, ms(300), ms(200));
  b.trace().kernels.back().start_ns = b.trace().kernels.back().end_ns = 0;
  b.trace().kernels.back().replayed = true;  // no measured duration: no position
  b.Kernel("timed", ms(500), ms(501), 7, ms(500), us(10));
  TimelineModel whole = *testing::Build({b.trace()}, testing::BuildPath::kDirect);
  ASSERT_EQ(whole.FindKernel("replayed_gemm")->replayed_count, 2u);
  // The placed replay (at 1 ms) inside the scope: both replays counted.
  TimelineModel early = ScopeModel(whole, us(500), ms(100));
  const KernelAggregate* k = early.FindKernel("replayed_gemm");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->count, 0u);
  EXPECT_EQ(k->replayed_count, 2u);
  ASSERT_EQ(k->configs.size(), 1u);
  EXPECT_EQ(k->configs[0].replayed_count, 2u);
  EXPECT_EQ(early.FindKernel("timed"), nullptr);
  // A later scope: only the replay without a position.
  TimelineModel late = ScopeModel(whole, ms(400), ms(600));
  k = late.FindKernel("replayed_gemm");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->replayed_count, 1u);
  ASSERT_EQ(k->configs.size(), 1u);
  EXPECT_EQ(k->configs[0].replayed_count, 1u);
  ASSERT_NE(late.FindKernel("timed"), nullptr);
  EXPECT_EQ(late.FindKernel("timed")->count, 1u);
}

}  // namespace
}  // namespace sightline::analysis
