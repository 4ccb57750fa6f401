// Per-range metric bookkeeping (lib/collect/range_profiler_user.h) against a
// fake CUPTI target that behaves as CUPTI 13.0's application replay did on
// the H200 for spread and sequence replay: one pass counter per object,
// isAllPassSubmitted at the Stop of the last pass, the image keeps one range.
#include "lib/collect/range_profiler_user.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sightline::collect {
namespace {

int g_ctx = 0;
int g_other = 0;

class FakeUserTarget : public UserRangeTarget {
 public:
  explicit FakeUserTarget(uint32_t passes) : passes_(passes) {}
  bool InitUserImage(void*) override {
    log.push_back("init");
    return !fail_init;
  }
  bool BeginUserPass(void* context, const std::string& name) override {
    log.push_back("begin " + name + " p" + std::to_string(counters_[context]));
    return !fail_begin;
  }
  bool EndUserPass(void* context, SpreadPassResult* r) override {
    if (fail_end) return false;
    log.push_back("end");
    uint32_t& c = counters_[context];
    c = c + 1 >= passes_ ? 0 : c + 1;
    r->all_submitted = c == 0;
    r->stop_pass_index = c;
    r->ranges = ranges_next_pass;
    r->ranges_dropped = 0;
    ranges_next_pass = 1;
    return true;
  }
  bool EvaluateUserRange(void*, std::vector<double>* values) override {
    if (fail_evaluate) return false;
    values->assign({42.0, 7.0});
    return true;
  }
  bool ResetUserPasses(void* context) override {
    log.push_back("reset");
    counters_[context] = 0;
    return true;
  }
  std::vector<std::string> log;
  uint64_t ranges_next_pass = 1;
  bool fail_init = false, fail_begin = false, fail_end = false, fail_evaluate = false;

 private:
  uint32_t passes_;
  std::map<void*, uint32_t> counters_;
};

constexpr uintptr_t kMain = 1, kWorker = 2;

// Three passes: three instances make a set with the first push's and the
// last pop's time; the fourth instance starts the next set.
TEST(UserRangeSetsTest, OnePassPerInstanceThenASet) {
  FakeUserTarget t(3);
  UserRangeSets sets(&t, "train_step", 3);
  EXPECT_TRUE(sets.Matches("train_step"));
  EXPECT_FALSE(sets.Matches("train_step2"));
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 1000 + 100 * i));
    EXPECT_TRUE(sets.OpenOn(kMain));
    EXPECT_FALSE(sets.OpenOn(kWorker));
    EXPECT_TRUE(sets.OnPop(kMain, 0, 1050 + 100 * i));
  }
  std::vector<UserRangeSet> done = sets.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].name, "train_step");
  EXPECT_EQ(done[0].start_ns, 1000u);
  EXPECT_EQ(done[0].end_ns, 1250u);
  EXPECT_EQ(done[0].instances, 3u);
  EXPECT_EQ(done[0].passes_done, 3u);
  EXPECT_EQ(done[0].passes_needed, 3u);
  EXPECT_EQ(done[0].values, (std::vector<double>{42.0, 7.0}));
  EXPECT_EQ(sets.stats().completed, 1u);
  EXPECT_EQ(sets.stats().passes, 4u);
  EXPECT_EQ(t.log, (std::vector<std::string>{"init", "begin train_step p0", "end",
                                              "begin train_step p1", "end", "begin train_step p2",
                                              "end", "init", "begin train_step p0", "end"}));
  // The capture ends with the fourth instance's set one pass in.
  sets.FinishIncomplete(2000, nullptr, true);
  done = sets.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].values.empty());
  EXPECT_EQ(done[0].passes_done, 1u);
  EXPECT_EQ(sets.stats().incomplete, 1u);
  EXPECT_EQ(t.log.back(), "reset");
}

// A nested push of the name and pops of inner ranges do not end the
// instance; only the pop back to the push's depth does.
TEST(UserRangeSetsTest, NestingAndOtherThreads) {
  FakeUserTarget t(2);
  UserRangeSets sets(&t, "step", 2);
  EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 1, 10));
  EXPECT_FALSE(sets.OnPush(&g_ctx, 0, kMain, 2, 11));  // nested: part of it
  EXPECT_FALSE(sets.OnPop(kMain, 2, 12));              // an inner range's pop
  EXPECT_FALSE(sets.OnPush(&g_ctx, 0, kWorker, 0, 13));  // another thread's instance
  EXPECT_FALSE(sets.OnPop(kWorker, 0, 14));
  EXPECT_TRUE(sets.OnPop(kMain, 1, 15));
  EXPECT_EQ(sets.stats().instances, 2u);
  EXPECT_EQ(sets.stats().other_thread, 1u);
  // No context yet on the thread; then a set on one context refuses another.
  EXPECT_FALSE(sets.OnPush(nullptr, 0, kMain, 0, 20));
  EXPECT_EQ(sets.stats().no_context, 1u);
  EXPECT_FALSE(sets.OnPush(&g_other, 1, kMain, 0, 21));
  EXPECT_EQ(sets.stats().other_context, 1u);
  EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 22));
  EXPECT_TRUE(sets.OnPop(kMain, 0, 23));
  std::vector<UserRangeSet> done = sets.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].start_ns, 10u);
  EXPECT_EQ(done[0].end_ns, 23u);
  EXPECT_EQ(done[0].instances, 2u);
}

// A pass whose image holds two ranges (or dropped one) discards the set's
// passes: pass counter reset, the next instance starts over.
TEST(UserRangeSetsTest, AWrongRangeCountRestartsTheSet) {
  FakeUserTarget t(2);
  UserRangeSets sets(&t, "step", 2);
  EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 1));
  EXPECT_TRUE(sets.OnPop(kMain, 0, 2));
  t.ranges_next_pass = 2;
  EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 3));
  EXPECT_TRUE(sets.OnPop(kMain, 0, 4));
  EXPECT_EQ(sets.stats().discarded, 1u);
  EXPECT_EQ(t.log.back(), "reset");
  EXPECT_TRUE(sets.TakeCompleted().empty());
  for (uint64_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 10 + i));
    EXPECT_TRUE(sets.OnPop(kMain, 0, 20 + i));
  }
  std::vector<UserRangeSet> done = sets.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].start_ns, 10u);
  EXPECT_FALSE(sets.failed());
}

// A capture end inside an instance cuts that pass (not kept); a context's
// destruction finishes only that context's set, without resetting it.
TEST(UserRangeSetsTest, CaptureEndInsideAnInstance) {
  FakeUserTarget t(4);
  UserRangeSets sets(&t, "step", 4);
  EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 1));
  EXPECT_TRUE(sets.OnPop(kMain, 0, 2));
  EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 3));
  sets.FinishIncomplete(9, &g_other, false);  // another context: nothing
  EXPECT_TRUE(sets.open());
  sets.FinishIncomplete(9, &g_ctx, false);
  EXPECT_FALSE(sets.open());
  EXPECT_EQ(sets.stats().cut, 1u);
  std::vector<UserRangeSet> done = sets.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].passes_done, 1u);
  EXPECT_EQ(done[0].end_ns, 9u);
  EXPECT_TRUE(done[0].values.empty());
  EXPECT_NE(t.log.back(), "reset");
  EXPECT_FALSE(sets.OnPop(kMain, 0, 10));  // the instance's pop after the cut
}

// Any CUPTI failure stops per-range metrics for good.
TEST(UserRangeSetsTest, FailuresStopIt) {
  {
    FakeUserTarget t(2);
    t.fail_begin = true;
    UserRangeSets sets(&t, "step", 2);
    EXPECT_FALSE(sets.OnPush(&g_ctx, 0, kMain, 0, 1));
    EXPECT_TRUE(sets.failed());
    EXPECT_EQ(sets.error(), "starting a pass failed");
    t.fail_begin = false;
    EXPECT_FALSE(sets.OnPush(&g_ctx, 0, kMain, 0, 2));
  }
  {
    FakeUserTarget t(1);
    t.fail_evaluate = true;
    UserRangeSets sets(&t, "step", 1);
    EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, 1));
    EXPECT_TRUE(sets.OnPop(kMain, 0, 2));
    EXPECT_TRUE(sets.failed());
    EXPECT_TRUE(sets.TakeCompleted().empty());
  }
  {
    FakeUserTarget t(5);
    UserRangeSets sets(&t, "step", 2);  // CUPTI needs 5 passes, we were told 2
    for (uint64_t i = 0; i < 4 && !sets.failed(); ++i) {
      EXPECT_TRUE(sets.OnPush(&g_ctx, 0, kMain, 0, i));
      EXPECT_TRUE(sets.OnPop(kMain, 0, i));
    }
    EXPECT_TRUE(sets.failed());
    EXPECT_NE(sets.error().find("no last pass"), std::string::npos);
  }
}

// --metrics-range graph: the first graph launched a second time is
// measured, every later launch of it is an instance, others are counted.
TEST(GraphRangeChooserTest, TheFirstGraphLaunchedTwiceIsMeasured) {
  GraphRangeChooser c;
  EXPECT_FALSE(c.OnLaunch(7));   // warm-up graph, once
  EXPECT_FALSE(c.OnLaunch(3));   // the step's graph, first launch
  EXPECT_FALSE(c.chosen());
  EXPECT_TRUE(c.OnLaunch(3));    // its second launch: chosen, an instance
  EXPECT_TRUE(c.chosen());
  EXPECT_EQ(c.chosen_key(), 3u);
  EXPECT_FALSE(c.OnLaunch(7));   // another graph, even one seen before
  EXPECT_TRUE(c.OnLaunch(3));
  EXPECT_EQ(c.launches(), 5u);
  EXPECT_EQ(c.not_measured(), 3u);
}

TEST(GraphRangeChooserTest, GraphsThatNeverRepeatAreNeverMeasuredAndMemoryIsBounded) {
  GraphRangeChooser c;
  for (uint64_t k = 1; k <= 100000; ++k) EXPECT_FALSE(c.OnLaunch(k));
  EXPECT_FALSE(c.chosen());
  EXPECT_EQ(c.not_measured(), 100000u);
  // Past the bound a repeat of an early graph is still recognised.
  EXPECT_TRUE(c.OnLaunch(5));
}

}  // namespace
}  // namespace sightline::collect
