// lib/collect/range_profiler_impl.h — the range profiler's class, shared by
// range_profiler.cc (setup, kernel replay, capture end) and
// range_profiler_spread_target.cc (spread replay). Internal: include only from
// those files.
#ifndef SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_IMPL_H_
#define SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_IMPL_H_

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/collect/cupti_params.h"
#include "lib/collect/kernel_launch_hook.h"
#include "lib/collect/range_profiler.h"
#include "lib/collect/range_profiler_sequence.h"
#include "lib/collect/range_profiler_spread.h"
#include "lib/collect/range_profiler_user.h"
#include "lib/trace/thread_annotations.h"

namespace sightline::collect::internal {

// Ranges one counter-data image holds. The image is re-initialised for every
// profiled launch (one launch = one range), so a few slots are enough; extra
// ranges of one launch (should not happen) are counted as dropped.
constexpr size_t kRangesPerImage = 4;
constexpr size_t kRangesPerSharedImage = 256;
// Launches decoded together at most in a batched session.
constexpr size_t kBatchLimit = 64;
// Ranges a spread configuration's image holds: one expected, room for a
// second so a foreign kernel inside a pass shows as a range (not a drop).
constexpr size_t kRangesPerSpreadImage = 2;

// Wall time per profiler stage, printed at capture end when
// SIGHTLINE_METRICS_DEBUG is set (how the in-process cost splits up).
enum Stage {
  kStageAvailability, kStageBuildHost, kStageEnable, kStageImageInit, kStageSetConfig,
  kStageStart, kStageLaunch, kStageStop, kStageDecode, kStageEvaluate, kStageSpreadLaunch,
  kNumStages
};
inline const char* const kStageNames[kNumStages] = {"availability", "build_host", "enable", "image_init",
                                             "set_config", "start", "launch", "stop", "decode",
                                             "evaluate", "spread_launch"};
inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// Adds the scope's duration to slot[0] (total) and keeps slot[1] (max).
class StageTimer {
 public:
  explicit StageTimer(double* slot) : slot_(slot), start_(NowSeconds()) {}
  ~StageTimer() {
    const double d = NowSeconds() - start_;
    slot_[0] += d;
    if (d > slot_[1]) slot_[1] = d;
  }
 private:
  double* slot_;
  double start_;
};


// The event's values from evaluated metric values (names interned later).
inline void SetValues(MetricRangeEvent* event, const std::vector<double>& values) {
  event->values.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) event->values[i].value = values[i];
}

inline const char* ResultString(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) return "unknown CUPTI error";
  return s;
}

class RangeProfiler final : public KernelLaunchHook,
                            private SpreadTarget,
                            private SequenceTarget,
                            private UserRangeTarget {
 public:
  RangeProfiler(const KernelLaunchHookConfig& config) : config_(config) {}
  ~RangeProfiler() override;

  // Validates the configuration; initialises the profiler now when CUPTI
  // allows it, else at the first launch (InitProfiler).
  // Before any launch reaches the hook (no other thread sees it yet).
  bool Init(std::string* error) SL_NO_THREAD_SAFETY_ANALYSIS;

  void OnContextCreated(CUcontext context, uint32_t device_id) override;
  // Lock mu_ in the enter callback of a profiled launch and unlock it in its
  // exit callback (see mu_): not checked by the analysis.
  void OnLaunchEnter(const KernelLaunchInfo& launch) override SL_NO_THREAD_SAFETY_ANALYSIS;
  void OnLaunchExit(const KernelLaunchInfo& launch) override SL_NO_THREAD_SAFETY_ANALYSIS;
  void OnContextDestroy(CUcontext context) override;
  MetricCaptureResult OnCaptureEnd() override;
  void OnCaptureStart() override;
  void OnUnhookedWork(bool stream_capture) override;
  // A stream capture is in progress (config_.stream_captures): no
  // measurement may begin.
  bool CaptureInProgress() const {
    return config_.stream_captures != nullptr && config_.stream_captures->active();
  }
  bool IsReplayedCorrelation(uint32_t correlation_id) const override;
  uint32_t num_passes() const override { return passes_.load(); }
  // Per-range metrics (range_profiler_user_target.cc).
  void OnNvtxPush(const char* message, uint64_t now_ns) override;
  void OnNvtxPop(uint64_t now_ns) override;
  bool WantsNvtx() const override { return user_mode_ && !graph_mode_; }
  void OnGraphLaunch(bool enter, uint64_t exec_key, uint64_t now_ns) override;
  bool WantsGraphLaunches() const override { return graph_mode_; }
  std::string last_error() const override;

 private:
  struct ProfiledLaunch {
    uint32_t correlation_id = 0;
    uint32_t device_id = 0;
    std::string name;
    bool dram_replay = false;  // a top replay, measured with replay_metrics_ only
  };
  struct ContextState {
    CUcontext context = nullptr;
    uint32_t device_id = 0;
    CUpti_RangeProfiler_Object* object = nullptr;
    std::vector<uint8_t> counter_data;
    size_t capacity = 0;   // ranges the counter-data image holds
    size_t evaluated = 0;  // ranges of the image already turned into events
    bool configured = false;
    bool failed = false;
    bool started = false;  // between cuptiRangeProfilerStart and Stop
    std::vector<ProfiledLaunch> undecoded;  // launches of the open session, in order
    size_t spread_image_size = 0;  // bytes of one spread configuration's image (0: not asked yet)
    bool spread_started = false;   // a spread pass's Start succeeded, its Stop not yet called
  };

  // Checked CUPTI call: records the error (with `what`) and returns false.
  bool Check(CUptiResult r, const char* what);
  bool InitProfiler(std::string* error) SL_REQUIRES(mu_);  // chip, metric set, host object
  bool BuildHost(const uint8_t* availability, std::string* error) SL_REQUIRES(mu_);
  // One host object with `names` scheduled: its config image and pass count.
  bool BuildHostObject(const std::vector<const char*>& names, const uint8_t* availability,
                       CUpti_Profiler_Host_Object** host, std::vector<uint8_t>* image,
                       uint32_t* passes, std::string* error);
  void DestroyHost();
  void DestroyHostObject(CUpti_Profiler_Host_Object** host);
  // A top replay with its own configuration (replay_metrics_) is in progress.
  bool DramReplayActive() const SL_REQUIRES(mu_) {
    return top_replay_active_ && replay_host_ != nullptr;
  }
  ContextState* StateFor(CUcontext context, uint32_t device_id) SL_REQUIRES(mu_);  // mu_ held
  bool EnableOn(ContextState* state) SL_REQUIRES(mu_);                              // mu_ held
  void DisableObject(ContextState* state) SL_REQUIRES(mu_);                         // mu_ held
  // Every context: an open application-replay pass stopped, the object
  // disabled (spread/sequence giving up; mu_ held).
  void StopPassesAndDisable() SL_REQUIRES(mu_);
  bool PrepareImage(ContextState* state) SL_REQUIRES(mu_);                          // mu_ held
  bool Ready(ContextState* state) SL_REQUIRES(mu_);                                 // mu_ held
  void Flush(ContextState* state) SL_REQUIRES(mu_);                                 // mu_ held: stop + decode
  void EvaluateRange(ContextState* state, size_t range, const ProfiledLaunch& launch) SL_REQUIRES(mu_);
  void DisableAll() SL_REQUIRES(mu_);                                               // mu_ held
  void TurnOff(const std::string& why) SL_REQUIRES(mu_);                            // mu_ held
  // `names`: the metrics of event.values (nullptr: metrics_).
  void AppendRange(MetricRangeEvent event, std::string name, const MetricRangeSpan& span,
                   const std::vector<std::string>* names = nullptr) SL_REQUIRES(mu_);

  // Kernel replay of one launch (the original path), from OnLaunchEnter.
  // True when the launch is profiled (mu_ stays held until its exit).
  bool EnterKernelReplay(ContextState* state, const KernelLaunchInfo& launch, const char* name) SL_REQUIRES(mu_);
  // Spread replay (range_profiler_spread_target.cc), mu_ held.
  enum class SpreadRoute : uint8_t { kNotSpread, kSkip, kProfiled };
  // Routes a launch in spread/auto mode: kNotSpread = use the kernel path.
  SpreadRoute EnterSpread(ContextState* state, const KernelLaunchInfo& launch, const char* name) SL_REQUIRES(mu_);
  void ExitSpread() SL_REQUIRES(mu_);
  void CollectSpread(std::vector<SpreadCollection> sets) SL_REQUIRES(mu_);  // into pending_
  void SpreadFallback(const std::string& why) SL_REQUIRES(mu_);             // one warning; kernel replay from now
  // SpreadTarget (CUPTI side of spread replay).
  bool InitImage(void* context, uint32_t slot) override SL_REQUIRES(mu_);
  bool BeginPass(void* context, uint32_t slot, uint32_t pass) override SL_REQUIRES(mu_);
  bool EndPass(void* context, uint32_t slot, SpreadPassResult* result) override SL_REQUIRES(mu_);
  bool Evaluate(void* context, uint32_t slot, std::vector<double>* values) override SL_REQUIRES(mu_);
  void ReleaseImage(uint32_t slot) override SL_REQUIRES(mu_);
  bool ResetPasses(void* context) override SL_REQUIRES(mu_);
  // Both targets' CUPTI calls on one image (range_profiler_spread_target.cc).
  bool InitImageOn(ContextState* state, std::vector<uint8_t>* image, size_t max_ranges) SL_REQUIRES(mu_);
  // SetConfig (application or user replay as spread_replay_; `range`: auto
  // for spread and sequence, user for per-range metrics) + Start.
  bool BeginPassOn(ContextState* state, std::vector<uint8_t>* image, size_t max_ranges, uint32_t pass,
                   CUpti_ProfilerRange range = CUPTI_AutoRange) SL_REQUIRES(mu_);
  bool EndPassOn(ContextState* state, std::vector<uint8_t>* image, SpreadPassResult* result) SL_REQUIRES(mu_);
  bool EvaluateImage(std::vector<uint8_t>* image, size_t range, std::vector<double>* values);
  // Sequence replay (SIGHTLINE_METRICS_REPLAY=sequence), mu_ held:
  // kProfiled while a sequence collects on this launch's context (mu_ stays
  // held to its exit, so ranges follow submission order), else kSkip (on
  // failure metrics are switched off).
  SpreadRoute EnterSequence(ContextState* state, const KernelLaunchInfo& launch, const char* name) SL_REQUIRES(mu_);
  // SequenceTarget.
  bool InitSequenceImage(void* context, size_t max_ranges) override SL_REQUIRES(mu_);
  bool BeginSequencePass(void* context) override SL_REQUIRES(mu_);
  bool EndSequencePass(void* context, SpreadPassResult* result) override SL_REQUIRES(mu_);
  bool EvaluateSequenceRange(void* context, size_t index, std::vector<double>* values) override SL_REQUIRES(mu_);
  bool ResetSequencePasses(void* context) override SL_REQUIRES(mu_);

  // UserRangeTarget (range_profiler_user_target.cc), mu_ held.
  bool InitUserImage(void* context) override SL_REQUIRES(mu_);
  bool BeginUserPass(void* context, const std::string& name) override SL_REQUIRES(mu_);
  bool EndUserPass(void* context, SpreadPassResult* result) override SL_REQUIRES(mu_);
  bool EvaluateUserRange(void* context, std::vector<double>* values) override SL_REQUIRES(mu_);
  bool ResetUserPasses(void* context) override SL_REQUIRES(mu_);
  // Completed / incomplete user-range sets into pending_; a failure of the
  // bookkeeping turns metrics off with one warning.
  void CollectUser() SL_REQUIRES(mu_);
  // The summary line's part for per-range metrics ("" when off).
  std::string UserRangeLine() SL_REQUIRES(mu_);
  void DebugUser(const char* where) SL_REQUIRES(mu_);  // SIGHTLINE_METRICS_DEBUG: a progress line

  KernelLaunchHookConfig config_;
  KernelSelector selector_;
  std::string chip_;
  std::vector<std::string> metrics_;
  std::vector<const char*> metric_ptrs_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  bool host_has_availability_ = false;
  std::vector<uint8_t> config_image_;
  std::atomic<uint32_t> passes_{0};
  // The top replays' own configuration (--metrics-replay-top): the dram__
  // metrics of metrics_ and the duration (ReplayMetrics), so a replay fits
  // one pass. With more, CUPTI restores the kernel's memory between passes:
  // an 11-pass replay of 'full' measured 8-96 % more bytes than ncu on the
  // LM (run CA). Null/empty when off or when metrics_ holds nothing else
  // (then the main configuration serves).
  std::vector<std::string> replay_metrics_;
  std::vector<const char*> replay_metric_ptrs_;
  CUpti_Profiler_Host_Object* replay_host_ = nullptr;
  std::vector<uint8_t> replay_config_image_;
  uint32_t replay_passes_ = 0;
  std::atomic<bool> off_{false};
  bool profiler_ready_ SL_GUARDED_BY(mu_) = false;  // InitProfiler succeeded (mu_ held after Init)
  // false (default): one counter-data image per context, decoded after every
  // launch and re-initialised only when full; true
  // (SIGHTLINE_METRICS_IMAGE=per_launch): a fresh image + SetConfig for every
  // profiled launch. Both agree with ncu; the shared image is cheaper.
  bool image_per_launch_ = false;

  // Held from the enter to the exit callback of a profiled launch
  // (OnLaunchEnter locks, OnLaunchExit unlocks: the analysis cannot follow
  // that pair, t_holding_launch says who holds it) and by every other entry.
  Mutex mu_;
  // A capture window is open (mu_ held): launches entering after
  // OnCaptureEnd are not profiled even if the collector's unlocked check let
  // them in, so no session or pass is opened that no capture end would close.
  bool window_open_ SL_GUARDED_BY(mu_) = true;
  bool active_sequence_ SL_GUARDED_BY(mu_) = false;  // the launch holding mu_ is inside a sequence pass
  // What on_in_place was last told (NoteInPlace).
  bool in_place_ SL_GUARDED_BY(mu_) = false;
  // Tells config_.on_in_place when launches start or stop being measured in
  // place: a sequence-replay pass, or an open instance of the measured NVTX
  // range (--metrics-range; its pass runs from the push to the pop). Not
  // spread passes (one launch each): switching the kind inside a started
  // application-replay pass was never run on a GPU.
  void NoteInPlace() SL_REQUIRES(mu_);
  // Tells config_.on_unseen_kernels what the sequence's passes ran beyond
  // the launches seen since the last call.
  void ReportUnseen() SL_REQUIRES(mu_);
  // After the sequence saw a launch or an interruption: unseen kernels
  // told, completed sets collected; a failed sequence stops the mode
  // (metrics off for the rest of the run, one warning). False then.
  bool SettleSequence() SL_REQUIRES(mu_);
  std::vector<std::unique_ptr<ContextState>> contexts_ SL_GUARDED_BY(mu_);
  ContextState* active_ SL_GUARDED_BY(mu_) = nullptr;  // context of the launch holding mu_
  // Keep one session open across consecutive profiled launches of a context
  // (SIGHTLINE_METRICS_SESSION=batch) instead of Start/Stop around each.
  bool batch_sessions_ = false;
  MetricCaptureResult pending_ SL_GUARDED_BY(mu_);
  uint64_t range_index_ SL_GUARDED_BY(mu_) = 0;

  mutable Mutex replayed_mu_;  // leaf
  std::unordered_set<uint32_t> replayed_ SL_GUARDED_BY(replayed_mu_);

  mutable Mutex error_mu_;  // leaf
  std::string last_error_ SL_GUARDED_BY(error_mu_);

  // Spread replay (SIGHTLINE_METRICS_REPLAY=spread|auto); mu_ held.
  bool spread_on_ SL_GUARDED_BY(mu_) = false;        // mode asks for it and no fallback happened
  bool active_spread_ SL_GUARDED_BY(mu_) = false;    // the launch holding mu_ runs a spread pass
  CUpti_ProfilerReplayMode spread_replay_ = CUPTI_ApplicationReplay;
  std::unique_ptr<SpreadScheduler> spread_ SL_GUARDED_BY(mu_);
  std::unordered_map<uint32_t, std::vector<uint8_t>> spread_images_ SL_GUARDED_BY(mu_);  // by slot
  std::unordered_set<uint64_t> kernel_keys_ SL_GUARDED_BY(mu_);   // auto: configurations to kernel-replay
  std::unordered_set<uint64_t> rescue_keys_ SL_GUARDED_BY(mu_);   // in progress at a fallback: one kernel replay
  SpreadStats spread_reported_ SL_GUARDED_BY(mu_);                // stats already copied into a result
  std::unique_ptr<SequenceSpread> sequence_ SL_GUARDED_BY(mu_);  // SIGHTLINE_METRICS_REPLAY=sequence, until it fails
  std::vector<uint8_t> sequence_image_ SL_GUARDED_BY(mu_);
  // Per-range metrics (config_.range_nvtx non-empty): no per-kernel work.
  bool user_mode_ = false;
  // --metrics-range graph: the instances are launches of one CUDA graph;
  // user_ is made when the chooser picks it.
  bool graph_mode_ = false;
  GraphRangeChooser graph_chooser_ SL_GUARDED_BY(mu_);
  uint64_t graph_reported_launches_ SL_GUARDED_BY(mu_) = 0;
  uint64_t graph_reported_not_measured_ SL_GUARDED_BY(mu_) = 0;
  // An instance's begin and end (mu_ held): NVTX push/pop or graph launch.
  void BeginUserInstance(uintptr_t thread, uint32_t depth, uint64_t now_ns) SL_REQUIRES(mu_);
  void EndUserInstance(uintptr_t thread, uint32_t depth, uint64_t now_ns) SL_REQUIRES(mu_);
  std::string UserRangeLabel() const;
  std::unique_ptr<UserRangeSets> user_ SL_GUARDED_BY(mu_);
  std::vector<uint8_t> user_image_ SL_GUARDED_BY(mu_);
  // The thread key of the open instance (0: none): a pop on another thread
  // returns without the lock.
  std::atomic<uintptr_t> user_open_thread_{0};
  // Instances cut by a stream capture beginning inside them, and pushes of
  // the range not measured because a capture was in progress.
  uint64_t user_cut_by_capture_ SL_GUARDED_BY(mu_) = 0;
  uint64_t user_skipped_by_capture_ SL_GUARDED_BY(mu_) = 0;
  UserRangeStats user_reported_ SL_GUARDED_BY(mu_);
  // The driver's cuCtxGetCurrent / cuCtxGetDevice, resolved from the loaded
  // libcuda.so.1 at a matching push (outside mu_: dlopen takes the loader's
  // lock) until found: the runtime loads libcuda with RTLD_LOCAL, so
  // RTLD_DEFAULT does not see it.
  using CtxGetCurrentFn = int (*)(CUcontext*);
  using CtxGetDeviceFn = int (*)(CUdevice*);
  std::atomic<CtxGetCurrentFn> ctx_get_current_{nullptr};
  std::atomic<CtxGetDeviceFn> ctx_get_device_{nullptr};
  void ResolveDriver();
  // Sequence replay's kernel replay of the top configurations by DRAM bytes
  // (config_.replay_top; ReplayTopChooser): made once the metric list is
  // known and holds a dram__ metric. top_weight_: the indices in metrics_
  // whose values, summed, rank a set (TopWeightIndices; empty: sets are
  // counted instead).
  std::unique_ptr<ReplayTopChooser> top_ SL_GUARDED_BY(mu_);
  std::vector<size_t> top_weight_ SL_GUARDED_BY(mu_);
  // The launch holding mu_ is such a replay: its object is disabled after
  // it (and before it: kernel replay on an object that ran application-
  // replay passes crashed, spread_probe F2/F3).
  bool top_replay_active_ SL_GUARDED_BY(mu_) = false;
  // Whether this launch is one: the sequence is idle and its configuration
  // is pending (the object is then fresh, the selector not asked).
  bool TakeTopReplay(ContextState* state, uint64_t key) SL_REQUIRES(mu_);
  // The summary line's part ("" when off).
  std::string TopReplayLine() SL_REQUIRES(mu_);
  size_t sequence_ranges_ SL_GUARDED_BY(mu_) = 0;
  std::string sequence_failed_ SL_GUARDED_BY(mu_);                // why it stopped ("" while fine)
  SequenceStats sequence_final_ SL_GUARDED_BY(mu_);               // its stats when it stopped
  uint64_t unseen_reported_ SL_GUARDED_BY(mu_) = 0;  // stats().unseen_kernels told on_unseen_kernels
  bool sequence_failure_reported_ SL_GUARDED_BY(mu_) = false;
  SequenceStats sequence_reported_ SL_GUARDED_BY(mu_);

  double stage_s_[kNumStages][2] SL_GUARDED_BY(mu_) = {};  // total, max  // mu_ held (launch: between enter and exit)
  double launch_started_ SL_GUARDED_BY(mu_) = 0;
  uint64_t launches_profiled_ SL_GUARDED_BY(mu_) = 0;
  std::string first_range_name_ SL_GUARDED_BY(mu_);  // CUPTI's name of the first decoded range (debug)
};

// Per-thread state of the hook (range_profiler.cc).
extern thread_local bool t_holding_launch;  // this thread holds mu_ for a profiled launch
extern thread_local bool t_in_hook;         // re-entrancy guard

}  // namespace sightline::collect::internal

#endif  // SIGHTLINE_LIB_COLLECT_RANGE_PROFILER_IMPL_H_
