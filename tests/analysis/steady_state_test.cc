// Steady state (steps.h): launch-pattern step detection, warm-up, --window
// scopes; one finding per root cause (root_cause.cc, whatif.h).
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/steps.h"
#include "lib/analysis/whatif.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::BuildPath;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

// A PyTorch-like run without annotations: a long start-up (irregular
// launches spread over 2 s), two slow warm-up steps, then `steps` steps of
// the same 6 kernels, each launched `launch_us` after the previous one ends
// on the host (the launch path), with `loader_us` of host time before the
// step's first launch (data loading).
TraceBuilder EagerLoop(int steps, double launch_us, double loader_us, double kernel_us = 5) {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int i = 0; i < 30; ++i) {  // start-up: irregular
    std::string name = "init_kernel_" + std::to_string(i % 7);
    b.Kernel(name, t + us(20), t + us(40), 7, t, us(10));
    t += ms(60) + us(i * 137);
  }
  const char* names[] = {"embedding", "gemm_a", "gelu", "gemm_b", "loss", "adamw"};
  for (int s = 0; s < steps + 2; ++s) {
    double extra = s < 2 ? 3000 : 0;  // warm-up steps are slow
    t += us(loader_us + extra);
    for (const char* n : names) {
      uint64_t api = t;
      b.Kernel(n, api + us(4), api + us(4 + kernel_us), 7, api, us(4));
      t += us(launch_us);
    }
  }
  return b;
}

Report Analyze(const TraceBuilder& b, const AnalysisOptions& o = {}) {
  return testing::AnalyzeTracesAsShipped({b.trace()}, BuildPath::kDirect, o);
}

TEST(WarmupTest, SkipsUntilStepTimesSettle) {
  EXPECT_EQ(WarmupSteps({}), 0u);
  EXPECT_EQ(WarmupSteps({10}), 0u);
  EXPECT_EQ(WarmupSteps({10, 10, 10, 10}), 1u);  // always the first
  EXPECT_EQ(WarmupSteps({500, 300, 40, 10, 10, 10, 10, 10}), 3u);
  EXPECT_EQ(WarmupSteps({500, 300, 40, 40, 10, 10, 10, 10, 10}), 4u);
  EXPECT_EQ(WarmupSteps({500, 10, 10, 90, 10, 10, 10, 10}), 1u);  // a later spike is not warm-up
  EXPECT_EQ(WarmupSteps({500, 10, 11, 10, 10, 9, 10, 10}), 1u);
}

TEST(WindowSpecTest, ParsesEveryFormAndRefusesTheRest) {
  EXPECT_EQ(ParseWindowSpec("steady")->kind, WindowSpec::kSteady);
  EXPECT_EQ(ParseWindowSpec("all")->kind, WindowSpec::kAll);
  absl::StatusOr<WindowSpec> s = ParseWindowSpec("steps:3-7");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, WindowSpec::kSteps);
  EXPECT_EQ(s->first, 3u);
  EXPECT_EQ(s->last, 7u);
  s = ParseWindowSpec("1.5..2500ms");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, WindowSpec::kTime);
  EXPECT_EQ(s->first, 1'500'000'000u);
  EXPECT_EQ(s->last, 2'500'000'000u);
  s = ParseWindowSpec("capture:2");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, WindowSpec::kCapture);
  EXPECT_EQ(s->first, 2u);
  for (const char* bad : {"steps:7-3", "steps:x", "2..1", "nan..3", "inf..1", "-1..2", "weird",
                          "1e400..1e401", "capture:0", "capture:", "capture:x"}) {
    EXPECT_FALSE(ParseWindowSpec(bad).ok()) << bad;
  }
}

// A monitor trace holds every capture of the process; capture:N is the N-th
// window in start order, not the unrecorded time around it.
TEST(WindowSpecTest, CaptureNIsThatWindowOnly) {
  TimelineModel m;
  m.first_ns = 100;
  m.last_ns = 10'000;
  CaptureWindow late, early;
  late.start_ns = 5'000;
  late.end_ns = 6'000;
  early.start_ns = 1'000;
  early.end_ns = 2'000;
  m.capture_windows = {late, early};
  std::vector<std::string> notes;
  ScopeChoice c = ChooseScope(m, StepDetection{}, *ParseWindowSpec("capture:2"), &notes);
  EXPECT_EQ(c.kind, "time");
  EXPECT_EQ(c.start_ns, 5'000u);
  EXPECT_EQ(c.end_ns, 6'000u);
  c = ChooseScope(m, StepDetection{}, *ParseWindowSpec("capture:1"), &notes);
  EXPECT_EQ(c.start_ns, 1'000u);
  notes.clear();
  c = ChooseScope(m, StepDetection{}, *ParseWindowSpec("capture:3"), &notes);
  EXPECT_EQ(c.kind, "whole");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("2 capture windows"), std::string::npos) << notes[0];
  // Numbered by the collector (a monitor capture's event names the number):
  // the number wins over the position, even past the count.
  m.capture_windows[0].index = 7;  // the late one
  m.capture_windows[1].index = 6;
  c = ChooseScope(m, StepDetection{}, *ParseWindowSpec("capture:7"), &notes);
  EXPECT_EQ(c.kind, "time");
  EXPECT_EQ(c.start_ns, 5'000u);
}

// A window's kernels weigh what ran in it: per launch configuration too
// (the kernel rules' unit). A capture window of a 10-minute monitored run on
// the H200 reported occupancy_limited with the whole run's kernel time,
// "saving 135 ms (29.3 % of the window)" of a 461 ms window.
TEST(WindowSpecTest, AWindowsKernelsAndConfigurationsAreItsOwn) {
  TraceBuilder b;
  KernelEvent starved;  // 384 threads x 168 registers: 1 block of 12 warps per SM
  starved.grid_x = 264;
  starved.block_x = 384;
  starved.registers_per_thread = 168;
  KernelEvent wide = starved;
  wide.grid_x = 1024;
  uint64_t t = ms(1);
  for (int i = 0; i < 400; ++i) {  // long before the window
    b.KernelWithConfig("gemm", t, t + us(400), i % 2 ? starved : wide);
    t += us(500);
  }
  const uint64_t w0 = t + ms(10);
  t = w0;
  for (int i = 0; i < 10; ++i) {
    b.KernelWithConfig("gemm", t, t + us(100), starved);
    t += us(500);
  }
  b.Capture(w0 - us(20), t, CaptureTrigger::kApi, 1);  // from the first launch call
  absl::StatusOr<TimelineModel> whole = testing::Build({b.trace()}, BuildPath::kDirect);
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->capture_windows.size(), 1u);
  TimelineModel scoped =
      ScopeModel(*whole, whole->capture_windows[0].start_ns, whole->capture_windows[0].end_ns);
  ASSERT_EQ(scoped.kernels.size(), 1u);
  const KernelAggregate& k = scoped.kernels[0];
  EXPECT_EQ(k.count, 10u);
  EXPECT_EQ(k.total_ns, us(1000));
  ASSERT_EQ(k.configs.size(), 1u) << "the configuration not launched in the window is gone";
  EXPECT_EQ(k.configs[0].config.grid_x, 264u);
  EXPECT_EQ(k.configs[0].count, 10u);
  EXPECT_EQ(k.configs[0].total_ns, us(1000));
  AnalysisOptions o;
  o.window = "capture:1";
  Report r = Analyze(b, o);
  const Finding* f = testing::FindFinding(r, "occupancy_limited");
  ASSERT_NE(f, nullptr);
  EXPECT_LE(f->est_saving_ns, us(1000)) << "at most the window's time of that kernel";
  EXPECT_LE(f->est_saving_pct, 100.0 * double(us(1000)) / double(t - w0) + 1e-9);
  uint64_t sum = 0;
  for (const Finding& g : r.findings) sum += g.est_saving_ns;
  EXPECT_LE(sum, t - w0) << "savings within the window";
}

// Monitor captures: a step range open when a window closes has no recorded
// end (the collector closes it when the process exits). In a 10-minute H200
// run such a "train_step" lasted 596 s, nested the later 200 steps under it,
// and step detection found 10. It ends at its window's end, and is no step.
TEST(WindowSpecTest, ARangeOpenAtAWindowsEndIsCutThereAndIsNoStep) {
  TraceBuilder b;
  uint64_t t = ms(1);
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  for (int w = 0; w < 3; ++w) {
    const uint64_t w0 = t;
    for (int i = 0; i < 5; ++i) {
      b.Kernel("step_kernel", t + us(100), t + us(900));
      b.Nvtx("train_step", t, t + ms(1));
      t += ms(1);
    }
    b.Capture(w0, t + us(300), CaptureTrigger::kApi, static_cast<uint32_t>(w + 1));
    windows.push_back({w0, t + us(300)});
    t += ms(100);  // not recorded
  }
  // Pushed 200 us before the first window closed; the collector closed it
  // at exit, after everything else.
  b.Nvtx("train_step", windows[0].second - us(200), t + ms(5));
  absl::StatusOr<TimelineModel> m = testing::Build({b.trace()}, BuildPath::kDirect);
  ASSERT_TRUE(m.ok()) << m.status();
  int cut = 0;
  for (const NvtxRange& r : m->nvtx_ranges) {
    EXPECT_EQ(r.depth, 0) << "nothing nests under the cut range";
    if (r.cut_at_window_end) {
      ++cut;
      EXPECT_EQ(r.end_ns - r.start_ns, us(200)) << "ends at the first window's end";
    }
  }
  EXPECT_EQ(cut, 1);
  StepDetection steps = DetectSteps(*m, "", nullptr);
  EXPECT_EQ(steps.source, "nvtx");
  EXPECT_EQ(steps.steps.size(), 15u) << "every whole step of the three windows, not the cut one";
}

// A range pushed in one window and popped inside a later one has a recorded
// end, even when nothing was recorded after the pop: it is kept whole.
TEST(WindowSpecTest, ARangeEndingInALaterWindowIsNotCut) {
  TraceBuilder b;
  uint64_t t = ms(1);
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  for (int w = 0; w < 2; ++w) {
    const uint64_t w0 = t;
    for (int i = 0; i < 5; ++i) {
      b.Kernel("step_kernel", t + us(100), t + us(900));
      t += ms(1);
    }
    b.Capture(w0, t + us(300), CaptureTrigger::kApi, static_cast<uint32_t>(w + 1));
    windows.push_back({w0, t + us(300)});
    t += ms(100);
  }
  // After the last kernel, before the last window's end.
  b.Nvtx("epoch", windows[0].first + us(10), windows[1].second - us(10));
  absl::StatusOr<TimelineModel> m = testing::Build({b.trace()}, BuildPath::kDirect);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->nvtx_ranges.size(), 1u);
  EXPECT_FALSE(m->nvtx_ranges[0].cut_at_window_end);
  EXPECT_EQ(m->nvtx_ranges[0].end_ns - m->nvtx_ranges[0].start_ns,
            windows[1].second - us(10) - windows[0].first - us(10));
}

// Capture windows far apart (monitor captures): the time between them was
// not recorded, so the default scope is the last group's steps, not a span
// across the gaps (read as idle GPU); windows one step apart (a step range
// captured step after step) are one group and keep the steady state.
TEST(WindowSpecTest, DefaultScopeIsTheLastGroupOfWindowsFarApart) {
  auto build = [](uint64_t gap) {
    TraceBuilder b;
    uint64_t t = ms(1);
    for (int w = 0; w < 3; ++w) {
      const uint64_t w0 = t;
      for (int i = 0; i < 4; ++i) {
        b.Kernel("step_kernel", t + us(100), t + us(900));
        b.Nvtx("train_step", t, t + ms(1));
        t += ms(1);
      }
      b.Capture(w0, t, CaptureTrigger::kApi, static_cast<uint32_t>(w + 1));
      t += gap;  // not recorded
    }
    return b;
  };
  for (uint64_t gap : {ms(500), us(50)}) {
    TraceBuilder b = build(gap);
    absl::StatusOr<TimelineModel> m = testing::Build({b.trace()}, BuildPath::kDirect);
    ASSERT_TRUE(m.ok()) << m.status();
    StepDetection steps = DetectSteps(*m, "", nullptr);
    ASSERT_EQ(steps.steps.size(), 12u);
    std::vector<std::string> notes;
    ScopeChoice c = ChooseScope(*m, steps, *ParseWindowSpec("steady"), &notes);
    if (gap == ms(500)) {
      EXPECT_EQ(c.kind, "steps");
      EXPECT_EQ(c.first_step, 8);
      EXPECT_EQ(c.last_step, 11);
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_NE(notes[0].find("3 groups of capture windows"), std::string::npos) << notes[0];
      Report r = Analyze(b);
      ASSERT_FALSE(r.summary.devices.empty());
      EXPECT_GT(r.summary.devices[0].gpu_utilization_pct, 50.0)
          << "the gaps are not idle GPU";
    } else {
      EXPECT_EQ(c.kind, "steady_state") << "windows a step apart are one recording";
      EXPECT_TRUE(notes.empty());
    }
  }
}

// `n` whole 1-ms steps (an NVTX "train_step" and a kernel each) from `t`,
// recorded in one capture window numbered `index`.
void CaptureSteps(TraceBuilder* b, uint64_t t, int n, uint32_t index) {
  const uint64_t w0 = t;
  for (int i = 0; i < n; ++i) {
    b->Kernel("step_kernel", t + us(100), t + us(900));
    b->Nvtx("train_step", t, t + ms(1));
    t += ms(1);
  }
  b->Capture(w0, t, CaptureTrigger::kApi, index);
}

// The default (steady) scope of `traces`, with the steps found and the notes.
struct DefaultScope {
  size_t steps = 0;
  std::vector<std::string> notes;
  ScopeChoice choice;
};
DefaultScope ScopeOf(const std::vector<SyntheticTrace>& traces) {
  DefaultScope out;
  absl::StatusOr<TimelineModel> m = testing::Build(traces, BuildPath::kDirect);
  if (!m.ok()) {
    ADD_FAILURE() << m.status();
    return out;
  }
  StepDetection steps = DetectSteps(*m, "", nullptr);
  out.steps = steps.steps.size();
  out.choice = ChooseScope(*m, steps, *ParseWindowSpec("steady"), &out.notes);
  return out;
}

// The scope is steps FIRST..LAST (`why` says which recording that is).
void ExpectStepScope(const DefaultScope& s, int64_t first, int64_t last, const char* why = "") {
  EXPECT_EQ(s.choice.kind, "steps");
  EXPECT_EQ(s.choice.first_step, first) << why;
  EXPECT_EQ(s.choice.last_step, last);
}

// Windows opened step after step (an NVTX capture range that repeats, a
// profiler started and stopped every iteration) are one recording even when
// each gap is longer than its window: the gaps are all alike.
TEST(WindowSpecTest, WindowsOpenedEveryStepAreOneRecording) {
  TraceBuilder b;
  uint64_t t = ms(1);
  for (int w = 0; w < 12; ++w) {
    b.Kernel("step_kernel", t + us(100), t + us(900));
    b.Nvtx("train_step", t, t + ms(1));
    b.Capture(t, t + ms(1), CaptureTrigger::kNvtx, static_cast<uint32_t>(w + 1));
    t += ms(4);  // 3 ms of the iteration outside the window
  }
  const DefaultScope s = ScopeOf({b.trace()});
  ASSERT_EQ(s.steps, 12u);
  const std::vector<std::string>& notes = s.notes;
  const ScopeChoice& c = s.choice;
  EXPECT_EQ(c.kind, "steady_state");
  for (const std::string& n : notes) EXPECT_EQ(n.find("groups of capture windows"), std::string::npos) << n;
}

// The last capture holds one step (the process ended during it): the scope
// is the last capture with at least two whole steps, and the note says so.
TEST(WindowSpecTest, ALastCaptureCutShortIsPassedOver) {
  TraceBuilder b;
  CaptureSteps(&b, ms(1), 4, 1);
  CaptureSteps(&b, ms(505), 4, 2);
  CaptureSteps(&b, ms(1009), 1, 3);
  const DefaultScope s = ScopeOf({b.trace()});
  ASSERT_EQ(s.steps, 9u);
  const std::vector<std::string>& notes = s.notes;
  ExpectStepScope(s, 4, 7);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("the last with at least 2 steps (1 later one has fewer)"), std::string::npos)
      << notes[0];
}

// Several ranks, each recorded in captures far apart: each rank's windows are
// grouped on their own (interleaved, they would look like one recording or
// split at the wrong places); the ranks' last recordings at the same time are
// analysed together, one recorded at another time is named, not pooled.
TEST(WindowSpecTest, RanksAreGroupedEachAndTheirLastRecordingsJoined) {
  auto rank = [](int32_t r, uint64_t offset, int windows) {
    TraceBuilder b(r, "rank" + std::to_string(r));
    for (int w = 0; w < windows; ++w) {
      CaptureSteps(&b, ms(1) + offset + w * ms(504), 4, static_cast<uint32_t>(w + 1));
    }
    return b;
  };
  {  // same times: the last capture of both
    TraceBuilder r0 = rank(0, 0, 3), r1 = rank(1, us(20), 3);
    const DefaultScope s = ScopeOf({r0.trace(), r1.trace()});
    ASSERT_EQ(s.steps, 24u);
    const std::vector<std::string>& notes = s.notes;
    ExpectStepScope(s, 16, 23);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].find("not in it"), std::string::npos) << notes[0];
  }
  {  // rank 1 stopped a capture earlier: its last recording is rank 0's second
    TraceBuilder r0 = rank(0, 0, 3), r1 = rank(1, us(20), 2);
    const DefaultScope s = ScopeOf({r0.trace(), r1.trace()});
    ASSERT_EQ(s.steps, 20u);
    const std::vector<std::string>& notes = s.notes;
    ExpectStepScope(s, 16, 19);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("not in it: the recording of rank1"), std::string::npos) << notes[0];
  }
  {  // one capture each, at different times: still two recordings
    TraceBuilder r0 = rank(0, ms(600), 1), r1 = rank(1, us(20), 1);
    const DefaultScope s = ScopeOf({r0.trace(), r1.trace()});
    ASSERT_EQ(s.steps, 8u);
    const std::vector<std::string>& notes = s.notes;
    ExpectStepScope(s, 4, 7, "rank 0's capture, the later one");
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("not in it: the recording of rank1"), std::string::npos) << notes[0];
  }
}

// Two captures far apart and nothing that gives a step period (one step per
// window): with too few gaps for a median, a gap longer than the windows
// splits them.
TEST(WindowSpecTest, TwoWindowsFarApartWithoutAStepPeriodAreTwoRecordings) {
  TraceBuilder b;
  for (uint64_t t : {ms(1), ms(800)}) {
    b.Kernel("step_kernel", t + us(100), t + us(900));
    b.Nvtx("train_step", t, t + ms(1));
    b.Capture(t, t + ms(1), CaptureTrigger::kApi, t == ms(1) ? 1u : 2u);
  }
  const DefaultScope s = ScopeOf({b.trace()});
  ASSERT_EQ(s.steps, 2u);
  const std::vector<std::string>& notes = s.notes;
  ExpectStepScope(s, 1, 1);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("2 groups of capture windows"), std::string::npos) << notes[0];
}

// A rank whose chosen recording is elsewhere but which has a whole step
// inside the analysed recording (its last capture, cut short) was recorded
// then: its steps there are analysed with the others', and it is not named
// as left out.
TEST(WindowSpecTest, ARankWithAStepInsideTheRecordingIsAnalysedWithIt) {
  TraceBuilder r0(0, "rank0"), r1(1, "rank1");
  CaptureSteps(&r0, ms(1), 4, 1);
  CaptureSteps(&r0, ms(501), 4, 2);
  CaptureSteps(&r1, ms(201), 4, 1);
  CaptureSteps(&r1, ms(502) + us(500), 1, 2);  // cut short, inside rank 0's last capture
  const DefaultScope s = ScopeOf({r0.trace(), r1.trace()});
  ASSERT_EQ(s.steps, 13u);
  const std::vector<std::string>& notes = s.notes;
  const ScopeChoice& c = s.choice;
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0].find("not in it"), std::string::npos) << notes[0];
  EXPECT_EQ(c.kind, "steps");
  EXPECT_EQ(c.first_step, 8);
  EXPECT_EQ(c.last_step, 12) << "rank 0's 4 steps and rank 1's one";
  EXPECT_EQ(c.end_ns - c.start_ns, ms(4));
}

TEST(SteadyStateTest, LaunchPatternFindsStepsAndSkipsStartUpAndWarmUp) {
  TraceBuilder b = EagerLoop(40, 30, 200);
  Report r = Analyze(b);
  EXPECT_EQ(r.summary.scope, "steady_state");
  EXPECT_EQ(r.summary.steps.source, "launch_pattern");
  EXPECT_EQ(r.summary.steps.period, 6u);
  EXPECT_GE(r.summary.steps.warmup_steps, 1u);
  EXPECT_LT(r.summary.steps.max_ns, ms(1));  // the 3 ms warm-up step is left out
  EXPECT_GE(r.summary.steps.count, 35u);
  // A step: loader 200 us + 6 launches 30 us apart = 380 us.
  EXPECT_NEAR(double(r.summary.steps.p50_ns), 380e3, 5e3);
  EXPECT_GT(r.summary.startup_ns, ms(1800));  // the 2 s start-up is not analysed
  EXPECT_LT(r.summary.window_ns, ms(20));
  EXPECT_EQ(r.summary.steady_first_step, int64_t(r.summary.steps.warmup_steps));

  AnalysisOptions all;
  all.window = "all";
  Report whole = Analyze(b, all);
  EXPECT_EQ(whole.summary.scope, "whole");
  EXPECT_GT(whole.summary.window_ns, ms(1800));

  AnalysisOptions some;
  some.window = "steps:10-19";
  Report part = Analyze(b, some);
  EXPECT_EQ(part.summary.scope, "steps");
  EXPECT_EQ(part.summary.steps.count, 10u);
  EXPECT_EQ(part.summary.steps.steps.front().index, 10u);
}

// An eager loop without annotations: `steps` steps of 6 kernels (loader
// 200 us + 6 launches 30 us apart = 380 us), recorded in capture windows of
// `per_window` steps each (cudaProfilerStart/Stop), 2 ms apart.
TraceBuilder CapturedLoop(int steps, int per_window) {
  TraceBuilder b;
  uint64_t t = ms(1), w0 = t;
  const char* names[] = {"embedding", "gemm_a", "gelu", "gemm_b", "loss", "adamw"};
  uint32_t index = 0;
  for (int s = 0; s < steps; ++s) {
    t += us(200);
    for (const char* n : names) {
      b.Kernel(n, t + us(4), t + us(9), 7, t, us(4));
      t += us(30);
    }
    if ((s + 1) % per_window == 0) {
      b.Capture(w0, t, CaptureTrigger::kProfilerApi, ++index);
      t += ms(2);
      w0 = t;
    }
  }
  return b;
}

// `sightline profile --capture-range cudaProfilerApi` around a whole training
// loop (nsys's way) is one window of many iterations: the steps are the
// loop's (run of 2026-12-07 on the H100: the LM's 40 captured steps were
// reported as 1 step of 4.09 s). A program that brackets every iteration
// with its own window still gets a step per window.
TEST(SteadyStateTest, OneCaptureAroundTheLoopHoldsItsSteps) {
  Report one = Analyze(CapturedLoop(40, 40));
  EXPECT_EQ(one.summary.steps.source, "launch_pattern");
  EXPECT_EQ(one.summary.steps.period, 6u);
  EXPECT_GE(one.summary.steps.detected, 38u);
  EXPECT_NEAR(double(one.summary.steps.p50_ns), 380e3, 5e3);

  // Windows of 10 iterations each, 2 ms apart (a capture every N steps):
  // the iterations again; the time between windows is no step of the scope.
  Report some = Analyze(CapturedLoop(40, 10));
  EXPECT_EQ(some.summary.steps.source, "launch_pattern");
  EXPECT_LT(some.summary.steps.max_ns, us(500)) << "no step across the unrecorded gap";
  EXPECT_GE(some.summary.steps.count, 5u);

  Report each = Analyze(CapturedLoop(12, 1));
  EXPECT_EQ(each.summary.steps.source, "capture_window");
  EXPECT_EQ(each.summary.steps.detected, 12u);
}

// A loop whose host runs ahead of the GPU (the fixed nccl_allreduce rank:
// launches 10 us apart, kernels of 100 us), each step ending with work that
// has no launch call in the trace (an NCCL kernel launched through the
// driver): such work is in the steady state when it runs inside the steady
// steps' GPU span; the host range, long over when the GPU gets there, held
// only the first few.
TEST(SteadyStateTest, WorkWithoutALaunchCallIsScopedByTheStepsGpuSpan) {
  TraceBuilder b;
  uint64_t host = ms(1), gpu = ms(1) + us(50);
  const int steps = 40;
  for (int s = 0; s < steps; ++s) {
    host += us(20);
    for (const char* n : {"embedding", "gemm", "loss"}) {
      b.Kernel(n, gpu, gpu + us(100), 7, host, us(4));
      host += us(10);
      gpu += us(100);
    }
    b.BareKernel("allreduce", gpu, gpu + us(50), 13);
    gpu += us(50);
  }
  Report r = Analyze(b);
  ASSERT_EQ(r.summary.steps.source, "launch_pattern");
  EXPECT_NEAR(double(r.summary.steps.p50_ns), 350e3, 5e3) << "GPU-timed steps";
  uint64_t gemm = 0, allreduce = 0;
  for (const KernelRow& k : r.kernels) {
    if (k.name == "gemm") gemm = k.count;
    if (k.name == "allreduce") allreduce = k.count;
  }
  EXPECT_GE(gemm, 30u);
  EXPECT_GE(allreduce + 1, gemm) << "the unlaunched work of the steady steps is in scope";
  EXPECT_LE(allreduce, gemm + 1);
}

// A --metrics run of an eager loop: 2 slow warm-up steps, then `measured`
// steps whose 6 launches each were measured for hardware metrics (sequence
// passes: 20 ms a step under the profiler), then `clean` steps as the
// application runs them (loader 200 us + 6 launches 30 us apart = 380 us).
TraceBuilder MetricsLoop(int measured, int clean) {
  TraceBuilder b;
  uint64_t t = ms(1);
  const char* names[] = {"embedding", "gemm_a", "gelu", "gemm_b", "loss", "adamw"};
  for (int s = 0; s < 2 + measured + clean + 1; ++s) {
    const bool pass = s >= 2 && s < 2 + measured;
    t += us(s < 2 ? 3200 : pass ? 19'820 : 200);
    for (const char* n : names) {
      uint32_t corr = b.Kernel(n, t + us(4), t + us(9), 7, t, us(4));
      if (pass) b.Metric(corr, "sm__cycles_active.avg", 100);
      t += us(30);
    }
  }
  return b;
}

// Run CB (H100, LM eager, 3 sequences and top replays): 38 of 48 steps ran
// metric passes or replays, the median of the second half was a pass step,
// and the "steady state" was steps 2-47, p50 313 ms instead of 16 ms. The
// steps that launched measured kernels are never the steady state when at
// least two steps follow them.
TEST(SteadyStateTest, StepsThatRanMetricPassesAreNotTheSteadyState) {
  Report r = Analyze(MetricsLoop(30, 8));
  EXPECT_EQ(r.summary.scope, "steady_state");
  EXPECT_EQ(r.summary.steps.metrics_steps, 30u);
  EXPECT_GE(r.summary.steps.warmup_steps, 32u) << "the warm-up and the passes";
  EXPECT_EQ(r.summary.steps.count, r.summary.steps.detected - r.summary.steps.warmup_steps);
  EXPECT_GE(r.summary.steps.count, 6u);
  EXPECT_LT(r.summary.steps.max_ns, ms(1)) << "no pass step in the steady state";
  EXPECT_NEAR(double(r.summary.steps.p50_ns), 380e3, 5e3);

  // Without the metric sets the same step times put the median in the
  // passes: the old rule's answer, kept for runs without metrics.
  TraceBuilder plain = MetricsLoop(30, 8);
  plain.trace().metric_ranges.clear();
  Report p = Analyze(plain);
  EXPECT_EQ(p.summary.steps.metrics_steps, 0u);
  EXPECT_GT(p.summary.steps.max_ns, ms(10));

  // Per-range metrics (--metrics-range nvtx:NAME): a set's instances, one
  // pass each, are steps under the profiler too, kernels measured or not.
  TraceBuilder ranged = MetricsLoop(30, 8);
  ranged.trace().metric_ranges.clear();
  MetricRangeEvent set;
  set.user_range = true;
  set.range_name_id = ranged.trace().Intern("train_step");
  // Steps of 3380 us (warm-up) and 20 ms (passes): from the first pass
  // step's launch to inside the last one.
  set.start_ns = ms(1) + us(2 * 3380 + 19'820);
  set.end_ns = ms(1) + us(2 * 3380 + 30 * 20'000 - 100);
  set.launches_spanned = 30;
  set.num_passes = 30;
  set.passes_collected = 30;
  set.values.push_back({ranged.trace().Intern("sm__cycles_active.avg"), 100});
  ranged.trace().metric_ranges.push_back(set);
  Report by_range = Analyze(ranged);
  EXPECT_GE(by_range.summary.steps.metrics_steps, 29u);
  EXPECT_LT(by_range.summary.steps.max_ns, ms(1));

  // Passes to the end (fewer than 2 steps after them): the steps are kept
  // and a note says their times include the passes.
  Report all = Analyze(MetricsLoop(30, 0));
  EXPECT_EQ(all.summary.steps.metrics_steps, 0u);
  bool noted = false;
  for (const std::string& n : all.notes) {
    noted = noted || n.find("steps ran hardware-metric passes or replays") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

TEST(SteadyStateTest, LaunchBoundLoopGetsOneRootCauseWithItsSymptoms) {
  // 6 kernels of 5 us launched 30 us apart: the GPU idles 80 % of the step.
  Report r = Analyze(EagerLoop(40, 30, 20));
  ASSERT_FALSE(r.findings.empty());
  const Finding& first = r.findings.front();
  EXPECT_EQ(first.rule, "launch_bound");
  EXPECT_EQ(r.summary.first_action.rule, "launch_bound");
  EXPECT_GT(r.summary.first_action.step_ns, r.summary.first_action.expected_step_ns);
  // The idle-time rules restate it and are folded in, not listed apart.
  EXPECT_EQ(testing::FindFinding(r, "gpu_idle"), nullptr);
  EXPECT_EQ(testing::FindFinding(r, "gpu_low_utilization"), nullptr);
  bool idle_folded = false;
  for (const std::string& s : first.symptoms) idle_folded |= s == "gpu_idle" || s == "gpu_low_utilization";
  EXPECT_TRUE(idle_folded);
  uint64_t sum = 0;
  for (const Finding& f : r.findings) sum += f.est_saving_ns;
  EXPECT_LE(sum, r.summary.window_ns);
}

TEST(SteadyStateTest, DataLoadingGapsAreCpuBoundNotLaunchBound) {
  // 3 ms of host work before each step, launches close together.
  Report r = Analyze(EagerLoop(30, 6, 3000, 4));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().rule, "cpu_bound");
  EXPECT_GT(r.findings.front().est_saving_pct, 80);
}

TEST(WhatIfTest, Fp32MathNamesFromTheLibraries) {
  EXPECT_TRUE(IsFp32MathKernelName(
      "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize256x64x8_stage3_"
      "warpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn"));
  EXPECT_TRUE(IsFp32MathKernelName(
      "_Z15fft2d_c2r_32x32IfLb0ELb0ELj0ELb0ELb0EEvPT_PK6float2iiiiiiiiiffN5cudnn15reduced_"
      "divisorEbS1_S1_4int221cudnnActivationStructii"));
  EXPECT_TRUE(IsFp32MathKernelName("volta_sgemm_128x64_nn"));
  EXPECT_FALSE(IsFp32MathKernelName(
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
      "execute_segment_k_off_kernel__5x_cublas"));
  EXPECT_FALSE(IsFp32MathKernelName("ampere_s1688gemm_128x128_ldg8_stages_32x1_tn"));  // TF32
  EXPECT_FALSE(IsFp32MathKernelName(
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"));
  EXPECT_DOUBLE_EQ(TensorSpeedupFor(9, 0), 14.8);
  EXPECT_DOUBLE_EQ(TensorSpeedupFor(8, 0), 16.0);
}

// Pageable copies replayed as pinned without a pinned copy in the trace run
// at the device's host link: PCIe Gen5 x16 on Hopper and later (H200's
// pinned copies: 53-54 GB/s), Gen4 x16 before.
TEST(WhatIfTest, PinnedBandwidthFollowsTheHostLink) {
  EXPECT_DOUBLE_EQ(PinnedGbpsFor(9, 0), 50.0);
  EXPECT_DOUBLE_EQ(PinnedGbpsFor(10, 0), 50.0);
  EXPECT_DOUBLE_EQ(PinnedGbpsFor(8, 0), 25.0);
  EXPECT_DOUBLE_EQ(PinnedGbpsFor(0, 0), 25.0);
}

}  // namespace
}  // namespace sightline::analysis
