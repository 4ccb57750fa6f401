// SIGHTLINE_* parsing and output path patterns.
#include "lib/collect/config.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/collect/kernel_launch_hook.h"
#include "lib/monitor/monitor_config.h"
#include "lib/trace/setting_value.h"

namespace sightline::collect {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeGetenv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() { g_env = &env_; }
  CollectorConfig Parse() {
    problems_.clear();
    return ConfigFromEnvironment(&FakeGetenv, &problems_);
  }
  std::map<std::string, std::string> env_;
  std::vector<std::string> problems_;
};

TEST_F(ConfigTest, Defaults) {
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty());
  EXPECT_EQ(c.output_pattern, "sightline-%p.sltrace");
  EXPECT_EQ(c.capture, CaptureMode::kWholeRun);
  EXPECT_TRUE(c.trace_cuda);
  EXPECT_FALSE(c.trace_driver_api);
  EXPECT_TRUE(c.trace_memory);
  EXPECT_TRUE(c.trace_nvtx);
  EXPECT_TRUE(c.trace_nccl);
  EXPECT_TRUE(c.trace_backtrace);
  EXPECT_TRUE(c.capture_repeat);
  EXPECT_EQ(c.buffer_bytes, 8u << 20);
  EXPECT_FALSE(c.api_skip.empty());
  EXPECT_EQ(c.CaptureDescription(), "whole");
}

TEST_F(ConfigTest, EveryVariable) {
  env_ = {{"SIGHTLINE_OUTPUT", "/tmp/run-%r"},
          {"SIGHTLINE_TRACE", "cuda-driver, nvtx"},
          {"SIGHTLINE_CAPTURE", "nvtx:train step"},
          {"SIGHTLINE_CAPTURE_END", "stop"},
          {"SIGHTLINE_DELAY", "1.5"},
          {"SIGHTLINE_DURATION", "10"},
          {"SIGHTLINE_METRICS", "basic"},
          {"SIGHTLINE_BUFFER_KB", "8192"},
          {"SIGHTLINE_BUFFERS", "16"},
          {"SIGHTLINE_FLUSH_MS", "250"},
          {"SIGHTLINE_API_SKIP", "none,cudaFoo"},
          {"SIGHTLINE_BACKTRACE_US", "50"},
          {"SIGHTLINE_RUNTIME_PER_API", "0"},
          {"SIGHTLINE_QUIET", "1"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(c.output_pattern, "/tmp/run-%r");
  EXPECT_TRUE(c.trace_cuda);
  EXPECT_TRUE(c.trace_driver_api);
  EXPECT_FALSE(c.trace_memory);  // not in the list
  EXPECT_TRUE(c.trace_nvtx);
  EXPECT_FALSE(c.trace_nccl);
  EXPECT_FALSE(c.trace_backtrace);
  EXPECT_EQ(c.capture, CaptureMode::kNvtx);
  EXPECT_EQ(c.capture_nvtx_name, "train step");
  EXPECT_FALSE(c.capture_repeat);
  EXPECT_DOUBLE_EQ(c.delay_s, 1.5);
  EXPECT_DOUBLE_EQ(c.duration_s, 10);
  EXPECT_EQ(c.metric_set, "basic");
  EXPECT_EQ(c.buffer_bytes, 8192u * 1024);
  EXPECT_EQ(c.max_buffers, 16u);
  EXPECT_EQ(c.flush_period_ms, 250u);
  EXPECT_EQ(c.api_skip, std::vector<std::string>{"cudaFoo"});
  EXPECT_DOUBLE_EQ(c.backtrace_threshold_us, 50);
  EXPECT_FALSE(c.runtime_records_per_api);
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.CaptureDescription(), "nvtx:train step delay=1.5s duration=10s end=stop");
  std::vector<std::string> enabled = c.EnabledList();
  EXPECT_EQ(enabled, (std::vector<std::string>{"cuda", "cuda-driver", "nvtx", "metrics"}));
}

TEST_F(ConfigTest, CudaMemory) {
  EXPECT_EQ(Parse().EnabledList(),
            (std::vector<std::string>{"cuda", "cuda-memory", "nvtx", "nccl", "backtrace"}));
  env_ = {{"SIGHTLINE_TRACE", "cuda-memory"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty());
  EXPECT_TRUE(c.trace_cuda);  // memory records need the CUDA activity
  EXPECT_TRUE(c.trace_memory);
  EXPECT_FALSE(c.trace_nvtx);
  env_ = {{"SIGHTLINE_TRACE", "cuda,nvtx"}};
  EXPECT_FALSE(Parse().trace_memory);
}

TEST_F(ConfigTest, PythonBacktrace) {
  EXPECT_FALSE(Parse().trace_python);
  env_ = {{"SIGHTLINE_TRACE", "cuda,python"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty());
  EXPECT_TRUE(c.trace_python);
  EXPECT_FALSE(c.python_require_gil);
  EXPECT_EQ(c.EnabledList(), (std::vector<std::string>{"cuda", "python"}));
  env_ = {{"SIGHTLINE_TRACE", "cuda,python"}, {"SIGHTLINE_PYTHON_BACKTRACE", "off"}};
  EXPECT_FALSE(Parse().trace_python);
  env_ = {{"SIGHTLINE_PYTHON_BACKTRACE", "gil"}};
  c = Parse();
  EXPECT_TRUE(c.trace_python);
  EXPECT_TRUE(c.python_require_gil);
  env_ = {{"SIGHTLINE_PYTHON_BACKTRACE", "on"}};
  EXPECT_TRUE(Parse().trace_python);
  env_ = {{"SIGHTLINE_PYTHON_BACKTRACE", "sometimes"}};
  EXPECT_FALSE(Parse().trace_python);
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("SIGHTLINE_PYTHON_BACKTRACE"), std::string::npos);
}

// Driver-launch API records follow Python stacks unless set.
TEST_F(ConfigTest, DriverLaunchRecordsFollowPythonStacks) {
  EXPECT_FALSE(Parse().driver_launch_records);  // a C/C++ program
  env_ = {{"SIGHTLINE_PYTHON_BACKTRACE", "on"}};
  EXPECT_TRUE(Parse().driver_launch_records);
  env_ = {{"SIGHTLINE_PYTHON_BACKTRACE", "on"}, {"SIGHTLINE_DRIVER_LAUNCH_RECORDS", "0"}};
  EXPECT_FALSE(Parse().driver_launch_records);
  env_ = {{"SIGHTLINE_DRIVER_LAUNCH_RECORDS", "1"}};
  EXPECT_TRUE(Parse().driver_launch_records);
  EXPECT_TRUE(problems_.empty());
}

TEST(ApiSkipListTest, MatchesWithOrWithoutCuptiVersionSuffix) {
  const std::vector<std::string> skip = {"cudaGetDevice", "cuCtxGetCurrent"};
  EXPECT_TRUE(InApiSkipList(skip, "cudaGetDevice_v3020"));
  EXPECT_TRUE(InApiSkipList(skip, "cudaGetDevice"));
  EXPECT_TRUE(InApiSkipList(skip, "cuCtxGetCurrent"));
  EXPECT_FALSE(InApiSkipList(skip, "cudaGetDeviceCount_v3020"));
  EXPECT_FALSE(InApiSkipList(skip, "cudaGetDevice_vX"));
  EXPECT_FALSE(InApiSkipList(skip, nullptr));
}

// PM sampling (--gpu-metrics): all devices, a list of ordinals, the rate;
// bad values and the combination with per-kernel metrics are refused with a
// problem each, and sampling stays off.
TEST_F(ConfigTest, GpuMetrics) {
  CollectorConfig c = Parse();
  EXPECT_FALSE(c.gpu_metrics);
  EXPECT_EQ(c.gpu_metrics_hz, 1000u);
  env_ = {{"SIGHTLINE_GPU_METRICS", "all"}, {"SIGHTLINE_GPU_METRICS_FREQUENCY", "10000"}};
  c = Parse();
  EXPECT_TRUE(problems_.empty());
  EXPECT_TRUE(c.gpu_metrics);
  EXPECT_TRUE(c.gpu_metrics_devices.empty());
  EXPECT_EQ(c.gpu_metrics_hz, 10000u);
  env_ = {{"SIGHTLINE_GPU_METRICS", "0,3"}};
  c = Parse();
  EXPECT_TRUE(c.gpu_metrics);
  EXPECT_EQ(c.gpu_metrics_devices, (std::vector<uint32_t>{0, 3}));
  env_ = {{"SIGHTLINE_GPU_METRICS", "none"}};
  EXPECT_FALSE(Parse().gpu_metrics);
  EXPECT_TRUE(problems_.empty());
  for (const char* bad : {"0,", "x", "1,,2", "-1", "2048"}) {
    env_ = {{"SIGHTLINE_GPU_METRICS", bad}};
    c = Parse();
    EXPECT_FALSE(c.gpu_metrics) << bad;
    ASSERT_EQ(problems_.size(), 1u) << bad;
    EXPECT_NE(problems_[0].find("device ordinals"), std::string::npos) << problems_[0];
  }
  for (const char* bad : {"99", "100001", "fast"}) {
    env_ = {{"SIGHTLINE_GPU_METRICS", "all"}, {"SIGHTLINE_GPU_METRICS_FREQUENCY", bad}};
    c = Parse();
    EXPECT_TRUE(c.gpu_metrics) << bad;
    EXPECT_EQ(c.gpu_metrics_hz, 1000u) << bad;
    ASSERT_EQ(problems_.size(), 1u) << bad;
    EXPECT_NE(problems_[0].find("100..100000"), std::string::npos) << problems_[0];
  }
  env_ = {{"SIGHTLINE_GPU_METRICS", "all"}, {"SIGHTLINE_DETACH", "1"}};
  c = Parse();
  EXPECT_TRUE(c.gpu_metrics);
  EXPECT_EQ(c.detach, DetachMode::kUnsubscribe);  // never cuptiFinalize under the sampler
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("cannot finalize CUPTI"), std::string::npos) << problems_[0];
  env_ = {{"SIGHTLINE_GPU_METRICS", "all"}, {"SIGHTLINE_METRICS", "full"}};
  c = Parse();
  EXPECT_FALSE(c.gpu_metrics);
  EXPECT_EQ(c.metric_set, "full");
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("cannot be combined with SIGHTLINE_METRICS"), std::string::npos);
}

TEST_F(ConfigTest, BadValuesAreReportedAndDefaultsKept) {
  env_ = {{"SIGHTLINE_DELAY", "soon"},
          {"SIGHTLINE_CAPTURE", "nvtx:"},
          {"SIGHTLINE_TRACE", "cuda,gpu-metrics"},
          {"SIGHTLINE_BUFFER_KB", "1"},
          {"SIGHTLINE_FLUSH_MS", "-5"},
          {"SIGHTLINE_RUNTIME_PER_API", "maybe"}};
  CollectorConfig c = Parse();
  ASSERT_EQ(problems_.size(), 6u);
  EXPECT_NE(problems_[0].find("gpu-metrics"), std::string::npos);
  EXPECT_EQ(c.delay_s, 0);
  EXPECT_EQ(c.capture, CaptureMode::kWholeRun);
  EXPECT_EQ(c.buffer_bytes, 8u << 20);
  EXPECT_EQ(c.flush_period_ms, 500u);
  EXPECT_TRUE(c.runtime_records_per_api);
  EXPECT_TRUE(c.trace_cuda);
}

// Kernel-replay metrics: CUPTI closes a buffer per replay pass, so the
// 256 MiB bound is spent on more, smaller buffers — unless the user set them.
TEST_F(ConfigTest, KernelReplayUsesMoreSmallerBuffers) {
  env_ = {{"SIGHTLINE_METRICS", "full"}};
  CollectorConfig c = Parse();
  EXPECT_EQ(c.buffer_bytes, CollectorConfig::kReplayBufferBytes);
  EXPECT_EQ(c.max_buffers, CollectorConfig::kReplayMaxBuffers);
  EXPECT_EQ(uint64_t{c.buffer_bytes} * c.max_buffers, uint64_t{8u << 20} * 32);
  // Sequence replay's passes hold buffers back too (runs BF-BH: 14507
  // records lost with 32 of 8 MiB over 33 passes, 0 with 256 of 1 MiB).
  env_["SIGHTLINE_METRICS_REPLAY"] = "sequence";
  c = Parse();
  EXPECT_EQ(c.buffer_bytes, CollectorConfig::kReplayBufferBytes);
  EXPECT_EQ(c.max_buffers, CollectorConfig::kReplayMaxBuffers);
  env_["SIGHTLINE_METRICS_REPLAY"] = "spread";  // one launch a pass: the defaults
  c = Parse();
  EXPECT_EQ(c.buffer_bytes, 8u << 20);
  EXPECT_EQ(c.max_buffers, 32u);
  env_ = {{"SIGHTLINE_METRICS", "full"}, {"SIGHTLINE_BUFFERS", "64"}};
  c = Parse();
  EXPECT_EQ(c.buffer_bytes, 8u << 20);
  EXPECT_EQ(c.max_buffers, 64u);
}

TEST_F(ConfigTest, MetricSelectionAndReplay) {
  CollectorConfig d = Parse();
  EXPECT_EQ(d.metric_launches_per_kernel, 0u);
  EXPECT_EQ(d.metric_every_nth, 1u);
  EXPECT_EQ(d.metric_replay, MetricsReplay::kKernel);
  EXPECT_STREQ(MetricsReplayName(d.metric_replay), "kernel");

  env_ = {{"SIGHTLINE_METRICS", "full"},
          {"SIGHTLINE_METRICS_LAUNCHES", "3"},
          {"SIGHTLINE_METRICS_EVERY", "10"},
          {"SIGHTLINE_METRICS_REPLAY", "kernel"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(c.metric_launches_per_kernel, 3u);
  EXPECT_EQ(c.metric_every_nth, 10u);
  EXPECT_EQ(c.metric_replay, MetricsReplay::kKernel);
  env_["SIGHTLINE_METRICS_REPLAY"] = "spread";
  c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(c.metric_replay, MetricsReplay::kSpread);
  env_["SIGHTLINE_METRICS_REPLAY"] = "sequence";
  c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(c.metric_replay, MetricsReplay::kSequence);
  EXPECT_STREQ(MetricsReplayName(c.metric_replay), "sequence");
  EXPECT_EQ(c.metric_sequences, 1u);
  EXPECT_EQ(HookConfigFromCollectorConfig(c).sequences_per_step, 1u);
  env_["SIGHTLINE_METRICS_SEQUENCES"] = "3";
  c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(HookConfigFromCollectorConfig(c).sequences_per_step, 3u);
  for (const char* bad : {"0", "9", "3x"}) {
    env_["SIGHTLINE_METRICS_SEQUENCES"] = bad;
    c = Parse();
    ASSERT_EQ(problems_.size(), 1u) << bad;
    EXPECT_EQ(problems_[0], std::string("SIGHTLINE_METRICS_SEQUENCES: '") + bad +
                                "' is not a count in [1, 8] (sequences of each step, sequence replay)");
    EXPECT_EQ(c.metric_sequences, 1u);
  }
  // Without sequence replay it means nothing: named and ignored.
  env_["SIGHTLINE_METRICS_SEQUENCES"] = "3";
  env_["SIGHTLINE_METRICS_REPLAY"] = "kernel";
  c = Parse();
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_EQ(problems_[0],
            "SIGHTLINE_METRICS_SEQUENCES: '3' needs SIGHTLINE_METRICS_REPLAY=sequence; ignored");
  EXPECT_EQ(c.metric_sequences, 1u);
  env_["SIGHTLINE_METRICS_REPLAY"] = "sequence";
  env_.erase("SIGHTLINE_METRICS_SEQUENCES");
  // --metrics-replay-top: off by default (bench/metrics/README.md), 0..64 in
  // sequence replay, nothing (0) in the other modes; asked for there it is
  // named and ignored.
  c = Parse();
  EXPECT_EQ(HookConfigFromCollectorConfig(c).replay_top, 0u);
  env_["SIGHTLINE_METRICS_REPLAY_TOP"] = "5";
  c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(HookConfigFromCollectorConfig(c).replay_top, 5u);
  env_["SIGHTLINE_METRICS_REPLAY_TOP"] = "65";
  c = Parse();
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_EQ(problems_[0], "SIGHTLINE_METRICS_REPLAY_TOP: '65' is not a count in [0, 64] "
                          "(configurations kernel-replayed after sequence replay)");
  EXPECT_EQ(c.metric_replay_top, 0u);
  env_["SIGHTLINE_METRICS_REPLAY_TOP"] = "3";
  env_["SIGHTLINE_METRICS_REPLAY"] = "kernel";
  c = Parse();
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_EQ(problems_[0],
            "SIGHTLINE_METRICS_REPLAY_TOP: '3' needs SIGHTLINE_METRICS_REPLAY=sequence; ignored");
  EXPECT_EQ(HookConfigFromCollectorConfig(c).replay_top, 0u);
  env_.erase("SIGHTLINE_METRICS_REPLAY_TOP");
  c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(HookConfigFromCollectorConfig(c).replay_top, 0u);  // kernel replay: none
  env_["SIGHTLINE_METRICS_REPLAY"] = "sequence";
  // auto (kernel replay and spread passes on one object) crashed on the
  // H200 (CUDA 13.0): refused with the reason, kernel replay kept.
  env_["SIGHTLINE_METRICS_REPLAY"] = "auto";
  env_["SIGHTLINE_METRICS_LAUNCHES"] = "0";  // 0 = no cap
  c = Parse();
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("not available"), std::string::npos) << problems_[0];
  EXPECT_EQ(c.metric_replay, MetricsReplay::kKernel);
  EXPECT_EQ(c.metric_launches_per_kernel, 0u);
}

// Per-range metrics: SIGHTLINE_METRICS_RANGE=nvtx:NAME gives NAME (no kernel
// replay, so the default buffers); anything else is refused by name.
TEST_F(ConfigTest, MetricsPerNvtxRange) {
  env_ = {{"SIGHTLINE_METRICS", "full"}, {"SIGHTLINE_METRICS_RANGE", "nvtx:train step"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_EQ(c.metric_range_nvtx, "train step");
  EXPECT_EQ(c.buffer_bytes, 8u << 20);
  EXPECT_EQ(HookConfigFromCollectorConfig(c).range_nvtx, "train step");
  // Without metrics to measure: refused by name, ignored.
  env_ = {{"SIGHTLINE_METRICS_RANGE", "nvtx:step"}};
  c = Parse();
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("needs SIGHTLINE_METRICS"), std::string::npos) << problems_[0];
  EXPECT_TRUE(c.metric_range_nvtx.empty());
  env_ = {{"SIGHTLINE_METRICS", "full"}};
  for (const char* bad : {"train_step", "nvtx:", "cuda:step", "graphs"}) {
    env_["SIGHTLINE_METRICS_RANGE"] = bad;
    c = Parse();
    ASSERT_EQ(problems_.size(), 1u) << bad;
    EXPECT_NE(problems_[0].find("SIGHTLINE_METRICS_RANGE"), std::string::npos) << problems_[0];
    EXPECT_TRUE(c.metric_range_nvtx.empty());
    EXPECT_FALSE(c.metric_range_graph);
  }
}

// SIGHTLINE_METRICS_RANGE=graph: per CUDA graph launch (ncu's
// --graph-profiling graph); refused without metrics, as nvtx:NAME is.
TEST_F(ConfigTest, MetricsPerGraphLaunch) {
  env_ = {{"SIGHTLINE_METRICS", "full"}, {"SIGHTLINE_METRICS_RANGE", "graph"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty()) << problems_[0];
  EXPECT_TRUE(c.metric_range_graph);
  EXPECT_TRUE(c.metric_range_nvtx.empty());
  EXPECT_TRUE(HookConfigFromCollectorConfig(c).range_graph);
  env_ = {{"SIGHTLINE_METRICS_RANGE", "graph"}};
  c = Parse();
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("needs SIGHTLINE_METRICS"), std::string::npos) << problems_[0];
  EXPECT_FALSE(c.metric_range_graph);
}

TEST_F(ConfigTest, BadMetricSelectionValuesAreNamed) {
  env_ = {{"SIGHTLINE_METRICS_LAUNCHES", "-1"},
          {"SIGHTLINE_METRICS_EVERY", "0"},
          {"SIGHTLINE_METRICS_REPLAY", "replay"}};
  CollectorConfig c = Parse();
  ASSERT_EQ(problems_.size(), 3u);
  EXPECT_EQ(problems_[0],
            "SIGHTLINE_METRICS_LAUNCHES: '-1' is not a count in [0, 16777216] (launches per kernel "
            "configuration; 0 = no cap)");
  EXPECT_EQ(problems_[1],
            "SIGHTLINE_METRICS_EVERY: '0' is not a count in [1, 16777216] (every Nth launch)");
  EXPECT_EQ(problems_[2],
            "SIGHTLINE_METRICS_REPLAY: 'replay' is unknown (expected kernel, spread or sequence)");
  // Defaults kept.
  EXPECT_EQ(c.metric_launches_per_kernel, 0u);
  EXPECT_EQ(c.metric_every_nth, 1u);
  EXPECT_EQ(c.metric_replay, MetricsReplay::kKernel);
  env_ = {{"SIGHTLINE_METRICS_LAUNCHES", "2x"}, {"SIGHTLINE_METRICS_EVERY", "99999999999"}};
  Parse();
  EXPECT_EQ(problems_.size(), 2u);
}

TEST_F(ConfigTest, CaptureRangeValues) {
  CollectorConfig c;
  EXPECT_TRUE(ParseCaptureRange("cudaProfilerApi", &c));
  EXPECT_EQ(c.capture, CaptureMode::kProfilerApi);
  EXPECT_TRUE(ParseCaptureRange("api", &c));
  EXPECT_EQ(c.capture, CaptureMode::kApi);
  EXPECT_TRUE(ParseCaptureRange("none", &c));
  EXPECT_EQ(c.capture, CaptureMode::kWholeRun);
  EXPECT_FALSE(ParseCaptureRange("cudaprofilerapi", &c));
  EXPECT_FALSE(ParseCaptureRange("nvtx", &c));
}

TEST_F(ConfigTest, OutputPathPatterns) {
  env_ = {{"RANK", "3"}, {"JOB", "j42"}};
  EXPECT_EQ(ResolveOutputPath("out-%p", 1234, "gpu7", &FakeGetenv), "out-1234.sltrace");
  EXPECT_EQ(ResolveOutputPath("/runs/%q{JOB}/r%r-%h.sltrace", 1, "gpu7", &FakeGetenv),
            "/runs/j42/r3-gpu7.sltrace");
  EXPECT_EQ(ResolveOutputPath("/a.b/trace", 1, "h", &FakeGetenv), "/a.b/trace.sltrace");
  EXPECT_EQ(ResolveOutputPath("x.trace", 1, "h", &FakeGetenv), "x.trace");
  EXPECT_EQ(ResolveOutputPath("unix:/tmp/sock", 1, "h", &FakeGetenv), "unix:/tmp/sock");
  EXPECT_EQ(ResolveOutputPath("100%%-%p", 9, "h", &FakeGetenv), "100%-9.sltrace");
  env_ = {{"OMPI_COMM_WORLD_RANK", "5"}};
  EXPECT_EQ(ResolveOutputPath("r%r", 1, "h", &FakeGetenv), "r5.sltrace");
  env_.clear();
  EXPECT_EQ(ResolveOutputPath("r%r", 1, "h", &FakeGetenv), "r0.sltrace");
}

}  // namespace
}  // namespace sightline::collect

namespace sightline::collect {
namespace {

// Several processes of one run share SIGHTLINE_OUTPUT: none may replace
// another's trace (issue: a torch.compile worker's 3-event trace replaced
// the training process's).
TEST_F(ConfigTest, PerProcessPathKeepsTheExtension) {
  EXPECT_EQ(PerProcessPath("run.sltrace", 42), "run.42.sltrace");
  EXPECT_EQ(PerProcessPath("/tmp/a.b/run.sltrace", 42), "/tmp/a.b/run.42.sltrace");
  EXPECT_EQ(PerProcessPath("/tmp/a.b/run", 42), "/tmp/a.b/run.42");
  EXPECT_EQ(PerProcessPath("/tmp/.hidden", 42), "/tmp/.hidden.42");
  EXPECT_EQ(PerProcessPath("unix:/tmp/s.sock", 42), "unix:/tmp/s.sock");
}

TEST_F(ConfigTest, OnlyTheRunsFirstProcessWritesTheSharedName) {
  env_ = {{"SIGHTLINE_OUTPUT", "/tmp/run.sltrace"}};
  CollectorConfig c = Parse();
  OutputChoice first = ChooseOutputPath(c, 100, "h", &FakeGetenv);
  EXPECT_EQ(first.path, "/tmp/run.sltrace");
  EXPECT_TRUE(first.shared_name);

  env_["SIGHTLINE_SESSION_PID"] = "100";
  c = Parse();
  EXPECT_TRUE(problems_.empty());
  EXPECT_EQ(c.session_pid, 100u);
  OutputChoice leader = ChooseOutputPath(c, 100, "h", &FakeGetenv);
  EXPECT_EQ(leader.path, "/tmp/run.sltrace");
  EXPECT_TRUE(leader.shared_name);
  OutputChoice worker = ChooseOutputPath(c, 230, "h", &FakeGetenv);
  EXPECT_EQ(worker.path, "/tmp/run.230.sltrace");
  EXPECT_FALSE(worker.shared_name);
}

// torchrun: the launcher is the run's first process, its workers carry RANK.
TEST_F(ConfigTest, LauncherWorkersAreNamedByRankAndPid) {
  EXPECT_EQ(PerProcessPath("run.sltrace", 42, 3), "run.rank3.42.sltrace");
  EXPECT_EQ(PerProcessPath("/tmp/run", 42, 0), "/tmp/run.rank0.42");
  env_ = {{"SIGHTLINE_OUTPUT", "/tmp/run.sltrace"}, {"SIGHTLINE_SESSION_PID", "100"},
          {"RANK", "1"}};
  CollectorConfig c = Parse();
  EXPECT_EQ(ChooseOutputPath(c, 230, "h", &FakeGetenv).path, "/tmp/run.rank1.230.sltrace");
  // The launcher itself keeps the shared name whatever its environment.
  EXPECT_EQ(ChooseOutputPath(c, 100, "h", &FakeGetenv).path, "/tmp/run.sltrace");
  // A pattern with %r already names the rank: only the pid is added.
  env_["SIGHTLINE_OUTPUT"] = "/tmp/run-%r";
  c = Parse();
  EXPECT_EQ(ChooseOutputPath(c, 230, "h", &FakeGetenv).path, "/tmp/run-1.230.sltrace");
  // A rank that is not a number is no rank.
  env_["SIGHTLINE_OUTPUT"] = "/tmp/run.sltrace";
  env_["RANK"] = "x";
  c = Parse();
  EXPECT_EQ(ChooseOutputPath(c, 230, "h", &FakeGetenv).path, "/tmp/run.230.sltrace");
}

TEST_F(ConfigTest, PatternsWithPidOrSocketsAreLeftAlone) {
  env_ = {{"SIGHTLINE_OUTPUT", "/tmp/run-%p"}, {"SIGHTLINE_SESSION_PID", "1"}};
  OutputChoice a = ChooseOutputPath(Parse(), 77, "h", &FakeGetenv);
  EXPECT_EQ(a.path, "/tmp/run-77.sltrace");
  EXPECT_FALSE(a.shared_name);
  env_["SIGHTLINE_OUTPUT"] = "unix:/tmp/s";
  OutputChoice b = ChooseOutputPath(Parse(), 77, "h", &FakeGetenv);
  EXPECT_EQ(b.path, "unix:/tmp/s");
  EXPECT_FALSE(b.shared_name);
  // "%%p" is a literal "%p", not the pid: still one shared name.
  env_["SIGHTLINE_OUTPUT"] = "/tmp/x%%p";
  OutputChoice c = ChooseOutputPath(Parse(), 77, "h", &FakeGetenv);
  EXPECT_EQ(c.path, "/tmp/x%p.77.sltrace");
  env_.erase("SIGHTLINE_SESSION_PID");
  OutputChoice d = ChooseOutputPath(Parse(), 77, "h", &FakeGetenv);
  EXPECT_EQ(d.path, "/tmp/x%p.sltrace");
  EXPECT_TRUE(d.shared_name);
}

TEST_F(ConfigTest, BadSessionPidIsReported) {
  env_ = {{"SIGHTLINE_SESSION_PID", "abc"}, {"SIGHTLINE_MANIFEST", "/tmp/m"}};
  CollectorConfig c = Parse();
  EXPECT_EQ(c.session_pid, 0u);
  EXPECT_EQ(c.manifest_path, "/tmp/m");
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("SIGHTLINE_SESSION_PID"), std::string::npos);
}

TEST_F(ConfigTest, CaptureSkipCountAndWindowsUseTheRuntimeKind) {
  env_["SIGHTLINE_CAPTURE"] = "nvtx:train_step";
  env_["SIGHTLINE_CAPTURE_SKIP"] = "5";
  env_["SIGHTLINE_CAPTURE_COUNT"] = "3";
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty());
  EXPECT_EQ(c.capture_skip, 5u);
  EXPECT_EQ(c.capture_count, 3u);
  // Windows open after the context exists: per-API runtime records would
  // never arrive there (CUPTI 13.0), the RUNTIME kind does.
  EXPECT_FALSE(c.runtime_records_per_api);
  EXPECT_NE(c.CaptureDescription().find("skip=5 count=3"), std::string::npos);
  env_["SIGHTLINE_CAPTURE_COUNT"] = "-1";
  env_["SIGHTLINE_CAPTURE_SKIP"] = "x";
  c = Parse();
  EXPECT_EQ(problems_.size(), 2u);
  EXPECT_EQ(c.capture_skip, 0u);
  EXPECT_EQ(c.capture_count, 0u);
  env_.clear();
  EXPECT_TRUE(Parse().runtime_records_per_api);  // whole run keeps per-API records
}

// The bug three parsers caused: "yes" silenced the banner (config.cc,
// injection.cc: any value but "0") but not the range profiler's metrics
// summary (only "1"). Every reader now takes the one parsed value.
TEST_F(ConfigTest, QuietYesIsQuietEverywhere) {
  for (const char* yes : {"1", "yes", "true", "on", "YES"}) {
    env_ = {{"SIGHTLINE_QUIET", yes}};
    CollectorConfig c = Parse();
    EXPECT_TRUE(problems_.empty()) << yes;
    EXPECT_TRUE(c.quiet) << yes;                                // banner, NVTX note
    EXPECT_TRUE(HookConfigFromCollectorConfig(c).quiet) << yes;  // metrics summary
    std::vector<std::string> monitor_problems;
    EXPECT_TRUE(monitor::MonitorConfigFromEnvironment(&FakeGetenv, &monitor_problems).quiet) << yes;
    EXPECT_TRUE(monitor_problems.empty()) << yes;
  }
  for (const char* no : {"0", "no", "false", "off"}) {
    env_ = {{"SIGHTLINE_QUIET", no}};
    CollectorConfig c = Parse();
    EXPECT_FALSE(c.quiet) << no;
    EXPECT_FALSE(HookConfigFromCollectorConfig(c).quiet) << no;
    EXPECT_FALSE(monitor::MonitorConfigFromEnvironment(&FakeGetenv, nullptr).quiet) << no;
  }
  env_ = {{"SIGHTLINE_QUIET", "loud"}};
  EXPECT_FALSE(Parse().quiet);
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("SIGHTLINE_QUIET"), std::string::npos);
}

// SIGHTLINE_DETACH was documented here but parsed in collector.cc.
TEST_F(ConfigTest, DetachIsParsedByTheConfig) {
  EXPECT_EQ(Parse().detach, DetachMode::kUnsubscribe);
  env_ = {{"SIGHTLINE_DETACH", "keep"}};
  EXPECT_EQ(Parse().detach, DetachMode::kKeepSubscriber);
  env_ = {{"SIGHTLINE_DETACH", "1"}};
  EXPECT_EQ(Parse().detach, DetachMode::kFinalize);
  env_ = {{"SIGHTLINE_DETACH", "0"}};
  EXPECT_EQ(Parse().detach, DetachMode::kUnsubscribe);
  EXPECT_TRUE(problems_.empty());
  env_ = {{"SIGHTLINE_DETACH", "sometimes"}};
  EXPECT_EQ(Parse().detach, DetachMode::kUnsubscribe);
  EXPECT_EQ(problems_.size(), 1u);
}

// The range profiler's four variables were read in range_profiler.cc and
// documented nowhere; they reach it through the hook config now.
TEST_F(ConfigTest, RangeProfilerVariablesReachTheHook) {
  KernelLaunchHookConfig d = HookConfigFromCollectorConfig(Parse());
  EXPECT_FALSE(d.image_per_launch);
  EXPECT_FALSE(d.batch_sessions);
  EXPECT_FALSE(d.spread_user_replay);
  EXPECT_FALSE(d.debug);
  env_ = {{"SIGHTLINE_METRICS_IMAGE", "per_launch"},
          {"SIGHTLINE_METRICS_SESSION", "batch"},
          {"SIGHTLINE_METRICS_SPREAD_REPLAY", "user"},
          {"SIGHTLINE_METRICS_DEBUG", "1"}};
  KernelLaunchHookConfig h = HookConfigFromCollectorConfig(Parse());
  EXPECT_TRUE(problems_.empty());
  EXPECT_TRUE(h.image_per_launch);
  EXPECT_TRUE(h.batch_sessions);
  EXPECT_TRUE(h.spread_user_replay);
  EXPECT_TRUE(h.debug);
  env_ = {{"SIGHTLINE_METRICS_IMAGE", "big"},
          {"SIGHTLINE_METRICS_SESSION", "often"},
          {"SIGHTLINE_METRICS_SPREAD_REPLAY", "x"},
          {"SIGHTLINE_METRICS_DEBUG", "verbose"}};
  h = HookConfigFromCollectorConfig(Parse());
  EXPECT_EQ(problems_.size(), 4u);
  EXPECT_FALSE(h.image_per_launch || h.batch_sessions || h.spread_user_replay || h.debug);
}

// How kernels measured in place are traced: auto (and none) = untraced
// during sequence passes, the KERNEL kind inside --metrics-range instances
// whatever was asked; kernel forces it; anything else is a problem and auto
// stays.
TEST_F(ConfigTest, InPlaceTraceResolvesPerMode) {
  using T = CollectorConfig::InPlaceTrace;
  env_ = {{"SIGHTLINE_METRICS", "full"}, {"SIGHTLINE_METRICS_REPLAY", "sequence"}};
  CollectorConfig c = Parse();
  EXPECT_EQ(c.metric_inplace_trace, T::kAuto);
  EXPECT_TRUE(c.metric_inplace_untraced());
  env_["SIGHTLINE_METRICS_RANGE"] = "nvtx:step";
  EXPECT_FALSE(Parse().metric_inplace_untraced());
  env_["SIGHTLINE_METRICS_INPLACE_TRACE"] = "none";  // not inside range instances
  EXPECT_FALSE(Parse().metric_inplace_untraced());
  env_.erase("SIGHTLINE_METRICS_RANGE");
  EXPECT_TRUE(Parse().metric_inplace_untraced());
  env_ = {{"SIGHTLINE_METRICS", "full"}, {"SIGHTLINE_METRICS_REPLAY", "sequence"},
          {"SIGHTLINE_METRICS_INPLACE_TRACE", "kernel"}};
  EXPECT_FALSE(Parse().metric_inplace_untraced());
  EXPECT_TRUE(problems_.empty());
  env_["SIGHTLINE_METRICS_INPLACE_TRACE"] = "sometimes";
  c = Parse();
  EXPECT_EQ(problems_.size(), 1u);
  EXPECT_EQ(c.metric_inplace_trace, T::kAuto);
}

// The writer forces its flush on a low pool only where metric passes keep
// buffers out (kernel replay, sequence passes), never in plain tracing.
TEST_F(ConfigTest, OnlyReplayPassesHoldBuffers) {
  EXPECT_FALSE(Parse().metric_passes_hold_buffers());
  env_ = {{"SIGHTLINE_METRICS", "full"}};  // kernel replay, the default
  CollectorConfig c = Parse();
  EXPECT_TRUE(c.metric_passes_hold_buffers());
  EXPECT_EQ(c.max_buffers, CollectorConfig::kReplayMaxBuffers);
  env_["SIGHTLINE_METRICS_REPLAY"] = "sequence";
  EXPECT_TRUE(Parse().metric_passes_hold_buffers());
  env_["SIGHTLINE_METRICS_REPLAY"] = "spread";
  EXPECT_FALSE(Parse().metric_passes_hold_buffers());
  env_ = {{"SIGHTLINE_METRICS", "none"}};
  EXPECT_FALSE(Parse().metric_passes_hold_buffers());
}

// Metrics without kernel records cannot be placed: -t none gains cuda, said.
TEST_F(ConfigTest, PerKernelMetricsTurnCudaTracingOn) {
  env_ = {{"SIGHTLINE_TRACE", "none"}, {"SIGHTLINE_METRICS", "full"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(c.trace_cuda);
  ASSERT_EQ(problems_.size(), 1u);
  EXPECT_NE(problems_[0].find("cuda"), std::string::npos);
  env_ = {{"SIGHTLINE_TRACE", "nvtx"}, {"SIGHTLINE_METRICS", "full"},
          {"SIGHTLINE_METRICS_RANGE", "nvtx:step"}};  // range values stand alone
  c = Parse();
  EXPECT_FALSE(c.trace_cuda);
  EXPECT_TRUE(problems_.empty());
  env_ = {{"SIGHTLINE_TRACE", "none"}};
  EXPECT_FALSE(Parse().trace_cuda);
  EXPECT_TRUE(problems_.empty());
}

TEST_F(ConfigTest, CaptureSetIsKnownToTheCollector) {
  EXPECT_FALSE(Parse().capture_set);
  env_ = {{"SIGHTLINE_CAPTURE", ""}};
  EXPECT_TRUE(Parse().capture_set);
}

// "-t graph" removed detail while every other item adds some: renamed.
TEST_F(ConfigTest, GraphLaunchesAndItsDeprecatedName) {
  EXPECT_FALSE(Parse().graph_launch_records);
  env_ = {{"SIGHTLINE_TRACE", "cuda,graph-launches"}};
  CollectorConfig c = Parse();
  EXPECT_TRUE(problems_.empty());
  EXPECT_TRUE(c.graph_launch_records);
  EXPECT_EQ(c.EnabledList(), (std::vector<std::string>{"cuda", "graph-launches"}));
  env_ = {{"SIGHTLINE_TRACE", "cuda,graph"}};
  c = Parse();
  EXPECT_TRUE(c.graph_launch_records);  // still accepted ...
  ASSERT_EQ(problems_.size(), 1u);      // ... with a warning
  EXPECT_NE(problems_[0].find("deprecated: use graph-launches"), std::string::npos);
}

TEST(SettingValueTest, OneParserPerKind) {
  bool b = false;
  EXPECT_TRUE(trace::ParseBoolValue("On", &b));
  EXPECT_TRUE(b);
  EXPECT_TRUE(trace::ParseBoolValue("no", &b));
  EXPECT_FALSE(b);
  EXPECT_FALSE(trace::ParseBoolValue("", &b));
  EXPECT_FALSE(trace::ParseBoolValue("2", &b));
  uint64_t n = 7;
  EXPECT_TRUE(trace::ParseCountValue("42", 0, 100, &n));
  EXPECT_EQ(n, 42u);
  EXPECT_FALSE(trace::ParseCountValue("-1", 0, 100, &n));
  EXPECT_FALSE(trace::ParseCountValue(" 1", 0, 100, &n));
  EXPECT_FALSE(trace::ParseCountValue("101", 0, 100, &n));
  EXPECT_FALSE(trace::ParseCountValue("1x", 0, 100, &n));
  EXPECT_EQ(n, 42u);
  std::vector<uint32_t> list;
  EXPECT_TRUE(trace::ParseCountList("3,0,7", 0, 100, &list));
  EXPECT_EQ(list, (std::vector<uint32_t>{3, 0, 7}));
  for (const char* bad : {"", ",", "1,", ",1", "1,,2", "1,101", "x", "1;2"}) {
    EXPECT_FALSE(trace::ParseCountList(bad, 0, 100, &list)) << bad;
  }
  EXPECT_EQ(list.size(), 3u);  // a bad list appends nothing
  EXPECT_TRUE(trace::ParseCountList("5", 0, 100, nullptr));
  double d = 0;
  EXPECT_TRUE(trace::ParseNumberValue("1.5", 0, 10, &d));
  EXPECT_DOUBLE_EQ(d, 1.5);
  EXPECT_FALSE(trace::ParseNumberValue("-1", 0, 10, &d));
  EXPECT_FALSE(trace::ParseNumberValue("inf", 0, 1e300, &d));
  EXPECT_FALSE(trace::ParseNumberValue("soon", 0, 10, &d));
  int e = 0;
  EXPECT_TRUE(trace::ParseEnumValue<int>("b", {{"a", 1}, {"b", 2}}, &e));
  EXPECT_EQ(e, 2);
  EXPECT_FALSE(trace::ParseEnumValue<int>("c", {{"a", 1}, {"b", 2}}, &e));
}

}  // namespace
}  // namespace sightline::collect
