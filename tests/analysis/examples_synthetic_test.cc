// Golden tests on synthetic timelines shaped like the examples' recordings
// on the H200 (examples/*.cu; durations from the earlier recordings in
// tests/data: a launch call ~6 µs under the profiler, a dependent FP32
// multiply-add chain ~2.3 ns per step, pinned copies ~48 GB/s, pageable
// ~6 GB/s, a 16 MiB 2-GPU all-reduce ~100 µs). Each slow variant must rank its
// expected finding first and the fixed variant must not raise it — the same
// requirement real_traces_test.cc puts on the recordings, checked here before
// any recording exists.
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::BuildPath;
using testing::FindFinding;
using testing::FindingRank;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

constexpr uint64_t kLaunchNs = us(6);  // cudaLaunchKernel under the profiler

// A kernel launched by an API call [api_start, api_start + kLaunchNs] with a
// launch configuration.
uint32_t Launch(TraceBuilder& b, const std::string& name, uint64_t api_start, uint64_t start,
                uint64_t end, uint32_t stream, uint32_t grid, uint32_t block) {
  uint32_t corr = b.Kernel(name, start, end, stream, api_start, kLaunchNs);
  KernelEvent& k = b.trace().kernels.back();
  k.grid_x = grid;
  k.block_x = block;
  k.registers_per_thread = 16;
  return corr;
}

std::string Ranking(const Report& r) {
  std::string s;
  for (const Finding& f : r.findings) {
    s += f.rule + " (" + std::to_string(f.est_saving_ns / 1000) + " us) ";
  }
  return s;
}

class ExampleTimelineTest : public ::testing::TestWithParam<BuildPath> {
 protected:
  Report Analyze(const std::vector<TraceBuilder*>& builders) {
    std::vector<SyntheticTrace> traces;
    for (TraceBuilder* b : builders) traces.push_back(b->trace());
    return testing::AnalyzeTracesAsShipped(traces, GetParam());
  }
  void ExpectFirstAndAbsent(const Report& slow, const Report& fixed, const std::string& rule) {
    ASSERT_FALSE(slow.findings.empty());
    EXPECT_EQ(slow.findings.front().rule, rule) << "slow: " << Ranking(slow);
    EXPECT_EQ(FindFinding(fixed, rule), nullptr) << "fixed: " << Ranking(fixed);
  }
};

// ---- starved_gpu ----------------------------------------------------------
// slow: 24 × (16 ms of CPU preparation, pageable sync H2D 4 MiB, Normalize
// 19 µs, pageable sync D2H). fixed: the raw codes (2 MiB) uploaded pinned and
// async, PrepareOnGpu (~6 µs) and Normalize on the GPU, pinned async D2H, two
// streams; the host only waits for the batch two back.

TraceBuilder StarvedSlow() {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int batch = 0; batch < 24; ++batch) {
    const uint64_t begin = t;
    b.Nvtx("preprocess", t, t + ms(16));
    t += ms(16);
    b.Memcpy(CopyKind::kHtoD, MemoryKind::kPageable, 4 << 20, t + us(100), t + us(800), 7,
             "cudaMemcpy", t, t + us(810), false);
    t += us(810);
    Launch(b, "Normalize(float const*, float*, int, float)", t, t + us(8), t + us(27), 7, 4096, 256);
    t += kLaunchNs;
    b.Memcpy(CopyKind::kDtoH, MemoryKind::kPageable, 4 << 20, t + us(25), t + us(725), 7,
             "cudaMemcpy", t, t + us(740), false);
    t += us(745);
    b.Nvtx("batch", begin, t);
  }
  return b;
}

TraceBuilder StarvedFixed() {
  TraceBuilder b;
  const uint64_t h2d = us(45), prep = us(6), norm = us(19), d2h = us(87);
  uint64_t host = ms(1), h2d_free = 0, d2h_free = 0, kernel_free = 0;
  std::vector<uint64_t> batch_done(24, 0);
  for (int batch = 0; batch < 24; ++batch) {
    const uint32_t stream = 7 + batch % 2;
    const uint64_t begin = host;
    uint64_t wait_end = host + us(2);
    if (batch >= 2) wait_end = std::max(wait_end, batch_done[batch - 2] + us(3));
    b.Api("cudaStreamSynchronize", host, wait_end);
    host = wait_end + us(1);
    // Upload of the raw codes, then the two kernels, then the D2H copy.
    uint64_t s = std::max({host + us(6), h2d_free});
    b.Memcpy(CopyKind::kHtoD, MemoryKind::kPinned, 2 << 20, s, s + h2d, stream, "cudaMemcpyAsync",
             host, host + us(5), true);
    h2d_free = s + h2d;
    const uint64_t prep_api = host + us(5);
    s = std::max({prep_api + kLaunchNs + us(2), h2d_free, kernel_free});
    Launch(b, "PrepareOnGpu(unsigned short const*, float*, int)", prep_api, s, s + prep, stream,
           4096, 256);
    kernel_free = s + prep;
    b.Nvtx("preprocess", host, prep_api + kLaunchNs);
    const uint64_t norm_api = prep_api + kLaunchNs;
    s = std::max(norm_api + kLaunchNs + us(2), kernel_free);
    Launch(b, "Normalize(float const*, float*, int, float)", norm_api, s, s + norm, stream, 4096,
           256);
    kernel_free = s + norm;
    const uint64_t d2h_api = norm_api + kLaunchNs;
    s = std::max({d2h_api + us(7), kernel_free, d2h_free});
    b.Memcpy(CopyKind::kDtoH, MemoryKind::kPinned, 4 << 20, s, s + d2h, stream, "cudaMemcpyAsync",
             d2h_api, d2h_api + us(5), true);
    d2h_free = s + d2h;
    batch_done[batch] = d2h_free;
    host = d2h_api + us(6);
    b.Nvtx("batch", begin, host);
  }
  return b;
}

TEST_P(ExampleTimelineTest, StarvedGpuSlowIsCpuBoundFixedIsNot) {
  TraceBuilder slow = StarvedSlow(), fixed = StarvedFixed();
  Report s = Analyze({&slow}), f = Analyze({&fixed});
  ExpectFirstAndAbsent(s, f, "cpu_bound");
  const Finding* cpu = FindFinding(s, "cpu_bound");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->offenders.at(0).name, "preprocess");
  EXPECT_GT(cpu->est_saving_pct, 80);
  // The fixed pipeline keeps the GPU busy: (copies back to back) well over
  // half of its window.
  EXPECT_GT(f.summary.devices.at(0).gpu_utilization_pct, 80) << Ranking(f);
}

// ---- fragmented_kernels ---------------------------------------------------
// slow: 400 × (8 kernels of ~1.5 µs, each launch ~6 µs, then
// cudaStreamSynchronize). fixed: 20 fused kernels of 20 steps each (~94 µs),
// launched back to back.

TraceBuilder FragmentedSlow() {
  TraceBuilder b;
  uint64_t host = ms(1) + us(20), gpu = 0;
  for (int step = 0; step < 400; ++step) {
    for (int op = 0; op < 8; ++op) {
      uint64_t start = std::max(host + kLaunchNs + us(1), gpu);
      Launch(b, "Axpb(float*, int, float, float, int)", host, start, start + us(1.5), 7, 16, 256);
      gpu = start + us(1.5);
      host += kLaunchNs;
    }
    uint64_t end = std::max(host, gpu) + us(8);
    b.Api("cudaStreamSynchronize", host, end);
    host = end + us(1);
  }
  return b;
}

TraceBuilder FragmentedFixed() {
  TraceBuilder b;
  uint64_t host = ms(1) + us(20), gpu = 0;
  for (int launch = 0; launch < 20; ++launch) {
    uint64_t start = std::max(host + kLaunchNs + us(1), gpu);
    Launch(b, "FusedSteps(float*, int, Coefficients, float, int, int)", host, start,
           start + us(94), 7, 16, 256);
    gpu = start + us(94);
    host += kLaunchNs;
  }
  b.Api("cudaStreamSynchronize", host, gpu + us(8));
  return b;
}

TEST_P(ExampleTimelineTest, FragmentedKernelsSlowIsFragmentedFixedIsNot) {
  TraceBuilder slow = FragmentedSlow(), fixed = FragmentedFixed();
  Report s = Analyze({&slow}), f = Analyze({&fixed});
  // The launch path is the root cause; many short kernels are its symptom.
  ExpectFirstAndAbsent(s, f, "launch_bound");
  bool folded = false;
  for (const std::string& x : s.findings.front().symptoms) folded |= x == "kernel_fragmentation";
  EXPECT_TRUE(folded) << Ranking(s);
  EXPECT_EQ(FindFinding(f, "sync_api"), nullptr) << Ranking(f);
}

// ---- serialized_streams ---------------------------------------------------
// 20 rounds × 4 chains of Spin<<<33, 128>>> (~91 µs), every launch issued up
// front. slow: one stream; fixed: one stream per chain (together 132 blocks).

TraceBuilder SerializedStreams(bool four_streams) {
  TraceBuilder b;
  b.Api("cudaDeviceSynchronize", ms(1) + us(4), ms(1) + us(6));
  uint64_t host = ms(1) + us(8);
  std::vector<uint64_t> stream_free(4, 0);
  for (int round = 0; round < 20; ++round) {
    for (int chain = 0; chain < 4; ++chain) {
      const int s = four_streams ? chain : 0;
      uint64_t start = std::max(host + kLaunchNs + us(1), stream_free[s]);
      Launch(b, "Spin(float*, int)", host, start, start + us(91), 7 + s, 33, 128);
      stream_free[s] = start + us(91);
      if (!four_streams) {
        for (uint64_t& f : stream_free) f = std::max(f, start + us(91));
      }
      host += kLaunchNs;
    }
  }
  uint64_t end = *std::max_element(stream_free.begin(), stream_free.end());
  b.Api("cudaDeviceSynchronize", host, end + us(5));
  b.Memcpy(CopyKind::kDtoH, MemoryKind::kPageable, 67584, end + us(15), end + us(25), 7,
           "cudaMemcpy", end + us(8), end + us(30), false);
  return b;
}

TEST_P(ExampleTimelineTest, SerializedStreamsSlowIsSerializedFixedIsNot) {
  TraceBuilder slow = SerializedStreams(false), fixed = SerializedStreams(true);
  // Every rule's own saving over the whole trace (the ranking of a
  // scheduling finding against the kernel finding it explains).
  Report s = testing::AnalyzeTraces({slow.trace()}, GetParam());
  Report f = testing::AnalyzeTraces({fixed.trace()}, GetParam());
  ExpectFirstAndAbsent(s, f, "stream_serialization");
  const Finding* serial = FindFinding(s, "stream_serialization");
  ASSERT_NE(serial, nullptr);
  EXPECT_EQ(serial->EvidenceNumber("small_kernels"), 80);
  EXPECT_GE(serial->EvidenceNumber("queued_pct"), 95);
  // small_grid describes the same idle SMs (33 of 132 busy) by the same
  // model, Σ duration × (1 − blocks / SMs): raised with the same saving, and
  // ranked right after the scheduling finding.
  const Finding* grid = FindFinding(s, "small_grid");
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->est_saving_ns, serial->est_saving_ns);
  EXPECT_NEAR(serial->EvidenceNumber("mean_fill_pct"), 100.0 * 33 / 132, 0.01);
  EXPECT_EQ(FindingRank(s, "small_grid"), 1) << Ranking(s);
  // Fixed: the four chains together fill the 132 SMs.
  EXPECT_EQ(FindFinding(f, "small_grid"), nullptr) << Ranking(f);
}

// ---- nccl_allreduce -------------------------------------------------------
// Steady state only (captured between cudaProfilerStart/Stop), 2 ranks,
// 50 iterations of Compute (~100 µs, 16384 blocks) and a 16 MiB all-reduce
// (~100 µs, 16 blocks). slow: one stream, sync after the compute; fixed: the
// all-reduce on its own stream beside the next compute.

TraceBuilder Nccl(int rank, bool fixed) {
  TraceBuilder b(rank);
  uint64_t host = ms(1), compute_free = 0, comm_free = 0;
  for (int i = 0; i < 50; ++i) {
    const uint32_t compute_stream = fixed ? 14 : 13;
    uint64_t start = std::max({host + kLaunchNs + us(1), compute_free, fixed ? 0 : comm_free});
    Launch(b, "Compute(float*, int, int)", host, start, start + us(100), compute_stream, 16384,
           256);
    compute_free = start + us(100);
    host += kLaunchNs;
    if (!fixed) {
      b.Api("cudaStreamSynchronize", host, compute_free + us(5));
      host = compute_free + us(6);
    }
    // ncclAllReduce: ~12 µs on the host before its launch.
    const uint64_t api = host + us(12);
    start = std::max({api + kLaunchNs + us(1), comm_free, fixed ? 0 : compute_free});
    b.NcclKernel(start, start + us(100), 13, api);
    KernelEvent& k = b.trace().kernels.back();
    k.grid_x = 16;
    k.block_x = 640;
    comm_free = start + us(100);
    if (!fixed) compute_free = comm_free;
    host = api + kLaunchNs + us(2);
  }
  b.Api("cudaStreamSynchronize", host, std::max(comm_free, compute_free) + us(5));
  return b;
}

TEST_P(ExampleTimelineTest, NcclAllreduceSlowHasExposedCommunicationFixedDoesNot) {
  TraceBuilder s0 = Nccl(0, false), s1 = Nccl(1, false);
  TraceBuilder f0 = Nccl(0, true), f1 = Nccl(1, true);
  Report s = Analyze({&s0, &s1}), f = Analyze({&f0, &f1});
  ExpectFirstAndAbsent(s, f, "comm_compute_overlap");
  // The NCCL kernels' 16 blocks are no stream_serialization case.
  EXPECT_EQ(FindFinding(s, "stream_serialization"), nullptr) << Ranking(s);
  // One finding for the cause on both ranks; its saving is the replay's
  // (the all-reduce on a stream of its own, the synchronize before each
  // collective gone), close to what the fixed variant gains.
  int overlap_findings = 0;
  for (const Finding& x : s.findings) overlap_findings += x.rule == "comm_compute_overlap";
  EXPECT_EQ(overlap_findings, 1) << Ranking(s);
  const Finding& first = s.findings.front();
  EXPECT_NE(first.scope.find("rank 0"), std::string::npos) << first.scope;
  EXPECT_NE(first.scope.find("rank 1"), std::string::npos) << first.scope;
  // One per iteration of the analysed (steady-state) window, of 50.
  EXPECT_GE(first.EvidenceNumber("syncs_before_collectives"), 40);
  EXPECT_LE(first.EvidenceNumber("syncs_before_collectives"), 50);
  double gained = 100.0 * (1.0 - double(f.summary.window_ns) / double(s.summary.window_ns));
  EXPECT_NEAR(first.est_saving_pct, gained, 0.3 * gained)
      << "window " << s.summary.window_ns << " -> " << f.summary.window_ns;
  // The synchronizes belong to this fix: no sync_api finding claims them.
  EXPECT_EQ(FindFinding(s, "sync_api"), nullptr) << Ranking(s);
}

INSTANTIATE_TEST_SUITE_P(BothPaths, ExampleTimelineTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat));

}  // namespace
}  // namespace sightline::analysis
