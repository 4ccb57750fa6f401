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
  if (!user_mode_) return;
  const uint32_t depth = t_user_depth++;
  if (off_.load() || t_in_hook || message == nullptr || config_.range_nvtx != message) return;
  t_in_hook = true;
  ResolveDriver();
  {
    MutexLock lock(mu_);
    if (CaptureInProgress()) {
      ++user_skipped_by_capture_;  // its Start would invalidate the capture
    } else if (window_open_ && user_ != nullptr && !user_->failed()) {
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
      if (!off_.load()) {
        user_->set_passes_needed(passes_.load());
        if (user_->OnPush(state, static_cast<uint32_t>(device), ThreadKey(), depth, now_ns)) {
          user_open_thread_.store(ThreadKey());
        }
        CollectUser();
        NoteInPlace();  // the range's kernels run after this push
      }
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
  if (!user_mode_) return;
  if (t_user_depth > 0) --t_user_depth;
  if (t_in_hook || user_open_thread_.load() != ThreadKey()) return;
  t_in_hook = true;
  {
    MutexLock lock(mu_);
    if (user_ != nullptr && user_->OnPop(ThreadKey(), t_user_depth, now_ns)) {
      user_open_thread_.store(0);
      DebugUser("pass ended");
      CollectUser();
      NoteInPlace();
    }
  }
  t_in_hook = false;
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
               "sightline: warning: per-range metrics for NVTX range '%s' stopped (%s); tracing "
               "continues\n",
               config_.range_nvtx.c_str(), why.c_str());
}

std::string RangeProfiler::UserRangeLine() {
  if (user_ == nullptr) return "";
  const UserRangeStats& s = user_->stats();
  const UserRangeStats& r = user_reported_;
  std::string line = "per-range metrics for NVTX range '" + config_.range_nvtx + "': " +
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
