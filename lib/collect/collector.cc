// lib/collect/collector.cc — set-up, CUPTI callbacks and capture control of the
// process-wide collector (see collector.h for threads and lock order).
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <generated_nvtx_meta.h>

#include "lib/collect/collector_impl.h"
#include "lib/collect/signal_flush.h"
#include "lib/trace/sink.h"

extern "C" {
__attribute__((visibility("hidden"))) int sightline_internal_capturing = 0;
}

namespace sightline::collect {
namespace {

CollectorImpl* g_collector = nullptr;

void CUPTIAPI BufferRequestedTrampoline(uint8_t** buffer, size_t* size, size_t* max_records) {
  g_collector->OnBufferRequested(buffer, size, max_records);
}

void CUPTIAPI BufferCompletedTrampoline(CUcontext ctx, uint32_t stream_id, uint8_t* buffer,
                                        size_t size, size_t valid_size) {
  g_collector->OnBufferCompleted(ctx, stream_id, buffer, size, valid_size);
}

void CUPTIAPI CallbackTrampoline(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) {
  g_collector->OnCallback(domain, cbid, data);
}

void SignalRequestTrampoline(int, bool finish, void* arg) {
  static_cast<CollectorImpl*>(arg)->RequestSignalFlush(finish);
}

void AtExitTrampoline() { Collector::Get().Shutdown("exit"); }

void AtForkChild() {
  // The child has no writer thread and must not touch the parent's CUPTI
  // state: the pid check in every entry point turns the collector off.
  sightline_internal_capturing = 0;
}

uint32_t ThreadId() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

thread_local uint32_t t_nvtx_depth = 0;
thread_local std::vector<std::pair<uint64_t, const char*>>* t_ranges = nullptr;
thread_local int t_in_runtime_launch = 0;

bool IsSyncCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
        return true;
      default:
        return false;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
        return true;
      default:
        return false;
    }
  }
  return false;
}

bool IsLaunchCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
  }
  return false;
}

const char* NvtxMessage(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "";
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != nullptr) {
    return a->message.ascii;
  }
  return "";
}

}  // namespace

Collector& Collector::Get() {
  static CollectorImpl* instance = [] {
    auto* c = new CollectorImpl();  // never destroyed: used from atexit/signals
    g_collector = c;
    return c;
  }();
  return *instance;
}

CollectorImpl::CollectorImpl() = default;

uint64_t CollectorImpl::Now() {
  uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t);
    ts = uint64_t(t.tv_sec) * 1000000000ull + t.tv_nsec;
  }
  return ts;
}

void CollectorImpl::SetError(const std::string& message) {
  std::lock_guard<std::mutex> lock(error_mu_);
  last_error_ = message;
}

std::string CollectorImpl::last_error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

void CollectorImpl::Warn(const std::string& message) {
  std::fprintf(stderr, "sightline: warning: %s\n", message.c_str());
  SetError(message);
}

bool CollectorImpl::Check(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  SetError(std::string(what) + ": " + (text != nullptr ? text : "unknown CUPTI error"));
  return false;
}

void CollectorImpl::Wake() {
  if (wake_pipe_[1] >= 0) {
    char b = 1;
    ssize_t n = write(wake_pipe_[1], &b, 1);
    (void)n;  // a full pipe already means "wake up"
  }
}

bool CollectorImpl::Initialize(InitSource source) {
  if (initialized_.load()) return !tracing_off_.load();
  if (initializing_.exchange(true)) return false;  // concurrent or re-entrant call
  source_ = source;
  owner_pid_ = getpid();
  config_ = ConfigFromEnvironment(nullptr, &config_problems_);
  for (const std::string& p : config_problems_) Warn(p);
  if (source == InitSource::kLinkIn && std::getenv("SIGHTLINE_CAPTURE") == nullptr &&
      std::getenv("CUDA_INJECTION64_PATH") == nullptr) {
    config_.capture = CaptureMode::kApi;  // linked in only: the program decides
  }
  capture_ = std::make_unique<CaptureStateMachine>(config_.capture, config_.capture_nvtx_name,
                                                   config_.delay_s, config_.duration_s,
                                                   config_.capture_repeat);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  output_path_ = ResolveOutputPath(config_.output_pattern, static_cast<uint32_t>(owner_pid_),
                                   host, nullptr);
  std::string error;
  trace::FileSinkOptions sink_options;
  sink_options.overwrite = true;
  std::unique_ptr<trace::Sink> sink = trace::OpenSink(output_path_, sink_options, &error);
  if (sink == nullptr) {
    Warn("cannot open the trace output: " + error + "; tracing is off");
    tracing_off_ = true;
    initialized_ = true;
    return false;
  }
  writer_ = std::make_unique<trace::TraceWriter>(std::move(sink));
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    wake_pipe_[0] = wake_pipe_[1] = -1;
  }
  pool_ = std::make_unique<ActivityBufferPool>(
      config_.buffer_bytes, config_.initial_buffers, config_.max_buffers,
      [](void* self) { static_cast<CollectorImpl*>(self)->Wake(); }, this);
  if (!SetUpCupti()) {
    tracing_off_ = true;
    initialized_ = true;
    writer_.reset();
    unlink(output_path_.c_str());
    return false;
  }
  if (config_.trace_backtrace) StackCollector::WarmUp();
  writer_thread_ = std::thread([this] { WriterMain(); });
  std::atexit(&AtExitTrampoline);
  pthread_atfork(nullptr, nullptr, &AtForkChild);
  InstallSignalFlush(&SignalRequestTrampoline, this, 3000);
  if (!config_.quiet) {
    std::fprintf(stderr, "sightline: profiling pid %d -> %s (capture: %s)\n", owner_pid_,
                 output_path_.c_str(), config_.CaptureDescription().c_str());
  }
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    CaptureAction action = capture_->Begin(Now());
    ApplyLocked(action, Now());
  }
  initialized_ = true;
  return true;
}

bool CollectorImpl::SetUpCupti() {
  CUptiResult r = cuptiSubscribe(&subscriber_, &CallbackTrampoline, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    warned_other_client_ = true;
    Warn("another CUPTI client (torch.profiler/Kineto, Nsight Systems/Compute, a sanitizer) "
         "already holds CUPTI in this process; sightline tracing is off and the application "
         "runs unaffected");
    return false;
  }
  if (!Check(r, "cuptiSubscribe")) {
    Warn("CUPTI could not be initialised (" + last_error() + "); tracing is off");
    return false;
  }
  // Attributes must precede context creation to apply to every context.
  size_t device_buffer = 8u << 20;
  size_t attr_size = sizeof(device_buffer);
  Check(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &attr_size,
                                  &device_buffer),
        "set device buffer size");
  if (!Check(cuptiActivityRegisterCallbacks(&BufferRequestedTrampoline,
                                            &BufferCompletedTrampoline),
             "cuptiActivityRegisterCallbacks")) {
    Warn(last_error() + "; tracing is off");
    cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
    return false;
  }
  Check(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE), "enable resource callbacks");
  auto enable_rt = [&](CUpti_CallbackId cbid) {
    Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid), "enable callback");
  };
  auto enable_drv = [&](CUpti_CallbackId cbid) {
    Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid), "enable callback");
  };
  enable_rt(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
  if (config_.capture == CaptureMode::kProfilerApi) {
    enable_rt(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    enable_rt(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
    enable_drv(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    enable_drv(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  }
  if (config_.trace_backtrace) {
    if (config_.backtrace_threshold_us >= 0) {
      Check(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API), "enable runtime cbs");
    } else {
      for (CUpti_CallbackId cbid = 0; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
        if (IsSyncCbid(CUPTI_CB_DOMAIN_RUNTIME_API, cbid)) enable_rt(cbid);
      }
    }
    for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
      if (IsSyncCbid(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) enable_drv(cbid);
    }
  }
  if (config_.capture == CaptureMode::kNvtx) {
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
          CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
          CUPTI_CBID_NVTX_nvtxDomainRangePop, CUPTI_CBID_NVTX_nvtxRangeStartA,
          CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
          CUPTI_CBID_NVTX_nvtxRangeEnd, CUPTI_CBID_NVTX_nvtxDomainRangeEnd}) {
      Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid), "enable NVTX cb");
    }
  }
  if (!config_.metric_set.empty()) {
    KernelLaunchHookConfig hc;
    hc.metric_set = config_.metric_set;
    hc.kernel_filter = config_.metric_kernel_filter;
    hc.max_ranges = config_.metric_max_ranges;
    std::string error;
    hook_ = CreateKernelLaunchHook(hc, &error);
    if (hook_ == nullptr) {
      Warn("hardware metrics unavailable (" + (error.empty() ? "not built" : error) +
           "); tracing continues without them");
    } else {
      for (CUpti_CallbackId cbid = 0; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
        if (IsLaunchCbid(CUPTI_CB_DOMAIN_RUNTIME_API, cbid)) enable_rt(cbid);
      }
      for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
        if (IsLaunchCbid(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) enable_drv(cbid);
      }
      // Contexts that already exist (link-in after CUDA started).
      using GetCurrentFn = int (*)(CUcontext*);
      auto get_current = reinterpret_cast<GetCurrentFn>(dlsym(RTLD_DEFAULT, "cuCtxGetCurrent"));
      CUcontext ctx = nullptr;
      if (get_current != nullptr && get_current(&ctx) == 0 && ctx != nullptr) {
        hook_->OnContextCreated(ctx, 0);
        cuda_ready_ = true;
      }
    }
  }
  return true;
}

void CollectorImpl::SetActivities(bool enable) {
  std::vector<CUpti_ActivityKind> kinds;
  if (config_.trace_cuda) {
    kinds.insert(kinds.end(),
                 {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                  CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                  CUPTI_ACTIVITY_KIND_OVERHEAD});
    if (!config_.trace_graph_nodes) kinds.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  }
  if (config_.trace_driver_api) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  if (config_.trace_nvtx || config_.trace_nccl) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  }
  for (CUpti_ActivityKind kind : kinds) {
    CUptiResult r = enable ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
    if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_NOT_COMPATIBLE) {
      Check(r, enable ? "cuptiActivityEnable" : "cuptiActivityDisable");
    }
  }
  activities_on_ = enable;
  sightline_internal_capturing = enable ? 1 : 0;
}

bool CollectorImpl::ApplyLocked(CaptureAction action, uint64_t now_ns) {
  if (action == CaptureAction::kStart) {
    if (!activities_on_ && !torn_down_) SetActivities(true);
    return false;
  }
  if (action == CaptureAction::kStop) {
    if (activities_on_) SetActivities(false);
    HostEvent w;
    w.kind = HostEvent::kWindow;
    w.start_ns = capture_->window_start_ns();
    w.end_ns = now_ns;
    w.index = capture_->window_index();
    w.name = capture_->label();
    w.trigger = capture_->trigger();
    PushHostEvent(std::move(w));
    if (capture_->finished() && !shut_down_) teardown_pending_ = true;
    return true;
  }
  return false;
}

void CollectorImpl::AfterWindowClosed() {
  if (hook_ != nullptr) {
    auto result = std::make_shared<MetricCaptureResult>(hook_->OnCaptureEnd());
    HostEvent m;
    m.kind = HostEvent::kMetrics;
    m.metrics = std::move(result);
    PushHostEvent(std::move(m));
  }
  flush_requested_ = true;
  Wake();
}

void CollectorImpl::Control(CaptureAction (CaptureStateMachine::*fn)(uint64_t)) {
  if (tracing_off_ || !initialized_) return;
  bool closed;
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    uint64_t now = Now();
    closed = ApplyLocked((capture_.get()->*fn)(now), now);
  }
  if (closed) AfterWindowClosed();
}

void CollectorImpl::PushHostEvent(HostEvent event) {
  std::lock_guard<std::mutex> lock(host_mu_);
  if (host_events_.size() >= (1u << 20) && event.kind != HostEvent::kWindow) {
    ++host_events_dropped_;
    return;
  }
  host_events_.push_back(std::move(event));
}

void CollectorImpl::OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = pool_ != nullptr ? pool_->Acquire() : nullptr;
  *size = *buffer != nullptr ? pool_->buffer_bytes() : 0;
}

void CollectorImpl::OnBufferCompleted(CUcontext, uint32_t stream_id, uint8_t* buffer, size_t,
                                      size_t valid_size) {
  if (pool_ != nullptr && buffer != nullptr) pool_->Complete(buffer, valid_size, stream_id);
}

void CollectorImpl::OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                               const void* data) {
  if (getpid() != owner_pid_ || tracing_off_) return;
  switch (domain) {
    case CUPTI_CB_DOMAIN_RESOURCE:
      OnResource(cbid, static_cast<const CUpti_ResourceData*>(data));
      break;
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API:
      OnApi(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
      break;
    case CUPTI_CB_DOMAIN_NVTX:
      OnNvtx(cbid, static_cast<const CUpti_NvtxData*>(data));
      break;
    default:
      break;
  }
}

void CollectorImpl::OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    {
      std::lock_guard<std::mutex> lock(contexts_mu_);
      contexts_.push_back(data->context);
    }
    cuda_ready_ = true;
    if (hook_ != nullptr) hook_->OnContextCreated(data->context, 0);
  } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(data->context, 0, &dropped) == CUPTI_SUCCESS) {
      std::lock_guard<std::mutex> lock(contexts_mu_);
      cupti_dropped_total_ += dropped;
    }
    {
      std::lock_guard<std::mutex> lock(contexts_mu_);
      for (size_t i = 0; i < contexts_.size(); ++i) {
        if (contexts_[i] == data->context) {
          contexts_.erase(contexts_.begin() + i);
          break;
        }
      }
    }
    if (hook_ != nullptr) hook_->OnContextDestroy(data->context);
  }
}

void CollectorImpl::OnApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const CUpti_CallbackData* data) {
  bool enter = data->callbackSite == CUPTI_API_ENTER;
  bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (runtime && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) && !enter) {
    Control(&CaptureStateMachine::OnProfilerStart);
  } else if (!runtime && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && !enter) {
    Control(&CaptureStateMachine::OnProfilerStart);
  } else if ((runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) ||
             (!runtime && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop)) {
    if (enter) Control(&CaptureStateMachine::OnProfilerStop);
  } else if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 && enter) {
    // Records of the context about to go away: collect them now.
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    flush_requested_ = true;
    Wake();
  }
  if (hook_ != nullptr && IsLaunchCbid(domain, cbid)) {
    // A runtime launch calls the driver launch underneath: report it once.
    bool report = runtime || t_in_runtime_launch == 0;
    if (runtime && enter) ++t_in_runtime_launch;
    if (report) {
      KernelLaunchInfo info;
      info.context = data->context;
      info.correlation_id = data->correlationId;
      info.kernel_name = data->symbolName != nullptr ? data->symbolName : "";
      info.cbid = cbid;
      info.is_runtime_api = runtime;
      if (runtime && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
                      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000)) {
        auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(data->functionParams);
        info.grid_x = p->gridDim.x; info.grid_y = p->gridDim.y; info.grid_z = p->gridDim.z;
        info.block_x = p->blockDim.x; info.block_y = p->blockDim.y; info.block_z = p->blockDim.z;
        info.dynamic_shared_bytes = static_cast<uint32_t>(p->sharedMem);
        info.stream = reinterpret_cast<CUstream>(p->stream);
      } else if (!runtime && (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
                              cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)) {
        auto* p = static_cast<const cuLaunchKernel_params*>(data->functionParams);
        info.grid_x = p->gridDimX; info.grid_y = p->gridDimY; info.grid_z = p->gridDimZ;
        info.block_x = p->blockDimX; info.block_y = p->blockDimY; info.block_z = p->blockDimZ;
        info.dynamic_shared_bytes = p->sharedMemBytes;
        info.stream = p->hStream;
      }
      if (enter) {
        hook_->OnLaunchEnter(info);
      } else {
        hook_->OnLaunchExit(info);
      }
    }
    if (runtime && !enter && t_in_runtime_launch > 0) --t_in_runtime_launch;
  }
  if (config_.trace_backtrace && activities_on_) {
    bool sync = IsSyncCbid(domain, cbid);
    if (enter) {
      if (sync || config_.backtrace_threshold_us >= 0) {
        *reinterpret_cast<uint64_t*>(data->correlationData) = Now();
      }
    } else if (sync || config_.backtrace_threshold_us >= 0) {
      uint64_t start = *reinterpret_cast<uint64_t*>(data->correlationData);
      double us = (Now() - start) / 1e3;
      if (sync || us >= config_.backtrace_threshold_us) stacks_.Capture(data->correlationId);
    }
  }
  if (teardown_pending_ && !enter) MaybeTearDown();
}

void CollectorImpl::OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  uint64_t now = Now();
  bool closed = false;
  {
    std::lock_guard<std::mutex> lock(control_mu_);
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

void CollectorImpl::MaybeTearDown() {
  // Runs on an API-exit callback (kineto PR #686: finalising elsewhere raced
  // FlushAll). Only once the capture can no longer reopen.
  if (!teardown_pending_.exchange(false) || torn_down_.exchange(true)) return;
  if (std::getenv("SIGHTLINE_NO_FINALIZE") != nullptr) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  // Every record is now in our pool; the writer converts them at leisure.
  // Unsubscribing and finalising removes CUPTI's instrumentation, so the app
  // runs at full speed again (pytorch PR #146604).
  if (subscriber_ != nullptr) {
    Check(cuptiUnsubscribe(subscriber_), "cuptiUnsubscribe");
    subscriber_ = nullptr;
  }
  Check(cuptiFinalize(), "cuptiFinalize");
  flush_requested_ = true;
  Wake();
}

void CollectorImpl::RequestSignalFlush(bool finish) {
  if (finish) signal_finish_.store(true);
  signal_requested_.store(true);
  Wake();
}

int CollectorImpl::ApiStart() {
  if (!initialized_ && !Initialize(InitSource::kLinkIn)) return -1;
  if (tracing_off_) return -1;
  Control(&CaptureStateMachine::OnApiStart);
  return 0;
}

int CollectorImpl::ApiStop() {
  if (!initialized_ || tracing_off_) return -1;
  Control(&CaptureStateMachine::OnApiStop);
  return 0;
}

int CollectorImpl::ApiFlush() {
  if (!initialized_ || tracing_off_ || getpid() != owner_pid_) return -1;
  cuptiActivityFlushAll(0);
  uint64_t ticket = flush_generation_.fetch_add(1) + 1;
  flush_requested_ = true;
  Wake();
  std::unique_lock<std::mutex> lock(done_mu_);
  done_cv_.wait_for(lock, std::chrono::seconds(10),
                    [&] { return flushed_generation_.load() >= ticket || writer_done_.load(); });
  return 0;
}

void CollectorImpl::RangePush(const char* name) {
  if (t_ranges == nullptr) t_ranges = new std::vector<std::pair<uint64_t, const char*>>();
  t_ranges->emplace_back(Now(), name != nullptr ? name : "");
}

void CollectorImpl::RangePop() {
  if (t_ranges == nullptr || t_ranges->empty()) return;
  HostEvent e;
  e.kind = HostEvent::kRange;
  e.start_ns = t_ranges->back().first;
  e.end_ns = Now();
  e.name = t_ranges->back().second;
  e.thread_id = ThreadId();
  t_ranges->pop_back();
  PushHostEvent(std::move(e));
}

void CollectorImpl::Step(uint64_t step) {
  HostEvent e;
  e.kind = HostEvent::kStep;
  e.start_ns = Now();
  e.step = step;
  e.thread_id = ThreadId();
  PushHostEvent(std::move(e));
}

void CollectorImpl::Shutdown(const char* reason) {
  if (!initialized_ || tracing_off_ || getpid() != owner_pid_) return;
  if (shut_down_.exchange(true)) return;
  bool closed;
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    uint64_t now = Now();
    closed = ApplyLocked(capture_->OnExit(now), now);
  }
  if (closed) AfterWindowClosed();
  if (!torn_down_) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  finish_reason_ = reason;
  finish_requested_ = true;
  Wake();
  {
    std::unique_lock<std::mutex> lock(done_mu_);
    done_cv_.wait_for(lock, std::chrono::seconds(20), [&] { return writer_done_.load(); });
  }
  if (writer_done_ && writer_thread_.joinable()) {
    writer_thread_.join();
  } else if (writer_thread_.joinable()) {
    writer_thread_.detach();
    Warn("the trace writer did not finish within 20 s; the trace may lack its footer");
  }
}

}  // namespace sightline::collect
