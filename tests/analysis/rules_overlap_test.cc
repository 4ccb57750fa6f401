// Golden tests of the overlap rules (pageable copies, stream concurrency,
// copy/compute and communication/compute overlap, NCCL straggler).
#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::BuildPath;
using testing::FindFinding;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

class OverlapRuleTest : public ::testing::TestWithParam<BuildPath> {
 protected:
  Report Analyze(const std::vector<SyntheticTrace>& traces) {
    return testing::AnalyzeTraces(traces, GetParam());
  }
  Report Analyze(const TraceBuilder& b) { return Analyze(std::vector<SyntheticTrace>{b.trace()}); }
};

// ---- pageable_memcpy ------------------------------------------------------

TraceBuilder UploadTrace(MemoryKind kind) {
  TraceBuilder b;
  const uint64_t bytes = 10'000'000;
  // One pinned reference copy: 10 MB in 250 us = 40 GB/s.
  b.Memcpy(CopyKind::kHtoD, MemoryKind::kPinned, bytes, ms(1), ms(1) + us(250), 9,
           "cudaMemcpyAsync", ms(1) - us(10), ms(1) - us(5), true);
  for (int k = 0; k < 5; ++k) {
    uint64_t start = ms(2) + k * ms(2);
    uint64_t duration = kind == MemoryKind::kPageable ? ms(1) : us(250);
    b.Memcpy(CopyKind::kHtoD, kind, bytes, start, start + duration, 9, "cudaMemcpyAsync",
             start - us(10), start - us(5), true);
  }
  return b;
}

TEST_P(OverlapRuleTest, PageableAsyncCopiesFire) {
  Report report = Analyze(UploadTrace(MemoryKind::kPageable));
  const Finding* f = FindFinding(report, "pageable_memcpy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("pageable_async_copies"), 5);
  EXPECT_EQ(f->EvidenceNumber("bytes"), 5 * 10e6);
  EXPECT_NEAR(f->EvidenceNumber("observed_gbps"), 10.0, 1e-9);
  EXPECT_EQ(f->est_saving_ns, 5 * us(750));
  EXPECT_FALSE(f->offenders.empty());
}

TEST_P(OverlapRuleTest, PinnedCopiesAreSilent) {
  EXPECT_EQ(FindFinding(Analyze(UploadTrace(MemoryKind::kPinned)), "pageable_memcpy"), nullptr);
}

// PyTorch's `.cuda()` without non_blocking is cudaMemcpyAsync from pageable
// memory followed by cudaStreamSynchronize on the same thread. The fix
// (pinned memory, non_blocking=True) drops that wait with the copy: the
// replay gives the same saving whether the trace has the wait or not (it
// did not, and the H200 sync_slow pair's estimate was 0.45 of the measured
// change). A download's wait stays: the host reads what it waited for.
TraceBuilder CopyThenComputeTrace(CopyKind kind, bool trailing_sync) {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int step = 0; step < 20; ++step) {
    // 8 MB at 8 GB/s: the call returns when the copy is done.
    b.Memcpy(kind, MemoryKind::kPageable, 8'000'000, t + us(10), t + us(1010), 7,
             "cudaMemcpyAsync_v3020", t, t + us(1012), true);
    t += us(1015);
    if (trailing_sync) {
      b.Api("cudaStreamSynchronize_v3020", t, t + us(3));
      t += us(5);
    }
    for (int k = 0; k < 5; ++k) {  // host-bound launches: 200 us of Python each
      t += us(195);
      b.Kernel("k", t + us(10), t + us(110), 7, t, us(5));
      t += us(5);
    }
  }
  return b;
}

TEST_P(OverlapRuleTest, TheWaitAfterAnUploadGoesWithThePinnedFix) {
  AnalysisOptions only;  // the copy fix alone (no other fix applied before it), replayed
  only.only_rules = {"pageable_memcpy"};
  only.params["root_causes"] = 1;
  auto saving = [&](CopyKind kind, bool sync) {
    Report r = testing::AnalyzeTraces({CopyThenComputeTrace(kind, sync).trace()}, GetParam(), only);
    const Finding* f = FindFinding(r, "pageable_memcpy");
    EXPECT_NE(f, nullptr);
    return f == nullptr ? 0.0 : f->est_saving_pct;
  };
  const double upload_plain = saving(CopyKind::kHtoD, false);
  const double upload_sync = saving(CopyKind::kHtoD, true);
  EXPECT_GT(upload_plain, 30.0);
  EXPECT_NEAR(upload_sync, upload_plain, 1.0) << "the .cuda() wait goes with the copy";
  const double download_plain = saving(CopyKind::kDtoH, false);
  const double download_sync = saving(CopyKind::kDtoH, true);
  EXPECT_LT(download_sync, download_plain - 5.0) << "the host still waits for what it reads";
}

// ---- stream_serialization -------------------------------------------------

TEST_P(OverlapRuleTest, SerializedStreamsFire) {
  TraceBuilder b;
  b.Kernel("a", ms(1), ms(2), 7);
  b.Kernel("b", ms(2), ms(3), 8);
  b.Kernel("a", ms(3), ms(4), 7);
  b.Kernel("b", ms(4), ms(5), 8);
  Report report = Analyze(b);
  const Finding* f = FindFinding(report, "stream_serialization");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("streams_used"), 2);
  EXPECT_EQ(f->EvidenceNumber("overlap_possible_ns"), double(ms(2)));
  EXPECT_EQ(f->EvidenceNumber("overlap_achieved_ns"), 0);
  EXPECT_EQ(f->est_saving_ns, ms(1));
  EXPECT_NEAR(f->est_saving_pct, 25.0, 1e-9);
  ASSERT_EQ(f->offenders.size(), 2u);
}

TEST_P(OverlapRuleTest, ConcurrentStreamsAreSilent) {
  TraceBuilder b;
  b.Kernel("a", ms(1), ms(3), 7);
  b.Kernel("b", us(1500), us(3500), 8);
  EXPECT_EQ(FindFinding(Analyze(b), "stream_serialization"), nullptr);
}

TraceBuilder SmallKernelChains(bool four_streams) {
  TraceBuilder b;
  KernelEvent spin;
  spin.grid_x = 8;  // 8 blocks on 132 SMs
  spin.block_x = 128;
  spin.registers_per_thread = 16;
  for (int round = 0; round < 5; ++round) {
    for (int chain = 0; chain < 4; ++chain) {
      uint64_t start = four_streams ? ms(1) + round * us(120) + chain * us(2)
                                    : ms(1) + (round * 4 + chain) * us(100);
      b.KernelWithConfig("spin", start, start + us(100), spin,
                         four_streams ? 7 + chain : 7);
    }
  }
  return b;
}

TEST_P(OverlapRuleTest, SmallKernelsSerialisedOnOneStreamFire) {
  Report r = Analyze(SmallKernelChains(false));
  const Finding* f = FindFinding(r, "stream_serialization");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("small_kernels"), 20);
  EXPECT_EQ(f->EvidenceNumber("small_kernel_ns"), double(ms(2)));
  EXPECT_EQ(f->EvidenceNumber("overlap_achieved_ns"), 0);
  // The SM time the kernels leave idle: 2 ms × (1 − 8 / 132 SMs).
  EXPECT_NEAR(double(f->est_saving_ns), double(ms(2)) * (1.0 - 8.0 / 132.0), 1.0);
  EXPECT_EQ(f->offenders.at(0).name, "spin");
}

TEST_P(OverlapRuleTest, SmallKernelsOnFourStreamsAreSilent) {
  EXPECT_EQ(FindFinding(Analyze(SmallKernelChains(true)), "stream_serialization"), nullptr);
}

TEST_P(OverlapRuleTest, LargeKernelsOnOneStreamAreSilent) {
  TraceBuilder b;  // the default grid (264 blocks) fills the GPU
  for (int i = 0; i < 20; ++i) b.Kernel("big", ms(1) + i * us(100), ms(1) + (i + 1) * us(100));
  EXPECT_EQ(FindFinding(Analyze(b), "stream_serialization"), nullptr);
}

// ---- copy_compute_overlap -------------------------------------------------

TEST_P(OverlapRuleTest, ExposedCopiesFire) {
  TraceBuilder b;
  b.Kernel("k", ms(1), ms(2));
  b.Memcpy(CopyKind::kHtoD, MemoryKind::kPinned, 4'000'000, ms(2), ms(3), 9, "cudaMemcpyAsync",
           ms(1), ms(1) + us(5), true);
  b.Kernel("k", ms(3), ms(4));
  b.Memcpy(CopyKind::kDtoH, MemoryKind::kPinned, 4'000'000, ms(4), ms(5), 9, "cudaMemcpyAsync",
           ms(3), ms(3) + us(5), true);
  b.Kernel("k", ms(5), ms(6));
  Report report = Analyze(b);
  const Finding* f = FindFinding(report, "copy_compute_overlap");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("copy_ns"), double(ms(2)));
  EXPECT_EQ(f->EvidenceNumber("overlapped_ns"), 0);
  EXPECT_NEAR(f->EvidenceNumber("exposed_pct_of_window"), 40.0, 1e-9);
  EXPECT_EQ(f->est_saving_ns, ms(2));
  ASSERT_EQ(f->offenders.size(), 2u);
  EXPECT_EQ(f->offenders[0].total_ns, ms(1));
}

TEST_P(OverlapRuleTest, OverlappedCopiesAreSilent) {
  TraceBuilder b;
  b.Kernel("k", ms(1), ms(4));
  b.Memcpy(CopyKind::kHtoD, MemoryKind::kPinned, 4'000'000, us(1500), us(2500), 9,
           "cudaMemcpyAsync", ms(1), ms(1) + us(5), true);
  b.Memcpy(CopyKind::kDtoH, MemoryKind::kPinned, 4'000'000, us(2500), us(3500), 9,
           "cudaMemcpyAsync", ms(1), ms(1) + us(5), true);
  EXPECT_EQ(FindFinding(Analyze(b), "copy_compute_overlap"), nullptr);
}

// ---- comm_compute_overlap -------------------------------------------------

TEST_P(OverlapRuleTest, ExposedCommunicationFires) {
  TraceBuilder b(0);
  b.Kernel("gemm", ms(1), ms(3));
  b.NcclKernel(ms(3), ms(5));
  b.Kernel("gemm", ms(5), ms(6));
  Report report = Analyze(b);
  const Finding* f = FindFinding(report, "comm_compute_overlap");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("comm_ns"), double(ms(2)));
  EXPECT_NEAR(f->EvidenceNumber("comm_pct"), 40.0, 1e-9);
  EXPECT_NEAR(f->EvidenceNumber("comm_pct_of_busy"), 40.0, 1e-9);
  EXPECT_EQ(f->EvidenceNumber("overlap_of_possible_pct"), 0);
  EXPECT_EQ(f->EvidenceNumber("overlap_pct"), 0);
  EXPECT_EQ(f->est_saving_ns, ms(2));
  EXPECT_EQ(f->offenders.at(0).name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
}

TEST_P(OverlapRuleTest, OverlappedCommunicationIsSilent) {
  TraceBuilder b(0);
  b.Kernel("gemm", ms(1), ms(3));
  b.NcclKernel(ms(1), ms(3));
  b.Kernel("gemm", ms(3), ms(4));
  Report r = Analyze(b);
  EXPECT_EQ(FindFinding(r, "comm_compute_overlap"), nullptr);
  ASSERT_EQ(r.nccl.size(), 1u);
  EXPECT_NEAR(r.nccl[0].overlap_pct, 100.0, 1e-9);
}

TEST_P(OverlapRuleTest, CommunicationLongerThanComputeButFullyHidingItIsSilent) {
  // HTA's overlap is 25% here (1 ms of 4 ms), but all the compute there is
  // runs under communication: nothing more to hide.
  TraceBuilder b(0);
  b.NcclKernel(ms(1), ms(5));
  b.Kernel("gemm", ms(2), ms(3));
  Report r = Analyze(b);
  EXPECT_EQ(FindFinding(r, "comm_compute_overlap"), nullptr);
  EXPECT_NEAR(r.nccl.at(0).overlap_pct, 25.0, 1e-9);
}

// ---- nccl_straggler -------------------------------------------------------

std::vector<SyntheticTrace> FourRanks(bool rank2_slow) {
  std::vector<SyntheticTrace> traces;
  const uint64_t realtime = 1'800'000'000'000'000'000ull;
  for (int rank = 0; rank < 4; ++rank) {
    TraceBuilder b(rank, "rank" + std::to_string(rank));
    // Every rank's collector clock has its own origin (skew up to 7 s).
    uint64_t skew = rank == 2 ? ms(7000) : ms(10) * rank;
    b.SetClock(ms(100) + skew, realtime);
    for (int k = 0; k < 5; ++k) {
      uint64_t base = ms(1) + k * ms(5) + skew + ms(100);
      uint64_t compute = (rank2_slow && rank == 2) ? ms(3) : ms(2);
      b.Kernel("gemm", base, base + compute);
      b.NcclKernel(base + compute, base + us(3500));
    }
    traces.push_back(b.trace());
  }
  return traces;
}

TEST_P(OverlapRuleTest, NcclStragglerFindsTheLateRankAcrossClockSkew) {
  Report r = Analyze(FourRanks(true));
  const Finding* f = FindFinding(r, "nccl_straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("straggler_rank"), 2);
  EXPECT_EQ(f->EvidenceNumber("ranks"), 4);
  EXPECT_EQ(f->EvidenceNumber("collectives_matched"), 5);
  EXPECT_EQ(f->EvidenceNumber("mean_arrival_delay_ns"), double(ms(1)));
  EXPECT_EQ(f->EvidenceNumber("last_arrivals"), 5);
  EXPECT_EQ(f->est_saving_ns, 5 * ms(1));
  EXPECT_EQ(f->scope, "rank 2");
  EXPECT_EQ(r.summary.devices.size(), 4u);
}

TEST_P(OverlapRuleTest, BalancedRanksHaveNoStraggler) {
  EXPECT_EQ(FindFinding(Analyze(FourRanks(false)), "nccl_straggler"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(BothPaths, OverlapRuleTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat),
                         [](const auto& info) {
                           return info.param == BuildPath::kDirect ? "direct" : "wire";
                         });

}  // namespace
}  // namespace sightline::analysis
