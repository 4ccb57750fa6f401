// The timeline model: linking, nesting, clock merge, validity, edge cases.
#include "lib/analysis/model.h"

#include <map>

#include "gtest/gtest.h"
#include "lib/trace/reader.h"
#include "lib/analysis/analyze.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::BuildPath;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

class ModelTest : public ::testing::TestWithParam<BuildPath> {
 protected:
  TimelineModel BuildOrDie(const std::vector<SyntheticTrace>& traces) {
    absl::StatusOr<TimelineModel> m = testing::Build(traces, GetParam());
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : TimelineModel();
  }
};

TEST_P(ModelTest, EmptyTrace) {
  TraceBuilder b;
  TimelineModel m = BuildOrDie({b.trace()});
  EXPECT_TRUE(m.activities.empty());
  EXPECT_TRUE(m.devices.empty());
  EXPECT_EQ(m.traces.size(), 1u);
  Report r = AnalyzeModel(m, {});
  EXPECT_EQ(r.summary.window_ns, 0u);
  EXPECT_TRUE(r.summary.devices.empty());
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.traces.size(), 1u);
  EXPECT_EQ(r.traces[0].events, 0u);
  EXPECT_FALSE(r.notes.empty());
}

TEST_P(ModelTest, ApiOnlyTrace) {
  TraceBuilder b;
  b.Api("cudaMalloc", ms(1), ms(1) + us(50));
  b.Api("cudaMalloc", ms(2), ms(2) + us(150));
  b.Api("cudaFree", ms(3), ms(3) + us(10));
  TimelineModel m = BuildOrDie({b.trace()});
  EXPECT_TRUE(m.activities.empty());
  EXPECT_EQ(m.api_calls.size(), 3u);
  Report r = AnalyzeModel(m, {});
  EXPECT_TRUE(r.summary.devices.empty());
  EXPECT_EQ(r.summary.window_ns, ms(2) + us(10));  // falls back to API bounds
  ASSERT_EQ(r.apis.size(), 2u);
  EXPECT_EQ(r.apis[0].name, "cudaMalloc");
  EXPECT_EQ(r.apis[0].count, 2u);
  EXPECT_EQ(r.apis[0].total_ns, us(200));
  EXPECT_EQ(r.apis[0].min_ns, us(50));
  EXPECT_EQ(r.apis[0].max_ns, us(150));
  EXPECT_TRUE(r.findings.empty());
}

TEST_P(ModelTest, CorrelatesLaunchesWithGpuWork) {
  TraceBuilder b;
  uint32_t corr = b.Kernel("gemm", ms(1), ms(2), 7, ms(1) - us(20), us(4), 42);
  b.BareKernel("orphan", ms(3), ms(4));
  TimelineModel m = BuildOrDie({b.trace()});
  ASSERT_EQ(m.activities.size(), 2u);
  const GpuActivity& a = m.activities[0];
  EXPECT_EQ(m.String(a.name), "gemm");
  EXPECT_EQ(a.correlation_id, corr);
  const ApiCall* launch = m.LaunchOf(a);
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(m.String(launch->name), "cudaLaunchKernel");
  EXPECT_EQ(launch->start_ns, ms(1) - us(20));
  EXPECT_EQ(m.threads[launch->thread].thread_id, 42u);
  EXPECT_TRUE(launch->flags & kApiLaunch);
  EXPECT_EQ(m.LaunchOf(m.activities[1]), nullptr);
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.streams[0].activities.size(), 2u);
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_TRUE(m.devices[0].has_info);
  EXPECT_EQ(m.devices[0].info.name, "NVIDIA H200");
}

TEST_P(ModelTest, ZeroAndInvertedTimestampsAreCountedNotCrashedOn) {
  TraceBuilder b;
  b.BareKernel("zero_start", 0, ms(1));
  b.BareKernel("zero_end", ms(1), 0);
  b.BareKernel("inverted", ms(5), ms(4));
  b.BareKernel("ok", ms(6), ms(7));
  b.Api("cudaFree", ms(9), ms(8));
  b.Nvtx("bad", ms(3), ms(2));
  TimelineModel m = BuildOrDie({b.trace()});
  ASSERT_EQ(m.activities.size(), 1u);
  EXPECT_EQ(m.String(m.activities[0].name), "ok");
  const TraceSource& t = m.traces[0];
  EXPECT_EQ(t.invalid_by_kind[static_cast<size_t>(EventKind::kKernel)], 3u);
  EXPECT_EQ(t.invalid_by_kind[static_cast<size_t>(EventKind::kApi)], 1u);
  EXPECT_EQ(t.invalid_by_kind[static_cast<size_t>(EventKind::kNvtxRange)], 1u);
  EXPECT_EQ(t.invalid_total(), 5u);
  Report r = AnalyzeModel(m, {});
  ASSERT_EQ(r.traces.size(), 1u);
  EXPECT_EQ(r.traces[0].invalid_timestamps, 5u);
  EXPECT_EQ(r.summary.devices.at(0).window_ns, ms(1));
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("zero or inverted") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_P(ModelTest, ReplayedKernelsExcludedFromTimingButKeepMetrics) {
  TraceBuilder b;
  b.Kernel("gemm", ms(1), ms(2));
  uint32_t replayed = b.Kernel("gemm", ms(3), ms(30));
  b.trace().kernels.back().replayed = true;
  b.Metric(replayed, "sm__throughput.avg.pct_of_peak_sustained_elapsed", 87.5);
  TimelineModel m = BuildOrDie({b.trace()});
  ASSERT_EQ(m.activities.size(), 1u);
  EXPECT_EQ(m.traces[0].replayed_kernels, 1u);
  const KernelAggregate* k = m.FindKernel("gemm");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->count, 1u);
  EXPECT_EQ(k->replayed_count, 1u);
  EXPECT_EQ(k->total_ns, ms(1));
  EXPECT_DOUBLE_EQ(k->Metric("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 87.5);
  EXPECT_DOUBLE_EQ(k->Metric("missing", -7), -7);
  ASSERT_EQ(k->configs.size(), 1u);
  EXPECT_EQ(k->configs[0].config.block_x, 256u);
  EXPECT_EQ(k->configs[0].config.grid_x, 264u);
  EXPECT_EQ(k->configs[0].count, 1u);
  Report r = AnalyzeModel(m, {});
  EXPECT_EQ(r.traces[0].replayed_kernels, 1u);
  EXPECT_EQ(r.summary.devices.at(0).busy_ns, ms(1));
}

// Kernels measured in place while kernels were not traced (sequence passes,
// SIGHTLINE_METRICS_INPLACE_TRACE=none): no timestamps; placed at their
// launch for their own measured duration, or their configuration's mean
// when their values went to another launch of the step's position.
TEST_P(ModelTest, UntracedKernelsArePlacedAtTheirLaunchForTheMeasuredDuration) {
  TraceBuilder b;
  b.Kernel("gemm", ms(1), ms(2), 7, us(900), us(10));
  const uint32_t earlier_pass = b.Kernel("gemm", 0, 0, 7, ms(3), us(10));
  b.trace().kernels.back().untraced = true;
  const uint32_t last_pass = b.Kernel("gemm", 0, 0, 7, ms(5), us(10));
  b.trace().kernels.back().untraced = true;
  const uint32_t other_position = b.Kernel("gemm", 0, 0, 7, ms(7), us(10));
  b.trace().kernels.back().untraced = true;
  b.Metric(last_pass, "gpu__time_duration.sum", 4000);
  b.Metric(last_pass, "smsp__inst_executed.sum", 640);
  b.Metric(other_position, "gpu__time_duration.sum", 2000);
  TimelineModel m = BuildOrDie({b.trace()});
  EXPECT_EQ(m.traces[0].untraced_kernels, 3u);
  EXPECT_EQ(m.traces[0].replayed_kernels, 0u);
  EXPECT_EQ(m.traces[0].metric_sets_without_replay, 3u);  // one per metric range
  ASSERT_EQ(m.activities.size(), 4u);
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> placed;
  for (const GpuActivity& a : m.activities) {
    if (m.IsReplayed(a)) placed[a.correlation_id] = {a.start_ns, a.end_ns};
  }
  ASSERT_EQ(placed.size(), 3u);
  EXPECT_EQ(placed.at(last_pass), std::make_pair(ms(5), ms(5) + 4000));
  EXPECT_EQ(placed.at(other_position), std::make_pair(ms(7), ms(7) + 2000));
  EXPECT_EQ(placed.at(earlier_pass), std::make_pair(ms(3), ms(3) + 3000));  // the mean
  const KernelAggregate* k = m.FindKernel("gemm");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->count, 1u);  // only the traced launch is timed
  EXPECT_EQ(k->replayed_count, 3u);
  EXPECT_DOUBLE_EQ(k->Metric("smsp__inst_executed.sum"), 640);
  Report r = AnalyzeModel(m, {});
  EXPECT_EQ(r.traces[0].untraced_kernels, 3u);
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("without being traced") != std::string::npos;
  EXPECT_TRUE(noted);
}

// Memsets CUPTI gave without timestamps while metrics were collected are
// counted, kept off the timeline and out of the window.
TEST_P(ModelTest, UntracedMemsetsAreCountedAndOutsideTiming) {
  TraceBuilder b;
  b.Kernel("gemm", ms(1), ms(2), 7, us(900), us(10));
  MemsetEvent untraced;
  untraced.untraced = true;
  untraced.bytes = 4096;
  untraced.correlation_id = 8;
  b.trace().memsets.push_back(untraced);
  TimelineModel m = BuildOrDie({b.trace()});
  EXPECT_EQ(m.traces[0].untraced_memsets, 1u);
  EXPECT_EQ(m.traces[0].invalid_total(), 0u);
  ASSERT_EQ(m.activities.size(), 1u);
  Report r = AnalyzeModel(m, {});
  EXPECT_EQ(r.traces[0].untraced_memsets, 1u);
  EXPECT_EQ(r.traces[0].invalid_timestamps, 0u);
  EXPECT_EQ(r.summary.devices.at(0).busy_ns, ms(1));
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("memsets came from CUPTI") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_P(ModelTest, KernelAggregateStatsAndLaunchConfigs) {
  TraceBuilder b;
  KernelEvent small;
  small.grid_x = 8;
  small.block_x = 100;
  small.registers_per_thread = 64;
  small.dynamic_shared_bytes = 4096;
  b.KernelWithConfig("k", ms(1), ms(1) + us(10), small);
  b.Kernel("k", ms(2), ms(2) + us(20));
  b.Kernel("k", ms(3), ms(3) + us(30));
  b.Kernel("other", ms(4), ms(4) + us(40));
  TimelineModel m = BuildOrDie({b.trace()});
  const KernelAggregate* k = m.FindKernel("k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->count, 3u);
  EXPECT_EQ(k->total_ns, us(60));
  EXPECT_EQ(k->min_ns, us(10));
  EXPECT_EQ(k->max_ns, us(30));
  EXPECT_DOUBLE_EQ(k->mean_ns, 20000.0);
  EXPECT_NEAR(k->stddev_ns, 8164.97, 0.01);
  EXPECT_NEAR(k->share_pct, 60.0, 1e-9);
  ASSERT_EQ(k->configs.size(), 2u);
  EXPECT_EQ(k->configs[0].count, 2u);  // most frequent first
  EXPECT_EQ(k->configs[0].config.block_x, 256u);
  EXPECT_EQ(k->configs[1].config.block_x, 100u);
  EXPECT_EQ(k->configs[1].config.dynamic_shared_bytes, 4096u);
  EXPECT_EQ(m.kernels.front().name_text, "k");  // by total time
}

TEST_P(ModelTest, NvtxNestingDepth) {
  TraceBuilder b;
  b.Nvtx("step", ms(1), ms(10));
  b.Nvtx("forward", ms(2), ms(5));
  b.Nvtx("attention", ms(3), ms(4));
  b.Nvtx("backward", ms(5), ms(9));
  b.Nvtx("step", ms(10), ms(20));
  b.Nvtx("other_thread", ms(2), ms(3), /*thread=*/2);
  TimelineModel m = BuildOrDie({b.trace()});
  std::map<std::string, std::vector<int>> depth;
  for (const NvtxRange& r : m.nvtx_ranges) depth[std::string(m.String(r.name))].push_back(r.depth);
  EXPECT_EQ(depth["step"], (std::vector<int>{0, 0}));
  EXPECT_EQ(depth["forward"], (std::vector<int>{1}));
  EXPECT_EQ(depth["attention"], (std::vector<int>{2}));
  EXPECT_EQ(depth["backward"], (std::vector<int>{1}));
  EXPECT_EQ(depth["other_thread"], (std::vector<int>{0}));
}

TEST_P(ModelTest, ClockSkewBetweenRanksIsRemovedByTheClockMapping) {
  // Rank 1's collector clock runs 5 s ahead of rank 0's; both map to the
  // same CLOCK_REALTIME. The same instant must land on the same merged time.
  TraceBuilder r0(0, "rank0"), r1(1, "rank1");
  const uint64_t realtime = 1'700'000'000'000'000'000ull;
  r0.SetClock(ms(100), realtime);
  r1.SetClock(ms(100) + ms(5000), realtime);
  r0.Kernel("k", ms(200), ms(201));
  r1.Kernel("k", ms(5200), ms(5201));
  TimelineModel m = BuildOrDie({r0.trace(), r1.trace()});
  ASSERT_EQ(m.activities.size(), 2u);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.activities[0].start_ns, m.activities[1].start_ns);
  EXPECT_EQ(m.activities[0].start_ns, realtime + ms(100));
  EXPECT_EQ(m.traces[1].rank, 1);
  EXPECT_EQ(m.traces[1].clock_offset_ns, int64_t(realtime) - int64_t(ms(5100)));
  // Launch links stay within their own trace even with equal correlation ids.
  EXPECT_EQ(m.activities[0].correlation_id, m.activities[1].correlation_id);
  EXPECT_NE(m.activities[0].launch_api, m.activities[1].launch_api);
  Report r = AnalyzeModel(m, {});
  ASSERT_EQ(r.summary.devices.size(), 2u);
  EXPECT_EQ(r.summary.window_ns, ms(1));
  EXPECT_EQ(r.summary.devices[1].rank, 1);
}

TEST_P(ModelTest, OverlappingCaptureWindowsBecomeSteps) {
  TraceBuilder b;
  b.Kernel("k", ms(1), ms(9));
  b.Capture(ms(1), ms(5), CaptureTrigger::kProfilerApi, 0);
  b.Capture(ms(3), ms(8), CaptureTrigger::kProfilerApi, 1);
  b.Capture(ms(0) + 1, ms(10), CaptureTrigger::kWholeRun, 2);
  TimelineModel m = BuildOrDie({b.trace()});
  EXPECT_EQ(m.capture_windows.size(), 3u);
  AnalysisOptions all;  // both windows (steady state would skip the first as warm-up)
  all.window = "all";
  Report r = AnalyzeModel(m, all);
  EXPECT_EQ(r.summary.steps.source, "capture_window");
  EXPECT_EQ(r.summary.steps.count, 2u);
  EXPECT_EQ(r.summary.steps.min_ns, ms(4));
  EXPECT_EQ(r.summary.steps.max_ns, ms(5));
  EXPECT_NEAR(r.summary.steps.steps[0].gpu_utilization_pct, 100.0, 1e-9);
}

TEST_P(ModelTest, CallStacksSurviveWithResolvedNames) {
  TraceBuilder b;
  uint32_t stack = b.Stack({"cudaStreamSynchronize", "train_loop", "main"});
  b.Api("cudaStreamSynchronize", ms(1), ms(2), 1, stack);
  TimelineModel m = BuildOrDie({b.trace()});
  ASSERT_EQ(m.api_calls.size(), 1u);
  const CallStack* s = m.Stack(m.api_calls[0].trace, m.api_calls[0].stack_id);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->frames.size(), 3u);
  EXPECT_EQ(m.String(s->frames[1].function_id), "train_loop");
  EXPECT_EQ(m.String(s->frames[1].module_id), "/usr/lib/libapp.so");
}

TEST_P(ModelTest, OutOfOrderRecordsAcrossStorageBlocksAreSorted) {
  // 40000 kernels on two streams and their launches, recorded in a scrambled
  // order (CUPTI buffers are not time-ordered), crossing the builder's
  // 16384-record storage blocks; plus nested runtime/driver calls recorded
  // inner first.
  TraceBuilder b;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    int j = static_cast<int>((static_cast<uint64_t>(i) * 7919) % n);  // a permutation of 0..n-1
    uint64_t start = ms(1) + j * us(10);
    b.Kernel("k", start, start + us(5), 7 + (j % 2), start - us(4), us(2), 1);
  }
  b.Api("cuMemAlloc_v2", ms(1000) + us(1), ms(1000) + us(2), 1);
  b.Api("cudaMalloc_v3020", ms(1000), ms(1000) + us(3), 1);
  TimelineModel m = BuildOrDie({b.trace()});
  ASSERT_EQ(m.activities.size(), size_t{n});
  for (size_t i = 1; i < m.activities.size(); ++i) {
    ASSERT_LE(m.activities[i - 1].start_ns, m.activities[i].start_ns) << i;
  }
  size_t listed = 0;
  for (const StreamInfo& st : m.streams) {
    listed += st.activities.size();
    for (size_t i = 0; i < st.activities.size(); ++i) {
      const GpuActivity& a = m.activities[st.activities[i]];
      ASSERT_EQ(&m.streams[a.stream], &st);
      if (i > 0) {
        ASSERT_LT(m.activities[st.activities[i - 1]].start_ns, a.start_ns);
      }
    }
  }
  EXPECT_EQ(listed, size_t{n});
  for (const GpuActivity& a : m.activities) {
    const ApiCall* launch = m.LaunchOf(a);
    ASSERT_NE(launch, nullptr);
    ASSERT_EQ(launch->start_ns + us(4), a.start_ns);
  }
  for (size_t i = 1; i < m.api_calls.size(); ++i) {
    ASSERT_LE(m.api_calls[i - 1].start_ns, m.api_calls[i].start_ns) << i;
  }
  EXPECT_EQ(m.String(m.api_calls.back().name), "cuMemAlloc_v2");  // inner after outer
  EXPECT_EQ(m.String(m.api_calls[m.api_calls.size() - 2].name), "cudaMalloc_v3020");
}

INSTANTIATE_TEST_SUITE_P(BothPaths, ModelTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat),
                         [](const auto& info) {
                           return info.param == BuildPath::kDirect ? "direct" : "wire";
                         });

TEST(ModelReaderTest, DamagedTraceIsAnalysedAsFarAsItGoes) {
  TraceBuilder b;
  for (int i = 0; i < 2000; ++i) b.Kernel("k", ms(1 + i), ms(1 + i) + us(500));
  std::string bytes = testing::EncodeTrace(b.trace(), /*chunk_bytes=*/4096);
  std::string truncated = bytes.substr(0, bytes.size() * 2 / 3);
  auto reader = trace::TraceReader::FromBuffer("cut.sltrace", truncated);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ModelBuilder builder;
  ASSERT_TRUE(builder.AddTrace(**reader).ok());
  TimelineModel m = builder.Finish();
  Report r = AnalyzeModel(m, {});
  ASSERT_EQ(r.traces.size(), 1u);
  EXPECT_FALSE(r.traces[0].complete);
  // EncodeTrace writes the kernels first, then the API calls: the cut loses
  // API calls, and the kernels whose launch is lost stay unlinked.
  EXPECT_EQ(m.activities.size(), 2000u);
  EXPECT_GT(m.api_calls.size(), 0u);
  EXPECT_LT(m.api_calls.size(), 2000u);
  EXPECT_FALSE(r.traces[0].integrity_reason.empty());
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("incomplete trace") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace sightline::analysis
