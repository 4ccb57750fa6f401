// The capture-range state machine: every trigger, delay, duration, repeat.
#include "lib/collect/capture_state.h"

#include <vector>

#include "gtest/gtest.h"

namespace sightline::collect {
namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kS = 1000 * kMs;

TEST(CaptureStateTest, WholeRunStartsAtBeginAndStopsAtExit) {
  CaptureStateMachine m(CaptureMode::kWholeRun, "", 0, 0, true);
  EXPECT_EQ(m.Begin(100), CaptureAction::kStart);
  EXPECT_TRUE(m.capturing());
  EXPECT_EQ(m.label(), "whole");
  EXPECT_EQ(m.trigger(), CaptureTrigger::kWholeRun);
  EXPECT_EQ(m.OnProfilerStop(200), CaptureAction::kNone);  // not our trigger
  EXPECT_EQ(m.OnExit(300), CaptureAction::kStop);
  EXPECT_TRUE(m.finished());
  EXPECT_EQ(m.OnExit(400), CaptureAction::kNone);
}

TEST(CaptureStateTest, ProfilerApiRepeatedWindowsAreLabelled) {
  CaptureStateMachine m(CaptureMode::kProfilerApi, "", 0, 0, true);
  EXPECT_EQ(m.Begin(0), CaptureAction::kNone);
  EXPECT_FALSE(m.capturing());
  EXPECT_EQ(m.OnProfilerStart(10), CaptureAction::kStart);
  EXPECT_EQ(m.label(), "cudaProfilerApi#1");
  EXPECT_EQ(m.window_start_ns(), 10u);
  EXPECT_EQ(m.OnProfilerStart(15), CaptureAction::kNone);  // nested start ignored
  EXPECT_EQ(m.OnProfilerStop(20), CaptureAction::kStop);
  EXPECT_EQ(m.OnProfilerStop(25), CaptureAction::kNone);
  EXPECT_FALSE(m.finished());
  EXPECT_EQ(m.OnProfilerStart(30), CaptureAction::kStart);
  EXPECT_EQ(m.window_index(), 2u);
  EXPECT_EQ(m.label(), "cudaProfilerApi#2");
  EXPECT_EQ(m.OnExit(40), CaptureAction::kStop);
}

TEST(CaptureStateTest, CaptureEndStopFinishesAfterFirstWindow) {
  CaptureStateMachine m(CaptureMode::kProfilerApi, "", 0, 0, /*repeat=*/false);
  m.Begin(0);
  EXPECT_EQ(m.OnProfilerStart(10), CaptureAction::kStart);
  EXPECT_EQ(m.OnProfilerStop(20), CaptureAction::kStop);
  EXPECT_TRUE(m.finished());
  EXPECT_EQ(m.OnProfilerStart(30), CaptureAction::kNone);
}

TEST(CaptureStateTest, NvtxPushPopMatchesThreadAndDepth) {
  CaptureStateMachine m(CaptureMode::kNvtx, "train", 0, 0, true);
  m.Begin(0);
  EXPECT_EQ(m.OnNvtxPush(5, "warmup", 1, 0), CaptureAction::kNone);
  EXPECT_EQ(m.OnNvtxPop(6, 1, 0), CaptureAction::kNone);
  EXPECT_EQ(m.OnNvtxPush(10, "train", 1, 0), CaptureAction::kStart);
  EXPECT_EQ(m.label(), "nvtx:train#1");
  EXPECT_EQ(m.trigger(), CaptureTrigger::kNvtx);
  // Nested ranges and other threads do not close it.
  EXPECT_EQ(m.OnNvtxPush(11, "step", 1, 1), CaptureAction::kNone);
  EXPECT_EQ(m.OnNvtxPop(12, 1, 1), CaptureAction::kNone);
  EXPECT_EQ(m.OnNvtxPop(13, 2, 0), CaptureAction::kNone);
  EXPECT_EQ(m.OnNvtxPop(14, 1, 0), CaptureAction::kStop);
  EXPECT_EQ(m.OnNvtxPush(20, "train", 3, 2), CaptureAction::kStart);
  EXPECT_EQ(m.window_index(), 2u);
}

TEST(CaptureStateTest, NvtxStartEndRangeMayEndOnAnotherThread) {
  CaptureStateMachine m(CaptureMode::kNvtx, "epoch", 0, 0, true);
  m.Begin(0);
  EXPECT_EQ(m.OnNvtxRangeStart(10, "epoch", 77), CaptureAction::kStart);
  EXPECT_EQ(m.OnNvtxRangeEnd(11, 78), CaptureAction::kNone);
  EXPECT_EQ(m.OnNvtxPop(12, 1, 0), CaptureAction::kNone);
  EXPECT_EQ(m.OnNvtxRangeEnd(13, 77), CaptureAction::kStop);
}

TEST(CaptureStateTest, DelayPostponesWholeRunAndTickStartsIt) {
  CaptureStateMachine m(CaptureMode::kWholeRun, "", /*delay_s=*/2, 0, true);
  EXPECT_EQ(m.Begin(1 * kS), CaptureAction::kNone);
  EXPECT_EQ(m.trigger(), CaptureTrigger::kTimer);
  EXPECT_EQ(m.next_deadline_ns(), 3 * kS);
  EXPECT_EQ(m.OnTick(2 * kS), CaptureAction::kNone);
  EXPECT_EQ(m.OnTick(3 * kS), CaptureAction::kStart);
  EXPECT_EQ(m.next_deadline_ns(), 0u);
}

TEST(CaptureStateTest, DurationClosesTheWindowAndWholeRunFinishes) {
  CaptureStateMachine m(CaptureMode::kWholeRun, "", 0, /*duration_s=*/0.5, true);
  EXPECT_EQ(m.Begin(0), CaptureAction::kStart);
  EXPECT_EQ(m.next_deadline_ns(), 500 * kMs);
  EXPECT_EQ(m.OnTick(499 * kMs), CaptureAction::kNone);
  EXPECT_EQ(m.OnTick(500 * kMs), CaptureAction::kStop);
  EXPECT_TRUE(m.finished());
  EXPECT_EQ(m.OnExit(kS), CaptureAction::kNone);
}

TEST(CaptureStateTest, DurationCutsAProfilerWindowUntilTheNextStart) {
  CaptureStateMachine m(CaptureMode::kProfilerApi, "", 0, 1, true);
  m.Begin(0);
  EXPECT_EQ(m.OnProfilerStart(kS), CaptureAction::kStart);
  EXPECT_EQ(m.OnTick(2 * kS), CaptureAction::kStop);
  EXPECT_EQ(m.OnTick(3 * kS), CaptureAction::kNone);       // still "wanted" but expired
  EXPECT_EQ(m.OnProfilerStop(4 * kS), CaptureAction::kNone);
  EXPECT_EQ(m.OnProfilerStart(5 * kS), CaptureAction::kStart);
  EXPECT_EQ(m.window_index(), 2u);
}

TEST(CaptureStateTest, DelayAppliesToTriggersThatFireEarly) {
  CaptureStateMachine m(CaptureMode::kProfilerApi, "", 1, 0, true);
  m.Begin(0);
  EXPECT_EQ(m.OnProfilerStart(100 * kMs), CaptureAction::kNone);
  EXPECT_EQ(m.next_deadline_ns(), kS);
  EXPECT_EQ(m.OnTick(kS), CaptureAction::kStart);
  EXPECT_EQ(m.window_start_ns(), kS);
}

TEST(CaptureStateTest, ApiModeFollowsStartStop) {
  CaptureStateMachine m(CaptureMode::kApi, "", 0, 0, true);
  m.Begin(0);
  EXPECT_EQ(m.OnProfilerStart(1), CaptureAction::kNone);
  EXPECT_EQ(m.OnApiStart(2), CaptureAction::kStart);
  EXPECT_EQ(m.label(), "api#1");
  EXPECT_EQ(m.trigger(), CaptureTrigger::kApi);
  EXPECT_EQ(m.OnApiStop(3), CaptureAction::kStop);
}

TEST(CaptureStateTest, NothingBeforeBegin) {
  CaptureStateMachine m(CaptureMode::kProfilerApi, "", 0, 0, true);
  EXPECT_EQ(m.OnProfilerStart(1), CaptureAction::kNone);
  EXPECT_FALSE(m.capturing());
  // The remembered trigger takes effect at Begin.
  EXPECT_EQ(m.Begin(2), CaptureAction::kStart);
}

TEST(CaptureStateTest, SkipThenCountWindowsLikeTorchProfilerSchedule) {
  // --capture-range nvtx:step --capture-skip 2 --capture-count 3: ranges 1-2
  // open nothing, ranges 3-5 are windows 1-3, then the capture is over.
  CaptureStateMachine m(CaptureMode::kNvtx, "step", 0, 0, true, 2, 3);
  EXPECT_EQ(m.Begin(0), CaptureAction::kNone);
  uint64_t t = 10;
  std::vector<CaptureAction> opens;
  for (int range = 1; range <= 7; ++range, t += 10) {
    opens.push_back(m.OnNvtxPush(t, "step", 1, 0));
    CaptureAction close = m.OnNvtxPop(t + 5, 1, 0);
    EXPECT_EQ(close, opens.back() == CaptureAction::kStart ? CaptureAction::kStop
                                                           : CaptureAction::kNone)
        << "range " << range;
  }
  EXPECT_EQ(opens, (std::vector<CaptureAction>{CaptureAction::kNone, CaptureAction::kNone,
                                               CaptureAction::kStart, CaptureAction::kStart,
                                               CaptureAction::kStart, CaptureAction::kNone,
                                               CaptureAction::kNone}));
  EXPECT_EQ(m.window_index(), 3u);
  EXPECT_EQ(m.label(), "nvtx:step#3");
  EXPECT_TRUE(m.finished());
}

TEST(CaptureStateTest, SkipCountsProfilerStartStopPairs) {
  CaptureStateMachine m(CaptureMode::kProfilerApi, "", 0, 0, true, 1, 0);
  m.Begin(0);
  EXPECT_EQ(m.OnProfilerStart(10), CaptureAction::kNone);
  EXPECT_EQ(m.OnProfilerStop(20), CaptureAction::kNone);
  EXPECT_EQ(m.OnProfilerStart(30), CaptureAction::kStart);
  EXPECT_EQ(m.OnProfilerStop(40), CaptureAction::kStop);
  EXPECT_FALSE(m.finished());  // no count: windows keep opening
  EXPECT_EQ(m.OnProfilerStart(50), CaptureAction::kStart);
}

}  // namespace
}  // namespace sightline::collect
