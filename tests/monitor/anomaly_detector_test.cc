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

// A GPU-bound loop seen from the host: most steps end early, some (15 %)
// block on a full launch queue and run 25 % longer, at irregular points.
// The sign test compares the recent steps with the baseline's own share of
// long steps: it fires on a lasting +40 % within the group of 8 and never on
// the noise alone.
TEST(StepTimeDetector, NoisyHostSideSeriesLevelShiftFiresNoiseDoesNot) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> jitter(0, 0.0005);
  auto step = [&](double scale) {
    return scale * ((u(rng) < 0.85 ? 0.022 : 0.0275) + jitter(rng));
  };
  StepTimeDetector d;
  Anomaly a;
  int fired_before = 0;
  for (int i = 0; i < 5000; ++i) fired_before += d.Add(step(1.0), &a);
  EXPECT_EQ(fired_before, 0) << a.message;
  EXPECT_NEAR(d.exceed_share(), 0.15, 0.1);
  int fired_at = -1;
  for (int i = 0; i < 100 && fired_at < 0; ++i) {
    if (d.Add(step(1.4), &a)) fired_at = i;
  }
  ASSERT_GE(fired_at, 0) << "a lasting +40 % shift is an anomaly";
  EXPECT_LE(fired_at, 8);
  EXPECT_GT(a.value / a.baseline, 1.3) << a.message;
  EXPECT_NE(a.message.find("chance "), std::string::npos) << a.message;
}

TEST(BinomialTail, Values) {
  EXPECT_DOUBLE_EQ(BinomialTail(8, 0, 0.3), 1.0);
  EXPECT_EQ(BinomialTail(8, 9, 0.3), 0.0);
  EXPECT_NEAR(BinomialTail(8, 8, 0.3), std::pow(0.3, 8), 1e-12);
  EXPECT_NEAR(BinomialTail(8, 7, 0.5), 9.0 / 256, 1e-12);
  EXPECT_NEAR(BinomialTail(10, 1, 0.1), 1 - std::pow(0.9, 10), 1e-12);
  EXPECT_EQ(BinomialTail(8, 3, 0.0), 0.0);
  EXPECT_NEAR(BinomialTail(8, 3, 1.0), 1.0, 1e-12);
}

TEST(StepTimeDetector, GradualDriftIsFollowedNotFlagged) {
  StepTimeDetector d;
  Anomaly a;
  int fired = 0;
  for (int i = 0; i < 1000; ++i) fired += d.Add(0.020 * (1 + 0.3 * i / 1000.0), &a);
  EXPECT_EQ(fired, 0) << a.message;
  EXPECT_NEAR(d.median(), 0.026, 0.0005);
}

TEST(StepTimeDetector, ResetForgetsTheBaseline) {
  StepTimeDetector d;
  Anomaly a;
  for (int i = 0; i < 100; ++i) d.Add(0.020, &a);
  EXPECT_NEAR(d.median(), 0.020, 1e-9);
  d.Reset();
  EXPECT_EQ(d.median(), 0);
  EXPECT_EQ(d.exceed_share(), 0);
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(d.Add(0.050, &a)) << "warming up again";
}

TEST(StepTimeDetector, NotBeforeWarmupAndIgnoresGarbage) {
  StepDetectorOptions o;
  o.warmup = 10;
  StepTimeDetector d(o);
  Anomaly a;
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(d.Add(0.01, &a));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(d.Add(1.0, &a)) << "still warming up";
  EXPECT_FALSE(d.Add(NAN, &a));
  EXPECT_FALSE(d.Add(-1, &a));
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
