// lib/collect/range_profiler_spread.h — "spread" replay for the range profiler:
// instead of replaying one launch N times (CUPTI kernel replay, ~20 ms per
// pass on the H200, bench/metrics/README.md), collect pass p of the metric
// set's schedule on the p-th launch of the same kernel configuration (name +
// grid + block + dynamic shared memory, on one context). Training loops launch
// the same kernels every step, so N steps give a full set with no replay: the
// kernels run once, as the application launched them, and their durations are
// not marked replayed.
//
// This file is the bookkeeping only (pure C++, no CUPTI): which configuration
// is at which pass, which launches a set spans, what to do when a pass went
// wrong. The CUPTI calls sit behind SpreadTarget (implemented by the range
// profiler in range_profiler_spread_target.cc, faked in
// tests/collect/spread_scheduler_test.cc).
//
// Per profiled launch, on the launching thread, with the hook's mutex held
// from enter to exit (so no other hooked launch of the context runs between):
//   enter: (idle configuration, selected) InitImage — a counter-data image of
//          its own; then BeginPass(pass p): SetConfig(image, AutoRange,
//          application/user replay, passIndex = p) + Start
//   exit:  EndPass: Stop (passIndex, isAllPassSubmitted) + DecodeData into the
//          configuration's image + the image's range count
// Auto range, not a user range pushed around the launch: under auto range
// each kernel in Start..Stop gets a range of its own, so a kernel launched
// behind our back (another thread, an unhooked launch API) shows as a second
// range and the pass is known to be contaminated; a user range would silently
// sum it in. Checks after every pass:
//   * exactly one range in the image and none dropped — else the
//     configuration's partial data is discarded (counted) and its collection
//     restarts from pass 0 at its next launch; after `max_restarts` discards
//     the configuration is abandoned (counted, never spread again);
//   * while passes remain, Stop's passIndex is p or p + 1 (CUPTI 13.0 on the
//     H200 reports the next pass, p + 1, and 0 with isAllPassSubmitted after
//     the last; p is accepted for other versions, the convention seen is
//     counted in SpreadStats);
//   * isAllPassSubmitted arrives with pass num_passes - 1. Early means the
//     counter was not at pass 0 when the set began: the set is discarded
//     like a contaminated one; late means CUPTI does not follow the
//     schedule: an error.
// Any SpreadTarget failure sets failed(): the caller then gives up spreading
// for the rest of the run (one warning) and uses kernel replay.
// When all passes are in, Evaluate turns the image into values and the set is
// reported with the first and last launch's correlation ids and the number of
// launches it spans. At capture end collections still short of passes are
// reported incomplete (passes collected so far; no values).
//
// One configuration at a time per range-profiler object (max_in_flight = 1,
// what the range profiler uses): CUPTI 13.0 keeps ONE pass counter per
// object, advanced by every Start/Stop whatever image SetConfig named, so
// two configurations collected in turn would each get every other pass
// (seen on the H200 as "pass 2 where pass 0 was configured";
// bench/metrics/spread_probe.cu established the counter's behaviour). A
// selected launch of another configuration meanwhile is skipped and counted
// (slots_full); HasRoom() says so before the kernel selector is asked, so
// the selector's per-configuration quota is not spent on a skipped launch. A
// discarded set resets the counter (SpreadTarget::ResetPasses).
#ifndef SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SPREAD_H_
#define SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SPREAD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sightline::collect {

// What EndPass learnt about one pass.
struct SpreadPassResult {
  uint64_t stop_pass_index = 0;  // cuptiRangeProfilerStop's passIndex
  bool all_submitted = false;    // cuptiRangeProfilerStop's isAllPassSubmitted
  uint64_t ranges = 0;           // ranges in the configuration's image after decoding
  uint64_t ranges_dropped = 0;   // DecodeData's numOfRangeDropped
};

// The CUPTI side of spread replay. `context` is the caller's per-context
// state (opaque here); `slot` names one configuration's counter-data image.
// Every call returns false on a CUPTI error (the target keeps the message).
class SpreadTarget {
 public:
  virtual ~SpreadTarget() = default;
  // Allocates (or re-initialises) the slot's counter-data image.
  virtual bool InitImage(void* context, uint32_t slot) = 0;
  // SetConfig(slot's image, passIndex = pass) + Start.
  virtual bool BeginPass(void* context, uint32_t slot, uint32_t pass) = 0;
  // Stop + DecodeData + the image's range count.
  virtual bool EndPass(void* context, uint32_t slot, SpreadPassResult* result) = 0;
  // All passes in: the metric values of the image's single range.
  virtual bool Evaluate(void* context, uint32_t slot, std::vector<double>* values) = 0;
  // The slot's image is no longer needed.
  virtual void ReleaseImage(uint32_t slot) = 0;
  // Puts the context's pass counter back to pass 0 (a discarded set left it
  // mid-schedule): CUPTI keeps one counter per range-profiler object, so
  // Disable + Enable.
  virtual bool ResetPasses(void* context) = 0;
};

// One hooked launch, as the scheduler needs it.
struct SpreadLaunch {
  uint64_t key = 0;          // configuration (+ context) hash, see SpreadKey
  void* context = nullptr;   // passed through to SpreadTarget
  uint32_t device_id = 0;
  uint32_t correlation_id = 0;
  std::string_view name;
};

// A finished set: values of `passes` passes collected over `launches` launches.
struct SpreadCollection {
  uint64_t key = 0;
  void* context = nullptr;
  std::string name;
  uint32_t device_id = 0;
  uint32_t first_correlation_id = 0;
  uint32_t last_correlation_id = 0;
  uint32_t launches = 0;        // launches the passes came from
  uint32_t passes_done = 0;     // passes collected (== needed when complete)
  uint32_t passes_needed = 0;
  std::vector<double> values;   // empty when incomplete
};

struct SpreadStats {
  uint64_t passes = 0;      // passes collected (launches profiled this way)
  uint64_t completed = 0;   // sets with values
  uint64_t discarded = 0;   // partial sets thrown away: range count != 1 or dropped ranges
  uint64_t abandoned = 0;   // configurations given up after too many discards
  uint64_t incomplete = 0;  // sets still short of passes at capture end / context destroy
  uint64_t slots_full = 0;  // selected launches not started: max_in_flight reached
  uint64_t stop_index_is_next = 0;  // Stop reported p + 1 (else p): which convention CUPTI uses
  uint64_t preempted = 0;   // sets given up because other configurations kept waiting
};

enum class SpreadEnter : uint8_t {
  kStarted = 0,  // a pass is running for this launch: call Exit after the launch
  kSkipped,      // not profiled (slots full, abandoned configuration)
  kFailed,       // SpreadTarget error: failed() is set, nothing is running
};

// Hash of one kernel configuration on one context (FNV-1a over the fields).
uint64_t SpreadKey(const void* context, std::string_view name, uint32_t grid_x, uint32_t grid_y,
                   uint32_t grid_z, uint32_t block_x, uint32_t block_y, uint32_t block_z,
                   uint32_t dynamic_shared_bytes);

// Not thread-safe: the hook calls it with its mutex held.
class SpreadScheduler {
 public:
  SpreadScheduler(SpreadTarget* target, uint32_t num_passes, size_t max_in_flight = 256,
                  uint32_t max_restarts = 2);

  void set_num_passes(uint32_t n) { num_passes_ = n == 0 ? 1 : n; }
  uint32_t num_passes() const { return num_passes_; }

  // A collection of this configuration is under way: its next launch
  // continues it without asking the kernel selector.
  bool InProgress(uint64_t key) const { return active_.count(key) != 0; }
  // Given up on after repeated discards: never spread again.
  bool Abandoned(uint64_t key) const { return abandoned_.count(key) != 0; }
  // Enter would start a new collection for this configuration (or continue
  // its own): not failed, no pass open, and a free slot or already in progress.
  bool HasRoom(uint64_t key) const {
    return !failed_ && !open_ && (InProgress(key) || active_.size() < max_in_flight_);
  }

  // Launch enter: starts the next pass of the launch's configuration (a new
  // collection when it has none: call only for selected launches then).
  SpreadEnter Enter(const SpreadLaunch& launch);
  // Launch exit of a launch whose Enter returned kStarted. False on a
  // SpreadTarget error (failed() set; the collection is dropped).
  bool Exit();

  // Finished sets since the last call.
  std::vector<SpreadCollection> TakeCompleted();
  // Ends every collection still short of passes (of `context` only, when not
  // null): images released, reported incomplete, counted.
  std::vector<SpreadCollection> FinishIncomplete(void* context = nullptr);
  // Configurations in progress (their keys), e.g. to give them kernel replay
  // after a fallback.
  std::vector<uint64_t> InProgressKeys() const;
  // Drops every collection (after failure): images released, not reported.
  void DropAll();

  // A launch of configuration `key` skipped because HasRoom() was false.
  // When some configuration waits for the 3rd time since the set in
  // progress last advanced, that set is preempted (reported incomplete,
  // its context's pass counter reset before the next set): a kernel
  // launched once (warm-up, initialisation) must not hold the only slot.
  void NoteWaiting(uint64_t key);

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  const SpreadStats& stats() const { return stats_; }

 private:
  struct Active {
    uint32_t slot = 0;
    void* context = nullptr;
    std::string name;
    uint32_t device_id = 0;
    uint32_t first_correlation_id = 0;
    uint32_t last_correlation_id = 0;
    uint32_t launches = 0;
    uint32_t next_pass = 0;
    uint32_t restarts = 0;
    bool needs_init = true;
  };
  void Fail(const std::string& why);
  void Release(uint64_t key);
  SpreadCollection Collection(uint64_t key, const Active& a) const;  // without values

  SpreadTarget* target_;
  uint32_t num_passes_;
  size_t max_in_flight_;
  uint32_t max_restarts_;
  uint32_t next_slot_ = 1;
  std::unordered_map<uint64_t, Active> active_;
  std::unordered_set<uint64_t> abandoned_;
  std::unordered_map<uint64_t, uint32_t> waiting_;  // skipped launches since the last pass
  // Contexts whose pass counter may be mid-schedule (a set ended early):
  // reset before their next set; forgotten when destroyed.
  std::unordered_set<void*> dirty_;
  bool open_ = false;  // a pass is running (between Enter and Exit)
  uint64_t open_key_ = 0;
  std::vector<SpreadCollection> completed_;
  bool failed_ = false;
  std::string error_;
  SpreadStats stats_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_SPREAD_H_
