// Detectors of the monitor mode on synthetic series (lib/monitor/anomaly_detector.h).
#include "lib/monitor/anomaly_detector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace sightline::monitor {
namespace {

TEST(Median, OddEvenEmpty) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(MedianAbsoluteDeviation({1, 2, 3, 4, 100}, 3), 1);
}

// Steps of 20 ms with 3 % jitter, then 30 ms from step `at` on.
std::vector<double> Series(int n, int at, double slow = 0.030) {
  std::mt19937 rng(7);
  std::normal_distribution<double> jitter(0, 0.0006);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back((i < at ? 0.020 : slow) + jitter(rng));
  return v;
}

// Simulated step times of three noise shapes: 0, a GPU-bound loop seen from
// the host (bimodal: 22 ms, or 27.5 ms for 15 % of the steps, +-0.5 ms);
// 1, 20 ms with 8 % normal jitter; 2, 20 ms with an exponential tail.
class NoisySteps {
 public:
  NoisySteps(int shape, uint32_t seed) : shape_(shape), rng_(seed) {}
  double operator()(double scale = 1.0) {
    return scale * (shape_ == 0   ? (u_(rng_) < 0.85 ? 0.022 : 0.0275) + 0.0005 * z_(rng_)
                    : shape_ == 1 ? 0.020 * (1 + 0.08 * z_(rng_))
                                  : 0.020 + 0.002 * tail_(rng_));
  }

 private:
  int shape_;
  std::mt19937 rng_;
  std::uniform_real_distribution<double> u_{0, 1};
  std::normal_distribution<double> z_{0, 1};
  std::exponential_distribution<double> tail_{1.0};
};

// Steps at a level that changes with the step's index, with relative
// normal jitter.
class LevelSteps {
 public:
  LevelSteps(uint32_t seed, double jitter) : rng_(seed), jitter_(jitter) {}
  // Steps [from, to) at level(i) into `d`; the indices at which it fired.
  template <typename Level>
  std::vector<int> Feed(StepTimeDetector* d, int from, int to, Level level, Anomaly* a) {
    std::vector<int> fired;
    for (int i = from; i < to; ++i) {
      if (d->Add(level(i) * (1 + jitter_ * z_(rng_)), a)) fired.push_back(i);
    }
    return fired;
  }

 private:
  std::mt19937 rng_;
  std::normal_distribution<double> z_{0, 1};
  double jitter_;
};

TEST(StepTimeDetector, QuietOnJitterFiresWithinConsecutiveStepsOfASlowdown) {
  StepTimeDetector d;
  std::vector<double> v = Series(400, 200);
  std::vector<int> fired;
  Anomaly a;
  for (int i = 0; i < static_cast<int>(v.size()); ++i) {
    if (d.Add(v[i], &a)) fired.push_back(i);
  }
  ASSERT_EQ(fired.size(), 1u) << "one anomaly for one lasting slowdown";
  EXPECT_GE(fired[0], 200);
  EXPECT_LE(fired[0], 207) << "a majority of the last 8 steps is slow within 8 steps";
  EXPECT_EQ(a.kind, "step_time");
  EXPECT_NEAR(a.baseline, 0.020, 0.001);
  EXPECT_NEAR(a.value, 0.030, 0.002);
  EXPECT_NE(a.message.find("(+5"), std::string::npos) << a.message;  // ~+50 %
  // The new level became the baseline.
  EXPECT_NEAR(d.median(), 0.030, 0.002);
}

TEST(StepTimeDetector, SingleSpikesAndSmallShiftsAreNotAnomalies) {
  StepTimeDetector d;
  Anomaly a;
  int fired = 0;
  for (int i = 0; i < 300; ++i) {
    double s = 0.020;
    if (i % 50 == 49) s = 0.080;                  // an isolated hiccup
    if (i >= 150 && i % 2 == 0) s = 0.021;        // +5 %: under min_rel_increase
    fired += d.Add(s, &a);
  }
  EXPECT_EQ(fired, 0);
}

// Noise alone: no false alarm in 200 000 steps (3 seeds x 66 666) of each of
// three noise shapes (a
// GPU-bound loop seen from the host, whose steps are bimodal; 8 % normal
// jitter; an exponential tail), over three seeds each.
TEST(StepTimeDetector, NoFalseAlarmsOnNoiseOfSeveralShapes) {
  for (int shape = 0; shape < 3; ++shape) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      NoisySteps step(shape, seed);
      StepTimeDetector d;
      Anomaly a;
      int fired = 0;
      for (int i = 0; i < 200000 / 3; ++i) fired += d.Add(step(), &a);
      EXPECT_EQ(fired, 0) << "shape " << shape << " seed " << seed << ": " << a.message;
    }
  }
}

// The same bimodal series slowed down by 50 %: found within the group of 8
// every time; the H200's steady series (0.8 % jitter) slowed by 13 %: found
// at the 6th slow step.
TEST(StepTimeDetector, LevelShiftsOnNoisySeriesFireWithinTheGroup) {
  int missed = 0, late = 0;
  for (uint32_t seed = 100; seed < 140; ++seed) {
    NoisySteps step(0, seed);
    StepTimeDetector d;
    Anomaly a;
    for (int i = 0; i < 300; ++i) ASSERT_FALSE(d.Add(step(1.0), &a)) << a.message;
    int at = -1;
    for (int i = 0; i < 40 && at < 0; ++i) {
      if (d.Add(step(1.5), &a)) at = i;
    }
    missed += at < 0;
    late += at > 7;
    if (at >= 0) {
      EXPECT_GT(a.value / a.baseline, 1.3) << a.message;
      EXPECT_NE(a.message.find("chance "), std::string::npos) << a.message;
    }
  }
  EXPECT_EQ(missed, 0);
  EXPECT_EQ(late, 0);
  std::mt19937 rng(5);
  std::normal_distribution<double> z(0, 1);
  StepTimeDetector d;
  Anomaly a;
  for (int i = 0; i < 300; ++i) ASSERT_FALSE(d.Add(0.0374 * (1 + 0.008 * z(rng)), &a));
  int at = -1;
  for (int i = 0; i < 40 && at < 0; ++i) {
    if (d.Add(1.13 * 0.0374 * (1 + 0.008 * z(rng)), &a)) at = i;
  }
  EXPECT_EQ(at, 5) << "6 of 8 slow steps: unlikely enough under the 95 % bound of 0 in 64";
}

// Blind spot, stated in anomaly_detector.h: steps alternating short/long,
// slowed down uniformly, never make a majority over any limit.
TEST(StepTimeDetector, AlternatingSeriesIsABlindSpot) {
  StepTimeDetector d;
  Anomaly a;
  int fired = 0;
  for (int i = 0; i < 300; ++i) fired += d.Add(i % 2 ? 0.025 : 0.010, &a);
  for (int i = 0; i < 100; ++i) fired += d.Add(1.5 * (i % 2 ? 0.025 : 0.010), &a);
  EXPECT_EQ(fired, 0);
}

// A capture restarts the detector (the profiler leaves the process slower):
// the next group sets the new level and the baseline keeps its noise shape
// around it, so a slowdown 12 steps after the capture fires within a group.
// (Forgetting the baseline instead needed warmup + group steps again; on
// the H200 a slowdown 20 steps after a capture was learnt as normal.)
TEST(StepTimeDetector, AfterARestartTheNextGroupSetsTheLevelAndJudgingGoesOn) {
  int missed = 0, late = 0, early = 0;
  for (uint32_t seed = 200; seed < 240; ++seed) {
    NoisySteps step(0, seed);
    StepTimeDetector d;
    Anomaly a;
    for (int i = 0; i < 300; ++i) ASSERT_FALSE(d.Add(step(1.0), &a)) << a.message;
    d.Restart();
    // Tracing's after-effect: +15 % from now on, the new normal.
    for (int i = 0; i < 12; ++i) early += d.Add(step(1.15), &a);
    EXPECT_NEAR(d.median(), 1.15 * 0.022, 0.002) << "seed " << seed;
    int at = -1;
    for (int i = 0; i < 40 && at < 0; ++i) {
      if (d.Add(step(1.15 * 1.4), &a)) at = i;
    }
    missed += at < 0;
    late += at > 7;
  }
  EXPECT_EQ(early, 0) << "the restart's own level is no anomaly";
  EXPECT_EQ(missed, 0);
  EXPECT_EQ(late, 0);
  // Restarted before the baseline was full: forgotten, judged after warm-up.
  StepTimeDetector e;
  Anomaly a;
  for (int i = 0; i < 10; ++i) e.Add(0.010, &a);
  e.Restart();
  for (int i = 0; i < 23; ++i) EXPECT_FALSE(e.Add(i < 15 ? 0.020 : 0.050, &a)) << i;
}

// After an anomaly the baseline is re-levelled to the slow group, not
// replaced by it: a second slowdown 10 steps after the first fires within
// a group (replaced, the baseline needed a new warm-up first).
TEST(StepTimeDetector, ASecondSlowdownSoonAfterTheFirstFires) {
  LevelSteps steps(11, 0.01);
  StepTimeDetector d;
  Anomaly a;
  std::vector<int> fired = steps.Feed(&d, 0, 400, [](int i) {
    return i < 200 ? 0.020 : i < 210 ? 0.030 : 0.045;
  }, &a);
  ASSERT_EQ(fired.size(), 2u) << a.message;
  EXPECT_LE(fired[0], 207);
  EXPECT_GE(fired[1], 210);
  EXPECT_LE(fired[1], 217) << "within a group of the second slowdown";
  EXPECT_NEAR(a.baseline, 0.030, 0.002) << a.message;
}

// The 10-minute H200 run's noise: a 38 ms step with bursts of slow host
// steps that end. The burst fires; when it ends, the faster group moves the
// baseline back (no anomaly), and a slowdown 20 steps later is judged
// against the level it left.
TEST(StepTimeDetector, ABurstThatEndsMovesTheBaselineBack) {
  LevelSteps steps(3, 0.008);
  StepTimeDetector d;
  Anomaly a;
  auto level = [](int i) { return i < 300 ? 0.038 : i < 312 ? 0.046 : i < 332 ? 0.038 : 0.045; };
  std::vector<int> fired = steps.Feed(&d, 0, 332, level, &a);
  EXPECT_NEAR(d.median(), 0.038, 0.001) << "back at the level before the burst";
  for (int i : steps.Feed(&d, 332, 400, level, &a)) fired.push_back(i);
  ASSERT_EQ(fired.size(), 2u) << a.message;
  EXPECT_LE(fired[0], 307) << "the burst";
  EXPECT_GE(fired[1], 332);
  EXPECT_LE(fired[1], 339) << "the slowdown after it";
}

// Noise with a capture's restart every 1000 steps: still no false alarm.
TEST(StepTimeDetector, NoFalseAlarmsAcrossRestarts) {
  for (int shape = 0; shape < 3; ++shape) {
    NoisySteps step(shape, 40 + shape);
    StepTimeDetector d;
    Anomaly a;
    int fired = 0;
    for (int i = 0; i < 60000; ++i) {
      if (i % 1000 == 999) d.Restart();
      fired += d.Add(step(), &a);
    }
    EXPECT_EQ(fired, 0) << "shape " << shape << ": " << a.message;
  }
}

TEST(Relevel, KeepsTheShapeScalesUpNeverNarrows) {
  std::vector<double> up = Relevel({0.9, 1.0, 1.2}, 1.0, 2.0);
  EXPECT_DOUBLE_EQ(up[0], 1.8);
  EXPECT_DOUBLE_EQ(up[1], 2.0);
  EXPECT_DOUBLE_EQ(up[2], 2.4);
  std::vector<double> down = Relevel({0.9, 1.0, 1.2}, 1.0, 0.5);
  EXPECT_DOUBLE_EQ(down[0], 0.4);
  EXPECT_DOUBLE_EQ(down[2], 0.7);
  EXPECT_EQ(Relevel({0.1, 1.0}, 1.0, 0.5)[0], 0.0) << "never below 0";
}

TEST(BinomialTail, Values) {
  EXPECT_DOUBLE_EQ(BinomialTail(8, 0, 0.3), 1.0);
  EXPECT_EQ(BinomialTail(8, 9, 0.3), 0.0);
  EXPECT_NEAR(BinomialTail(8, 8, 0.3), std::pow(0.3, 8), 1e-12);
  EXPECT_NEAR(BinomialTail(8, 7, 0.5), 9.0 / 256, 1e-12);
  EXPECT_NEAR(BinomialTail(10, 1, 0.1), 1 - std::pow(0.9, 10), 1e-12);
  EXPECT_EQ(BinomialTail(8, 3, 0.0), 0.0);
  EXPECT_NEAR(BinomialTail(8, 3, 1.0), 1.0, 1e-12);
  EXPECT_NEAR(BinomialTail(1000, 1, 0.5), 1.0, 1e-12);
}

TEST(BinomialUpperBound, ClopperPearson) {
  // 0 of n: 1 - 0.05^(1/n).
  EXPECT_NEAR(BinomialUpperBound(64, 0, 0.95), 1 - std::pow(0.05, 1.0 / 64), 1e-6);
  EXPECT_EQ(BinomialUpperBound(10, 10, 0.95), 1.0);
  double u = BinomialUpperBound(64, 8, 0.95);
  EXPECT_GT(u, 8.0 / 64);
  EXPECT_NEAR(1 - BinomialTail(64, 9, u), 0.05, 1e-6);  // P(X <= 8 | u) = 5 %
}

TEST(StepTimeDetector, GradualDriftIsFollowedNotFlagged) {
  StepTimeDetector d;
  Anomaly a;
  int fired = 0;
  for (int i = 0; i < 1000; ++i) fired += d.Add(0.020 * (1 + 0.3 * i / 1000.0), &a);
  EXPECT_EQ(fired, 0) << a.message;
  EXPECT_NEAR(d.median(), 0.026, 0.0005);
}

TEST(StepTimeDetector, NotBeforeWarmupAndIgnoresGarbage) {
  StepDetectorOptions o;
  o.warmup = 10;
  StepTimeDetector d(o);
  Anomaly a;
  // Judging starts after warmup + consecutive (8) steps: 17 are not enough.
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(d.Add(0.01, &a));
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(d.Add(1.0, &a)) << "still warming up";
  EXPECT_FALSE(d.Add(NAN, &a));
  EXPECT_FALSE(d.Add(-1, &a));
  // Judged once the baseline holds enough steps for 8 of 8 to be unlikely.
  StepTimeDetector e;
  for (int i = 0; i < 72; ++i) EXPECT_FALSE(e.Add(0.01, &a));
  bool fired = false;
  for (int i = 0; i < 8; ++i) fired |= e.Add(1.0, &a);
  EXPECT_TRUE(fired);
}

TEST(StepTimeDetector, HasABaselineAfterItsWarmupSteps) {
  StepTimeDetector d;  // warmup 16, group 8
  Anomaly a;
  for (int i = 0; i < 23; ++i) d.Add(i < 3 ? 2.0 : 0.020, &a);  // start-up steps first
  EXPECT_FALSE(d.has_baseline()) << "15 steps in the baseline";
  d.Add(0.020, &a);
  EXPECT_TRUE(d.has_baseline());
  EXPECT_NEAR(d.median(), 0.020, 1e-9);
}

TEST(StepTimeDetector, TooSmallGroupsAreRaisedToOneThatCanFire) {
  StepDetectorOptions o;
  o.consecutive = 1;  // could never be unlikely enough: raised to 5 (1e-5, 64 steps)
  StepTimeDetector d(o);
  EXPECT_EQ(d.group_steps(), 5u);
  Anomaly a;
  for (int i = 0; i < 100; ++i) d.Add(0.010, &a);
  int at = -1;
  for (int i = 0; i < 10 && at < 0; ++i) {
    if (d.Add(0.100, &a)) at = i;
  }
  EXPECT_EQ(at, 4) << "5 of 5 slow steps";
}

TEST(UtilizationDropDetector, SustainedDropFires) {
  UtilizationDropDetector d;
  Anomaly a;
  int fired = -1;
  for (int i = 0; i < 60; ++i) {
    double u = i < 30 ? 0.95 : 0.40;
    if (d.Add(u, &a) && fired < 0) fired = i;
  }
  EXPECT_EQ(fired, 32);
  EXPECT_EQ(a.kind, "utilization_drop");
  EXPECT_NEAR(a.baseline, 0.95, 1e-9);
  // A single dip does not.
  UtilizationDropDetector d2;
  int n = 0;
  for (int i = 0; i < 60; ++i) n += d2.Add(i == 40 ? 0.1 : 0.9, &a);
  EXPECT_EQ(n, 0);
}

TEST(MemoryGrowthDetector, LeakFiresOnceThenRebaselines) {
  MemoryDetectorOptions o;
  o.min_growth_bytes = 100e6;
  MemoryGrowthDetector d(o);
  Anomaly a;
  std::vector<int> fired;
  for (int i = 0; i < 100; ++i) {
    double used = 4e9 + (i >= 20 ? (i - 20) * 20e6 : 0);  // +20 MB per sample after 20
    if (d.Add(used, &a)) fired.push_back(i);
  }
  ASSERT_FALSE(fired.empty());
  EXPECT_GE(fired[0], 20 + 4e8 / 20e6);  // 10 % of 4 GB = 400 MB of growth
  EXPECT_EQ(a.kind, "memory_growth");
  // Steady memory never fires.
  MemoryGrowthDetector flat(o);
  int n = 0;
  for (int i = 0; i < 100; ++i) n += flat.Add(4e9 + (i % 3) * 1e6, &a);
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace sightline::monitor
