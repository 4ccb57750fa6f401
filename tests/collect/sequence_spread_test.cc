// Sequence replay bookkeeping (lib/collect/range_profiler_sequence.h) against
// a fake CUPTI target that behaves as CUPTI 13.0 did on the H200: one pass
// counter per object, Stop returns the next pass (0 with isAllPassSubmitted
// after the last), the image's range count is the number of launches of
// pass 0.
#include "lib/collect/range_profiler_sequence.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sightline::collect {
namespace {

int g_other = 0;  // a second context

class FakeSequenceTarget : public SequenceTarget {
 public:
  explicit FakeSequenceTarget(uint32_t passes) : passes_(passes) {}
  bool InitSequenceImage(void*, size_t max_ranges) override {
    log.push_back("init " + std::to_string(max_ranges));
    if (fail_init) return false;
    ranges_ = 0;
    pass_ranges_.clear();
    return true;
  }
  bool BeginSequencePass(void* context) override {
    log.push_back("begin p" + std::to_string(counters_[context]));
    if (fail_begin_after >= 0 && begins_++ >= fail_begin_after) return false;
    in_pass_ = 0;
    return true;
  }
  // The caller's launches inside the pass (the fake cannot see them).
  void Launched(int n = 1) { in_pass_ += n; }
  bool EndSequencePass(void* context, SpreadPassResult* r) override {
    uint32_t& counter_ = counters_[context];
    if (fail_end) return false;
    log.push_back("end");
    in_pass_ += extra_kernels_next_pass;
    extra_kernels_next_pass = 0;
    if (ranges_ == 0) ranges_ = in_pass_;
    pass_ranges_.push_back(in_pass_);
    counter_ = counter_ + 1 >= passes_ ? 0 : counter_ + 1;
    r->all_submitted = counter_ == 0;
    r->stop_pass_index = counter_;
    r->ranges = in_pass_ == ranges_ ? ranges_ : in_pass_;
    r->ranges_dropped = 0;
    return true;
  }
  bool EvaluateSequenceRange(void*, size_t index, std::vector<double>* values) override {
    if (fail_evaluate) return false;
    values->assign(1, static_cast<double>(index));
    return true;
  }
  bool ResetSequencePasses(void* context) override {
    log.push_back(std::string("reset ") + (context == &g_other ? "other" : "main"));
    counters_[context] = 0;
    return true;
  }
  void SetCounter(void* context, uint32_t pass) { counters_[context] = pass; }
  std::vector<std::string> log;
  uint64_t extra_kernels_next_pass = 0;
  bool fail_init = false, fail_end = false, fail_evaluate = false;
  int fail_begin_after = -1;  // BeginSequencePass fails from this call on (-1: never)

 private:
  uint32_t passes_;
  std::map<void*, uint32_t> counters_;  // CUPTI: one pass counter per object (context)
  int begins_ = 0;
  uint64_t in_pass_ = 0, ranges_ = 0;
  std::vector<uint64_t> pass_ranges_;
};

int g_ctx = 0;

SpreadLaunch L(uint64_t key, uint32_t corr) {
  SpreadLaunch l;
  l.key = key;
  l.context = &g_ctx;
  l.correlation_id = corr;
  l.name = key == 1 ? "a" : key == 2 ? "b" : "c";
  return l;
}

// Runs `steps` steps of the launch sequence {1, 2, 3}; the selector picks
// every launch (anchor_ok while idle).
void Steps(SequenceSpread* s, FakeSequenceTarget* t, int steps, uint32_t* corr) {
  for (int step = 0; step < steps; ++step) {
    for (uint64_t key : {1u, 2u, 3u}) {
      s->OnLaunch(L(key, ++*corr), !s->collecting());
      if (s->collecting()) t->Launched();
    }
  }
}

TEST(SequenceSpread, OnePassPerStepEveryKernelGetsASet) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16);
  uint32_t corr = 0;
  Steps(&s, &t, 5, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].name, "a");
  EXPECT_EQ(done[1].name, "b");
  EXPECT_EQ(done[2].name, "c");
  // Passes on steps 0, 1, 2; step 3's first launch closes the last one.
  EXPECT_EQ(done[0].first_correlation_id, 1u);
  EXPECT_EQ(done[0].last_correlation_id, 7u);
  EXPECT_EQ(done[2].last_correlation_id, 9u);
  EXPECT_EQ(done[1].values, (std::vector<double>{1}));
  EXPECT_EQ(done[0].passes_done, 3u);
  EXPECT_EQ(s.stats().passes, 3u);
  EXPECT_EQ(s.stats().sequences, 1u);
  // One Start per step, not per kernel and pass.
  int begins = 0;
  for (const std::string& e : t.log) begins += e.rfind("begin", 0) == 0;
  EXPECT_EQ(begins, 3);
  // One sequence per capture window.
  EXPECT_FALSE(s.collecting());
  EXPECT_TRUE(s.done_for_window());
  s.NewWindow();
  Steps(&s, &t, 4, &corr);
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
}

TEST(SequenceSpread, ADifferentPassRestartsWithTheCounterReset) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16, /*max_restarts=*/1);
  uint32_t corr = 0;
  Steps(&s, &t, 1, &corr);
  t.extra_kernels_next_pass = 1;  // a kernel we did not see in pass 1
  Steps(&s, &t, 1, &corr);
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_TRUE(s.collecting());
  Steps(&s, &t, 3, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
  bool reset = false;
  for (const std::string& e : t.log) reset = reset || e == "reset main";
  EXPECT_TRUE(reset);
}

TEST(SequenceSpread, ChangingSequencesGiveUp) {
  // Steps {1,2,3} and {1,3} alternate: anchored at 1 the passes differ; at 2
  // (launched every other step) two steps form a repeating sequence.
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16, /*max_restarts=*/1);
  uint32_t corr = 0;
  for (int step = 0; step < 12; ++step) {
    std::vector<uint64_t> keys = step % 2 == 0 ? std::vector<uint64_t>{1, 2, 3}
                                               : std::vector<uint64_t>{1, 3};
    for (uint64_t key : keys) {
      s.OnLaunch(L(key, ++corr), !s.collecting());
      if (s.collecting()) t.Launched();
    }
  }
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_EQ(s.TakeCompleted().size(), 5u);  // 2, 3, 1, 3, 1
  // No repeating sequence at all (a new kernel every step): gives up.
  FakeSequenceTarget t2(3);
  SequenceSpread s2(&t2, 3, 16, /*max_restarts=*/1);
  for (uint64_t step = 0; step < 40 && !s2.failed(); ++step) {
    for (uint64_t key : {uint64_t{1}, 100 + step, uint64_t{2}}) {
      s2.OnLaunch(L(key, ++corr), !s2.collecting());
      if (s2.collecting()) t2.Launched();
    }
  }
  EXPECT_TRUE(s2.failed());
  EXPECT_TRUE(s2.TakeCompleted().empty());
}

TEST(SequenceSpread, TooLongASequenceFails) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, /*max_ranges=*/2, 8, /*first_ranges=*/2);
  uint32_t corr = 0;
  Steps(&s, &t, 1, &corr);
  EXPECT_TRUE(s.failed());
  EXPECT_NE(s.error().find("more than 2 launches"), std::string::npos) << s.error();
}

TEST(SequenceSpread, TheImageGrowsForLongerSteps) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, /*max_ranges=*/64, 8, /*first_ranges=*/2);
  uint32_t corr = 0;
  Steps(&s, &t, 5, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_EQ(s.stats().grown, 1u);
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
  EXPECT_EQ(t.log[0], "init 2");
  bool grown = false;
  for (const std::string& e : t.log) grown = grown || e == "init 8";
  EXPECT_TRUE(grown);
}

TEST(SequenceSpread, CaptureEndReportsIncompleteSetsAndResetsBeforeTheNext) {
  FakeSequenceTarget t(4);
  SequenceSpread s(&t, 4, 16);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);  // pass 0 done, pass 1 open
  std::vector<SpreadCollection> left = s.FinishIncomplete();
  ASSERT_EQ(left.size(), 3u);
  EXPECT_TRUE(left[0].values.empty());
  EXPECT_EQ(left[0].passes_done, 1u);
  EXPECT_EQ(left[0].passes_needed, 4u);
  EXPECT_EQ(s.stats().incomplete, 3u);
  EXPECT_FALSE(s.collecting());
  t.log.clear();
  s.OnLaunch(L(1, ++corr), true);
  ASSERT_GE(t.log.size(), 2u);
  EXPECT_EQ(t.log[0], "reset main");
  EXPECT_EQ(t.log[1], "init 16");
}

TEST(SequenceSpread, OtherContextsAndUnselectedAnchorsAreIgnored) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16);
  s.OnLaunch(L(1, 1), /*anchor_ok=*/false);
  EXPECT_FALSE(s.collecting());
  s.OnLaunch(L(2, 2), true);
  EXPECT_TRUE(s.collecting());
  t.Launched();
  int other = 0;
  SpreadLaunch foreign = L(3, 3);
  foreign.context = &other;
  s.OnLaunch(foreign, false);
  s.OnLaunch(L(2, 4), false);  // the anchor: pass 0 holds one launch
  EXPECT_EQ(s.stats().passes, 1u);
}


// A kernel launched twice per step does not delimit steps; the next kernel
// tried as the anchor (launched once per step) does.
TEST(SequenceSpread, AnotherAnchorIsTriedWhenStepsDiffer) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16);
  uint32_t corr = 0;
  for (int step = 0; step < 8; ++step) {
    for (uint64_t key : {1u, 2u, 1u, 3u}) {
      s.OnLaunch(L(key, ++corr), !s.collecting());
      if (s.collecting()) t.Launched();
    }
  }
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_EQ(s.stats().discarded, 1u);
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 4u);  // 2, 1, 3, 1: every launch of a step
  EXPECT_EQ(done[0].name, "b");
  EXPECT_EQ(done[1].name, "a");
  EXPECT_EQ(done[2].name, "c");
  EXPECT_EQ(done[3].name, "a");
}


// The counter left mid-schedule is the restarted sequence's context's: a
// sequence on another context does not reset (nor clear) it.
TEST(SequenceSpread, DirtyCountersArePerContext) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*max_restarts=*/4);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);  // pass 0 done, pass 1 open on the main context
  s.FinishIncomplete();      // capture end: main's counter is at 1
  s.NewWindow();
  t.log.clear();
  // Next window, the first selected launch is on the other context.
  SpreadLaunch other = L(7, ++corr);
  other.context = &g_other;
  s.OnLaunch(other, true);
  for (const std::string& e : t.log) EXPECT_NE(e.rfind("reset", 0), 0u) << e;
  s.FinishIncomplete(&g_other);  // the other context goes away
  t.log.clear();
  s.OnLaunch(L(1, ++corr), true);  // main again: reset first
  ASSERT_FALSE(t.log.empty());
  EXPECT_EQ(t.log[0], "reset main");
}

// CUPTI saying "all submitted" before the schedule's last pass means the
// counter did not start at 0: the sequence restarts instead of reporting
// another pass's data as a complete set.
TEST(SequenceSpread, EarlyAllSubmittedRestarts) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16);
  t.SetCounter(&g_ctx, 2);  // left at pass 2 by something else
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_TRUE(s.TakeCompleted().empty());
  Steps(&s, &t, 6, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].passes_done, 3u);
}


// Every CUPTI failure ends the mode with a message naming the step (the
// range profiler then switches metrics off with one warning).
TEST(SequenceSpread, TargetFailuresEndTheModeWithAReason) {
  struct Case {
    const char* what;
    void (*arm)(FakeSequenceTarget*);
  };
  const Case cases[] = {
      {"image initialisation", [](FakeSequenceTarget* t) { t->fail_init = true; }},
      {"starting pass 0", [](FakeSequenceTarget* t) { t->fail_begin_after = 0; }},
      {"starting pass 1", [](FakeSequenceTarget* t) { t->fail_begin_after = 1; }},
      {"ending pass 0", [](FakeSequenceTarget* t) { t->fail_end = true; }},
      {"evaluating range 0", [](FakeSequenceTarget* t) { t->fail_evaluate = true; }},
  };
  for (const Case& c : cases) {
    FakeSequenceTarget t(2);
    c.arm(&t);
    SequenceSpread s(&t, 2, 16);
    uint32_t corr = 0;
    Steps(&s, &t, 4, &corr);
    EXPECT_TRUE(s.failed()) << c.what;
    EXPECT_NE(s.error().find(c.what), std::string::npos) << c.what << ": " << s.error();
    EXPECT_FALSE(s.collecting()) << c.what;
    EXPECT_TRUE(s.TakeCompleted().empty()) << c.what;
    // Failed: later launches do nothing.
    const size_t calls = t.log.size();
    Steps(&s, &t, 2, &corr);
    EXPECT_EQ(t.log.size(), calls) << c.what;
  }
}

// A CUPTI pass index that is neither this pass nor the next one: the
// counter is not ours to follow; the mode stops.
TEST(SequenceSpread, UnexpectedPassIndexFails) {
  FakeSequenceTarget t(4);
  SequenceSpread s(&t, 4, 16);
  uint32_t corr = 0;
  Steps(&s, &t, 1, &corr);
  t.SetCounter(&g_ctx, 2);  // something else advanced it during pass 0
  Steps(&s, &t, 1, &corr);
  EXPECT_TRUE(s.failed());
  EXPECT_NE(s.error().find("CUPTI reported pass 3 after pass 0"), std::string::npos) << s.error();
}

}  // namespace
}  // namespace sightline::collect
