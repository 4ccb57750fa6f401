// lib/collect/range_profiler_user_target.cc — per-range metrics in the range
// profiler (range_profiler_user.h says what and why): the NVTX entry points
// and the CUPTI calls behind UserRangeTarget.
//
// CUPTI behaviour this relies on (not testable without a GPU; checked by
// tests/gpu/metrics_range.sh on the H200): a user range (PushRange/PopRange
// between Start and Stop) under application replay collects the object's
// next pass at each Start/Stop, as auto ranges do for spread replay, with
// SetConfig given the same counter-data image before every pass.
#include <dlfcn.h>

#include <cstdio>

#include "lib/collect/range_profiler_impl.h"

namespace sightline::collect::internal {

namespace {
// Per-thread NVTX push/pop nesting depth (every push and pop this hook sees).
thread_local uint32_t t_user_depth = 0;
// A key per thread: the address of its depth counter.
uintptr_t ThreadKey() { return reinterpret_cast<uintptr_t>(&t_user_depth); }
// --metrics-range graph: a graph launch's instance is keyed by the thread's
// own marker (graph launches do not nest; NVTX depth plays no part).
thread_local char t_graph_marker = 0;
uintptr_t GraphThreadKey() { return reinterpret_cast<uintptr_t>(&t_graph_marker); }
}  // namespace

void RangeProfiler::ResolveDriver() {
  if (ctx_get_current_.load() != nullptr) return;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // only if loaded
  if (cuda == nullptr) return;  // not yet: a later push tries again
  auto get_device = reinterpret_cast<CtxGetDeviceFn>(dlsym(cuda, "cuCtxGetDevice"));
  auto get_current = reinterpret_cast<CtxGetCurrentFn>(dlsym(cuda, "cuCtxGetCurrent"));
  dlclose(cuda);  // the runtime's reference keeps it loaded
  if (get_current == nullptr) return;
  ctx_get_device_.store(get_device);
  ctx_get_current_.store(get_current);
}

void RangeProfiler::OnNvtxPush(const char* message, uint64_t now_ns) {
  if (!user_mode_ || graph_mode_) return;
  const uint32_t depth = t_user_depth++;
  if (off_.load() || t_in_hook || message == nullptr || config_.range_nvtx != message) return;
  t_in_hook = true;
  ResolveDriver();
  {
    MutexLock lock(mu_);
    BeginUserInstance(ThreadKey(), depth, now_ns);
  }
  t_in_hook = false;
}

void RangeProfiler::BeginUserInstance(uintptr_t thread, uint32_t depth, uint64_t now_ns) {
  if (CaptureInProgress()) {
    ++user_skipped_by_capture_;  // its Start would invalidate the capture
    return;
  }
  if (!window_open_ || user_ == nullptr || user_->failed()) return;
  if (!profiler_ready_) {
    std::string error;
    if (!InitProfiler(&error)) TurnOff(error);
  }
  CUcontext context = nullptr;
  CUdevice device = 0;
  const CtxGetCurrentFn get_current = ctx_get_current_.load();
  const CtxGetDeviceFn get_device = ctx_get_device_.load();
  if (off_.load() || get_current == nullptr || get_current(&context) != 0) context = nullptr;
  ContextState* state = nullptr;
  if (context != nullptr) {
    if (get_device == nullptr || get_device(&device) != 0) device = 0;
    state = StateFor(context, static_cast<uint32_t>(device));
    if (!EnableOn(state)) state = nullptr;  // off now, with the reason
  }
  if (off_.load()) return;
  user_->set_passes_needed(passes_.load());
  if (user_->OnPush(state, static_cast<uint32_t>(device), thread, depth, now_ns)) {
    user_open_thread_.store(thread);
  }
  CollectUser();
  NoteInPlace();  // the range's kernels run after this push
}

void RangeProfiler::EndUserInstance(uintptr_t thread, uint32_t depth, uint64_t now_ns) {
  if (user_ != nullptr && user_->OnPop(thread, depth, now_ns)) {
    user_open_thread_.store(0);
    DebugUser("pass ended");
    CollectUser();
    NoteInPlace();
  }
}

void RangeProfiler::OnGraphLaunch(bool enter, uint64_t exec_key, uint64_t now_ns) {
  if (!graph_mode_ || off_.load() || t_in_hook) return;
  if (!enter && user_open_thread_.load() != GraphThreadKey()) return;  // not this thread's
  t_in_hook = true;
  if (enter) ResolveDriver();
  {
    MutexLock lock(mu_);
    if (!enter) {
      // Stop waits for the graph's work: the instance covers it.
      EndUserInstance(GraphThreadKey(), 0, now_ns);
    } else if (window_open_ && graph_chooser_.OnLaunch(exec_key)) {
      if (user_ == nullptr) {
        user_ = std::make_unique<UserRangeSets>(static_cast<UserRangeTarget*>(this),
                                                "CUDA graph " + std::to_string(exec_key), 1);
      }
      BeginUserInstance(GraphThreadKey(), 0, now_ns);
    }
  }
  t_in_hook = false;
}

void RangeProfiler::DebugUser(const char* where) {
  if (!config_.debug) return;
  const UserRangeStats& s = user_->stats();
  std::fprintf(stderr,
               "sightline: range profiler (user range): %s: %llu instances, %llu passes, %llu "
               "sets\n",
               where, static_cast<unsigned long long>(s.instances),
               static_cast<unsigned long long>(s.passes),
               static_cast<unsigned long long>(s.completed));
}

void RangeProfiler::OnNvtxPop(uint64_t now_ns) {
  if (!user_mode_ || graph_mode_) return;
  if (t_user_depth > 0) --t_user_depth;
  if (t_in_hook || user_open_thread_.load() != ThreadKey()) return;
  t_in_hook = true;
  {
    MutexLock lock(mu_);
    EndUserInstance(ThreadKey(), t_user_depth, now_ns);
  }
  t_in_hook = false;
}

std::string RangeProfiler::UserRangeLabel() const {
  return graph_mode_ ? "CUDA graph launches" : "NVTX range '" + config_.range_nvtx + "'";
}

void RangeProfiler::CollectUser() {
  if (user_ == nullptr) return;
  for (UserRangeSet& s : user_->TakeCompleted()) {
    MetricRangeEvent event;
    event.device_id = s.device_id;
    event.num_passes = s.passes_needed;
    // A user range's kind and span go on the event itself (no kernel).
    event.user_range = true;
    event.start_ns = s.start_ns;
    event.end_ns = s.end_ns;
    SetValues(&event, s.values);
    MetricRangeSpan span;
    span.launches = s.instances;
    span.passes_collected = s.passes_done;
    AppendRange(std::move(event), std::move(s.name), span);
  }
  if (!user_->failed() || off_.load()) return;
  const std::string why = user_->error() + " (" + last_error() + ")";
  user_open_thread_.store(0);
  StopPassesAndDisable();
  off_.store(true);
  pending_.error = "per-range metrics stopped: " + why;
  std::fprintf(stderr,
               "sightline: warning: per-range metrics for %s stopped (%s); tracing continues\n",
               UserRangeLabel().c_str(), why.c_str());
}

std::string RangeProfiler::UserRangeLine() {
  std::string graphs;
  if (graph_mode_) {
    // Launches since the last line; the chooser's counts are cumulative.
    const uint64_t launches = graph_chooser_.launches() - graph_reported_launches_;
    const uint64_t other = graph_chooser_.not_measured() - graph_reported_not_measured_;
    graph_reported_launches_ = graph_chooser_.launches();
    graph_reported_not_measured_ = graph_chooser_.not_measured();
    graphs = "; graph launches: " + std::to_string(launches) + ", " + std::to_string(other) +
             " no instance (another graph, or before a graph was launched a second time)";
    if (user_ == nullptr) {
      return "per-range metrics for CUDA graph launches: no graph was launched twice, nothing "
             "measured" + graphs;
    }
  }
  if (user_ == nullptr) return "";
  const UserRangeStats& s = user_->stats();
  const UserRangeStats& r = user_reported_;
  const std::string label =
      graph_mode_ ? "CUDA graph launches (" + user_->name() + ", the first graph launched twice)"
                  : UserRangeLabel();
  std::string line = "per-range metrics for " + label + ": " +
                     std::to_string(s.completed - r.completed) + " sets complete from " +
                     std::to_string(s.passes - r.passes) + " instances (" +
                     std::to_string(passes_.load()) + " passes a set, one per instance), " +
                     std::to_string(s.incomplete - r.incomplete) + " incomplete, " +
                     std::to_string(s.discarded - r.discarded) +
                     " restarted (a pass held other than one range); instances skipped: " +
                     std::to_string(s.other_thread - r.other_thread) +
                     " while another thread's was open, " +
                     std::to_string(s.no_context - r.no_context) + " before a CUDA context, " +
                     std::to_string(s.other_context - r.other_context) + " on another context; " +
                     std::to_string(s.cut - r.cut) + " cut by the capture end";
  if (user_cut_by_capture_ > 0 || user_skipped_by_capture_ > 0) {
    line += "; stream captures: " + std::to_string(user_cut_by_capture_) +
            " instances cut (reported incomplete), " + std::to_string(user_skipped_by_capture_) +
            " not measured (their Start would invalidate the capture)";
    user_cut_by_capture_ = 0;
    user_skipped_by_capture_ = 0;
  }
  line += graphs;
  if (user_->failed()) line += "; stopped: " + user_->error();
  user_reported_ = s;
  return line;
}

// ---- UserRangeTarget ------------------------------------------------------------

bool RangeProfiler::InitUserImage(void* context) {
  return InitImageOn(static_cast<ContextState*>(context), &user_image_, 1);
}

bool RangeProfiler::BeginUserPass(void* context, const std::string& name) {
  auto* state = static_cast<ContextState*>(context);
  // spread_replay_ is application replay unless spread replay chose user
  // replay (not in this mode).
  if (!BeginPassOn(state, &user_image_, 1, 0, CUPTI_UserRange)) return false;
  auto pp = MakeParams<CUpti_RangeProfiler_PushRange_Params>(
      CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
  pp.pRangeProfilerObject = state->object;
  pp.pRangeName = name.c_str();
  return Check(cuptiRangeProfilerPushRange(&pp), "cuptiRangeProfilerPushRange");
}

bool RangeProfiler::EndUserPass(void* context, SpreadPassResult* result) {
  auto* state = static_cast<ContextState*>(context);
  auto pp = MakeParams<CUpti_RangeProfiler_PopRange_Params>(
      CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
  pp.pRangeProfilerObject = state->object;
  const bool popped = Check(cuptiRangeProfilerPopRange(&pp), "cuptiRangeProfilerPopRange");
  // Stop even when the pop failed: no session may stay open.
  const bool ended = EndPassOn(state, &user_image_, result);
  return popped && ended;
}

bool RangeProfiler::EvaluateUserRange(void* /*context*/, std::vector<double>* values) {
  return EvaluateImage(&user_image_, 0, values);
}

// Disable only: the next instance's push enables a fresh object
// (EnableOn), so a capture end (atexit included) makes no Enable call.
bool RangeProfiler::ResetUserPasses(void* context) {
  DisableObject(static_cast<ContextState*>(context));
  return true;
}

}  // namespace sightline::collect::internal
