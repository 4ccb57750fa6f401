// Sequence replay bookkeeping (lib/collect/range_profiler_sequence.h): the
// step learned from the launches (PeriodFinder), and the passes against
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
    capacity_ = max_ranges;
    ranges_ = 0;
    pass_ranges_.clear();
    return true;
  }
  bool BeginSequencePass(void* context) override {
    // As CUPTI: one pass open at a time (a second Start fails).
    if (open_) ADD_FAILURE() << "BeginSequencePass with a pass open";
    open_ = true;
    log.push_back("begin p" + std::to_string(counters_[context]));
    if (fail_begin_after >= 0 && begins_++ >= fail_begin_after) return false;
    in_pass_ = 0;
    return true;
  }
  // The caller's launches inside the pass (the fake cannot see them).
  void Launched(int n = 1) { in_pass_ += n; }
  bool EndSequencePass(void* context, SpreadPassResult* r) override {
    uint32_t& counter_ = counters_[context];
    if (!open_) ADD_FAILURE() << "EndSequencePass with no pass open";
    open_ = false;
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
    if (image_semantics && pass_ranges_.size() > 1) {
      // As CUPTI's image: a later pass reports the image's ranges, and only
      // kernels beyond its capacity as dropped.
      r->ranges = capacity_;
      r->ranges_dropped = in_pass_ > capacity_ ? in_pass_ - capacity_ : 0;
    }
    return true;
  }
  bool EvaluateSequenceRange(void*, size_t index, std::vector<double>* values) override {
    if (fail_evaluate) return false;
    values->assign(1, static_cast<double>(index));
    return true;
  }
  bool ResetSequencePasses(void* context) override {
    if (open_) ADD_FAILURE() << "ResetSequencePasses with a pass open";
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
  bool open_ = false;
  uint64_t in_pass_ = 0, ranges_ = 0, capacity_ = 0;
 public:
  bool image_semantics = false;
 private:
  std::vector<uint64_t> pass_ranges_;
};

int g_ctx = 0;

SpreadLaunch L(uint64_t key, uint32_t corr) {
  SpreadLaunch l;
  l.key = key;
  l.context = &g_ctx;
  l.correlation_id = corr;
  static const char* const kNames[] = {"?", "a", "b", "c", "d", "e"};
  l.name = key < 6 ? kNames[key] : "k";
  return l;
}

// One launch through both steps of SequenceSpread (Learn, then OnLaunch with
// the selector's answer).
void Feed(SequenceSpread* s, const SpreadLaunch& launch, bool start_ok) {
  s->Learn(launch);
  s->OnLaunch(launch, start_ok);
}

// Runs `steps` steps of `keys`; the selector accepts every launch.
void RunSteps(SequenceSpread* s, FakeSequenceTarget* t, const std::vector<uint64_t>& keys, int steps,
         uint32_t* corr) {
  for (int step = 0; step < steps; ++step) {
    for (uint64_t key : keys) {
      Feed(s, L(key, ++*corr), true);
      if (s->measuring()) t->Launched();
    }
  }
}

void Steps(SequenceSpread* s, FakeSequenceTarget* t, int steps, uint32_t* corr) {
  RunSteps(s, t, {1, 2, 3}, steps, corr);
}

int Count(const std::vector<std::string>& log, const std::string& prefix) {
  int n = 0;
  for (const std::string& e : log) n += e.rfind(prefix, 0) == 0;
  return n;
}

// ---- PeriodFinder ---------------------------------------------------------------

size_t PeriodOf(const std::vector<uint64_t>& step, int steps, size_t min_run = 0,
                int* confirmed_at = nullptr) {
  PeriodFinder f(64, min_run);
  int launch = 0;
  for (int i = 0; i < steps; ++i) {
    for (uint64_t k : step) {
      if (f.Add(k)) {
        if (confirmed_at != nullptr) *confirmed_at = launch;
        return f.period();
      }
      ++launch;
    }
  }
  return 0;
}

TEST(PeriodFinder, TheStepIsConfirmedAtTheEndOfItsSecondRepetition) {
  int at = -1;
  EXPECT_EQ(PeriodOf({1, 2, 3}, 5, 0, &at), 3u);
  EXPECT_EQ(at, 5);
  // A kernel launched twice per step, the step starting anywhere.
  EXPECT_EQ(PeriodOf({1, 2, 1, 3}, 5), 4u);
  // A kernel three times in a row is a period of 1 only with min_run 0.
  EXPECT_EQ(PeriodOf({2, 1, 1, 1, 3}, 5, 0), 1u);
  EXPECT_EQ(PeriodOf({2, 1, 1, 1, 3}, 5, 8), 5u);
  // One kernel over and over: a period of 1 once it repeated min_run times.
  EXPECT_EQ(PeriodOf({7}, 40, 32, &at), 1u);
  EXPECT_EQ(at, 32);
  // One step is too few; no repetition at all never is.
  EXPECT_EQ(PeriodOf({1, 2, 3}, 1), 0u);
  PeriodFinder f(64, 0);
  for (uint64_t k = 1; k < 500; ++k) EXPECT_FALSE(f.Add(k));
  // Longer than max_period: never.
  std::vector<uint64_t> long_step;
  for (uint64_t k = 1; k <= 65; ++k) long_step.push_back(k);
  EXPECT_EQ(PeriodOf(long_step, 5), 0u);
}

TEST(PeriodFinder, ThePatternStartsAtTheConfirmingLaunch) {
  PeriodFinder f(64, 0);
  std::vector<uint64_t> keys = {5, 1, 2, 3, 1, 2, 3, 1, 2, 3};
  bool ok = false;
  for (uint64_t k : keys) ok = f.Add(k);
  ASSERT_TRUE(ok);
  EXPECT_EQ(f.Pattern(), (std::vector<uint64_t>{3, 1, 2}));
  ASSERT_TRUE(f.Add(1));
  EXPECT_EQ(f.Pattern(), (std::vector<uint64_t>{1, 2, 3}));
}

TEST(PeriodFinder, WarmUpThatDiffersIsLeftBehind) {
  PeriodFinder f(64, 0);
  for (uint64_t k : {9, 8, 1, 2, 9, 3}) EXPECT_FALSE(f.Add(k));
  int launches = 0;
  bool ok = false;
  while (!ok && launches < 30) ok = f.Add(static_cast<uint64_t>(1 + launches++ % 3));
  ASSERT_TRUE(ok);
  EXPECT_EQ(f.period(), 3u);
  EXPECT_LE(launches, 9);  // the warm-up's last launch may already match
}

// A transformer step: embedding, four equal layers, head, four equal
// backward layers, optimizer. A layer repeats (and is confirmed) before the
// step does; once the step has repeated for longer it is the period.
TEST(PeriodFinder, TheStepOutlastsItsRepeatedLayers) {
  std::vector<uint64_t> step = {10};
  for (int l = 0; l < 4; ++l) step.insert(step.end(), {1, 2, 3});
  step.push_back(11);
  for (int l = 0; l < 4; ++l) step.insert(step.end(), {4, 5});
  step.push_back(12);
  PeriodFinder f(256, 0);
  std::vector<size_t> confirmed;
  for (int i = 0; i < 4; ++i) {
    for (uint64_t k : step) {
      if (f.Add(k) && (confirmed.empty() || confirmed.back() != f.period())) {
        confirmed.push_back(f.period());
      }
    }
  }
  ASSERT_FALSE(confirmed.empty());
  EXPECT_EQ(confirmed.back(), step.size());
  // Rejected twice, a layer must repeat four times as long: four layers do not.
  PeriodFinder g(256, 0);
  for (int i = 0; i < 2; ++i) {
    g.Reject(3);
    g.Reject(2);
  }
  size_t first = 0;
  for (int i = 0; i < 4 && first == 0; ++i) {
    for (uint64_t k : step) {
      if (g.Add(k)) {
        first = g.period();
        break;
      }
    }
  }
  EXPECT_EQ(first, step.size());
}

// ---- SequenceSpread -------------------------------------------------------------

TEST(SequenceSpread, OnePassPerStepEveryKernelGetsASet) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 1, &corr);
  EXPECT_TRUE(t.log.empty());  // learning: no CUPTI call
  Steps(&s, &t, 5, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 3u);
  // Learned at the second step's last launch: the passes start there.
  EXPECT_EQ(done[0].name, "c");
  EXPECT_EQ(done[1].name, "a");
  EXPECT_EQ(done[2].name, "b");
  EXPECT_EQ(done[0].first_correlation_id, 6u);
  EXPECT_EQ(done[0].last_correlation_id, 12u);
  EXPECT_EQ(done[2].last_correlation_id, 14u);
  EXPECT_EQ(done[1].values, (std::vector<double>{1}));
  EXPECT_EQ(done[0].passes_done, 3u);
  EXPECT_EQ(s.stats().passes, 3u);
  EXPECT_EQ(s.stats().sequences, 1u);
  EXPECT_EQ(s.stats().period, 3u);
  EXPECT_EQ(t.log[0], "init 3");  // an image of one step's ranges
  // One Start per step, not per kernel and pass.
  EXPECT_EQ(Count(t.log, "begin"), 3);
  // One sequence per step and capture window; the next window starts at
  // once (the step is still known).
  EXPECT_FALSE(s.collecting());
  const size_t calls = t.log.size();
  Steps(&s, &t, 3, &corr);
  EXPECT_EQ(t.log.size(), calls);
  EXPECT_EQ(s.stats().sequences, 1u);
  s.NewWindow();
  Steps(&s, &t, 4, &corr);
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
}

// SIGHTLINE_METRICS_SEQUENCES=3: the step is collected three times in a
// window, one after the other, each sequence from its own passes; every
// position then has three sets. No fourth, until a new window.
TEST(SequenceSpread, SequencesPerStepGiveEachPositionThatManySets) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  s.set_sequences_per_step(3);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);
  Steps(&s, &t, 12, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 9u);
  EXPECT_EQ(s.stats().sequences, 3u);
  EXPECT_EQ(s.stats().passes, 9u);
  EXPECT_EQ(s.stats().discarded, 0u);
  std::map<std::string, int> per_name;
  for (const SpreadCollection& c : done) {
    ++per_name[c.name];
    EXPECT_EQ(c.passes_done, 3u);
  }
  EXPECT_EQ(per_name, (std::map<std::string, int>{{"a", 3}, {"b", 3}, {"c", 3}}));
  // Each set is tied to its own sequence's launches.
  EXPECT_LT(done[0].last_correlation_id, done[3].first_correlation_id);
  EXPECT_LT(done[3].last_correlation_id, done[6].first_correlation_id);
  EXPECT_EQ(Count(t.log, "begin"), 9);
  const size_t calls = t.log.size();
  Steps(&s, &t, 4, &corr);
  EXPECT_EQ(t.log.size(), calls);
  s.NewWindow();
  Steps(&s, &t, 5, &corr);
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
}

// With sequences per step, a layer confirmed first is repeated too, while
// it stays the confirmed period (here twice: its four repetitions in a
// step hold two sequences of two passes, and by the next step the step
// itself is confirmed); the step after it still gets all its sequences:
// the window's cap counts periods, not sequences.
TEST(SequenceSpread, SequencesPerStepRepeatALayerAndTheStepAlike) {
  std::vector<uint64_t> step = {4};
  for (int l = 0; l < 4; ++l) step.insert(step.end(), {1, 2, 3});
  step.push_back(5);
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 64, /*min_run=*/0);
  s.set_sequences_per_step(3);
  uint32_t corr = 0;
  RunSteps(&s, &t, step, 16, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_EQ(s.stats().sequences, 5u);
  EXPECT_EQ(s.stats().period, step.size());
  std::map<std::string, int> per_name;
  for (const SpreadCollection& c : s.TakeCompleted()) ++per_name[c.name];
  // Keys 4 and 5 occur only in the step: one set per step sequence.
  EXPECT_EQ(per_name["d"], 3);
  EXPECT_EQ(per_name["e"], 3);
  // The layer's kernels: 2 layer sequences + 4 positions in each of 3 steps.
  EXPECT_EQ(per_name["a"], 2 + 3 * 4);
  RunSteps(&s, &t, step, 4, &corr);
  EXPECT_EQ(s.stats().sequences, 5u);
}

// The kernel selector is asked only where a sequence could start: at the
// launches after the step is known, while none is collected.
TEST(SequenceSpread, LearnSaysWhereASequenceCouldStart) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16, /*min_run=*/0);
  uint32_t corr = 0;
  int could = 0;
  for (int i = 0; i < 5; ++i) {
    could += s.Learn(L(static_cast<uint64_t>(1 + i % 3), ++corr));
    s.OnLaunch(L(static_cast<uint64_t>(1 + i % 3), corr), false);
  }
  EXPECT_EQ(could, 0);
  EXPECT_TRUE(s.Learn(L(3, ++corr)));  // the second step's last launch
  s.OnLaunch(L(3, corr), false);       // the selector said no: not started
  EXPECT_FALSE(s.collecting());
  EXPECT_TRUE(s.Learn(L(1, ++corr)));
  s.OnLaunch(L(1, corr), true);
  EXPECT_TRUE(s.collecting());
  t.Launched();
  EXPECT_FALSE(s.Learn(L(2, ++corr)));  // collecting: nothing to ask
  s.OnLaunch(L(2, corr), false);
  EXPECT_TRUE(s.collecting());
}

// A layer repeated inside the step is confirmed before the step. With more
// passes than layers its passes differ at the layers' end (a restart); with
// fewer its sequence completes — and the step, confirmed later, is collected
// after it in the same window, since it holds kernels the layer did not.
TEST(SequenceSpread, ALayerConfirmedBeforeTheStepDoesNotKeepTheStepFromBeingCollected) {
  std::vector<uint64_t> step = {4};
  for (int l = 0; l < 4; ++l) step.insert(step.end(), {1, 2, 3});
  step.push_back(5);
  {
    FakeSequenceTarget t(5);
    SequenceSpread s(&t, 5, 64, /*min_run=*/0);
    uint32_t corr = 0;
    RunSteps(&s, &t, step, 9, &corr);
    ASSERT_FALSE(s.failed()) << s.error();
    EXPECT_GE(s.stats().discarded, 1u);
    EXPECT_EQ(s.stats().sequences, 1u);
    EXPECT_EQ(s.stats().period, step.size());
    EXPECT_EQ(s.TakeCompleted().size(), step.size());
    EXPECT_GE(Count(t.log, "reset main"), 1);
  }
  {
    FakeSequenceTarget t(2);
    SequenceSpread s(&t, 2, 64, /*min_run=*/0);
    uint32_t corr = 0;
    RunSteps(&s, &t, step, 7, &corr);
    ASSERT_FALSE(s.failed()) << s.error();
    EXPECT_EQ(s.stats().sequences, 2u);
    EXPECT_EQ(s.stats().period, step.size());
    EXPECT_EQ(s.TakeCompleted().size(), 3 + step.size());  // the layer's, then the step's
    // Nothing new to measure: no third sequence.
    RunSteps(&s, &t, step, 4, &corr);
    EXPECT_EQ(s.stats().sequences, 2u);
  }
}

TEST(SequenceSpread, AStepThatChangesRestartsAndConverges) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 4, &corr);  // learned, pass 0 done
  ASSERT_TRUE(s.collecting());
  RunSteps(&s, &t, {1, 4, 2, 3}, 1, &corr);  // an evaluation step: another kernel
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_FALSE(s.collecting());
  Steps(&s, &t, 12, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
  EXPECT_EQ(Count(t.log, "reset main"), 1);
}

TEST(SequenceSpread, RangesCuptiCountsButWeDidNotSeeDiscardThePasses) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);        // learned at the last launch: pass 0 open
  t.extra_kernels_next_pass = 1;  // a kernel inside a graph launch, say
  Steps(&s, &t, 1, &corr);
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_EQ(s.stats().range_mismatch, 1u);
  // Counted: run untraced, that kernel has no record (on_unseen_kernels).
  EXPECT_EQ(s.stats().unseen_kernels, 1u);
  Steps(&s, &t, 8, &corr);
  EXPECT_EQ(s.stats().unseen_kernels, 1u);
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
}

// Unseen kernels in a later pass cut short: its range count is the image's,
// so only what overflowed the image tells (a lower bound); a whole pass's
// overflow is exact.
TEST(SequenceSpread, UnseenKernelsOfALaterPassCutShortCountWhatOverflowed) {
  FakeSequenceTarget t(4);
  t.image_semantics = true;
  SequenceSpread s(&t, 4, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);  // learned: pass 0 open
  Steps(&s, &t, 1, &corr);  // pass 0 whole
  ASSERT_EQ(s.stats().passes, 1u);
  // Pass 1: one launch seen, then a graph's 4 kernels, then the step changes.
  Feed(&s, L(1, ++corr), true);
  t.Launched();
  t.extra_kernels_next_pass = 4;  // 5 kernels in an image of 3: 2 dropped
  Feed(&s, L(9, ++corr), true);
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_EQ(s.stats().unseen_kernels, 4u);  // 3 + 2 - 1 seen
}

// Steps of `keys`, each followed by work the hook does not see launch by
// launch (a CUDA graph launch): SequenceSpread::Interrupt. `also_after`: a
// second interruption after that many of the step's launches.
void StepsThenGraph(SequenceSpread* s, FakeSequenceTarget* t, const std::vector<uint64_t>& keys,
                    int steps, uint32_t* corr, size_t also_after = 0) {
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < keys.size(); ++i) {
      Feed(s, L(keys[i], ++*corr), true);
      if (s->measuring()) t->Launched();
      if (also_after != 0 && i + 1 == also_after) s->Interrupt(&g_ctx, "a CUDA graph launch");
    }
    s->Interrupt(&g_ctx, "a CUDA graph launch");
    // The graph's kernels run outside every pass: CUPTI counts none.
  }
}

// A step that ends with a graph launch: the learned step began where its
// period was confirmed (at 'c'), the graph cut pass 0 after one launch, the
// step was realigned to begin after the graph ('a'), and from then on each
// pass ends at the graph and the next begins at the step's first launch.
TEST(SequenceSpread, AGraphLaunchAtTheStepsEndEndsEachPassAndTheSequenceConverges) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  // Learned at the second step's 'c': pass 0 opened there and the graph
  // right after cut it.
  StepsThenGraph(&s, &t, {1, 2, 3}, 2, &corr);
  EXPECT_FALSE(s.measuring());
  EXPECT_EQ(s.stats().interrupted, 1u);
  EXPECT_EQ(s.stats().realigned, 1u);
  StepsThenGraph(&s, &t, {1, 2, 3}, 3, &corr);  // passes 0, 1, 2, each ended at the graph
  ASSERT_FALSE(s.failed()) << s.error();
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].name, "a");  // aligned to the program's step
  EXPECT_EQ(done[2].name, "c");
  EXPECT_EQ(done[0].passes_done, 3u);
  EXPECT_EQ(s.stats().sequences, 1u);
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_EQ(s.stats().paused, 3u);
  EXPECT_EQ(s.stats().unseen_kernels, 0u);
  EXPECT_FALSE(s.measuring());
  // Between passes nothing is measured: a pass begins at a step's first
  // launch only.
  EXPECT_EQ(Count(t.log, "begin"), 4);  // the cut pass 0, then 3 passes
  EXPECT_EQ(Count(t.log, "end"), 4);
}

// A pass ended at a graph launch whose next step begins otherwise: the step
// changed, the passes are discarded and learning goes on.
TEST(SequenceSpread, AfterAPassEndedAtAGraphLaunchADifferentStepDiscards) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  StepsThenGraph(&s, &t, {1, 2, 3}, 3, &corr);  // realigned; pass 0 whole, ended at the graph
  ASSERT_EQ(s.stats().passes, 1u);
  ASSERT_FALSE(s.measuring());
  const int ends = Count(t.log, "end");
  Feed(&s, L(2, ++corr), true);  // not the step's first launch
  EXPECT_FALSE(s.collecting());
  EXPECT_EQ(s.stats().discarded, 2u);
  EXPECT_EQ(Count(t.log, "end"), ends);  // no pass was open: nothing to stop
  ASSERT_FALSE(s.failed()) << s.error();
}

// Graph launches at two places of a step: every pass is cut short. A
// learned step is realigned at most kMaxRealigns times; then the ordinary
// restarts (the period held to a stricter standard each time, so ever
// fewer learned starts) bound the cost. Nothing fails, nothing completes.
TEST(SequenceSpread, GraphLaunchesInsideTheStepRealignABoundedNumberOfTimes) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  StepsThenGraph(&s, &t, {1, 2, 3, 4}, 60, &corr, /*also_after=*/2);
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_TRUE(s.TakeCompleted().empty());
  const uint64_t starts = static_cast<uint64_t>(Count(t.log, "init"));
  const uint64_t learned = starts - s.stats().realigned;
  EXPECT_GE(learned, 2u);
  EXPECT_LE(s.stats().realigned, SequenceSpread::kMaxRealigns * learned);
  EXPECT_EQ(s.stats().passes, 0u);
  // 240 launches: a handful of learned starts, not one per step.
  EXPECT_LE(learned, 4u);
  EXPECT_EQ(Count(t.log, "begin"), Count(t.log, "end"));  // every pass begun was stopped
}

// A capture window that ends between two passes (the last ended at a graph
// launch): no pass is open, none is stopped; pass 0 was whole, so every
// position is reported with the passes so far.
TEST(SequenceSpread, CaptureEndBetweenPassesStopsNothingAndReportsIncomplete) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  StepsThenGraph(&s, &t, {1, 2, 3}, 3, &corr);  // realigned; pass 0 whole, ended at the graph
  ASSERT_TRUE(s.collecting());
  ASSERT_FALSE(s.measuring());
  const int ends = Count(t.log, "end");
  std::vector<SpreadCollection> left = s.FinishIncomplete();
  EXPECT_EQ(Count(t.log, "end"), ends);  // the strict fake fails an End with no pass open
  ASSERT_EQ(left.size(), 3u);
  EXPECT_EQ(left[0].passes_done, 1u);
  EXPECT_FALSE(s.collecting());
}

// A realign budget spent on one step (graph launches at two places) is not
// the next window's: a step that ends with a graph launch is realigned and
// measured there.
TEST(SequenceSpread, TheRealignBudgetComesBackInANewWindow) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  StepsThenGraph(&s, &t, {1, 2, 3, 4}, 12, &corr, /*also_after=*/2);
  ASSERT_GE(s.stats().realigned, 1u);
  s.FinishIncomplete();
  s.NewWindow();
  const uint64_t realigned = s.stats().realigned;
  StepsThenGraph(&s, &t, {5, 6, 7}, 40, &corr);
  ASSERT_FALSE(s.failed()) << s.error();
  EXPECT_GT(s.stats().realigned, realigned);
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
}

// Another context's graph launch does not touch this context's pass.
TEST(SequenceSpread, AnotherContextsInterruptionIsIgnored) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);
  ASSERT_TRUE(s.measuring());
  s.Interrupt(&g_other, "a CUDA graph launch");
  EXPECT_TRUE(s.measuring());
  EXPECT_EQ(s.stats().interrupted, 0u);
  Steps(&s, &t, 3, &corr);
  EXPECT_EQ(s.TakeCompleted().size(), 3u);
}

TEST(SequenceSpread, NoRepetitionNoCuptiCallsNoFailure) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  for (uint64_t step = 0; step < 40; ++step) {
    for (uint64_t key : {uint64_t{1}, 100 + step, uint64_t{2}}) Feed(&s, L(key, ++corr), true);
  }
  EXPECT_FALSE(s.failed());
  EXPECT_TRUE(t.log.empty());
  EXPECT_TRUE(s.TakeCompleted().empty());
}

TEST(SequenceSpread, CaptureEndReportsIncompleteSetsAndResetsBeforeTheNext) {
  FakeSequenceTarget t(4);
  SequenceSpread s(&t, 4, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 3, &corr);  // learned at step 2's end, pass 0 done, pass 1 open
  std::vector<SpreadCollection> left = s.FinishIncomplete();
  ASSERT_EQ(left.size(), 3u);
  EXPECT_TRUE(left[0].values.empty());
  EXPECT_EQ(left[0].passes_done, 1u);
  EXPECT_EQ(left[0].passes_needed, 4u);
  EXPECT_EQ(s.stats().incomplete, 3u);
  EXPECT_FALSE(s.collecting());
  s.NewWindow();
  t.log.clear();
  Feed(&s, L(1, ++corr), true);
  ASSERT_GE(t.log.size(), 2u);
  EXPECT_EQ(t.log[0], "reset main");
  EXPECT_EQ(t.log[1], "init 3");
}

// The window closes right after a pass's last launch: that pass counts, and
// when it was the schedule's last the sets are complete (no new pass started).
TEST(SequenceSpread, CaptureEndRightAfterAPassKeepsIt) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);  // learned at step 2's last launch: pass 0 = c, a, b
  for (uint64_t key : {1u, 2u}) {
    Feed(&s, L(key, ++corr), true);
    t.Launched();
  }
  ASSERT_TRUE(s.collecting());
  Feed(&s, L(3, ++corr), true);  // pass 0 ends here; pass 1 = c ...
  t.Launched();
  for (uint64_t key : {1u, 2u}) {  // ... a, b: pass 1 whole
    Feed(&s, L(key, ++corr), true);
    t.Launched();
  }
  const int begins = Count(t.log, "begin");
  EXPECT_TRUE(s.FinishIncomplete().empty());
  EXPECT_EQ(Count(t.log, "begin"), begins);  // no pass started at the window's end
  std::vector<SpreadCollection> done = s.TakeCompleted();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].passes_done, 2u);
  EXPECT_FALSE(done[0].values.empty());
}

TEST(SequenceSpread, OtherContextsAndUnselectedStartsAreIgnored) {
  FakeSequenceTarget t(2);
  SequenceSpread s(&t, 2, 16, /*min_run=*/0);
  uint32_t corr = 0;
  for (int i = 0; i < 3; ++i) {
    for (uint64_t key : {1u, 2u, 3u}) Feed(&s, L(key, ++corr), /*start_ok=*/false);
  }
  EXPECT_FALSE(s.collecting());
  Feed(&s, L(1, ++corr), true);  // still the step: starts here
  EXPECT_TRUE(s.collecting());
  t.Launched();
  int other = 0;
  SpreadLaunch foreign = L(3, ++corr);
  foreign.context = &other;
  Feed(&s, foreign, false);
  for (uint64_t key : {2u, 3u, 1u}) {
    Feed(&s, L(key, ++corr), false);
    if (s.collecting()) t.Launched();
  }
  EXPECT_EQ(s.stats().passes, 1u);
  EXPECT_EQ(s.stats().discarded, 0u);
}

// The counter left mid-schedule is the restarted sequence's context's: a
// sequence on another context does not reset (nor clear) it.
TEST(SequenceSpread, DirtyCountersArePerContext) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 4, &corr);  // pass 0 done, pass 1 open on the main context
  s.FinishIncomplete();      // capture end: main's counter is at 1
  s.NewWindow();
  t.log.clear();
  // Next window, a sequence is learned on the other context first.
  for (int i = 0; i < 3; ++i) {
    for (uint64_t key : {1u, 2u}) {
      SpreadLaunch other = L(key, ++corr);
      other.context = &g_other;
      Feed(&s, other, true);
      if (s.collecting()) t.Launched();
    }
  }
  ASSERT_TRUE(s.collecting());
  for (const std::string& e : t.log) EXPECT_NE(e.rfind("reset", 0), 0u) << e;
  s.FinishIncomplete(&g_other);  // the other context goes away
  t.log.clear();
  Feed(&s, L(1, ++corr), true);  // main again: reset first
  ASSERT_FALSE(t.log.empty());
  EXPECT_EQ(t.log[0], "reset main");
}

// CUPTI saying "all submitted" before the schedule's last pass means the
// counter did not start at 0: the sequence restarts instead of reporting
// another pass's data as a complete set.
TEST(SequenceSpread, EarlyAllSubmittedRestarts) {
  FakeSequenceTarget t(3);
  SequenceSpread s(&t, 3, 16, /*min_run=*/0);
  t.SetCounter(&g_ctx, 2);  // left at pass 2 by something else
  uint32_t corr = 0;
  Steps(&s, &t, 5, &corr);
  EXPECT_EQ(s.stats().discarded, 1u);
  EXPECT_TRUE(s.TakeCompleted().empty());
  Steps(&s, &t, 10, &corr);
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
    SequenceSpread s(&t, 2, 16, /*min_run=*/0);
    uint32_t corr = 0;
    Steps(&s, &t, 7, &corr);
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
  SequenceSpread s(&t, 4, 16, /*min_run=*/0);
  uint32_t corr = 0;
  Steps(&s, &t, 2, &corr);  // pass 0 started at step 2's last launch
  t.SetCounter(&g_ctx, 2);  // something else advanced it during pass 0
  Steps(&s, &t, 1, &corr);
  EXPECT_TRUE(s.failed());
  EXPECT_NE(s.error().find("CUPTI reported pass 3 after pass 0"), std::string::npos) << s.error();
}

// --metrics-replay-top: the K configurations with the most weight (DRAM
// bytes or kernel time, TopWeight) become pending once, each is taken at most once, and a re-ranking after
// later sets adds the newcomers without taking back the replayed ones.
TEST(ReplayTopChooser, TakesTheHeaviestOnce) {
  ReplayTopChooser c(2);
  c.AddSet(1, 100.0);
  c.AddSet(2, 500.0);
  c.AddSet(3, 300.0);
  c.AddSet(1, 100.0);  // 200 over two sets
  EXPECT_FALSE(c.TakeIfPending(2));  // nothing chosen before Choose
  c.Choose();
  EXPECT_EQ(c.pending(), 2u);
  EXPECT_FALSE(c.TakeIfPending(1));  // 200 < 300: not in the top 2
  EXPECT_TRUE(c.TakeIfPending(2));
  EXPECT_FALSE(c.TakeIfPending(2));  // once
  // A later sequence makes 1 the heaviest: 1 joins, 2 is not taken again,
  // 3 (now third) stays pending.
  c.AddSet(1, 1000.0);
  c.Choose();
  EXPECT_EQ(c.pending(), 2u);
  EXPECT_TRUE(c.TakeIfPending(1));
  EXPECT_TRUE(c.TakeIfPending(3));
  c.NoteFailed();
  EXPECT_EQ(c.replayed(), 2u);
  EXPECT_EQ(c.failed(), 1u);
  EXPECT_EQ(c.pending(), 0u);
}

// With several sets per launch position (--metrics-sequences N), each
// chosen configuration is replayed N times, so its replayed value averages
// as many launches as its in-place ones.
TEST(ReplayTopChooser, ReplaysEachChosenConfigurationNTimes) {
  ReplayTopChooser c(1, 3);
  EXPECT_EQ(c.launches(), 3u);
  c.AddSet(4, 10.0);
  c.AddSet(5, 1.0);
  c.Choose();
  EXPECT_FALSE(c.TakeIfPending(5));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c.pending(), 1u);
    EXPECT_TRUE(c.TakeIfPending(4)) << i;
  }
  EXPECT_FALSE(c.TakeIfPending(4));
  EXPECT_EQ(c.pending(), 0u);
  EXPECT_EQ(c.replayed(), 3u);
  c.AddSet(4, 10.0);  // re-ranking does not owe it more
  c.Choose();
  EXPECT_FALSE(c.TakeIfPending(4));
  EXPECT_EQ(ReplayTopChooser(1, 0).launches(), 1u);
}

// Without a weight metric in the list (weight < 0) the set count ranks.
TEST(ReplayTopChooser, CountsSetsWithoutDurations) {
  ReplayTopChooser c(1);
  c.AddSet(7, -1);
  c.AddSet(8, -1);
  c.AddSet(8, -1);
  c.Choose();
  EXPECT_FALSE(c.TakeIfPending(7));
  EXPECT_TRUE(c.TakeIfPending(8));
  ReplayTopChooser off(0);
  off.AddSet(7, 5.0);
  off.Choose();
  EXPECT_EQ(off.pending(), 0u);
}

// The weight is the DRAM traffic where the list measures it (dram__bytes.sum,
// else read + write), kernel time otherwise: on the LM the configurations
// with the most time are small launches whose replay reads what L2 held
// (run CA), the ones with the most bytes are not.
TEST(ReplayTopChooser, WeighsDramBytesFirst) {
  const std::vector<std::string> full = {"dram__bytes_read.sum", "gpu__time_duration.sum",
                                         "dram__bytes.sum", "dram__bytes_write.sum"};
  EXPECT_EQ(TopWeightIndices(full), (std::vector<size_t>{2}));
  const std::vector<std::string> split = {"gpu__time_duration.sum", "dram__bytes_write.sum",
                                          "dram__bytes_read.sum"};
  EXPECT_EQ(TopWeightIndices(split), (std::vector<size_t>{2, 1}));
  const std::vector<std::string> read_only = {"dram__bytes_read.sum", "gpu__time_duration.sum"};
  EXPECT_EQ(TopWeightIndices(read_only), (std::vector<size_t>{1}));
  EXPECT_TRUE(TopWeightIndices({"dram__throughput.avg.pct_of_peak_sustained_elapsed"}).empty());

  EXPECT_DOUBLE_EQ(TopWeight({2, 1}, {5.0, 300.0, 700.0}), 1000.0);
  EXPECT_DOUBLE_EQ(TopWeight({2, 4}, {5.0, 300.0, 700.0}), -1.0);  // a value missing
  EXPECT_DOUBLE_EQ(TopWeight({}, {5.0}), -1.0);

  // Many short launches (time) against one launch moving many bytes.
  ReplayTopChooser c(1);
  const std::vector<size_t> w = TopWeightIndices(full);
  for (int i = 0; i < 40; ++i) c.AddSet(1, TopWeight(w, {300e3, 4000.0, 330e3, 30e3}));
  c.AddSet(2, TopWeight(w, {100e6, 77000.0, 115e6, 15e6}));
  c.Choose();
  EXPECT_FALSE(c.TakeIfPending(1));
  EXPECT_TRUE(c.TakeIfPending(2));
}

// A top replay measures the dram__ metrics alone (in the list's order; the
// duration too, which places the replayed kernel on the timeline), so it
// fits one pass; a list of those only needs no second configuration, and
// one without a DRAM metric has nothing to replay.
TEST(ReplayTopChooser, ReplaysTheDramMetricsAlone) {
  const std::vector<std::string> full = {"sm__cycles_active.avg", "dram__bytes_read.sum",
                                         "gpu__time_duration.sum", "dram__bytes.sum",
                                         "lts__t_bytes.sum",
                                         "dram__throughput.avg.pct_of_peak_sustained_elapsed"};
  EXPECT_EQ(ReplayMetrics(full),
            (std::vector<std::string>{"dram__bytes_read.sum", "gpu__time_duration.sum",
                                      "dram__bytes.sum",
                                      "dram__throughput.avg.pct_of_peak_sustained_elapsed"}));
  EXPECT_TRUE(ReplayMetrics({"dram__bytes_read.sum", "dram__bytes_write.sum"}).empty());
  EXPECT_TRUE(ReplayMetrics({"gpu__time_duration.sum", "dram__bytes.sum"}).empty());
  EXPECT_TRUE(ReplayMetrics({"gpu__time_duration.sum", "lts__t_bytes.sum"}).empty());
  EXPECT_TRUE(ReplayMetrics({}).empty());
}

}  // namespace
}  // namespace sightline::collect
