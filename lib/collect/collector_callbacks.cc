// lib/collect/collector_callbacks.cc — the collector's CUPTI callbacks:
// resource (contexts), runtime/driver API (capture triggers, call stacks,
// kernel-launch hook, teardown point) and NVTX (capture range nvtx:NAME).
// They run inline on the application's threads: no I/O, no allocation beyond
// a captured stack, never our control mutex across a hook call.
#include <cupti.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <generated_nvtx_meta.h>

#include <cstring>

#include "lib/collect/collector_impl.h"
#include "lib/collect/nvtx_observer.h"
#include "lib/collect/self_cost.h"
#include "lib/collect/stream_capture.h"

namespace sightline::collect {
namespace {

// Cached: a system call per NVTX push/pop otherwise (a fork()ed child's
// callbacks return before they get here).
uint32_t ThreadId() {
  thread_local const uint32_t t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_tid;
}

thread_local uint32_t t_nvtx_depth = 0;
thread_local int t_in_runtime_launch = 0;
// Runtime API calls with callbacks that this thread is inside (the driver
// calls they make are nested in them).
thread_local int t_runtime_depth = 0;
// The Python stack id of this thread's current outermost API call (0: none).
thread_local uint32_t t_python_stack = 0;

const char* NvtxMessage(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "";
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != nullptr) {
    return a->message.ascii;
  }
  return "";
}

}  // namespace


void CollectorImpl::OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                               const void* data) {
  // A fork()ed child (pthread_atfork: forked_child_) must not touch the
  // parent's state. vfork/posix_spawn children run no handlers, and call
  // nothing before their exec.
  if (forked_child_.load(std::memory_order_relaxed) || tracing_off_) return;
  switch (domain) {
    case CUPTI_CB_DOMAIN_RESOURCE:
      OnResource(cbid, static_cast<const CUpti_ResourceData*>(data));
      break;
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API: {
      CostScope cost(CostPart::kApi);
      OnApi(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
      break;
    }
    case CUPTI_CB_DOMAIN_NVTX: {
      CostScope cost(CostPart::kNvtx);
      OnNvtx(cbid, static_cast<const CUpti_NvtxData*>(data));
      break;
    }
    default:
      break;
  }
}

void CollectorImpl::OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    {
      MutexLock lock(contexts_mu_);
      contexts_.push_back(data->context);
    }
    cuda_ready_ = true;
    if (hook_ != nullptr) hook_->OnContextCreated(data->context, 0);
    if (pm_sampler_ != nullptr) pm_sampler_->OnContextCreated(data->context);
  } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(data->context, 0, &dropped) == CUPTI_SUCCESS) {
      MutexLock lock(contexts_mu_);
      cupti_dropped_total_ += dropped;
    }
    {
      MutexLock lock(contexts_mu_);
      for (size_t i = 0; i < contexts_.size(); ++i) {
        if (contexts_[i] == data->context) {
          contexts_.erase(contexts_.begin() + i);
          break;
        }
      }
    }
    if (hook_ != nullptr) hook_->OnContextDestroy(data->context);
    if (pm_sampler_ != nullptr) pm_sampler_->OnContextDestroying(data->context);
  }
}

void CollectorImpl::OnApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const CUpti_CallbackData* data) {
  bool enter = data->callbackSite == CUPTI_API_ENTER;
  bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  // Read once: the Python stack and the driver launch's record below agree.
  const bool recording = activities_on_;
  if (runtime && enter) {
    // SIGHTLINE_AB_STACKS_MS (collector_stack_ab.cc) switched the launch
    // callbacks off while this thread was inside one: its exit never came,
    // so the depth it left is reset at the thread's first call after a switch.
    thread_local uint32_t t_ab_generation = 0;
    const uint32_t generation = ab_generation_.load(std::memory_order_relaxed);
    if (generation != t_ab_generation) {
      t_ab_generation = generation;
      t_runtime_depth = 0;
    }
  }
  // Python stack of an outermost launch/copy/memset/sync call (a driver call
  // inside a runtime call shares the runtime call's Python stack).
  if (enter && t_runtime_depth == 0) t_python_stack = 0;
  if (enter && python_ != nullptr && t_runtime_depth == 0 && recording &&
      python_walk_on_.load(std::memory_order_relaxed)) {
    const std::vector<uint8_t>& table = runtime ? python_rt_cbids_ : python_drv_cbids_;
    if (cbid < table.size() && table[cbid] != 0) {
      t_python_stack = python_->Capture(data->correlationId);
    }
  }
  if (callback_driver_launches_ && !runtime && t_runtime_depth == 0 && IsLaunchCbid(domain, cbid)) {
    // A launch the application (a library) made through the driver itself:
    // its API record, timed here (CUPTI makes none without the driver kind).
    thread_local uint64_t t_driver_launch_start = 0;
    if (enter) {
      t_driver_launch_start = recording ? Now() : 0;
    } else if (t_driver_launch_start != 0) {
      CallbackApi a;
      a.start_ns = t_driver_launch_start;
      a.end_ns = Now();
      a.correlation_id = data->correlationId;
      a.cbid = cbid;
      thread_local const uint32_t t_cupti_thread = static_cast<uint32_t>(pthread_self());
      a.thread_id = t_cupti_thread;
      t_driver_launch_start = 0;
      PushCallbackApi(a);
    }
  }
  if (runtime && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) && !enter) {
    Control(&CaptureStateMachine::OnProfilerStart);
  } else if (!runtime && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && !enter) {
    Control(&CaptureStateMachine::OnProfilerStart);
  } else if ((runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) ||
             (!runtime && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop)) {
    if (enter) Control(&CaptureStateMachine::OnProfilerStop);
  } else if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 && enter) {
    // Records of the context about to go away: collect them now.
    if (CuptiCall cupti(this); cupti.ok()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    flush_requested_ = true;
    Wake();
  }
  if (hook_ != nullptr && !runtime) {
    if (IsStreamCaptureBeginCbid(cbid) || IsStreamCaptureEndCbid(cbid)) {
      OnStreamCaptureCall(cbid, data);
    } else if (IsUnhookedLaunchCbid(cbid)) {
      if (enter) {
        // Before it submits: a graph's (a cooperative launch's) kernels must
        // not run inside an open metric pass of any context (OnUnhookedWork
        // ends it, and with it the untraced kind).
        hook_->OnUnhookedWork(/*stream_capture=*/false);
        if (untraced_passes_ && kernels_untraced_.load(std::memory_order_relaxed)) {
          OnUnhookedLaunchWhileUntraced();  // still untraced (a failed switch): records
        }
      }
      if (hook_wants_graphs_ && IsGraphLaunchCbid(cbid) && (activities_on_ || !enter)) {
        // --metrics-range graph: the launch is the instance (its exit's
        // Stop waits for the graph's work). Every parameter list of a graph
        // launch starts with the executable; its key is CUPTI's id of it
        // (cuptiGetGraphExecId), else its address.
        uint64_t key = 0;
        if (enter && data->functionParams != nullptr) {
          const CUgraphExec exec = *static_cast<const CUgraphExec*>(data->functionParams);
          uint32_t id = 0;
          key = cuptiGetGraphExecId(exec, &id) == CUPTI_SUCCESS
                    ? id
                    : static_cast<uint64_t>(reinterpret_cast<uintptr_t>(exec));
        }
        hook_->OnGraphLaunch(enter, key, Now());
      }
    }
  }
  if (hook_ != nullptr && IsLaunchCbid(domain, cbid)) {
    // The hook sees each launch once, entered from the driver cuLaunchKernel(Ex)
    // callback: a runtime launch's own parameters may carry no grid/block (CUDA
    // 13's __cudaLaunchKernel_v13000), the driver call underneath always does.
    // Inside a runtime launch the correlation id is the runtime call's (the one
    // kernel records carry) and the exit is the runtime call's exit.
    thread_local uint32_t t_runtime_correlation = 0;
    thread_local bool t_hook_entered = false;
    thread_local KernelLaunchInfo t_launch_info;
    // The kernel kind's generation once the hook had entered (a sequence
    // pass switches the kind inside its own launch's enter).
    thread_local uint64_t t_enter_generation = 0;
    if (runtime) {
      if (enter) {
        if (t_in_runtime_launch++ == 0) t_runtime_correlation = data->correlationId;
      } else {
        if (t_in_runtime_launch == 1 && t_hook_entered) {
          t_hook_entered = false;
          hook_->OnLaunchExit(t_launch_info);
          AfterHookedLaunch(t_launch_info, t_enter_generation);
        }
        if (t_in_runtime_launch > 0) --t_in_runtime_launch;
      }
    } else if (enter) {
      // Only inside a capture window: no kernel is replayed during --delay
      // or after the last window (its ranges would never be written).
      if (!t_hook_entered && activities_on_) {
        KernelLaunchInfo info;
        info.context = data->context;
        info.correlation_id = t_in_runtime_launch > 0 ? t_runtime_correlation : data->correlationId;
        info.kernel_name = data->symbolName != nullptr ? data->symbolName : "";
        info.cbid = cbid;
        info.is_runtime_api = t_in_runtime_launch > 0;
        FillLaunchFromDriverParams(cbid, data->functionParams, &info);
        // While a stream capture is in progress anywhere in the process the
        // hook gets no launch: a captured launch does not run (its kernel
        // runs later, inside a graph launch), and the range profiler's
        // Start/Stop fail during a capture and invalidate it, even from
        // another stream or thread (stream_capture.h).
        if (!captures_.active()) {
          t_launch_info = info;
          t_hook_entered = true;
          hook_->OnLaunchEnter(info);
          t_enter_generation = kernel_kind_generation_.load(std::memory_order_acquire);
        } else {
          captures_.CountWithheld();
        }
      }
    } else if (t_hook_entered && t_in_runtime_launch == 0) {
      t_hook_entered = false;
      hook_->OnLaunchExit(t_launch_info);
      AfterHookedLaunch(t_launch_info, t_enter_generation);
    }
  }
  if (config_.trace_backtrace && activities_on_) {
    // Synchronizing calls, and with -t cuda-memory the allocating ones (the
    // call site of each allocation: lib/analysis memory view).
    bool sync = IsSyncCbid(domain, cbid) ||
                (config_.trace_memory && IsAllocationCbid(domain, cbid));
    if (enter) {
      if (sync || config_.backtrace_threshold_us >= 0) {
        *reinterpret_cast<uint64_t*>(data->correlationData) = Now();
      }
    } else if (sync || config_.backtrace_threshold_us >= 0) {
      uint64_t start = *reinterpret_cast<uint64_t*>(data->correlationData);
      double us = (Now() - start) / 1e3;
      if (sync || us >= config_.backtrace_threshold_us) {
        if (config_.native_stack_every_call) {
          stacks_.Capture(data->correlationId);
        } else {
          // With a Python stack, once per (Python stack, API, native
          // caller): NativeStackOnce.
          const uint32_t api_key = (runtime ? 0x80000000u : 0u) | cbid;
          native_once_.CaptureOrShare(&stacks_, t_python_stack, api_key, data->correlationId);
        }
      }
    }
  }
  if (runtime) t_runtime_depth = enter ? t_runtime_depth + 1 : std::max(0, t_runtime_depth - 1);
  // Detach only from an outermost API exit: finalising in a driver callback
  // nested in a runtime call leaves the runtime's own exit dispatch to a
  // finalised CUPTI (Kineto tears down from RUNTIME exit callbacks only).
  if (detach_ && teardown_pending_ && runtime && !enter && t_runtime_depth == 0) MaybeTearDown();
}

void CollectorImpl::OnStreamCaptureCall(CUpti_CallbackId cbid, const CUpti_CallbackData* data) {
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  if (enter && IsStreamCaptureBeginCbid(cbid)) {
    // Tracked first (no launch reaches the hook from now on), then any
    // open measurement ended before the capture begins.
    captures_.BeginEnter();
    hook_->OnUnhookedWork(/*stream_capture=*/true);
    return;
  }
  if (enter) return;
  const CUresult result = data->functionReturnValue != nullptr
                              ? *static_cast<const CUresult*>(data->functionReturnValue)
                              : CUDA_ERROR_UNKNOWN;
  // Every begin and end call's parameters start with the stream.
  const CUstream stream = data->functionParams != nullptr
                              ? *static_cast<const CUstream*>(data->functionParams)
                              : nullptr;
  thread_local const uint64_t t_thread = static_cast<uint64_t>(pthread_self());
  const uint64_t key = CaptureKey(cbid, stream, t_thread);
  if (IsStreamCaptureBeginCbid(cbid)) {
    captures_.BeginExit(key, result);
  } else {
    captures_.EndExit(key, result);
  }
}

void CollectorImpl::AfterHookedLaunch(const KernelLaunchInfo& launch,
                                      uint64_t enter_generation) {
  const uint32_t correlation_id = launch.correlation_id;
  // The kind in effect when the kernel was submitted is known when it did
  // not change during the call; when it did (another thread's launch
  // switched it), the kernel may or may not have a CUPTI record: it is
  // written "maybe traced", and the writer drops it if a record comes.
  const bool moved =
      kernel_kind_generation_.load(std::memory_order_acquire) != enter_generation;
  if (untraced_passes_ && (kernels_untraced_.load(std::memory_order_relaxed) || moved)) {
    // Measured in place with no kernel kind enabled: CUPTI writes no record
    // of this kernel, so the launch call's own fields make one (the writer
    // adds the rest from a traced launch of the configuration). Only during
    // metric passes, which cost ~1-20 ms each: three CUPTI look-ups here are
    // not on the common path.
    HostEvent h;
    h.kind = HostEvent::kUntracedKernel;
    KernelEvent& k = h.kernel;
    k.correlation_id = correlation_id;
    k.grid_x = launch.grid_x;
    k.grid_y = launch.grid_y;
    k.grid_z = launch.grid_z;
    k.block_x = launch.block_x;
    k.block_y = launch.block_y;
    k.block_z = launch.block_z;
    k.dynamic_shared_bytes = launch.dynamic_shared_bytes;
    k.device_id = launch.device_id;
    if (CuptiCall cupti(this); cupti.ok() && launch.context != nullptr) {
      uint32_t v = 0;
      if (cuptiGetContextId(launch.context, &v) == CUPTI_SUCCESS) k.context_id = v;
      if (cuptiGetDeviceId(launch.context, &v) == CUPTI_SUCCESS) k.device_id = v;
      const uint8_t per_thread = launch.cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                                 launch.cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
      if (cuptiGetStreamIdEx(launch.context, launch.stream, per_thread, &v) == CUPTI_SUCCESS) {
        k.stream_id = v;
      }
    }
    h.name = launch.kernel_name != nullptr ? launch.kernel_name : "";
    h.maybe_traced = moved;
    untraced_launches_.fetch_add(1, std::memory_order_relaxed);
    PushHostEvent(std::move(h));
  }
  // CUPTI takes a new activity buffer at every kernel-replayed launch and
  // can keep each one out past plain flushes (H200 2026-12-06: 256 out
  // after 71 s of replays, then records refused): the writer flushes now, not at
  // its next period, and forces the flush once the pool runs low
  // (buffer_pool.h PoolNeedsForcedFlush; config.cc sizes the pool).
  if (hook_->IsReplayedCorrelation(correlation_id)) {
    flush_requested_ = true;
    Wake();
  }
}

void CollectorImpl::ForwardNvtxToMonitor(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  const char* message = nullptr;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      message = static_cast<const nvtxRangePushA_params*>(data->functionParams)->message;
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      message = NvtxMessage(static_cast<const nvtxRangePushEx_params*>(data->functionParams)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      message = NvtxMessage(
          static_cast<const nvtxDomainRangePushEx_params*>(data->functionParams)->core.eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      message = static_cast<const nvtxRangeStartA_params*>(data->functionParams)->message;
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      message = NvtxMessage(static_cast<const nvtxRangeStartEx_params*>(data->functionParams)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      message = NvtxMessage(static_cast<const nvtxDomainRangeStartEx_params*>(
                                data->functionParams)->core.eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxMarkA:
      message = static_cast<const nvtxMarkA_params*>(data->functionParams)->message;
      break;
    case CUPTI_CBID_NVTX_nvtxMarkEx:
      message = NvtxMessage(static_cast<const nvtxMarkEx_params*>(data->functionParams)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
      message = NvtxMessage(
          static_cast<const nvtxDomainMarkEx_params*>(data->functionParams)->core.eventAttrib);
      break;
    default:
      return;
  }
  if (message != nullptr) monitor_->OnRangeOpened(message, monitor::MonitorAgent::NowNs());
}

void CollectorImpl::ForwardNvtxToHook(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  if (data == nullptr || data->functionParams == nullptr) return;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const char* m = static_cast<const nvtxRangePushA_params*>(data->functionParams)->message;
      hook_->OnNvtxPush(m != nullptr ? m : "", Now());
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      hook_->OnNvtxPush(
          NvtxMessage(static_cast<const nvtxRangePushEx_params*>(data->functionParams)->eventAttrib),
          Now());
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      hook_->OnNvtxPush(NvtxMessage(static_cast<const nvtxDomainRangePushEx_params*>(
                                        data->functionParams)->core.eventAttrib),
                        Now());
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      hook_->OnNvtxPop(Now());
      break;
    default:
      break;
  }
}

void CollectorImpl::OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  if (config_.trace_nccl) OnNcclNvtx(cbid, data);
  if (hook_wants_nvtx_) ForwardNvtxToHook(cbid, data);
  // Once sightline's NVTX handlers are in place (nvtx_observer.h) they feed
  // the monitor: not twice.
  if (monitor_ != nullptr && NvtxObservedInstances() == 0) ForwardNvtxToMonitor(cbid, data);
  // NCCL tracing enables a few NVTX callbacks in every capture mode; the
  // capture-range logic below is for --capture-range nvtx:NAME only.
  if (config_.capture != CaptureMode::kNvtx) return;
  uint64_t now = Now();
  bool closed = false;
  {
    MutexLock lock(control_mu_);
    CaptureAction a = CaptureAction::kNone;
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA: {
        auto* p = static_cast<const nvtxRangePushA_params*>(data->functionParams);
        a = capture_->OnNvtxPush(now, p->message != nullptr ? p->message : "", ThreadId(),
                                 t_nvtx_depth++);
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePushEx: {
        auto* p = static_cast<const nvtxRangePushEx_params*>(data->functionParams);
        a = capture_->OnNvtxPush(now, NvtxMessage(p->eventAttrib), ThreadId(), t_nvtx_depth++);
        break;
      }
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        auto* p = static_cast<const nvtxDomainRangePushEx_params*>(data->functionParams);
        a = capture_->OnNvtxPush(now, NvtxMessage(p->core.eventAttrib), ThreadId(),
                                 t_nvtx_depth++);
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        if (t_nvtx_depth > 0) --t_nvtx_depth;
        a = capture_->OnNvtxPop(now, ThreadId(), t_nvtx_depth);
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartA:
      case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
        const char* message = "";
        if (cbid == CUPTI_CBID_NVTX_nvtxRangeStartA) {
          auto* p = static_cast<const nvtxRangeStartA_params*>(data->functionParams);
          message = p->message != nullptr ? p->message : "";
        } else if (cbid == CUPTI_CBID_NVTX_nvtxRangeStartEx) {
          message = NvtxMessage(
              static_cast<const nvtxRangeStartEx_params*>(data->functionParams)->eventAttrib);
        } else {
          message = NvtxMessage(static_cast<const nvtxDomainRangeStartEx_params*>(
                                    data->functionParams)->core.eventAttrib);
        }
        uint64_t id = data->functionReturnValue != nullptr
                          ? *static_cast<const nvtxRangeId_t*>(data->functionReturnValue)
                          : 0;
        a = capture_->OnNvtxRangeStart(now, message, id);
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangeEnd:
        a = capture_->OnNvtxRangeEnd(
            now, static_cast<const nvtxRangeEnd_params*>(data->functionParams)->id);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        a = capture_->OnNvtxRangeEnd(
            now, static_cast<const nvtxDomainRangeEnd_params*>(data->functionParams)->core.id);
        break;
      default:
        break;
    }
    closed = ApplyLocked(a, now);
  }
  if (closed) AfterWindowClosed();
}

// NCCL's NVTX payloads (see nccl_payload.h). Runs inline on the application's
// thread at every nvtxDomainCreateA and nvtxDomainRangePushEx: a few loads
// and compares for other domains; for an NCCL range a decode of a ≤ 40-byte
// struct and one small host event. No I/O, nothing allocated but the event.
void CollectorImpl::OnNcclNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  if (data == nullptr || data->functionParams == nullptr) return;
  if (cbid == CUPTI_CBID_NVTX_nvtxDomainCreateA) {
    auto* p = static_cast<const nvtxDomainCreateA_params*>(data->functionParams);
    if (p->name != nullptr && std::strcmp(p->name, "NCCL") == 0 &&
        data->functionReturnValue != nullptr) {
      nccl_domain_.store(*static_cast<const nvtxDomainHandle_t*>(data->functionReturnValue),
                         std::memory_order_relaxed);
    }
    return;
  }
  if (cbid != CUPTI_CBID_NVTX_nvtxDomainRangePushEx || !activities_on_) return;
  auto* p = static_cast<const nvtxDomainRangePushEx_params*>(data->functionParams);
  const nvtxEventAttributes_t* a = p->core.eventAttrib;
  if (a == nullptr || a->payloadType != kNvtxPayloadTypeExt) return;
  // Until NCCL's domain is known (its creation may precede our callbacks),
  // any domain's payload is decoded; the join then requires the range's
  // domain to be "NCCL" and its name to be the payload's API call.
  const void* nccl = nccl_domain_.load(std::memory_order_relaxed);
  if (nccl != nullptr && static_cast<const void*>(p->domain) != nccl) return;
  HostEvent e;
  if (!DecodeNcclEventPayload(a->payloadType, a->payload.ullValue, a->reserved0, &e.nccl)) return;
  e.kind = HostEvent::kNcclPayload;
  e.start_ns = Now();
  // CUPTI's MARKER records name the thread by pthread_self() (its default
  // thread-id type), truncated to 32 bits.
  e.thread_id = static_cast<uint32_t>(pthread_self());
  PushHostEvent(std::move(e));
}

}  // namespace sightline::collect
