// Summary numbers against hand-computed values: HTA temporal breakdown,
// concurrency histogram, idle attribution, tables, iterations, NVTX
// projection.
#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::BuildPath;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

class SummaryTest : public ::testing::TestWithParam<BuildPath> {
 protected:
  Report Analyze(const TraceBuilder& b, const AnalysisOptions& o = {}) {
    return testing::AnalyzeTraces({b.trace()}, GetParam(), o);
  }
};

TEST_P(SummaryTest, TemporalBreakdownFollowsHta) {
  TraceBuilder b;
  b.Kernel("k1", ms(1), ms(2));
  b.Kernel("k2", ms(3), ms(4));
  b.Memcpy(CopyKind::kHtoD, MemoryKind::kPinned, 1'000'000, ms(4), ms(5), 9,
           "cudaMemcpyAsync", ms(3), ms(3) + us(5), true);
  b.NcclKernel(ms(5), ms(7));
  b.Kernel("k3", ms(6), ms(6) + us(500), 8);
  Report r = Analyze(b);
  ASSERT_EQ(r.summary.devices.size(), 1u);
  const DeviceSummary& d = r.summary.devices[0];
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.window_ns, ms(6));
  EXPECT_EQ(d.busy_ns, ms(5));
  EXPECT_NEAR(d.gpu_utilization_pct, 100.0 * 5 / 6, 1e-9);
  EXPECT_EQ(d.compute_ns, us(2500));
  EXPECT_EQ(d.comm_ns, us(1500));   // communication not under compute
  EXPECT_EQ(d.memory_ns, ms(1));
  EXPECT_EQ(d.idle_ns, ms(1));
  EXPECT_NEAR(d.compute_pct + d.comm_pct + d.memory_pct + d.idle_pct, 100.0, 1e-9);
  EXPECT_NEAR(d.comm_overlap_pct, 25.0, 1e-9);
  EXPECT_EQ(d.kernels, 4u);
  EXPECT_EQ(d.memcpys, 1u);
  ASSERT_EQ(r.nccl.size(), 1u);
  EXPECT_EQ(r.nccl[0].total_ns, ms(2));
  EXPECT_EQ(r.nccl[0].overlapped_ns, us(500));
  // Memcpy table: 1 MB in 1 ms = 1 GB/s.
  ASSERT_EQ(r.memcpys.size(), 1u);
  EXPECT_EQ(r.memcpys[0].kind, "HtoD");
  EXPECT_EQ(r.memcpys[0].memory, "pinned->device");
  EXPECT_NEAR(r.memcpys[0].bandwidth_gbps, 1.0, 1e-9);
  // Kernel table carries the class and the occupancy columns.
  bool saw_nccl = false;
  for (const KernelRow& k : r.kernels) {
    if (k.name.rfind("nccl", 0) == 0) {
      saw_nccl = true;
      EXPECT_EQ(k.klass, "communication");
    }
    EXPECT_GT(k.theoretical_occupancy_pct, 0);  // 256 threads, 32 regs on cc 9.0
    EXPECT_FALSE(k.occupancy_limiter.empty());
  }
  EXPECT_TRUE(saw_nccl);
}

TEST_P(SummaryTest, ConcurrencyHistogramAndStreams) {
  TraceBuilder b;
  b.Kernel("a", ms(1), ms(2), 7);
  b.Kernel("b", us(1500), ms(3), 8);
  b.Kernel("c", us(1800), us(2500), 9);
  Report r = Analyze(b);
  const DeviceSummary& d = r.summary.devices.at(0);
  EXPECT_EQ(d.concurrency_ns[0], 0u);
  EXPECT_EQ(d.concurrency_ns[1], us(1000));
  EXPECT_EQ(d.concurrency_ns[2], us(800));
  EXPECT_EQ(d.concurrency_ns[3], us(200));
  ASSERT_EQ(r.streams.size(), 3u);
  EXPECT_EQ(r.streams[0].stream_id, 7u);
  EXPECT_EQ(r.streams[0].busy_ns, ms(1));
  EXPECT_NEAR(r.streams[0].busy_pct, 50.0, 1e-9);
  EXPECT_EQ(r.streams[1].busy_ns, us(1500));
}

TEST_P(SummaryTest, IdleGapsAreAttributedToTheirCause) {
  TraceBuilder b;
  // host-wait: B's launch starts 0.5 ms after A ended.
  b.Kernel("A", ms(1), ms(2), 7, ms(1) - us(20), us(3));
  b.Kernel("B", us(2520), ms(3), 7, us(2500), us(3));
  // sync-wait: the host blocks in cudaStreamSynchronize until C ends, then
  // launches D 5 us after it returns.
  b.Kernel("C", us(3020), ms(4), 7, us(2900), us(3));
  b.Api("cudaStreamSynchronize", us(2950), us(4005));
  b.Kernel("D", us(4030), ms(5), 7, us(4010), us(3));
  // kernel-wait: E was queued early; 5 us launch latency.
  b.Kernel("E", us(5005), ms(6), 7, us(4100), us(3));
  // other: F was launched (and returned) long before; it waited anyway.
  b.Kernel("F", us(6500), ms(7), 7, us(5500), us(3));
  Report r = Analyze(b);
  const DeviceSummary& d = r.summary.devices.at(0);
  EXPECT_EQ(d.idle_host_wait_ns, us(520));
  EXPECT_EQ(d.idle_sync_wait_ns, us(30));
  EXPECT_EQ(d.idle_kernel_wait_ns, us(5));
  EXPECT_EQ(d.idle_other_ns, us(500) + us(20));  // F's gap + the 20 us before C
  EXPECT_EQ(d.idle_ns, d.idle_host_wait_ns + d.idle_sync_wait_ns + d.idle_kernel_wait_ns +
                           d.idle_other_ns);
  // One stream: HTA's per-stream attribution sees the same gaps.
  ASSERT_EQ(r.streams.size(), 1u);
  const StreamSummary& s = r.streams[0];
  EXPECT_EQ(s.idle_ns, d.idle_ns);
  EXPECT_EQ(s.idle_host_wait_ns, us(520));
  EXPECT_EQ(s.idle_sync_wait_ns, us(30));
  EXPECT_EQ(s.idle_kernel_wait_ns, us(5));
  EXPECT_EQ(s.idle_other_ns, us(520));
  // Queue: launched (API start) and not finished.
  EXPECT_EQ(s.max_queue_length, 2u);
  EXPECT_NEAR(s.mean_queue_length, 7010.0 / 6020.0, 1e-9);
}

TEST_P(SummaryTest, KernelWaitConstantIsAParameter) {
  TraceBuilder b;
  b.Kernel("A", ms(1), ms(2), 7, us(500), us(3));
  b.Kernel("B", us(2020), ms(3), 7, us(600), us(3));  // 20 us gap, launched early
  AnalysisOptions o;
  ASSERT_TRUE(o.SetFromString("kernel_wait_ns=30us").ok());
  EXPECT_EQ(Analyze(b, o).summary.devices.at(0).idle_kernel_wait_ns, us(20));
  EXPECT_EQ(Analyze(b).summary.devices.at(0).idle_other_ns, us(20));
}

TEST_P(SummaryTest, StepsAutoDetectedFromTopLevelNvtx) {
  TraceBuilder b;
  uint64_t t = ms(1);
  const uint64_t durations[] = {ms(10), ms(12), ms(14), ms(40)};
  for (uint64_t d : durations) {
    b.Nvtx("train_step", t, t + d);
    for (int i = 0; i < 3; ++i) b.Nvtx("forward", t + ms(1) + ms(2) * i, t + ms(2) + ms(2) * i);
    b.Kernel("k", t + ms(1), t + ms(1) + d / 2);
    t += d;
  }
  Report r = Analyze(b);
  const StepSummary& s = r.summary.steps;
  EXPECT_EQ(s.source, "nvtx");
  EXPECT_EQ(s.name, "train_step");
  EXPECT_EQ(s.count, 4u);
  EXPECT_NEAR(s.mean_ns, double(ms(19)), 1e-3);
  EXPECT_EQ(s.p50_ns, ms(12));
  EXPECT_EQ(s.p99_ns, ms(40));
  EXPECT_EQ(s.min_ns, ms(10));
  EXPECT_EQ(s.max_ns, ms(40));
  ASSERT_EQ(s.steps.size(), 4u);
  EXPECT_NEAR(s.steps[0].gpu_utilization_pct, 50.0, 1e-9);
  EXPECT_NEAR(s.mean_gpu_utilization_pct, 50.0, 1e-9);

  AnalysisOptions o;
  o.step_range_name = "forward";
  Report r2 = Analyze(b, o);
  EXPECT_EQ(r2.summary.steps.name, "forward");
  EXPECT_EQ(r2.summary.steps.count, 12u);
  EXPECT_EQ(r2.summary.steps.p50_ns, ms(1));
}

TEST_P(SummaryTest, LibraryRangesAreNeverSteps) {
  // NCCL wraps every call in a range of its "NCCL" domain: more frequent
  // than the app's own ranges, but never its step.
  TraceBuilder b;
  uint32_t nccl = b.trace().Intern("NCCL");
  for (int i = 0; i < 3; ++i) {
    uint64_t t = ms(1) + i * ms(10);
    b.Nvtx("batch", t, t + ms(9));
    for (int j = 0; j < 4; ++j) {
      b.Nvtx("ncclAllReduce", t + ms(9) + j * us(200), t + ms(9) + j * us(200) + us(100), 2);
      b.trace().nvtx_ranges.back().domain_id = nccl;
    }
    b.Kernel("k", t + ms(1), t + ms(2));
  }
  Report r = Analyze(b);
  EXPECT_EQ(r.summary.steps.name, "batch");
  EXPECT_EQ(r.summary.steps.count, 3u);
}

TEST_P(SummaryTest, StepMarkersWinOverNvtx) {
  TraceBuilder b;
  b.Nvtx("iteration", ms(1), ms(2));
  b.Nvtx("iteration", ms(2), ms(3));
  b.Step(0, ms(10));
  b.Step(1, ms(13));
  b.Step(2, ms(17));
  Report r = Analyze(b);
  EXPECT_EQ(r.summary.steps.source, "step_marker");
  EXPECT_EQ(r.summary.steps.count, 2u);
  EXPECT_EQ(r.summary.steps.min_ns, ms(3));
  EXPECT_EQ(r.summary.steps.max_ns, ms(4));
}

TEST_P(SummaryTest, NvtxRangesProjectedOntoTheGpu) {
  TraceBuilder b;
  b.Nvtx("encode", ms(1), ms(2));
  b.Kernel("k1", ms(5), ms(5) + us(100), 7, ms(1) + us(100), us(3));
  b.Kernel("k2", ms(6), ms(6) + us(200), 7, ms(1) + us(500), us(3));
  b.Kernel("k3", ms(7), ms(7) + us(400), 7, ms(3), us(3));  // launched outside
  b.Nvtx("encode", ms(10), ms(11));                          // launches nothing
  b.Nvtx("io", ms(1), ms(4), /*thread=*/2);                  // other thread
  Report r = Analyze(b);
  const NvtxRow* encode = nullptr;
  const NvtxRow* io = nullptr;
  for (const NvtxRow& n : r.nvtx) {
    if (n.name == "encode") encode = &n;
    if (n.name == "io") io = &n;
  }
  ASSERT_NE(encode, nullptr);
  ASSERT_NE(io, nullptr);
  EXPECT_EQ(encode->count, 2u);
  EXPECT_EQ(encode->cpu_total_ns, ms(2));
  EXPECT_EQ(encode->gpu_total_ns, us(300));
  EXPECT_EQ(encode->gpu_ops, 2u);
  EXPECT_NEAR(encode->gpu_share_pct, 300.0 / 700.0 * 100, 1e-9);
  EXPECT_EQ(io->gpu_total_ns, 0u);
  EXPECT_EQ(r.nvtx.front().name, "encode");
}

INSTANTIATE_TEST_SUITE_P(BothPaths, SummaryTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat),
                         [](const auto& info) {
                           return info.param == BuildPath::kDirect ? "direct" : "wire";
                         });

}  // namespace
}  // namespace sightline::analysis
