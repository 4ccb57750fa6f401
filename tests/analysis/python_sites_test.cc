// Python call sites and PyTorch ops (lib/analysis/python_sites.h) on a
// synthetic trace: user-line selection past library frames, GPU time through
// correlation ids, host-blocked time of a per-step sync (the `.item()` line),
// ops from emit_nvtx ranges, backward-thread work inferred from the forward
// op's seq and from the backward() line, offenders, both build paths.
#include "lib/analysis/python_sites.h"

#include <map>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::AnalyzeTraces;
using testing::Build;
using testing::BuildPath;
using testing::TraceBuilder;
using testing::us;

struct PyFrame {
  std::string file, function;
  uint32_t line;
};

uint32_t PyStack(TraceBuilder& b, const std::vector<PyFrame>& frames) {
  SyntheticTrace& t = b.trace();
  CallStack s;
  s.kind = StackKind::kPython;
  s.id = static_cast<uint32_t>(t.stacks.size() + 1);
  for (const PyFrame& f : frames) {
    StackFrame sf;
    sf.function_id = t.Intern(f.function);
    sf.module_id = t.Intern(f.file);
    sf.line = f.line;
    s.frames.push_back(sf);
  }
  t.stacks.push_back(s);
  return s.id;
}

void SetPythonStack(TraceBuilder& b, uint32_t correlation, uint32_t stack) {
  for (ApiEvent& a : b.trace().apis) {
    if (a.correlation_id == correlation) a.python_stack_id = stack;
  }
}

const std::string kLib = "/venv/lib/python3.12/site-packages/torch/";
const std::string kForward = "/work/train.py:42 in Model.forward";
const std::string kItem = "/work/train.py:50 in step";
const std::string kBackward = "/work/train.py:60 in step";

SyntheticTrace TrainingStep() {
  TraceBuilder b;
  uint32_t fwd = PyStack(b, {{kLib + "nn/functional.py", "linear", 2000},
                             {"/work/train.py", "Model.forward", 42},
                             {"/work/train.py", "step", 80},
                             {"/work/train.py", "<module>", 100}});
  uint32_t item = PyStack(b, {{"/work/train.py", "step", 50}, {"/work/train.py", "<module>", 100}});
  uint32_t bwd = PyStack(b, {{kLib + "autograd/__init__.py", "backward", 200},
                             {kLib + "_tensor.py", "Tensor.backward", 500},
                             {"/work/train.py", "step", 60},
                             {"/work/train.py", "<module>", 100}});
  // Forward: one GEMM inside aten::addmm (seq 5).
  b.Nvtx("aten::linear, seq = 4", us(70), us(95), 1);
  b.Nvtx("aten::addmm, seq = 5, sizes = [[8, 16], [16, 32]]", us(75), us(90), 1);
  SetPythonStack(b, b.Kernel("gemm", us(100), us(200), 7, us(80), us(3), 1), fwd);
  // The per-step .item(): a copy and a blocking sync.
  SetPythonStack(b, b.Api("cudaStreamSynchronize", us(300), us(400), 1), item);
  // backward(): a fill launched by the calling thread, then the engine's thread.
  SetPythonStack(b, b.Kernel("fill", us(500), us(505), 7, us(485), us(3), 1), bwd);
  b.Nvtx("autograd::engine::evaluate_function: AddmmBackward0, seq = 5", us(540), us(720), 2);
  b.Nvtx("aten::mm, seq = 9", us(545), us(560), 2);
  b.Kernel("gemm_bwd", us(600), us(700), 7, us(550), us(3), 2);
  b.Kernel("other_bwd", us(800), us(850), 7, us(750), us(3), 2);
  return b.trace();
}

const PythonSiteRow* FindSite(const Report& r, const std::string& site, bool inferred) {
  for (const PythonSiteRow& s : r.python_sites) {
    if (s.site == site && s.inferred == inferred) return &s;
  }
  return nullptr;
}

const KernelRow* FindKernelRow(const Report& r, const std::string& name) {
  for (const KernelRow& k : r.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

TEST(PythonSitesTest, LibraryFiles) {
  EXPECT_TRUE(IsLibraryPythonFile("/usr/lib/python3.12/threading.py"));
  EXPECT_TRUE(IsLibraryPythonFile("/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py"));
  EXPECT_TRUE(IsLibraryPythonFile("/usr/lib/python3/dist-packages/numpy/core.py"));
  EXPECT_TRUE(IsLibraryPythonFile("<frozen runpy>"));
  EXPECT_TRUE(IsLibraryPythonFile("/tmp/torchinductor_root/ab/cabc.py"));
  EXPECT_TRUE(IsLibraryPythonFile("/src/pytorch/torch/_tensor.py"));
  EXPECT_FALSE(IsLibraryPythonFile("/work/examples/pytorch/lm_train.py"));
  EXPECT_FALSE(IsLibraryPythonFile("train.py"));
}

class PythonSitesBuildTest : public ::testing::TestWithParam<BuildPath> {};

TEST_P(PythonSitesBuildTest, SitesOpsAndInferredBackward) {
  Report r = AnalyzeTraces({TrainingStep()}, GetParam());
  const PythonSiteRow* fwd = FindSite(r, kForward, false);
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->gpu_ns, us(100));
  EXPECT_EQ(fwd->launches, 1u);
  const PythonSiteRow* item = FindSite(r, kItem, false);
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(item->host_blocked_ns, us(100));
  EXPECT_EQ(item->gpu_ns, 0u);
  // gemm_bwd: inside AddmmBackward0 (seq 5) → forward op aten::addmm's line.
  const PythonSiteRow* fwd_inferred = FindSite(r, kForward, true);
  ASSERT_NE(fwd_inferred, nullptr);
  EXPECT_EQ(fwd_inferred->gpu_ns, us(100));
  // other_bwd: no op range; the latest Python call was inside backward().
  const PythonSiteRow* bwd_inferred = FindSite(r, kBackward, true);
  ASSERT_NE(bwd_inferred, nullptr);
  EXPECT_EQ(bwd_inferred->gpu_ns, us(50));
  const PythonSiteRow* bwd = FindSite(r, kBackward, false);
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(bwd->gpu_ns, us(5));

  const KernelRow* gemm = FindKernelRow(r, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->python_site, kForward);
  EXPECT_EQ(gemm->op, "aten::addmm");
  const KernelRow* gemm_bwd = FindKernelRow(r, "gemm_bwd");
  ASSERT_NE(gemm_bwd, nullptr);
  EXPECT_EQ(gemm_bwd->op, "aten::mm [backward of aten::addmm]");
  EXPECT_EQ(gemm_bwd->python_site, kForward);
  // Every kernel has a line; gemm_bwd and other_bwd (150 of 255 us) by inference.
  EXPECT_NEAR(r.python_attributed_gpu_pct, 100.0, 0.01);
  EXPECT_NEAR(r.python_inferred_gpu_pct, 100.0 * 150 / 255, 0.01);
  EXPECT_NEAR(r.op_attributed_gpu_pct, 100.0 * 200 / 255, 0.01);
  ASSERT_FALSE(r.ops.empty());
  ASSERT_FALSE(r.python_stacks.empty());
  EXPECT_EQ(r.python_stacks[0].frames.front(), "<module> (/work/train.py:100)");
}

INSTANTIATE_TEST_SUITE_P(BothPaths, PythonSitesBuildTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat));

// The collector shares a native stack between calls of one API from one
// native caller under one Python stack (lib/collect/call_stacks.h
// NativeStackOnce) and writes it on each of them: the model takes every
// call's stack from the trace and infers none (one Python line may reach the
// same API from several libraries: PyTorch's allocator and cuBLAS's own).
TEST_P(PythonSitesBuildTest, NativeStacksAreTheTracesOwn) {
  TraceBuilder b;
  uint32_t item = PyStack(b, {{"/work/train.py", "step", 50}, {"/work/train.py", "<module>", 100}});
  SyntheticTrace& t = b.trace();
  CallStack native;
  native.kind = StackKind::kNative;
  native.id = static_cast<uint32_t>(t.stacks.size() + 1);
  StackFrame frame;
  frame.function_id = t.Intern("cudaStreamSynchronize");
  frame.module_id = t.Intern("libcudart.so.13");
  native.frames.push_back(frame);
  t.stacks.push_back(native);
  SetPythonStack(b, b.Api("cudaStreamSynchronize", us(100), us(110), 1, native.id), item);
  SetPythonStack(b, b.Api("cudaStreamSynchronize", us(200), us(210), 1), item);  // none recorded
  SetPythonStack(b, b.Api("cudaStreamSynchronize", us(300), us(310), 1, native.id), item);
  absl::StatusOr<TimelineModel> model = Build({b.trace()}, GetParam());
  ASSERT_TRUE(model.ok()) << model.status();
  std::map<uint64_t, uint32_t> stack_at;  // start → native stack id
  for (const ApiCall& c : model->api_calls) stack_at[c.start_ns] = c.stack_id;
  ASSERT_EQ(stack_at.size(), 3u);
  const uint32_t first = stack_at[us(100)];
  EXPECT_NE(first, 0u);
  ASSERT_NE(model->Stack(0, first), nullptr);
  EXPECT_EQ(stack_at[us(200)], 0u);
  EXPECT_EQ(stack_at[us(300)], first);
}

TEST(PythonSitesTest, SyncOffenderNamesTheItemLine) {
  absl::StatusOr<TimelineModel> model = Build({TrainingStep()}, BuildPath::kWireFormat);
  ASSERT_TRUE(model.ok()) << model.status();
  Report r;
  Finding f;
  f.rule = "sync_api";
  Offender o;
  o.name = "cudaStreamSynchronize";
  o.detail = "no call stack recorded";
  f.offenders.push_back(o);
  Offender k;
  k.name = "gemm";
  f.offenders.push_back(k);
  r.findings.push_back(f);
  AddPythonSites(*model, &r);
  EXPECT_EQ(r.findings[0].offenders[0].python_site, kItem);
  EXPECT_EQ(r.findings[0].offenders[1].python_site, kForward);
}

// Python stacks of two lines of Model.forward: 42 (kForward, under a torch
// frame) and 45.
std::pair<uint32_t, uint32_t> ForwardLines(TraceBuilder& b) {
  return {PyStack(b, {{kLib + "nn/functional.py", "linear", 2000},
                      {"/work/train.py", "Model.forward", 42},
                      {"/work/train.py", "<module>", 100}}),
          PyStack(b, {{"/work/train.py", "Model.forward", 45}, {"/work/train.py", "<module>", 100}})};
}

// A host-bound loop: cpu_bound's time before each launch goes to that
// launch's user line. Uninstrumented time (Python) is split by line, an NVTX
// range (a PyTorch op, its instances grouped) names the line it led to.
TEST(PythonSitesTest, CpuBoundNamesTheLineTheHostWorkedTowards) {
  TraceBuilder b;
  const auto [at42, at45] = ForwardLines(b);
  for (int i = 0; i < 10; ++i) {
    uint64_t t = testing::ms(1) + i * testing::ms(2);
    b.Nvtx("aten::copy_, op_id = " + std::to_string(100 + i), t, t + us(500), 1);
    SetPythonStack(b, b.Kernel("copy_kernel", t + us(510), t + us(560), 7, t + us(500), us(3), 1),
                   at45);
    // 0.94 ms of Python outside any range before the next launch.
    SetPythonStack(b, b.Kernel("linear_kernel", t + us(1510), t + us(1560), 7, t + us(1500),
                               us(3), 1),
                   at42);
  }
  Report r = AnalyzeTraces({b.trace()}, BuildPath::kDirect);
  const Finding* f = testing::FindFinding(r, "cpu_bound");
  ASSERT_NE(f, nullptr);
  ASSERT_GE(f->offenders.size(), 2u);
  EXPECT_EQ(f->offenders[0].name, "(CPU work outside NVTX ranges and CUDA calls)");
  EXPECT_EQ(f->offenders[0].python_site, kForward);
  EXPECT_EQ(f->offenders[0].count, 10u);
  const Offender* copy = nullptr;
  for (const Offender& o : f->offenders) {
    if (o.name == "aten::copy_") copy = &o;
  }
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->python_site, "/work/train.py:45 in Model.forward");
  EXPECT_NE(f->recommendation.find(kForward), std::string::npos) << f->recommendation;
}

// A launch-bound loop: launch_bound's offenders are the user's lines whose
// launches take the host's launch path time (pause before each launch, up to
// the replay's pause limit, plus the call), largest first.
TEST(PythonSitesTest, LaunchBoundNamesTheLinesThatLaunch) {
  TraceBuilder b;
  const auto [at42, at45] = ForwardLines(b);
  uint64_t t = testing::ms(1);
  for (int i = 0; i < 200; ++i) {  // 25 us of host per launch, 2 us kernels
    t += us(20);
    SetPythonStack(b, b.Kernel("tiny", t + us(8), t + us(10), 7, t, us(5), 1), i % 4 ? at42 : at45);
    t += us(5);
  }
  Report r = AnalyzeTraces({b.trace()}, BuildPath::kDirect);
  const Finding* f = testing::FindFinding(r, "launch_bound");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->offenders.size(), 2u);
  EXPECT_EQ(f->offenders[0].name, "train.py:42");
  EXPECT_EQ(f->offenders[0].python_site, kForward);
  EXPECT_EQ(f->offenders[0].count, 150u);
  EXPECT_EQ(f->offenders[1].name, "train.py:45");
  EXPECT_EQ(f->offenders[1].count, 50u);
  EXPECT_EQ(f->offenders[1].total_ns, 50 * us(25) - us(20)) << "the first launch has no pause before it";
}

TEST(PythonSitesTest, NoPythonStacksChangesNothing) {
  TraceBuilder b;
  b.Kernel("k", us(100), us(200));
  Report r = AnalyzeTraces({b.trace()}, BuildPath::kDirect);
  EXPECT_TRUE(r.python_sites.empty());
  EXPECT_TRUE(r.ops.empty());
  for (const KernelRow& k : r.kernels) EXPECT_EQ(k.python_site, "");
}

}  // namespace
}  // namespace sightline::analysis
