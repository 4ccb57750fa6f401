// lib/collect/range_profiler_user.h — per-range hardware metrics
// (`--metrics SET --metrics-range nvtx:NAME`, SIGHTLINE_METRICS_RANGE): the
// range profiler's user ranges around the application's own NVTX ranges
// called NAME, one metric pass per range instance, so a training step or a
// model layer gets a full metric set after num_passes instances without any
// per-kernel cost (ncu's `--replay-mode application --range-filter`, nsys has
// no equivalent).
//
// How (CUPTI user range, application replay; one pass counter per
// range-profiler object, as spread replay relies on, range_profiler_spread.h):
//   * at the outermost push of NAME on a thread (nested pushes of NAME inside
//     it are part of it): SetConfig(user range, one range per pass) + Start +
//     PushRange(NAME) on the thread's current context;
//   * at its pop (same thread, same nesting depth): PopRange + Stop +
//     DecodeData. The range covers all GPU work of the context submitted
//     between push and pop, on every stream and from every thread (autograd's
//     backward threads included). Stop waits for that work: one
//     synchronisation per profiled instance;
//   * after the last pass the range is evaluated and reported as one set:
//     the values, the time from the first instance's push to the last one's
//     pop, the instances it took. The next instance starts the next set, so a
//     long run gives a series (one set per num_passes instances).
// Instances that cannot be a pass are skipped and counted: one that starts
// while another thread's instance is open, one on another context than the
// set in progress, one pushed before any CUDA context exists. A pass whose
// image holds other than one range, or dropped one, discards the set's
// passes (Disable + Enable, counted). A capture end inside an instance ends
// that pass without values (the set is reported incomplete). Any CUPTI error
// → one warning; per-range metrics stop for the rest of the run, tracing
// goes on.
//
// Pure bookkeeping, no CUPTI: tests/collect/user_range_sets_test.cc.
#ifndef SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_USER_H_
#define SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_USER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/collect/range_profiler_spread.h"

namespace sightline::collect {

// The CUPTI side (the range profiler implements it). `context` is the
// caller's per-context state, opaque here. Every call returns false on a
// CUPTI error (the target keeps the message).
class UserRangeTarget {
 public:
  virtual ~UserRangeTarget() = default;
  // A fresh counter-data image for one range.
  virtual bool InitUserImage(void* context) = 0;
  // SetConfig(that image, user range, application replay) + Start + PushRange.
  virtual bool BeginUserPass(void* context, const std::string& name) = 0;
  // PopRange + Stop + DecodeData + the image's range count.
  virtual bool EndUserPass(void* context, SpreadPassResult* result) = 0;
  // All passes in: the values of the image's range.
  virtual bool EvaluateUserRange(void* context, std::vector<double>* values) = 0;
  // Pass counter back to 0 (Disable + Enable).
  virtual bool ResetUserPasses(void* context) = 0;
};

// One metric set of the user range: complete (values) or not (no values,
// passes_done < passes_needed).
struct UserRangeSet {
  void* context = nullptr;
  uint32_t device_id = 0;
  std::string name;
  uint64_t start_ns = 0;  // the first instance's push
  uint64_t end_ns = 0;    // the last instance's pop
  uint32_t instances = 0;  // instances that were passes of this set
  uint32_t passes_done = 0;
  uint32_t passes_needed = 0;
  std::vector<double> values;
};

struct UserRangeStats {
  uint64_t instances = 0;        // outermost pushes of the name seen
  uint64_t passes = 0;           // passes collected (kept or not)
  uint64_t completed = 0;        // sets with values
  uint64_t incomplete = 0;       // sets short of passes at a capture end
  uint64_t discarded = 0;        // sets restarted (a pass held other than one range)
  uint64_t other_thread = 0;     // instances skipped: another thread's instance was open
  uint64_t other_context = 0;    // instances skipped: the set in progress is on another context
  uint64_t no_context = 0;       // instances skipped: no CUDA context on the thread yet
  uint64_t cut = 0;              // passes ended by a capture end inside the instance
};

class UserRangeSets {
 public:
  // `name`: the NVTX range's message; `passes_needed`: the metric
  // configuration's pass count (≥ 1).
  UserRangeSets(UserRangeTarget* target, std::string name, uint32_t passes_needed);

  const std::string& name() const { return name_; }
  // The configuration's pass count, once known (taken by the next set).
  void set_passes_needed(uint32_t passes) {
    if (passes > 0) passes_needed_ = passes;
  }
  // True for a push message that names the range (cheap: compare only).
  bool Matches(std::string_view message) const { return message == name_; }

  // An outermost push of the name on `thread` (an opaque per-thread key) at
  // NVTX nesting depth `depth` of that thread. `context` null: no CUDA
  // context on the thread. True when a pass began.
  bool OnPush(void* context, uint32_t device_id, uintptr_t thread, uint32_t depth, uint64_t now_ns);
  // A pop on `thread` that returns it to nesting depth `depth`: ends the
  // open pass when it is that instance's. True when a pass ended.
  bool OnPop(uintptr_t thread, uint32_t depth, uint64_t now_ns);
  // True while a pass is open on `thread` (the push of its instance seen,
  // not its pop).
  bool OpenOn(uintptr_t thread) const { return open_ && open_thread_ == thread; }
  bool open() const { return open_; }
  // Capture end / context destroyed / exit: an open pass is ended (cut), a
  // set in progress is reported without values, and (reset_passes) the
  // object's pass counter goes back to 0 for the next set. `context`
  // non-null: only that context's set.
  void FinishIncomplete(uint64_t now_ns, void* context, bool reset_passes);
  std::vector<UserRangeSet> TakeCompleted();

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  const UserRangeStats& stats() const { return stats_; }

 private:
  void Fail(const std::string& why);
  void Restart();  // discard the set's passes

  UserRangeTarget* target_;
  std::string name_;
  uint32_t passes_needed_;
  bool failed_ = false;
  std::string error_;
  UserRangeStats stats_;
  // The set in progress (passes_done > 0 or a pass open).
  bool in_set_ = false;
  UserRangeSet set_;
  // The open pass.
  bool open_ = false;
  uintptr_t open_thread_ = 0;
  uint32_t open_depth_ = 0;
  std::vector<UserRangeSet> done_;
};

// `--metrics-range graph`: which CUDA graph launches are instances. One
// range-profiler object per context counts one set's passes, so one graph
// is measured at a time: the first graph (executable) launched a second
// time — a graph launched once (a warm-up, a one-off) would never complete
// a set — and from then on every launch of it is an instance (a series of
// sets, as NVTX ranges give). Launches of other graphs are counted, not
// measured. Pure bookkeeping: tests/collect/user_range_sets_test.cc.
class GraphRangeChooser {
 public:
  // A graph launch of the executable `exec_key` (any stable key, e.g. its
  // CUPTI id). True when it is an instance of the measured graph.
  bool OnLaunch(uint64_t exec_key) {
    ++launches_;
    if (!chosen_) {
      bool seen = false;
      for (uint64_t k : seen_) seen = seen || k == exec_key;
      if (seen) {
        chosen_ = true;
        chosen_key_ = exec_key;
      } else if (seen_.size() < kMaxSeen) {  // bounded: no graph may ever repeat
        seen_.push_back(exec_key);
      }
    }
    if (chosen_ && exec_key == chosen_key_) return true;
    ++not_measured_;
    return false;
  }
  bool chosen() const { return chosen_; }
  uint64_t chosen_key() const { return chosen_key_; }
  uint64_t launches() const { return launches_; }
  // Launches that were no instance: of another graph, or before the
  // measured one was chosen (its own first launch included).
  uint64_t not_measured() const { return not_measured_; }

 private:
  static constexpr size_t kMaxSeen = 4096;
  bool chosen_ = false;
  uint64_t chosen_key_ = 0;
  uint64_t launches_ = 0;
  uint64_t not_measured_ = 0;
  std::vector<uint64_t> seen_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_USER_H_
