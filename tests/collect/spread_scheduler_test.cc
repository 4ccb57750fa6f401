// Spread replay bookkeeping (lib/collect/range_profiler_spread.h) against a
// fake CUPTI target: pass sequencing per configuration, interleaved
// configurations, discard on a range-count mismatch, incomplete sets at
// capture end, failures that make the range profiler fall back.
#include "lib/collect/range_profiler_spread.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/collect/kernel_launch_hook.h"

namespace sightline::collect {
namespace {

// Models CUPTI application replay: an image per slot accumulates the passes
// decoded into it; Stop reports the next pass index (or the current one) and
// isAllPassSubmitted after the last pass.
class FakeTarget : public SpreadTarget {
 public:
  explicit FakeTarget(uint32_t passes) : passes_(passes) {}

  bool InitImage(void* context, uint32_t slot) override {
    log.push_back("init " + std::to_string(slot));
    if (fail_init) return false;
    images[slot] = Image{};
    return true;
  }
  bool BeginPass(void* context, uint32_t slot, uint32_t pass) override {
    log.push_back("begin " + std::to_string(slot) + " p" + std::to_string(pass));
    if (fail_begin) return false;
    open_slot_ = slot;
    open_pass_ = pass;
    open_context_ = context;
    return true;
  }
  bool EndPass(void* context, uint32_t slot, SpreadPassResult* r) override {
    log.push_back("end " + std::to_string(slot));
    if (fail_end) return false;
    EXPECT_EQ(slot, open_slot_);
    Image& img = images[slot];
    if (per_object_counter) {
      // CUPTI 13.0 on the H200: one pass counter per range-profiler object
      // (context), advanced by every Start/Stop whatever SetConfig said;
      // Stop reports the next pass, 0 with isAllPassSubmitted after the last.
      uint32_t& counter = counters[context];
      img.passes.push_back(counter);
      counter = counter + 1 >= passes_ ? 0 : counter + 1;
      r->all_submitted = counter == 0;
      r->stop_pass_index = counter;
    } else {
      img.passes.push_back(open_pass_);
      const uint32_t done = ignore_pass_index ? static_cast<uint32_t>(img.passes.size()) : open_pass_ + 1;
      r->all_submitted = !ignore_pass_index && done >= passes_;
      r->stop_pass_index = stop_reports_next ? done : open_pass_;
      if (ignore_pass_index) r->stop_pass_index = 0;  // CUPTI restarting at pass 0 every time
    }
    img.ranges = std::max<uint64_t>(img.ranges, 1 + extra_kernels_next_pass);
    r->ranges = img.ranges;
    r->ranges_dropped = dropped_next_pass;
    extra_kernels_next_pass = 0;
    dropped_next_pass = 0;
    return true;
  }
  bool Evaluate(void* context, uint32_t slot, std::vector<double>* values) override {
    if (fail_evaluate) return false;
    const Image& img = images[slot];
    // One value per pass index seen, in order: lets tests check the sequence.
    values->assign(img.passes.begin(), img.passes.end());
    return true;
  }
  void ReleaseImage(uint32_t slot) override {
    log.push_back("release " + std::to_string(slot));
    images.erase(slot);
  }
  bool ResetPasses(void* context) override {
    log.push_back("reset");
    counters[context] = 0;
    return !fail_reset;
  }

  struct Image {
    std::vector<uint32_t> passes;
    uint64_t ranges = 0;
  };
  std::map<uint32_t, Image> images;
  std::vector<std::string> log;
  bool fail_init = false, fail_begin = false, fail_end = false, fail_evaluate = false;
  bool fail_reset = false;
  bool per_object_counter = false;
  std::map<void*, uint32_t> counters;
  bool stop_reports_next = true;
  bool ignore_pass_index = false;
  uint64_t extra_kernels_next_pass = 0;
  uint64_t dropped_next_pass = 0;

 private:
  uint32_t passes_;
  uint32_t open_slot_ = 0, open_pass_ = 0;
  void* open_context_ = nullptr;
};

int g_ctx_a = 0, g_ctx_b = 0;

SpreadLaunch Launch(uint64_t key, uint32_t correlation, const char* name = "k",
                    void* context = &g_ctx_a) {
  SpreadLaunch l;
  l.key = key;
  l.context = context;
  l.device_id = 0;
  l.correlation_id = correlation;
  l.name = name;
  return l;
}

// Runs one launch through Enter/Exit; returns the Enter result.
SpreadEnter RunOne(SpreadScheduler* s, const SpreadLaunch& l) {
  SpreadEnter e = s->Enter(l);
  if (e == SpreadEnter::kStarted) {
    EXPECT_TRUE(s->Exit());
  }
  return e;
}

TEST(SpreadScheduler, KeyCoversNameGridBlockSharedMemoryAndContext) {
  const uint64_t base = SpreadKey(&g_ctx_a, "k", 4, 1, 1, 128, 1, 1, 0);
  EXPECT_EQ(base, SpreadKey(&g_ctx_a, "k", 4, 1, 1, 128, 1, 1, 0));
  EXPECT_NE(base, SpreadKey(&g_ctx_b, "k", 4, 1, 1, 128, 1, 1, 0));
  EXPECT_NE(base, SpreadKey(&g_ctx_a, "k2", 4, 1, 1, 128, 1, 1, 0));
  EXPECT_NE(base, SpreadKey(&g_ctx_a, "k", 8, 1, 1, 128, 1, 1, 0));
  EXPECT_NE(base, SpreadKey(&g_ctx_a, "k", 4, 1, 1, 256, 1, 1, 0));
  EXPECT_NE(base, SpreadKey(&g_ctx_a, "k", 4, 1, 1, 128, 1, 1, 1024));
}

TEST(SpreadScheduler, PassesInOrderOneLaunchEach) {
  FakeTarget t(3);
  SpreadScheduler s(&t, 3);
  EXPECT_FALSE(s.InProgress(7));
  EXPECT_EQ(RunOne(&s, Launch(7, 100)), SpreadEnter::kStarted);
  EXPECT_TRUE(s.InProgress(7));
  EXPECT_TRUE(s.TakeCompleted().empty());
  EXPECT_EQ(RunOne(&s, Launch(7, 101)), SpreadEnter::kStarted);
  EXPECT_EQ(RunOne(&s, Launch(7, 102)), SpreadEnter::kStarted);
  EXPECT_FALSE(s.InProgress(7));
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].first_correlation_id, 100u);
  EXPECT_EQ(done[0].last_correlation_id, 102u);
  EXPECT_EQ(done[0].launches, 3u);
  EXPECT_EQ(done[0].passes_done, 3u);
  EXPECT_EQ(done[0].passes_needed, 3u);
  EXPECT_EQ(done[0].values, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(t.log, (std::vector<std::string>{"init 1", "begin 1 p0", "end 1", "begin 1 p1", "end 1",
                                             "begin 1 p2", "end 1", "release 1"}));
  EXPECT_EQ(s.stats().completed, 1u);
  EXPECT_EQ(s.stats().passes, 3u);
  EXPECT_GT(s.stats().stop_index_is_next, 0u);
  EXPECT_TRUE(t.images.empty());
  // The next launch starts a new set (the caller asks its selector first).
  EXPECT_EQ(RunOne(&s, Launch(7, 103)), SpreadEnter::kStarted);
  EXPECT_TRUE(s.InProgress(7));
}

TEST(SpreadScheduler, StopReportingTheCurrentPassIsAcceptedToo) {
  FakeTarget t(2);
  t.stop_reports_next = false;
  SpreadScheduler s(&t, 2);
  RunOne(&s, Launch(1, 1));
  RunOne(&s, Launch(1, 2));
  EXPECT_EQ(s.TakeCompleted().size(), 1u);
  EXPECT_EQ(s.stats().stop_index_is_next, 0u);
  EXPECT_FALSE(s.failed());
}

TEST(SpreadScheduler, InterleavedConfigurationsKeepTheirOwnImages) {
  FakeTarget t(2);
  SpreadScheduler s(&t, 2);
  RunOne(&s, Launch(1, 10, "a"));
  RunOne(&s, Launch(2, 11, "b"));
  RunOne(&s, Launch(3, 12, "c"));
  EXPECT_EQ(t.images.size(), 3u);
  RunOne(&s, Launch(2, 13, "b"));
  RunOne(&s, Launch(1, 14, "a"));
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].name, "b");
  EXPECT_EQ(done[0].first_correlation_id, 11u);
  EXPECT_EQ(done[0].last_correlation_id, 13u);
  EXPECT_EQ(done[0].values, (std::vector<double>{0, 1}));
  EXPECT_EQ(done[1].name, "a");
  EXPECT_EQ(done[1].first_correlation_id, 10u);
  EXPECT_EQ(done[1].last_correlation_id, 14u);
  EXPECT_TRUE(s.InProgress(3));
  EXPECT_EQ(t.images.size(), 1u);
}

TEST(SpreadScheduler, ForeignKernelInAPassDiscardsAndRestarts) {
  FakeTarget t(3);
  SpreadScheduler s(&t, 3, 256, /*max_restarts=*/1);
  RunOne(&s, Launch(5, 1));
  t.extra_kernels_next_pass = 1;  // a second range in pass 1
  RunOne(&s, Launch(5, 2));
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_TRUE(s.InProgress(5));
  // Restarts from pass 0 with a re-initialised image.
  RunOne(&s, Launch(5, 3));
  EXPECT_EQ(t.log[t.log.size() - 3], "init 1");
  EXPECT_EQ(t.log[t.log.size() - 2], "begin 1 p0");
  RunOne(&s, Launch(5, 4));
  RunOne(&s, Launch(5, 5));
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].first_correlation_id, 3u);
  EXPECT_EQ(done[0].launches, 3u);
  EXPECT_EQ(done[0].values, (std::vector<double>{0, 1, 2}));
}

TEST(SpreadScheduler, DroppedRangeDiscardsAndRepeatedDiscardsAbandon) {
  FakeTarget t(3);
  SpreadScheduler s(&t, 3, 256, /*max_restarts=*/1);
  t.dropped_next_pass = 1;
  RunOne(&s, Launch(9, 1));
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_TRUE(s.InProgress(9));
  t.extra_kernels_next_pass = 2;
  RunOne(&s, Launch(9, 2));
  EXPECT_EQ(s.stats().discarded, 2u);
  EXPECT_EQ(s.stats().abandoned, 1u);
  EXPECT_FALSE(s.InProgress(9));
  EXPECT_TRUE(s.Abandoned(9));
  EXPECT_EQ(s.Enter(Launch(9, 3)), SpreadEnter::kSkipped);
  EXPECT_TRUE(t.images.empty());
  EXPECT_FALSE(s.failed());
}

TEST(SpreadScheduler, IncompleteAtCaptureEndIsReportedAndReleased) {
  FakeTarget t(4);
  SpreadScheduler s(&t, 4);
  RunOne(&s, Launch(1, 1, "a"));
  RunOne(&s, Launch(1, 2, "a"));
  RunOne(&s, Launch(2, 3, "b", &g_ctx_b));
  // Context b goes away first.
  std::vector<SpreadCollection> left_b = s.FinishIncomplete(&g_ctx_b);
  ASSERT_EQ(left_b.size(), 1u);
  EXPECT_EQ(left_b[0].name, "b");
  EXPECT_EQ(left_b[0].passes_done, 1u);
  EXPECT_TRUE(s.InProgress(1));
  std::vector<SpreadCollection> left = s.FinishIncomplete();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "a");
  EXPECT_EQ(left[0].passes_done, 2u);
  EXPECT_EQ(left[0].passes_needed, 4u);
  EXPECT_EQ(left[0].launches, 2u);
  EXPECT_EQ(left[0].first_correlation_id, 1u);
  EXPECT_EQ(left[0].last_correlation_id, 2u);
  EXPECT_TRUE(left[0].values.empty());
  EXPECT_EQ(s.stats().incomplete, 2u);
  EXPECT_TRUE(t.images.empty());
  EXPECT_FALSE(s.InProgress(1));
}

TEST(SpreadScheduler, OpenPassIsNotFinishedUnderneathItsLaunch) {
  FakeTarget t(2);
  SpreadScheduler s(&t, 2);
  ASSERT_EQ(s.Enter(Launch(1, 1)), SpreadEnter::kStarted);
  EXPECT_TRUE(s.FinishIncomplete().empty());
  EXPECT_TRUE(s.Exit());
  EXPECT_TRUE(s.InProgress(1));
}

TEST(SpreadScheduler, SlotLimitSkipsNewConfigurations) {
  FakeTarget t(2);
  SpreadScheduler s(&t, 2, /*max_in_flight=*/2);
  RunOne(&s, Launch(1, 1));
  RunOne(&s, Launch(2, 2));
  EXPECT_EQ(s.Enter(Launch(3, 3)), SpreadEnter::kSkipped);
  EXPECT_EQ(s.stats().slots_full, 1u);
  RunOne(&s, Launch(1, 4));  // completes: frees a slot
  EXPECT_EQ(RunOne(&s, Launch(3, 5)), SpreadEnter::kStarted);
}

TEST(SpreadScheduler, OnePassSetCompletesOnItsFirstLaunch) {
  FakeTarget t(1);
  SpreadScheduler s(&t, 1);
  RunOne(&s, Launch(1, 42));
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].first_correlation_id, 42u);
  EXPECT_EQ(done[0].last_correlation_id, 42u);
  EXPECT_EQ(done[0].launches, 1u);
}

// All passes in before the schedule's last one: the counter was not at pass
// 0 when the set began, so its data is not the schedule's; discarded.
TEST(SpreadScheduler, EarlyAllSubmittedIsDiscarded) {
  FakeTarget t(2);  // CUPTI's schedule: 2 passes
  SpreadScheduler s(&t, 3);  // ours said 3
  RunOne(&s, Launch(1, 1));
  RunOne(&s, Launch(1, 2));
  EXPECT_TRUE(s.TakeCompleted().empty());
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_FALSE(s.failed());
}

// A set cut short by a capture end leaves CUPTI's counter mid-schedule: the
// next set on that context starts with a reset (caught on a per-object
// counter: without it the next set completed after 1 pass with pass 2's data).
TEST(SpreadScheduler, CaptureEndResetsTheCounterBeforeTheNextSet) {
  FakeTarget t(3);
  t.per_object_counter = true;
  SpreadScheduler s(&t, 3, /*max_in_flight=*/1);
  RunOne(&s, Launch(1, 1));
  RunOne(&s, Launch(1, 2));
  EXPECT_EQ(s.FinishIncomplete().size(), 1u);
  t.log.clear();
  for (uint32_t c = 3; c <= 5; ++c) RunOne(&s, Launch(2, c, "b"));
  ASSERT_FALSE(t.log.empty());
  EXPECT_EQ(t.log[0], "reset");
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].values, (std::vector<double>{0, 1, 2}));
  // A destroyed context is forgotten, not reset.
  RunOne(&s, Launch(1, 6));
  s.FinishIncomplete(&g_ctx_a);
  t.counters.erase(&g_ctx_a);  // a new context at the same address: a fresh object
  t.log.clear();
  RunOne(&s, Launch(1, 7));
  ASSERT_FALSE(t.log.empty());
  EXPECT_EQ(t.log[0], "init 4");
}

// A configuration launched once (warm-up) must not hold the only slot.
TEST(SpreadScheduler, ARareConfigurationIsPreempted) {
  FakeTarget t(3);
  t.per_object_counter = true;
  SpreadScheduler s(&t, 3, /*max_in_flight=*/1);
  RunOne(&s, Launch(1, 1, "warmup"));
  uint32_t corr = 1;
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(s.HasRoom(2));
    s.NoteWaiting(2);
  }
  EXPECT_EQ(s.stats().preempted, 1u);
  EXPECT_EQ(s.stats().incomplete, 1u);
  std::vector<SpreadCollection> cut = s.TakeCompleted();
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_TRUE(cut[0].values.empty());
  EXPECT_EQ(cut[0].passes_done, 1u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(s.HasRoom(2));
    RunOne(&s, Launch(2, ++corr, "b"));
  }
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].values, (std::vector<double>{0, 1, 2}));  // after a reset
}

TEST(SpreadScheduler, PassIndexNotFollowedIsAFailure) {
  FakeTarget t(3);
  t.ignore_pass_index = true;  // every pass is "pass 0" for CUPTI, never all submitted
  SpreadScheduler s(&t, 3);
  RunOne(&s, Launch(1, 1));
  ASSERT_EQ(s.Enter(Launch(1, 2)), SpreadEnter::kStarted);
  EXPECT_FALSE(s.Exit());  // reported 0 where pass 1 was configured
  EXPECT_TRUE(s.failed());
  EXPECT_NE(s.error().find("CUPTI reported pass 0 where pass 1 was configured"), std::string::npos)
      << s.error();
  EXPECT_EQ(s.Enter(Launch(1, 3)), SpreadEnter::kSkipped);
  EXPECT_TRUE(t.images.empty());
}

TEST(SpreadScheduler, NeverAllSubmittedIsAFailure) {
  FakeTarget t(5);  // CUPTI wants 5 passes
  SpreadScheduler s(&t, 2);  // ours said 2
  RunOne(&s, Launch(1, 1));
  ASSERT_EQ(s.Enter(Launch(1, 2)), SpreadEnter::kStarted);
  EXPECT_FALSE(s.Exit());
  EXPECT_TRUE(s.failed());
  EXPECT_NE(s.error().find("more than the 2 passes"), std::string::npos) << s.error();
}

TEST(SpreadScheduler, TargetErrorsFailAndReleaseTheImage) {
  {
    FakeTarget t(2);
    t.fail_init = true;
    SpreadScheduler s(&t, 2);
    EXPECT_EQ(s.Enter(Launch(1, 1)), SpreadEnter::kFailed);
    EXPECT_TRUE(s.failed());
    EXPECT_FALSE(s.InProgress(1));
  }
  {
    FakeTarget t(2);
    SpreadScheduler s(&t, 2);
    RunOne(&s, Launch(1, 1));
    RunOne(&s, Launch(2, 2));
    t.fail_begin = true;
    EXPECT_EQ(s.Enter(Launch(1, 3)), SpreadEnter::kFailed);
    EXPECT_TRUE(s.failed());
    // The message is built from the pass number taken before the
    // configuration was released (reading it after was a use-after-free,
    // reported by the sanitizer builds of this test).
    EXPECT_EQ(s.error(), "spread: starting pass 1 failed");
    // The caller collects the others for kernel replay, then drops them.
    EXPECT_EQ(s.InProgressKeys(), (std::vector<uint64_t>{2}));
    s.DropAll();
    EXPECT_TRUE(t.images.empty());
  }
  {
    FakeTarget t(2);
    SpreadScheduler s(&t, 2);
    t.fail_end = true;
    ASSERT_EQ(s.Enter(Launch(1, 1)), SpreadEnter::kStarted);
    EXPECT_FALSE(s.Exit());
    EXPECT_TRUE(s.failed());
    EXPECT_TRUE(t.images.empty());
  }
  {
    FakeTarget t(1);
    t.fail_evaluate = true;
    SpreadScheduler s(&t, 1);
    ASSERT_EQ(s.Enter(Launch(1, 1)), SpreadEnter::kStarted);
    EXPECT_FALSE(s.Exit());
    EXPECT_TRUE(s.failed());
    EXPECT_TRUE(s.TakeCompleted().empty());
  }
}

TEST(SpreadScheduler, HookConfigCarriesTheMetricFields) {
  CollectorConfig c;
  c.metric_set = "full";
  c.metric_kernel_filter = "matmul";
  c.metric_max_ranges = 7;
  c.metric_launches_per_kernel = 2;
  c.metric_every_nth = 3;
  c.metric_replay = MetricsReplay::kSpread;
  KernelLaunchHookConfig h = HookConfigFromCollectorConfig(c);
  EXPECT_EQ(h.metric_set, "full");
  EXPECT_EQ(h.kernel_filter, "matmul");
  EXPECT_EQ(h.max_ranges, 7u);
  EXPECT_EQ(h.launches_per_kernel, 2u);
  EXPECT_EQ(h.every_nth, 3u);
  EXPECT_EQ(h.replay, MetricsReplay::kSpread);
}


// What failed on the H200: two configurations collected in turn on one
// object share CUPTI's pass counter, so the second one's "pass 0" is pass 1.
TEST(SpreadScheduler, InterleavedSetsOnOnePassCounterAreCaught) {
  FakeTarget t(3);
  t.per_object_counter = true;
  SpreadScheduler s(&t, 3, /*max_in_flight=*/2);
  RunOne(&s, Launch(1, 10, "a"));
  EXPECT_EQ(s.Enter(Launch(2, 11, "b")), SpreadEnter::kStarted);
  EXPECT_FALSE(s.Exit());
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.error(), "spread: CUPTI reported pass 2 where pass 0 was configured");
}

// What the range profiler does: one configuration at a time (HasRoom before
// the selector), so each set gets passes 0..N-1 in order from the counter.
TEST(SpreadScheduler, OneConfigurationAtATimeFollowsThePassCounter) {
  FakeTarget t(3);
  t.per_object_counter = true;
  SpreadScheduler s(&t, 3, /*max_in_flight=*/1);
  uint32_t corr = 0;
  int skipped_b = 0;
  for (int step = 0; step < 6; ++step) {
    for (uint64_t key : {1u, 2u}) {
      const char* name = key == 1 ? "a" : "b";
      if (!s.HasRoom(key)) {
        s.NoteWaiting(key);
        if (key == 2) ++skipped_b;
        continue;
      }
      EXPECT_EQ(RunOne(&s, Launch(key, ++corr, name)), SpreadEnter::kStarted);
    }
  }
  EXPECT_FALSE(s.failed()) << s.error();
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].name, "a");
  EXPECT_EQ(done[0].values, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(done[1].name, "b");
  EXPECT_EQ(done[1].values, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(done[1].launches, 3u);
  EXPECT_EQ(skipped_b, 3);  // b waited while a held the counter (steps 0, 1, 5)
  // a waited while b held it (steps 3, 4), then began a second set (no
  // selector quota here): in progress, not finished.
  EXPECT_EQ(s.stats().slots_full, 5u);
  EXPECT_TRUE(s.InProgress(1));
  EXPECT_EQ(s.stats().stop_index_is_next, 5u);
}

TEST(SpreadScheduler, DiscardedPassResetsThePassCounter) {
  FakeTarget t(3);
  t.per_object_counter = true;
  SpreadScheduler s(&t, 3, /*max_in_flight=*/1);
  RunOne(&s, Launch(5, 1));
  t.extra_kernels_next_pass = 1;
  RunOne(&s, Launch(5, 2));  // counter now at 2 without the reset
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_NE(std::find(t.log.begin(), t.log.end(), "reset"), t.log.end());
  for (uint32_t c = 3; c <= 5; ++c) RunOne(&s, Launch(5, c));
  EXPECT_FALSE(s.failed()) << s.error();
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].values, (std::vector<double>{0, 1, 2}));
  // A reset that fails is a failure (the counter's position is unknown).
  FakeTarget t2(3);
  t2.per_object_counter = true;
  t2.fail_reset = true;
  SpreadScheduler s2(&t2, 3, 1);
  t2.extra_kernels_next_pass = 1;
  EXPECT_EQ(s2.Enter(Launch(6, 1)), SpreadEnter::kStarted);
  EXPECT_FALSE(s2.Exit());
  EXPECT_TRUE(s2.failed());
}

}  // namespace
}  // namespace sightline::collect
