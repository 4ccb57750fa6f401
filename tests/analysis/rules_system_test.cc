// Golden tests of the system-level rules (GPU idle, CPU-bound, fragmentation,
// synchronization, launch latency): each must fire on its synthetic trace with
// the expected numbers and stay silent on the fixed variant. Every trace is
// analysed twice: built directly, and through the .sltrace wire format.
#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/text_util.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::BuildPath;
using testing::FindFinding;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

class SystemRuleTest : public ::testing::TestWithParam<BuildPath> {
 protected:
  Report Analyze(const TraceBuilder& b, const AnalysisOptions& o = {}) {
    return testing::AnalyzeTraces({b.trace()}, GetParam(), o);
  }
};

// ---- gpu_idle -------------------------------------------------------------

TraceBuilder IdleGapsTrace(uint64_t gap) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    uint64_t start = ms(1) + i * (ms(1) + gap);
    b.Kernel("step_kernel", start, start + ms(1));
  }
  return b;
}

TEST_P(SystemRuleTest, GpuIdleFiresOnLongHostWaitGaps) {
  Report r = Analyze(IdleGapsTrace(ms(1)));
  const Finding* f = FindFinding(r, "gpu_idle");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->est_saving_ns, ms(9));
  EXPECT_NEAR(f->est_saving_pct, 100.0 * 9 / 19, 1e-9);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_EQ(f->EvidenceNumber("gap_count"), 9);
  EXPECT_EQ(f->EvidenceNumber("longest_gap_ns"), double(ms(1)));
  EXPECT_EQ(f->EvidenceNumber("host_wait_ns"), double(ms(9)));
  EXPECT_EQ(f->EvidenceNumber("sync_wait_ns"), 0);
  EXPECT_EQ(f->scope, "device 0");
  ASSERT_EQ(f->offenders.size(), 5u);
  EXPECT_EQ(f->offenders[0].total_ns, ms(1));
  EXPECT_FALSE(f->recommendation.empty());
}

TEST_P(SystemRuleTest, GpuIdleLeavesProfilerGapsOut) {
  // As at a capture start on the H200: the host spends 5.35 ms inside CUPTI
  // (a host-side overhead record) during the first launch; the GPU idles.
  TraceBuilder b;
  b.Kernel("warm", ms(1), ms(1) + us(100), 7, ms(1) - us(10), us(5));
  b.Kernel("first", ms(6.6), ms(6.7), 7, ms(1.2), ms(5.39));
  b.Overhead(ms(1.24), ms(6.59), 1, kHostOverheadDevice);
  for (int i = 0; i < 40; ++i) {
    uint64_t t = ms(6.7) + i * us(110);
    b.Kernel("next", t + us(10), t + us(110), 7, t, us(5));
  }
  Report r = Analyze(b);
  EXPECT_EQ(FindFinding(r, "gpu_idle"), nullptr);
  EXPECT_EQ(FindFinding(r, "cpu_bound"), nullptr);
  EXPECT_EQ(FindFinding(r, "gpu_low_utilization"), nullptr);
  EXPECT_EQ(FindFinding(r, "launch_latency"), nullptr);
  ASSERT_FALSE(r.summary.devices.empty());
  EXPECT_EQ(r.summary.devices[0].idle_profiler_ns, ms(6.6) - (ms(1) + us(100)));
  EXPECT_EQ(r.summary.devices[0].idle_host_wait_ns, 0u);
  // Lazy function loading (5 << 16) happens without a profiler too: the
  // same gap is then the app's (host-wait), and so is the long launch.
  b.trace().overheads.back().overhead_kind = 5u << 16;
  Report app = Analyze(b);
  EXPECT_EQ(app.summary.devices[0].idle_profiler_ns, 0u);
  EXPECT_GT(app.summary.devices[0].idle_host_wait_ns, 0u);
  EXPECT_NE(FindFinding(app, "launch_latency"), nullptr);
}

TEST_P(SystemRuleTest, GpuIdleSilentWhenGapsAreShort) {
  Report r = Analyze(IdleGapsTrace(us(50)));
  EXPECT_EQ(FindFinding(r, "gpu_idle"), nullptr);
}

TEST_P(SystemRuleTest, GpuIdleThresholdIsConfigurable) {
  AnalysisOptions o;
  ASSERT_TRUE(o.SetFromString("gpu_idle.min_gap_ns=20us").ok());
  ASSERT_TRUE(o.SetFromString("gpu_idle.min_idle_pct=1").ok());
  Report report = Analyze(IdleGapsTrace(us(50)), o);
  const Finding* f = FindFinding(report, "gpu_idle");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->est_saving_ns, 9 * us(50));
}

// ---- gpu_low_utilization --------------------------------------------------

TEST_P(SystemRuleTest, LowUtilizationChunksAreFlagged) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) b.Kernel("sparse", ms(1) + ms(i), ms(1) + ms(i) + us(100));
  for (int j = 0; j < 20; ++j) b.Kernel("dense", ms(11) + ms(j), ms(12) + ms(j));
  Report report = Analyze(b);
  const Finding* f = FindFinding(report, "gpu_low_utilization");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("chunks_flagged"), 10);
  EXPECT_EQ(f->EvidenceNumber("chunk_ns"), double(ms(1)));
  EXPECT_NEAR(f->EvidenceNumber("flagged_mean_util_pct"), 10.0, 1e-9);
  EXPECT_EQ(f->est_saving_ns, ms(9));
  EXPECT_NEAR(f->est_saving_pct, 30.0, 1e-9);
}

TEST_P(SystemRuleTest, LowUtilizationSilentWhenBusy) {
  TraceBuilder b;
  for (int j = 0; j < 30; ++j) b.Kernel("dense", ms(1) + ms(j), ms(2) + ms(j));
  EXPECT_EQ(FindFinding(Analyze(b), "gpu_low_utilization"), nullptr);
}

// ---- cpu_bound --------------------------------------------------------------

// `encode` names the CPU span of each step; "%d" in it is replaced by the
// step's index (PyTorch's ranges carry a per-instance ", op_id = N").
TraceBuilder ClipEncodeTrace(bool overlapped, const std::string& encode = "clip.encode") {
  TraceBuilder b;
  for (int i = 0; i < 5; ++i) {
    uint64_t t = ms(1) + i * ms(3);
    b.Nvtx("step", t, t + ms(3));
    std::string name = encode;
    if (size_t at = name.find("%d"); at != std::string::npos) {
      name.replace(at, 2, std::to_string(4187 + i));
    }
    b.Nvtx(name, t, t + ms(2));
    if (overlapped) {
      // The GPU work of step i runs while the CPU encodes step i+1.
      uint64_t start = ms(3) + us(20) + i * ms(3);
      b.Kernel("clip_forward", start, start + ms(3), 7, t + ms(2), us(3));
    } else {
      b.Kernel("clip_forward", t + ms(2) + us(20), t + ms(3), 7, t + ms(2), us(3));
    }
  }
  return b;
}

TEST_P(SystemRuleTest, CpuBoundNamesTheCpuSpanThatMakesTheGpuWait) {
  Report report = Analyze(ClipEncodeTrace(false));
  const Finding* f = FindFinding(report, "cpu_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->est_saving_ns, 4 * us(2020));
  EXPECT_NEAR(f->EvidenceNumber("host_wait_pct_of_window"), 100.0 * 8080 / 12980, 1e-6);
  EXPECT_NEAR(f->EvidenceNumber("host_wait_pct_of_idle"), 100.0, 1e-9);
  EXPECT_EQ(f->EvidenceNumber("uncovered_ns"), 0);
  ASSERT_GE(f->offenders.size(), 2u);
  EXPECT_EQ(f->offenders[0].name, "clip.encode");
  EXPECT_EQ(f->offenders[0].count, 4u);
  EXPECT_EQ(f->offenders[0].total_ns, ms(8));
  EXPECT_EQ(f->offenders[1].name, "step");
  EXPECT_EQ(f->offenders[1].total_ns, 4 * us(20));
  EXPECT_NE(f->recommendation.find("clip.encode"), std::string::npos);
}

// PyTorch's record_function ranges (`--pytorch`) differ per instance only by
// their ", op_id = N": one offender for all of them, and one NVTX table row
// (a real DataLoader trace listed 17 offenders and 9 134 table rows of one
// instance each).
TEST_P(SystemRuleTest, CpuBoundGroupsPytorchRangeInstances) {
  const std::string next = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  Report report = Analyze(ClipEncodeTrace(false, next + ", op_id = %d"));
  const Finding* f = FindFinding(report, "cpu_bound");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->offenders.empty());
  EXPECT_EQ(f->offenders[0].name, next);
  EXPECT_EQ(f->offenders[0].count, 4u);
  EXPECT_EQ(f->offenders[0].total_ns, ms(8));
  const NvtxRow* row = nullptr;
  for (const NvtxRow& r : report.nvtx) {
    if (r.name == next) row = &r;
  }
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->count, 5u);
  EXPECT_EQ(report.nvtx.size(), 2u) << "step and the DataLoader's __next__";
}

// Without Python stacks, launch_bound's offenders are the kernels whose
// launches take the host's launch path time.
TEST_P(SystemRuleTest, LaunchBoundNamesTheKernelsOfTheLaunchPath) {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int i = 0; i < 300; ++i) {  // 25 us of host per launch, 2 us kernels
    t += us(20);
    b.Kernel(i % 3 ? "elementwise" : "reduce", t + us(8), t + us(10), 7, t, us(5));
    t += us(5);
  }
  Report report = Analyze(b);
  const Finding* f = FindFinding(report, "launch_bound");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->offenders.size(), 2u);
  EXPECT_EQ(f->offenders[0].name, "elementwise");
  EXPECT_EQ(f->offenders[0].count, 200u);
  EXPECT_EQ(f->offenders[0].total_ns, 200 * us(25));
  EXPECT_EQ(f->offenders[1].name, "reduce");
  EXPECT_NEAR(f->offenders[0].share_pct, 100.0 * 200 * 25 / (300 * 25 - 20), 1e-6);
  EXPECT_EQ(f->EvidenceNumber("launch_path_ns"), double(300 * us(25) - us(20)));
}

TEST(RangeGroupName, StripsPytorchsPerInstanceAnnotations) {
  EXPECT_EQ(RangeGroupName("aten::mm, seq = 12, op_id = 3, sizes = [[8, 4], [4, 2]]"), "aten::mm");
  EXPECT_EQ(RangeGroupName("aten::copy_, op_id = 4803"), "aten::copy_");
  EXPECT_EQ(RangeGroupName("aten::add, sizes = [[2], [2]], input_op_ids = [1, 2]"), "aten::add");
  EXPECT_EQ(RangeGroupName("train_step"), "train_step");
  EXPECT_EQ(RangeGroupName("load, resize"), "load, resize") << "a user's comma stays";
}

TEST_P(SystemRuleTest, CpuBoundSilentWhenCpuWorkOverlapsGpu) {
  Report r = Analyze(ClipEncodeTrace(true));
  EXPECT_EQ(FindFinding(r, "cpu_bound"), nullptr);
  EXPECT_EQ(FindFinding(r, "gpu_idle"), nullptr);
}

// ---- kernel_fragmentation -------------------------------------------------

TraceBuilder ManyKernelsTrace(uint64_t duration) {
  TraceBuilder b;
  for (int i = 0; i < 200; ++i) {
    uint64_t start = ms(1) + i * (duration + us(8));
    b.Kernel(i % 2 ? "add" : "mul", start, start + duration, 7, start - us(7), us(5));
  }
  return b;
}

TEST_P(SystemRuleTest, KernelFragmentationFiresOnManyShortKernels) {
  Report r = Analyze(ManyKernelsTrace(us(5)));
  const Finding* f = FindFinding(r, "kernel_fragmentation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("short_kernels"), 200);
  EXPECT_NEAR(f->EvidenceNumber("short_share_pct"), 100.0, 1e-9);
  EXPECT_EQ(f->EvidenceNumber("mean_short_kernel_ns"), double(us(5)));
  EXPECT_EQ(f->EvidenceNumber("mean_launch_api_ns"), double(us(5)));
  EXPECT_NEAR(f->EvidenceNumber("launch_overhead_ratio"), 1.0, 1e-9);
  EXPECT_EQ(f->est_saving_ns, 199 * us(8));
  EXPECT_NEAR(f->est_saving_pct, 100.0 * 1592 / 2592, 1e-9);
  ASSERT_EQ(f->offenders.size(), 2u);
  EXPECT_EQ(f->offenders[0].count, 100u);
  EXPECT_EQ(r.findings.front().rule, "kernel_fragmentation");
}

TEST_P(SystemRuleTest, KernelFragmentationSilentForLongKernels) {
  EXPECT_EQ(FindFinding(Analyze(ManyKernelsTrace(us(100))), "kernel_fragmentation"), nullptr);
}

// ---- sync_api ---------------------------------------------------------------

TraceBuilder SyncLoopTrace(bool synchronize) {
  TraceBuilder b;
  uint32_t stack = b.Stack({"cudaStreamSynchronize", "train_loop", "main"});
  uint64_t t = ms(1);
  for (int i = 0; i < 20; ++i) {
    uint64_t start = t + us(15);
    uint64_t end = start + ms(1);
    if (synchronize) {
      b.Kernel("k", start, end, 7, t, us(3));
      b.Api("cudaStreamSynchronize", t + us(5), end + us(5), 1, stack);
      t = end + us(10);
    } else {
      b.Kernel("k", ms(1) + us(15) + i * ms(1), ms(1) + us(15) + (i + 1) * ms(1), 7,
               ms(1) + i * us(10), us(3));
    }
  }
  return b;
}

TEST_P(SystemRuleTest, SyncApiFiresWithCallSites) {
  Report report = Analyze(SyncLoopTrace(true));
  const Finding* f = FindFinding(report, "sync_api");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("sync_calls"), 20);
  EXPECT_EQ(f->EvidenceNumber("gpu_idle_caused_ns"), double(19 * us(25)));
  EXPECT_EQ(f->EvidenceNumber("sync_wait_gaps"), 19);
  EXPECT_EQ(f->EvidenceNumber("host_blocked_ns"), double(20 * us(1015)));
  EXPECT_EQ(f->est_saving_ns, 19 * us(25));
  EXPECT_NEAR(f->est_saving_pct, 100.0 * 475 / 20475, 1e-9);
  ASSERT_EQ(f->offenders.size(), 1u);
  EXPECT_EQ(f->offenders[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(f->offenders[0].count, 20u);
  EXPECT_NE(f->offenders[0].detail.find("train_loop"), std::string::npos);
}

// 20 steps: a 1 ms kernel, a cudaStreamSynchronize on each of `threads`
// waiting for it, then 600 µs of host work while the GPU idles.
TraceBuilder SyncEachStep(std::initializer_list<uint32_t> threads) {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int i = 0; i < 20; ++i) {
    uint64_t start = t + us(15), end = start + ms(1);
    b.Kernel("k", start, end, 7, t, us(3));
    for (uint32_t thread : threads) b.Api("cudaStreamSynchronize", t + us(5), end + us(2), thread);
    t = end + us(2) + us(600);
  }
  return b;
}

// Two threads (ranks, or a process's workers) block side by side, each for
// 60 % of the window: the blocked share is of the calling threads' time,
// not 120 % of the window.
TEST_P(SystemRuleTest, SyncApiBlockedShareIsPerCallingThread) {
  AnalysisOptions with_replay;
  with_replay.params["root_causes"] = 1;
  Report report = Analyze(SyncEachStep({1, 2}), with_replay);
  const Finding* f = FindFinding(report, "sync_api");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("calling_threads"), 2);
  double one_thread =
      100.0 * f->EvidenceNumber("host_blocked_ns") / 2 / double(report.summary.window_ns);
  EXPECT_NEAR(f->EvidenceNumber("host_blocked_pct"), one_thread, 1e-6);
  EXPECT_LT(f->EvidenceNumber("host_blocked_pct"), 100);
  EXPECT_NE(f->title.find("of the time of the 2 threads that call them"), std::string::npos)
      << f->title;
}

// A per-step sync that waits for a busy GPU (no sync-wait gap), then 600 µs
// of host work (the next batch) while the GPU idles: the idle reads as host
// work, but removing the wait lets that work overlap the kernel. sync_api
// fires on the host time it blocks, and the what-if replay gives it the
// overlap regained.
TEST_P(SystemRuleTest, SyncApiFiresWhenItStopsHostWorkOverlapping) {
  AnalysisOptions with_replay;
  with_replay.params["root_causes"] = 1;
  Report report = Analyze(SyncEachStep({1}), with_replay);
  const Finding* f = FindFinding(report, "sync_api");
  ASSERT_NE(f, nullptr) << "a sync that serializes host work is a cause";
  EXPECT_EQ(f->EvidenceNumber("gpu_idle_caused_ns"), 0);
  EXPECT_GT(f->EvidenceNumber("host_blocked_pct"), 50);
  bool host_blocked = false;
  for (const EvidenceItem& e : f->evidence) host_blocked |= e.key == "fired_on" && e.text == "host_blocked";
  EXPECT_TRUE(host_blocked);
  EXPECT_NE(f->title.find("block the host for"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("while the GPU works; the host's work after each no longer overlaps"),
            std::string::npos)
      << f->title;
  EXPECT_EQ(f->title.find("idle 0 ns"), std::string::npos) << f->title;
  std::string ranking;
  for (const Finding& x : report.findings) {
    ranking += x.rule + " " + std::to_string(x.est_saving_pct) + "; ";
  }
  EXPECT_GT(f->est_saving_pct, 10) << "the replay regains the overlap: " << ranking;
}

TEST_P(SystemRuleTest, SyncApiSilentWithoutSynchronization) {
  EXPECT_EQ(FindFinding(Analyze(SyncLoopTrace(false)), "sync_api"), nullptr);
}

// ---- sync_memcpy ----------------------------------------------------------

TraceBuilder ReadbackTrace(bool synchronous) {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int i = 0; i < 10; ++i) {
    b.Kernel("k", t, t + ms(1));
    if (synchronous) {
      b.Memcpy(CopyKind::kDtoH, MemoryKind::kPageable, 3'000'000, t + ms(1), t + us(1300), 7,
               "cudaMemcpy", t + us(10), t + us(1300), false);
      t += us(1320);
    } else {
      b.Memcpy(CopyKind::kDtoH, MemoryKind::kPinned, 3'000'000, t + us(100), t + us(400), 9,
               "cudaMemcpyAsync", t + us(10), t + us(15), true);
      t += ms(1);
    }
  }
  return b;
}

TEST_P(SystemRuleTest, SyncMemcpyFires) {
  Report report = Analyze(ReadbackTrace(true));
  const Finding* f = FindFinding(report, "sync_memcpy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("sync_memcpy_calls"), 10);
  EXPECT_EQ(f->EvidenceNumber("gpu_not_computing_ns"), double(ms(3)));
  EXPECT_EQ(f->EvidenceNumber("bytes"), 30e6);
  EXPECT_EQ(f->EvidenceNumber("host_blocked_ns"), double(10 * us(1290)));
  EXPECT_EQ(f->est_saving_ns, ms(3));
  EXPECT_EQ(f->offenders.at(0).name, "cudaMemcpy");
}

TEST_P(SystemRuleTest, SyncMemcpySilentForAsyncPinnedCopies) {
  Report r = Analyze(ReadbackTrace(false));
  EXPECT_EQ(FindFinding(r, "sync_memcpy"), nullptr);
  EXPECT_EQ(FindFinding(r, "pageable_memcpy"), nullptr);
}

// ---- launch_latency -------------------------------------------------------

TraceBuilder LaunchTrace(bool slow_launches) {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int i = 0; i < 30; ++i) {
    uint64_t api = (slow_launches && i % 3 == 0) ? us(300) : us(5);
    uint64_t start = t + api + us(5);
    b.Kernel("k", start, start + us(100), 7, t, api);
    t = start + us(101);
  }
  return b;
}

TEST_P(SystemRuleTest, LaunchLatencyFiresOnLongLaunchCalls) {
  Report report = Analyze(LaunchTrace(true));
  const Finding* f = FindFinding(report, "launch_latency");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("launches"), 30);
  EXPECT_EQ(f->EvidenceNumber("long_launches"), 10);
  EXPECT_EQ(f->EvidenceNumber("median_launch_ns"), double(us(5)));
  EXPECT_EQ(f->EvidenceNumber("long_launch_excess_ns"), double(10 * us(295)));
  EXPECT_EQ(f->EvidenceNumber("long_delays"), 0);
  EXPECT_EQ(f->est_saving_ns, 10 * us(295));
}

TEST_P(SystemRuleTest, LaunchLatencyExcludesProfilerOverheadInsideTheCall) {
  // As recorded on the H200 at a capture start: the first launch takes
  // 5.4 ms, 5.35 ms of it a host-side CUPTI overhead record. The profiler's
  // time is not the app's: no long launch, no finding, no GPU busy time.
  TraceBuilder b;
  b.Kernel("first", ms(6), ms(6) + us(100), 7, us(600), us(5400));
  b.Overhead(us(640), us(5990), /*thread=*/1, kHostOverheadDevice);
  for (int i = 1; i < 20; ++i) {
    uint64_t t = ms(6) + i * us(200);
    b.Kernel("next", t + us(10), t + us(110), 7, t, us(5));
  }
  Report r = Analyze(b);
  EXPECT_EQ(FindFinding(r, "launch_latency"), nullptr);
  // Same call without the overhead record: a long launch.
  TraceBuilder c;
  c.Kernel("first", ms(6), ms(6) + us(100), 7, us(600), us(5400));
  for (int i = 1; i < 20; ++i) {
    uint64_t t = ms(6) + i * us(200);
    c.Kernel("next", t + us(10), t + us(110), 7, t, us(5));
  }
  const Finding* f = FindFinding(Analyze(c), "launch_latency");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("long_launches"), 1);
}

TEST_P(SystemRuleTest, HostOverheadIsNotGpuBusyTime) {
  TraceBuilder host, device;
  for (TraceBuilder* b : {&host, &device}) {
    b->Kernel("k", ms(1), ms(2), 7, us(900), us(5));
    b->Kernel("k", ms(9), ms(10), 7, us(8900), us(5));
  }
  host.Overhead(ms(3), ms(8), 1, kHostOverheadDevice);
  host.Overhead(ms(3), ms(8), 1, 0);  // an older trace: thread record, device 0
  device.Overhead(ms(3), ms(8), 0, 0);
  Report rh = Analyze(host), rd = Analyze(device);
  ASSERT_FALSE(rh.summary.devices.empty());
  ASSERT_FALSE(rd.summary.devices.empty());
  EXPECT_EQ(rh.summary.devices[0].busy_ns, ms(2));
  EXPECT_EQ(rd.summary.devices[0].busy_ns, ms(7));
}

TEST_P(SystemRuleTest, LaunchLatencySilentForFastLaunches) {
  EXPECT_EQ(FindFinding(Analyze(LaunchTrace(false)), "launch_latency"), nullptr);
}

TEST_P(SystemRuleTest, LaunchDelaysOnAnIdleGpuCount) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    uint64_t t = ms(1) + i * ms(1);
    // The call returns at t + 5 us, the kernel starts 300 us later on an idle GPU.
    b.Kernel("late", t + us(305), t + us(505), 7, t, us(5));
  }
  Report report = Analyze(b);
  const Finding* f = FindFinding(report, "launch_latency");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("long_delays"), 10);
  EXPECT_EQ(f->EvidenceNumber("long_delay_total_ns"), double(10 * us(300)));
  EXPECT_EQ(f->EvidenceNumber("long_delay_idle_ns"), double(10 * us(300)));
}

TEST_P(SystemRuleTest, LaunchesQueuedTogetherCountTheirIdleOnce) {
  TraceBuilder b;
  // Ten launches return at 1 ms; the GPU idles 300 us, then runs them
  // back to back: ten long delays, one idle period.
  for (int i = 0; i < 10; ++i) {
    uint64_t start = ms(1) + us(300) + i * us(100);
    b.Kernel("queued", start, start + us(100), 7, ms(1) - us(5) + i * 100, us(5) - i * 100);
  }
  b.Kernel("earlier", us(500), us(700), 7, us(400), us(5));
  Report r = Analyze(b);
  const Finding* f = FindFinding(r, "launch_latency");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->EvidenceNumber("long_delays"), 10);
  EXPECT_EQ(f->EvidenceNumber("long_delay_idle_ns"), double(us(300)));
}

// ---- kernel replay (metrics traces) ----------------------------------------

TEST_P(SystemRuleTest, TimelineRulesSkippedWhenKernelsWereReplayed) {
  // The clip.encode trace fires cpu_bound / gpu_idle; one replayed launch in it
  // (a --metrics run) makes every timeline rule stand down, with a note.
  TraceBuilder b = ClipEncodeTrace(false);
  b.Kernel("profiled_gemm", ms(30), ms(90));
  b.trace().kernels.back().replayed = true;
  Report r = Analyze(b);
  EXPECT_EQ(FindFinding(r, "cpu_bound"), nullptr);
  EXPECT_EQ(FindFinding(r, "gpu_idle"), nullptr);
  EXPECT_EQ(FindFinding(r, "launch_latency"), nullptr);
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("timeline rules") != std::string::npos;
  EXPECT_TRUE(noted);
  // The kernel table still lists the replayed kernel.
  bool listed = false;
  for (const KernelRow& k : r.kernels) listed |= k.name == "profiled_gemm" && k.replayed_count == 1;
  EXPECT_TRUE(listed);
  // Forcing them back on restores the finding.
  AnalysisOptions o;
  ASSERT_TRUE(o.SetFromString("timeline_rules_with_replay=1").ok());
  EXPECT_NE(FindFinding(Analyze(b, o), "cpu_bound"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(BothPaths, SystemRuleTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat),
                         [](const auto& info) {
                           return info.param == BuildPath::kDirect ? "direct" : "wire";
                         });

}  // namespace
}  // namespace sightline::analysis
