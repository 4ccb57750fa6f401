// lib/collect/range_profiler_sequence.h — "sequence" replay for the range
// profiler (SIGHTLINE_METRICS_REPLAY=sequence): pass p of the metric set's
// schedule is collected over the p-th repetition of the application's own
// launch sequence, so a training step's kernels all get a full metric set
// after num_passes + 1 steps, with one Start/Stop per step instead of one per
// kernel and pass.
//
// Why: on the H200 (CUDA 13.0) a range-profiler pass costs ~19 ms in
// cuptiRangeProfilerStart whatever the replay mode (kernel replay: ~20 ms per
// pass; per-configuration spread: 1.92 s of Start for 99 passes,
// bench/metrics/README.md). Kernel replay and per-configuration spread pay it
// once per kernel and pass; a sequence pays it once per pass.
//
// How (application replay, auto range — each kernel in Start..Stop is a
// range; CUPTI keeps one pass counter per range-profiler object and Stop
// returns the next pass, see range_profiler_spread.h):
//   * learning: every launch of the context feeds a PeriodFinder (below),
//     which finds the step as the launch sequence's period P: the smallest P
//     for which the last launches are two copies of one P-long sequence —
//     after warm-up steps that differed, whatever kernel the step starts
//     with, however often a kernel repeats inside it. A layer repeated three
//     times is such a sequence too; it is given up at the step's end (a
//     pass differs) and the true step (repeating for longer, so it wins) is
//     found on the same launches;
//   * collecting: pass 0 starts at the launch that confirmed the period,
//     with a counter-data image of exactly P ranges; each pass is the next
//     P launches and must repeat the learned sequence launch by launch
//     (kernel, grid, block, shared memory); CUPTI must report P ranges and
//     none dropped. Any difference discards the passes (the pass counter is
//     reset before the next try), the period is held to a stricter standard
//     (twice the repetitions per discard) and learning goes on — a step that
//     changed (an evaluation, a last smaller batch) costs a restart, never
//     the rest of the run;
//   * after the last pass every range is evaluated and reported as one set
//     per position, tied to that position's launch in the last pass
//     (first_correlation_id: pass 0's launch).
// Kernels run as the application launched them (not replayed), with counters
// on; Stop waits for the step's kernels, once per pass. Work the hook does
// not see launch by launch (a CUDA graph launch, a cooperative launch) and
// stream captures never run inside a pass: the collector calls Interrupt
// before them, which ends a pass at its step's end (the graph's kernels run
// between passes, without metrics) or discards a pass they would cut and
// realigns the step to begin after them. Kernels CUPTI still counts as
// ranges but the hook did not see (another path) make the range count
// differ: such a pass is discarded (stats().range_mismatch).
// Pure bookkeeping, no CUPTI: tests/collect/sequence_spread_test.cc.
#ifndef SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SEQUENCE_H_
#define SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SEQUENCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/collect/range_profiler_spread.h"

namespace sightline::collect {

// The CUPTI side of sequence replay (the range profiler implements it).
class SequenceTarget {
 public:
  virtual ~SequenceTarget() = default;
  // A fresh counter-data image for up to `max_ranges` ranges.
  virtual bool InitSequenceImage(void* context, size_t max_ranges) = 0;
  // SetConfig(that image, application replay, auto range) + Start.
  virtual bool BeginSequencePass(void* context) = 0;
  // Stop + DecodeData + the image's range count.
  virtual bool EndSequencePass(void* context, SpreadPassResult* result) = 0;
  // All passes in: the values of range `index`.
  virtual bool EvaluateSequenceRange(void* context, size_t index, std::vector<double>* values) = 0;
  // Pass counter back to 0 (Disable + Enable).
  virtual bool ResetSequencePasses(void* context) = 0;
};

// The launch sequence's period, learned online from launch keys. Pure C++.
//
// Candidates are the gaps between a key's successive launches; for each, the
// run of consecutive latest launches that equal the launch P earlier. A
// candidate is confirmed when its run reaches P (two equal P-long sequences:
// a wrong guess costs one discarded pass, a late one a whole step) and
// `min_run`; among confirmed candidates the smallest one that
// has not been outlasted by a longer one (a longer Q with a run longer than
// P's by more than Q: the layer inside a step) is the period.
class PeriodFinder {
 public:
  explicit PeriodFinder(size_t max_period = 4096, size_t min_run = 32);
  // One launch. True when a period is confirmed at this launch: the launches
  // from this one on should repeat Pattern().
  bool Add(uint64_t key);
  size_t period() const { return period_; }
  // The confirmed step, starting with the launch just added.
  std::vector<uint64_t> Pattern() const;
  // The confirmed period broke while it was being used: it must repeat
  // twice as long before it is confirmed again.
  void Reject(size_t period);
  uint64_t launches() const { return n_; }

 private:
  struct Candidate {
    size_t period = 0;
    size_t run = 0;
  };
  uint64_t At(uint64_t pos) const { return history_[pos % history_.size()]; }
  size_t Required(size_t period) const;

  size_t max_period_;
  size_t min_run_;
  std::vector<uint64_t> history_;  // ring: the last 3 * max_period + 1 keys
  uint64_t n_ = 0;                 // launches seen
  std::unordered_map<uint64_t, uint64_t> last_seen_;  // key -> position + 1
  std::vector<Candidate> candidates_;
  std::unordered_map<size_t, uint32_t> rejections_;
  size_t period_ = 0;
};

struct SequenceStats {
  uint64_t passes = 0;      // passes completed (steps profiled)
  uint64_t completed = 0;   // sets with values (one per launch position)
  uint64_t sequences = 0;   // sequences completed
  uint64_t discarded = 0;   // sequences restarted: a pass differed from the learned step
  uint64_t incomplete = 0;  // sets left short of passes at capture end
  uint64_t range_mismatch = 0;  // of the discarded: CUPTI counted other ranges than launches
  // Over all passes: CUPTI's ranges (dropped ones included) beyond the
  // launches seen — kernels that ran in a pass without a hooked launch
  // call (a CUDA graph launch, a cooperative launch). Exact for pass 0 and
  // for whole passes; a later pass cut short (the step changed) only shows
  // the ones beyond the image's capacity (CountUnseen).
  uint64_t unseen_kernels = 0;
  uint64_t period = 0;      // launches per step of the last sequence started
  // Passes cut short by work the hook does not see launch by launch (a CUDA
  // graph launch, a cooperative launch) or a stream capture beginning in
  // the middle of a step (Interrupt); of `discarded`.
  uint64_t interrupted = 0;
  // Passes ended at such work after their step's last launch (Interrupt):
  // the next pass begins at the step's next first launch (the schedule's
  // last pass ended so completes the sequence; counted too).
  uint64_t paused = 0;
  // Of `interrupted`: the step realigned to begin after the interruption.
  uint64_t realigned = 0;
};

class SequenceSpread {
 public:
  // `max_period`: the longest step (launches) learned; `min_run`: launches a
  // period must have repeated over before it is trusted (PeriodFinder).
  SequenceSpread(SequenceTarget* target, uint32_t num_passes, size_t max_period = 4096,
                 size_t min_run = 32);

  void set_num_passes(uint32_t n) { num_passes_ = n == 0 ? 1 : n; }
  // Complete sequences of each learned step per capture window (default 1):
  // every launch position gets that many sets, one per sequence, each from
  // its own num_passes steps — the means per configuration then average
  // more launches (SIGHTLINE_METRICS_SEQUENCES). The next sequence starts
  // at the launch after the previous one completed.
  void set_sequences_per_step(uint32_t n) { sequences_per_step_ = n == 0 ? 1 : n; }
  // SIGHTLINE_METRICS_DEBUG: one stderr line per pass (launches we saw,
  // CUPTI's ranges, the first position that differed).
  void set_debug(bool on) { debug_ = on; }
  // A sequence is being collected: every launch of its context belongs to it
  // (the caller asks the kernel selector only while idle).
  bool collecting() const { return collecting_; }
  // A pass is open: the context's launches run measured in place (between
  // passes ended by Interrupt, a collecting sequence measures nothing).
  bool measuring() const { return collecting_ && pass_open_; }
  void* context() const { return context_; }
  // Sequences per capture window: sequences_per_step per learned step (one
  // by default). A shorter period that completed first (a layer repeated
  // more often than the passes) does not stop the step from being collected
  // after it: a sequence starts when the confirmed period was collected
  // fewer than sequences_per_step times in this window, or its launches
  // include configurations no set of the window covers; at most
  // kMaxSequencesPerWindow periods, each sequences_per_step times (a layer
  // collected first is repeated too: which period is the step shows only
  // once the longer one is confirmed).
  static constexpr uint32_t kMaxSequencesPerWindow = 4;
  bool done_for_window() const {
    return sequences_in_window_ >= kMaxSequencesPerWindow * sequences_per_step_;
  }
  void NewWindow() {
    sequences_in_window_ = 0;
    realign_.clear();
    realigns_left_ = kMaxRealigns;
    collected_periods_.clear();
    covered_keys_.clear();
  }

  // Every hooked launch in a capture window, at its enter, in two steps:
  // Learn feeds the launch to the context's PeriodFinder and says whether a
  // sequence could start at it (the step is known, none is being collected,
  // none was completed in this window); the caller then asks the kernel
  // selector only for such launches (its quotas count starts, not launches)
  // and passes the answer to OnLaunch.
  bool Learn(const SpreadLaunch& launch);
  void OnLaunch(const SpreadLaunch& launch, bool start_ok);
  // Work the hook does not see launch by launch is about to run on
  // `context` — a CUDA graph launch, a cooperative launch — or a stream
  // capture begins (CUPTI's Start/Stop would invalidate it): nothing of it
  // may run inside a pass (CUPTI would count a graph's kernels as ranges of
  // the step). A pass whose launches are all in ends here and the next pass
  // begins at the step's next first launch, so a step that ends with a
  // graph launch still gets its eager kernels measured. A pass cut short is
  // discarded; the learned step is then realigned to begin right after the
  // interruption (a learned step begins wherever its period was confirmed,
  // not where the program's step begins) and the next sequence starts at
  // the next launch that begins it — at most kMaxRealigns times in a row,
  // so a step with such work in two places costs a bounded number of
  // restarts (`why` for SIGHTLINE_METRICS_DEBUG).
  void Interrupt(void* context, const char* why);
  static constexpr uint32_t kMaxRealigns = 2;
  // Sets finished since the last call (one per launch position).
  std::vector<SpreadCollection> TakeCompleted();
  // Capture end (`context` null) or `context` being destroyed: the open pass
  // is stopped and, when pass 0 was complete, every position is reported
  // incomplete (passes collected so far, no values). At capture end the
  // context's pass counter is reset before its next sequence; a destroyed
  // context is forgotten (and its learned launches).
  std::vector<SpreadCollection> FinishIncomplete(void* context = nullptr);

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  const SequenceStats& stats() const { return stats_; }

 private:
  struct Position {
    uint64_t key = 0;
    std::string name;
    uint32_t device_id = 0;
    uint32_t correlation_id = 0;
  };
  bool Start(const SpreadLaunch& launch, std::vector<uint64_t> pattern);
  void Fail(const std::string& why);
  void Add(const SpreadLaunch& launch);
  // The passes so far are thrown away, the period is held to a stricter
  // standard, learning goes on.
  void Discard();
  // At the launch after a pass's last: Stop, check, evaluate or (when
  // `begin_next`) start the next pass. False when the mode failed.
  bool EndPass(bool begin_next = true);
  // Kernels the pass ran beyond the launches seen (stats_.unseen_kernels).
  void CountUnseen(const SpreadPassResult& r);
  void Debug(uint32_t pass, const SpreadPassResult& r, const char* verdict,
             const SpreadLaunch* differing) const;
  SpreadCollection MakeSet(size_t i) const;

  SequenceTarget* target_;
  uint32_t num_passes_;
  size_t max_period_;
  size_t min_run_;
  bool collecting_ = false;
  bool pass_open_ = false;  // collecting_ and a pass Started, not yet Stopped
  // After Interrupt cut a pass short: the step rotated to begin after the
  // interruption, started at the next launch of realign_context_ that
  // begins it (Learn); empty otherwise.
  std::vector<uint64_t> realign_;
  void* realign_context_ = nullptr;
  // Back to kMaxRealigns at each whole pass, each newly learned step and
  // each capture window.
  uint32_t realigns_left_ = kMaxRealigns;
  // Contexts whose CUPTI pass counter may be mid-schedule: reset before their
  // next sequence (never while a context is being destroyed).
  std::unordered_set<void*> dirty_;
  std::unordered_map<void*, PeriodFinder> finders_;  // per context
  bool confirmed_ = false;  // Learn's verdict on the launch being handled
  bool realign_now_ = false;  // ... a realigned step (realign_) begins at it
  bool failed_ = false;
  bool debug_ = false;
  std::string error_;
  void* context_ = nullptr;
  std::vector<uint64_t> pattern_;    // the learned step
  uint32_t passes_done_ = 0;
  uint32_t sequences_in_window_ = 0;
  std::unordered_map<size_t, uint32_t> collected_periods_;  // this window's completed periods: times
  uint32_t sequences_per_step_ = 1;
  std::unordered_set<uint64_t> covered_keys_;     // configurations with a set this window
  // Would a sequence at the confirmed period measure something new? (mu_)
  bool WorthStarting(const PeriodFinder& f) const;
  std::vector<Position> first_;      // pass 0's launches
  std::vector<Position> current_;    // this pass's launches
  std::vector<Position> last_done_;  // the last completed pass's launches
  std::vector<SpreadCollection> completed_;
  SequenceStats stats_;
};

// The indices in `metrics` whose summed values weigh a set for
// ReplayTopChooser: dram__bytes.sum; else dram__bytes_read.sum and
// dram__bytes_write.sum (both); else gpu__time_duration.sum; else none.
std::vector<size_t> TopWeightIndices(const std::vector<std::string>& metrics);
// A set's weight: the sum of its values at `indices`; -1 (unknown) when
// there are none or one is missing.
double TopWeight(const std::vector<size_t>& indices, const std::vector<double>& values);
// The metrics a top replay measures: the dram__ ones of `metrics` and
// gpu__time_duration.sum where listed (it places the replayed kernel on the
// timeline), in order, so the replay fits one pass (with more, CUPTI
// restores the kernel's memory between passes); empty when `metrics` has no
// dram__ metric or no other (then the main configuration serves).
std::vector<std::string> ReplayMetrics(const std::vector<std::string>& metrics);

// After sequence replay: which kernel configurations get one launch
// kernel-replayed for their DRAM counters (--metrics-replay-top K,
// SIGHTLINE_METRICS_REPLAY_TOP). Measured in place, a kernel's DRAM bytes
// written include write-backs the in-place measurement itself adds: on the
// L2 probe (bench/metrics/l2_idle_probe.cu, H100 and H200, runs BK-BM) 4 to
// 31 % more than ncu, while CUPTI's kernel replay (one pass: the probe's
// five metrics) agreed with ncu within 1.7 % after a sync; reads agreed
// either way. A replay of the whole 'full' list (11 passes; H100, run CA)
// measured 4.7-12x ncu's bytes on the LM's small launches (2-70 KB in ncu)
// and 8-96 % more on its 1.5-16 MB ones: between passes CUPTI restores the
// memory the kernel writes, so a pass does not start from the L2 the
// application left. So a replay measures the dram__ metrics alone
// (ReplayMetrics; one pass for 'full' on GH100), and the ranking weight is
// the DRAM traffic the completed sets measured (dram__bytes.sum, else read
// + write, summed over the sets; kernel time where no such metric is
// listed; the set count where neither is): the configurations whose bytes
// dominate a kernel's total are replayed. Off by default until a GPU run
// shows the one-pass replay nearer ncu on the LM. Ranked after
// each completed sequence; each of the K gets its next launch while no
// sequence is being collected replayed, once per run: a configuration that
// joins the top K after a later sequence (the step found after a layer) is
// replayed too, so more than K can be over a run. The analyzer takes a
// configuration's dram__* values from that replay and every other value
// from the in-place sets. Pure C++.
class ReplayTopChooser {
 public:
  // `launches`: replays per configuration (the sequences per step, so a
  // replayed value averages as many launches as the in-place ones).
  explicit ReplayTopChooser(uint32_t top, uint32_t launches = 1)
      : top_(top), launches_(launches == 0 ? 1 : launches) {}
  // A completed set of configuration `key`; `weight` (its DRAM bytes or
  // kernel time) < 0 when unknown.
  void AddSet(uint64_t key, double weight);
  // Re-ranks after new sets (no-op otherwise): the top K configurations not
  // replayed yet become pending, each for `launches` replays; pending ones
  // that fell out stay pending (a replay already wanted costs a few launches).
  void Choose();
  // True when this launch's configuration is to be replayed now (one of its
  // `launches`; no longer pending after the last).
  bool TakeIfPending(uint64_t key);
  // The replay of a taken configuration failed: counted, not retried.
  void NoteFailed() { ++failed_; }
  uint32_t top() const { return top_; }
  uint32_t launches() const { return launches_; }
  // Configurations still owed a replay.
  size_t pending() const { return pending_.size(); }
  uint64_t replayed() const { return taken_ - failed_; }
  uint64_t failed() const { return failed_; }

 private:
  struct Tally {
    double weight = 0;
    uint64_t sets = 0;
  };
  uint32_t top_;
  uint32_t launches_;
  bool changed_ = false;
  std::unordered_map<uint64_t, Tally> tally_;
  std::unordered_map<uint64_t, uint32_t> pending_;  // key → replays still owed
  std::unordered_set<uint64_t> done_;  // chosen once (pending or owed nothing)
  uint64_t taken_ = 0;
  uint64_t failed_ = 0;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SEQUENCE_H_
