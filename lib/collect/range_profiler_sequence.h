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
//   * the first launch the kernel selector picks is the anchor: Start before
//     it; every later launch on that context is a range of the pass;
//   * the anchor's next launch closes the pass: Stop + DecodeData before it,
//     then Start again (the next pass) and the anchor runs in it;
//   * every pass must see the same configurations in the same order as pass
//     0 and as many ranges as launches (a kernel we did not see — a graph, a
//     library's own launch path — makes the counts differ); otherwise the
//     set is discarded, the pass counter reset (SequenceTarget::
//     ResetSequencePasses) and the next selected launch of a kernel not yet
//     tried as the anchor starts a new set (a kernel launched at several
//     places of a step, or only in warm-up, does not delimit steps); after
//     `max_restarts` discards the mode gives up (failed(): the range
//     profiler switches metrics off with a warning — replaying every kernel
//     instead would slow the program by an order of magnitude);
//   * after the last pass every range is evaluated and reported as one set
//     per launch position, tied to that position's launch in the last pass
//     (first_correlation_id: pass 0's launch).
// Kernels run as the application launched them (not replayed), with counters
// on; Stop waits for the step's kernels, once per step.
// Pure bookkeeping, no CUPTI: tests/collect/sequence_spread_test.cc.
#ifndef SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SEQUENCE_H_
#define SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SEQUENCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
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

struct SequenceStats {
  uint64_t passes = 0;      // passes completed (steps profiled)
  uint64_t completed = 0;   // sets with values (one per launch position)
  uint64_t sequences = 0;   // sequences completed
  uint64_t discarded = 0;   // sequences restarted: the launches of a pass differed
  uint64_t incomplete = 0;  // sets left short of passes at capture end
  uint64_t grown = 0;       // images enlarged: a step had more launches than the image held
};

class SequenceSpread {
 public:
  // Images hold `first_ranges` launches at first (0: max_ranges), 4x more
  // after a longer step, up to `max_ranges`.
  SequenceSpread(SequenceTarget* target, uint32_t num_passes, size_t max_ranges = 4096,
                 uint32_t max_restarts = 8, size_t first_ranges = 32);

  void set_num_passes(uint32_t n) { num_passes_ = n == 0 ? 1 : n; }
  // A sequence is being collected: every launch of its context belongs to it
  // (the caller asks the kernel selector only while idle).
  bool collecting() const { return collecting_; }
  void* context() const { return context_; }
  // No new sequence in this capture window (one per window).
  bool done_for_window() const { return sequences_in_window_ > 0; }
  void NewWindow() { sequences_in_window_ = 0; }

  // Every hooked launch in a capture window, at its enter. `anchor_ok`: the
  // kernel selector picked it (only such a launch starts a sequence).
  void OnLaunch(const SpreadLaunch& launch, bool anchor_ok);
  // Sets finished since the last call (one per launch position).
  std::vector<SpreadCollection> TakeCompleted();
  // Capture end (`context` null) or `context` being destroyed: the open pass
  // is stopped and, when pass 0 was complete, every position is reported
  // incomplete (passes collected so far, no values). At capture end the
  // context's pass counter is reset before its next sequence; a destroyed
  // context is forgotten.
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
  bool Start(const SpreadLaunch& launch);  // a new sequence at this launch
  void Fail(const std::string& why);
  void Add(const SpreadLaunch& launch);
  bool Restart(const SpreadLaunch& launch);  // after a discard: another anchor next
  SpreadCollection MakeSet(size_t i) const;

  SequenceTarget* target_;
  uint32_t num_passes_;
  size_t max_ranges_;        // the next image's capacity
  size_t max_ranges_limit_;  // largest image
  uint32_t max_restarts_;
  bool collecting_ = false;
  // Contexts whose CUPTI pass counter may be mid-schedule: reset before their
  // next sequence (never while a context is being destroyed).
  std::unordered_set<void*> dirty_;
  bool failed_ = false;
  std::string error_;
  void* context_ = nullptr;
  uint64_t anchor_ = 0;
  uint32_t passes_done_ = 0;
  uint32_t restarts_ = 0;
  uint32_t sequences_in_window_ = 0;
  std::vector<Position> first_;      // pass 0's launches
  std::vector<Position> current_;    // this pass's launches
  std::vector<Position> last_done_;  // the last completed pass's launches
  std::vector<SpreadCollection> completed_;
  std::unordered_set<uint64_t> tried_;  // anchors whose steps differed
  SequenceStats stats_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SEQUENCE_H_
