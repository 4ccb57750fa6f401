#include "lib/analysis/intervals.h"

#include "gtest/gtest.h"

namespace sightline::analysis {
namespace {

IntervalSet Set(std::vector<Interval> v) { return IntervalSet::FromUnsorted(std::move(v)); }

TEST(IntervalSetTest, NormalisesOverlappingUnsortedAndEmpty) {
  IntervalSet s = Set({{10, 20}, {5, 12}, {30, 30}, {25, 40}, {40, 45}});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.intervals()[0].start_ns, 5u);
  EXPECT_EQ(s.intervals()[0].end_ns, 20u);
  EXPECT_EQ(s.intervals()[1].start_ns, 25u);
  EXPECT_EQ(s.intervals()[1].end_ns, 45u);
  EXPECT_EQ(s.total(), 35u);
}

TEST(IntervalSetTest, InvertedIntervalsAreDropped) {
  IntervalSet s = Set({{20, 10}, {1, 2}});
  EXPECT_EQ(s.total(), 1u);
}

TEST(IntervalSetTest, UnionIntersectSubtract) {
  IntervalSet a = Set({{0, 10}, {20, 30}});
  IntervalSet b = Set({{5, 25}, {28, 40}});
  EXPECT_EQ(a.Union(b).total(), 40u);
  IntervalSet i = a.Intersect(b);
  EXPECT_EQ(i.total(), 5u + 5u + 2u);
  IntervalSet d = a.Subtract(b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.intervals()[0].start_ns, 0u);
  EXPECT_EQ(d.intervals()[0].end_ns, 5u);
  EXPECT_EQ(d.intervals()[1].start_ns, 25u);
  EXPECT_EQ(d.intervals()[1].end_ns, 28u);
  EXPECT_EQ(b.Subtract(a).total(), 10u + 10u);  // [10,20) and [30,40)
}

TEST(IntervalSetTest, SubtractWithManyHoles) {
  IntervalSet a = Set({{0, 100}});
  IntervalSet holes = Set({{10, 20}, {30, 40}, {50, 60}, {90, 200}});
  EXPECT_EQ(a.Subtract(holes).total(), 10u + 10u + 10u + 30u);
}

TEST(IntervalSetTest, ComplementClipOverlap) {
  IntervalSet busy = Set({{10, 20}, {30, 40}});
  IntervalSet idle = busy.Complement(0, 50);
  EXPECT_EQ(idle.total(), 30u);
  ASSERT_EQ(idle.size(), 3u);
  EXPECT_EQ(busy.Clip(15, 35).total(), 10u);
  EXPECT_EQ(busy.OverlapWith(15, 35), 10u);
  EXPECT_EQ(busy.OverlapWith(0, 5), 0u);
  EXPECT_EQ(busy.OverlapWith(35, 35), 0u);
  EXPECT_EQ(busy.OverlapWith(0, 100), 20u);
}

TEST(IntervalSetTest, EmptySets) {
  IntervalSet e;
  IntervalSet a = Set({{1, 2}});
  EXPECT_EQ(e.Union(a).total(), 1u);
  EXPECT_EQ(e.Intersect(a).total(), 0u);
  EXPECT_EQ(a.Subtract(e).total(), 1u);
  EXPECT_EQ(e.Complement(0, 10).total(), 10u);
  EXPECT_EQ(e.Complement(10, 10).total(), 0u);
}

}  // namespace
}  // namespace sightline::analysis
