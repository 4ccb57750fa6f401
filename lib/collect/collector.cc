// lib/collect/collector.cc — set-up, CUPTI callbacks and capture control of the
// process-wide collector (see collector.h for threads and lock order).
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lib/collect/collector_impl.h"
#include "lib/collect/nvtx_observer.h"
#include "lib/collect/self_cost.h"
#include "lib/collect/signal_flush.h"
#include "lib/collect/stream_capture.h"
#include "lib/trace/sink.h"

extern "C" {
__attribute__((visibility("hidden"))) int sightline_internal_capturing = 0;
}

namespace sightline::collect {
namespace {

// NVTX_INJECTION64_PATH names the shared object this code is in (the
// injection library): NVTX then initialises through its
// InitializeInjectionNvtx2 (injection/injection.cc).
bool NvtxLoadsThisLibrary() {
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  if (nvtx == nullptr || *nvtx == '\0') return false;
  Dl_info info = {};
  if (dladdr(reinterpret_cast<void*>(&NvtxLoadsThisLibrary), &info) == 0 ||
      info.dli_fname == nullptr) {
    return false;
  }
  char a[4096], b[4096];
  if (realpath(info.dli_fname, b) == nullptr) return false;
  if (std::strchr(nvtx, '/') == nullptr) {
    // A bare name (dlopen searches the library path for it): ours when it
    // is this file's name.
    const char* base = std::strrchr(b, '/');
    return std::strcmp(base != nullptr ? base + 1 : b, nvtx) == 0;
  }
  if (realpath(nvtx, a) == nullptr) return false;
  return std::strcmp(a, b) == 0;
}

CollectorImpl* g_collector = nullptr;

// The C API reads sightline_internal_capturing with a relaxed atomic load on
// any thread (injection/sightline_api.cc); every write is atomic too.
void SetCapturingFlag(bool on) {
  __atomic_store_n(&sightline_internal_capturing, on ? 1 : 0, __ATOMIC_RELAXED);
}

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
  // state: forked_child_ turns the CUPTI callbacks off, the pid check the
  // API entry points.
  SetCapturingFlag(false);
  if (g_collector != nullptr) g_collector->OnForkChild();
}

uint32_t ThreadId() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

thread_local std::vector<std::pair<uint64_t, const char*>>* t_ranges = nullptr;

}  // namespace

Collector& Collector::Get() {
  static CollectorImpl* instance = [] {
    auto* c = new CollectorImpl();  // never destroyed: used from atexit/signals
    g_collector = c;
    return c;
  }();
  return *instance;
}

bool MonitorDefersCupti() {
  static const bool defer = [] {
    monitor::MonitorConfig m = monitor::MonitorConfigFromEnvironment(nullptr, nullptr);
    if (!m.enabled || (m.flight_recorder_s > 0 && m.max_captures > 0)) return false;
    const char* metrics = std::getenv("SIGHTLINE_METRICS");
    if (metrics != nullptr && *metrics != '\0') return false;  // its launch callbacks need CUPTI
    const char* knob = std::getenv("SIGHTLINE_MONITOR_DEFER_CUPTI");
    return knob == nullptr || (std::strcmp(knob, "0") != 0 && std::strcmp(knob, "off") != 0);
  }();
  return defer;
}

void CollectorImpl::OnNvtxMessage(const char* message) {
  // Null in a forked child (OnForkChild): its copy of the agent has no thread.
  monitor::MonitorAgent* agent = monitor_live_.load(std::memory_order_acquire);
  if (agent != nullptr) agent->OnRangeOpened(message, monitor::MonitorAgent::NowNs());
}

CollectorImpl::CollectorImpl() = default;

namespace {
uint64_t MonotonicRawNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + t.tv_nsec;
}
}  // namespace

uint64_t CollectorImpl::Now() {
  // Any thread (the writer computing a --duration deadline, an app thread in
  // a callback) may ask for the time while another thread tears CUPTI down:
  // the call is counted like every other CUPTI call of ours, so the teardown
  // waits for it and nothing calls CUPTI after cuptiFinalize (which would
  // also re-initialise CUPTI). After it: extrapolate from the monotonic
  // clock with the offset measured at start.
  uint64_t ts = 0;
  if (CuptiCall cupti(this); cupti.ok() && cuptiGetTimestamp(&ts) == CUPTI_SUCCESS) return ts;
  return static_cast<uint64_t>(static_cast<int64_t>(MonotonicRawNs()) + clock_offset_ns_);
}

CollectorImpl::CuptiCall::CuptiCall(CollectorImpl* collector) : collector_(collector) {
  collector_->threads_in_cupti_.fetch_add(1);
  if (collector_->torn_down_) {
    collector_->threads_in_cupti_.fetch_sub(1);
    ok_ = false;
  }
}

CollectorImpl::CuptiCall::~CuptiCall() {
  if (ok_) collector_->threads_in_cupti_.fetch_sub(1);
}

bool CollectorImpl::WaitForWriterFlush(int timeout_s) {
  uint64_t ticket = flush_generation_.fetch_add(1) + 1;
  flush_requested_ = true;
  Wake();
  MutexLock lock(done_mu_);
  return done_cv_.WaitFor(done_mu_, std::chrono::seconds(timeout_s), [&] {
    return flushed_generation_.load() >= ticket || writer_done_.load();
  });
}

void CollectorImpl::SetError(const std::string& message) {
  MutexLock lock(error_mu_);
  last_error_ = message;
}

std::string CollectorImpl::last_error() const {
  MutexLock lock(error_mu_);
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

std::unique_ptr<trace::Sink> CollectorImpl::OpenOutput(const std::string& host) {
  const uint32_t pid = static_cast<uint32_t>(owner_pid_);
  OutputChoice choice = ChooseOutputPath(config_, pid, host, nullptr);
  output_path_ = choice.path;
  std::string error;
  trace::FileSinkOptions options;
  options.overwrite = true;
  options.lock = true;  // a live writer's file is never replaced
  bool in_use = false;
  std::unique_ptr<trace::Sink> sink = trace::OpenSink(output_path_, options, &error, &in_use);
  if (sink == nullptr && in_use) {
    // Another process of this run (one that did not know it was not the
    // first, e.g. started without `sightline profile`) writes the name.
    output_path_ = PerProcessPath(output_path_, pid);
    sink = trace::OpenSink(output_path_, options, &error, &in_use);
  }
  if (sink == nullptr) {
    SetError(error);
    return nullptr;
  }
  owns_output_file_ = output_path_.rfind("unix:", 0) != 0;
  if (config_.session_pid == 0) {
    // This is the run's first traced process: its descendants (fork+exec'd
    // workers inherit the environment) write per-process files. The same
    // start-up point already sets NVTX_INJECTION64_PATH (injection.cc).
    setenv("SIGHTLINE_SESSION_PID", std::to_string(pid).c_str(), 0);
  }
  AppendManifest("start", 0, 0);
  return sink;
}

void CollectorImpl::AppendManifest(const char* what, uint64_t gpu_records, uint64_t events) {
  if (config_.manifest_path.empty()) return;
  // One short line per write(2) with O_APPEND: lines of concurrent
  // processes never interleave. Never follows a symlink, never creates.
  int fd = open(config_.manifest_path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  char line[4352];
  int n = std::snprintf(line, sizeof(line), "%s\t%d\t%llu\t%llu\t%s\n", what, owner_pid_,
                        static_cast<unsigned long long>(gpu_records),
                        static_cast<unsigned long long>(events), output_path_.c_str());
  if (n > 0 && static_cast<size_t>(n) < sizeof(line)) {
    ssize_t w = write(fd, line, static_cast<size_t>(n));
    (void)w;
  }
  close(fd);
}

bool CollectorImpl::Initialize(InitSource source) {
  if (initialized_.load()) return !tracing_off_.load();
  if (initializing_.exchange(true)) return false;  // concurrent or re-entrant call
  source_ = source;
  owner_pid_ = getpid();
  config_ = ConfigFromEnvironment(nullptr, &config_problems_);
  for (const std::string& p : config_problems_) Warn(p);
  detach_ = config_.detach == DetachMode::kFinalize;
  unsubscribe_after_ = config_.detach != DetachMode::kKeepSubscriber;
  {
    std::vector<std::string> monitor_problems;
    monitor_config_ = monitor::MonitorConfigFromEnvironment(nullptr, &monitor_problems);
    for (const std::string& p : monitor_problems) Warn(p);
  }
  if (monitor_config_.enabled) {
    // Monitor mode: nothing is recorded until the agent opens a capture
    // window (anomaly, sightline trigger, SIGUSR2); no call-stack callbacks.
    config_.capture = CaptureMode::kApi;
    config_.capture_repeat = true;
    config_.trace_backtrace = false;
    flight_recorder_ = monitor_config_.flight_recorder_s > 0 && monitor_config_.max_captures > 0;
    if (!flight_recorder_) {
      // Nor the launch callbacks of Python stacks and driver-launch records:
      // enabled, they cost every launch all the time, captured or not (on
      // the H200 a monitored eager LM step ran 5-25 % slower with them), and
      // the monitor's budget is 1 % of the step. Captures name kernels and
      // API calls; for Python call sites, `sightline profile` or the flight
      // recorder (which traces all the time anyway). Asked for explicitly
      // (SIGHTLINE_PYTHON_BACKTRACE, SIGHTLINE_DRIVER_LAUNCH_RECORDS), they
      // stay, and their cost with them.
      auto unset = [](const char* name) {
        const char* v = std::getenv(name);
        return v == nullptr || *v == '\0';
      };
      const char* trace_items = std::getenv("SIGHTLINE_TRACE");
      const bool python_asked = !unset("SIGHTLINE_PYTHON_BACKTRACE") ||
                                (trace_items != nullptr && std::strstr(trace_items, "python"));
      if (!python_asked) config_.trace_python = false;
      // As in the config: driver-launch records follow Python stacks.
      if (unset("SIGHTLINE_DRIVER_LAUNCH_RECORDS")) {
        config_.driver_launch_records = config_.trace_python;
      }
    }
  }
  if (source == InitSource::kLinkIn && !config_.capture_set &&
      std::getenv("CUDA_INJECTION64_PATH") == nullptr) {
    config_.capture = CaptureMode::kApi;  // linked in only: the program decides
  }
  // As ConfigFromEnvironment does for capture modes: windows open after the
  // context exists, when runtime API records enabled API by API never arrive
  // (the monitor's captures held 0 API records on the H200, so a per-step
  // sync was invisible to them); windows use the RUNTIME kind.
  if (const char* per_api = std::getenv("SIGHTLINE_RUNTIME_PER_API");
      config_.capture != CaptureMode::kWholeRun && !flight_recorder_ &&
      (per_api == nullptr || *per_api == '\0')) {
    config_.runtime_records_per_api = false;
  }
  capture_ = std::make_unique<CaptureStateMachine>(config_.capture, config_.capture_nvtx_name,
                                                   config_.delay_s, config_.duration_s,
                                                   config_.capture_repeat, config_.capture_skip,
                                                   config_.capture_count);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::unique_ptr<trace::Sink> sink = OpenOutput(host);
  if (sink == nullptr) {
    Warn("cannot open the trace output: " + last_error() + "; tracing is off");
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
  {
    uint64_t ts = 0;
    if (cuptiGetTimestamp(&ts) == CUPTI_SUCCESS) {
      clock_offset_ns_ = static_cast<int64_t>(ts) - static_cast<int64_t>(MonotonicRawNs());
    }
  }
  // Monitor mode: no CUPTI until the first capture, when sightline's NVTX
  // handlers bring the monitor its steps (MonitorDefersCupti); they do when
  // NVTX loads this library (NVTX_INJECTION64_PATH, set by `sightline
  // monitor` and by the injection's start-up), not when it names another.
  nvtx_observed_ = monitor_config_.enabled && MonitorDefersCupti() && NvtxLoadsThisLibrary();
  // Not with callbacks asked for on every launch (Python stacks, driver
  // launch records): their state is built while their callbacks are being
  // enabled, which an attach on the agent thread would race with.
  defer_cupti_ = nvtx_observed_ && config_.metric_set.empty() && !config_.trace_python &&
                 !config_.driver_launch_records && !config_.trace_backtrace;
  cupti_attached_ = !defer_cupti_;
  // Before any callback can run: a child fork()ed from another thread while
  // CUPTI is being set up must already find its callbacks off
  // (forked_child_). Children made without fork()'s handlers (_Fork, a raw
  // clone) are not seen; CUDA does not work in them anyway.
  pthread_atfork(nullptr, nullptr, &AtForkChild);
  if (!defer_cupti_ && !SetUpCupti()) {
    tracing_off_ = true;
    initialized_ = true;
    writer_.reset();
    if (owns_output_file_) unlink(output_path_.c_str());
    AppendManifest("off", 0, 0);
    return false;
  }
  if (config_.trace_backtrace) StackCollector::WarmUp();
  SelfCost::SetEnabled(config_.self_cost);
  if (!defer_cupti_) StartStackAb();
  writer_thread_ = std::thread([this] { WriterMain(); });
  std::atexit(&AtExitTrampoline);
  InstallSignalFlush(&SignalRequestTrampoline, this, 3000);
  if (monitor_config_.enabled) StartMonitor();
  if (!config_.quiet && monitor_config_.enabled) {
    std::fprintf(stderr, "sightline: monitoring pid %d (captures -> %s)\n", owner_pid_,
                 output_path_.c_str());
    if (flight_recorder_) {
      std::fprintf(stderr,
                   "sightline: flight recorder on: CUPTI records all the time, a capture "
                   "includes the last %.3g s before its trigger (at most %u MiB held)\n",
                   monitor_config_.flight_recorder_s, monitor_config_.flight_recorder_mb);
    }
  } else if (!config_.quiet) {
    std::fprintf(stderr, "sightline: profiling pid %d -> %s (capture: %s%s)\n", owner_pid_,
                 output_path_.c_str(), config_.CaptureDescription().c_str(),
                 config_.capture == CaptureMode::kProfilerApi && !config_.trace_driver_api
                     ? "; driver cuProfilerStart/Stop need -t cuda-driver"
                     : "");
  }
  {
    MutexLock lock(control_mu_);
    CaptureAction action = capture_->Begin(Now());
    ApplyLocked(action, Now());
    if (flight_recorder_ && !activities_on_) SetActivities(true);  // into the ring
  }
  initialized_ = true;
  return true;
}

bool CollectorImpl::SetUpCupti() {
  CUptiResult r = cuptiSubscribe(&subscriber_, &CallbackTrampoline, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    if (warned_other_client_.exchange(true)) return false;  // said once (monitor: each capture retries)
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
  // Our pool hands out buffers already zeroed (cleared by the writer thread
  // after their records were read), so CUPTI need not clear 8 MiB on the
  // application thread each time one fills (cupti_activity.h,
  // CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER).
  uint8_t zeroed = 1;
  attr_size = sizeof(zeroed);
  Check(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &attr_size,
                                  &zeroed),
        "set zeroed activity buffers");
  if (!Check(cuptiActivityRegisterCallbacks(&BufferRequestedTrampoline,
                                            &BufferCompletedTrampoline),
             "cuptiActivityRegisterCallbacks")) {
    Warn(last_error() + "; tracing is off");
    cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
    return false;
  }
  Check(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE), "enable resource callbacks");
  // The API callbacks enabled only for Python stacks and driver-launch
  // records (for_stacks below; minus any another part enables too): the ones
  // SIGHTLINE_AB_STACKS_MS switches (collector_stack_ab.cc).
  // Of those, ab_py_cbids_: the ones only Python stacks enable (not the
  // launch callbacks that driver-launch records need anyway).
  bool for_stacks = false;
  bool for_python = false;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> for_others;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> for_launch_records;
  ab_cbids_.clear();
  ab_py_cbids_.clear();
  auto note = [&](CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    (for_stacks ? ab_cbids_ : for_others).emplace_back(domain, cbid);
    if (for_stacks) (for_python ? ab_py_cbids_ : for_launch_records).emplace_back(domain, cbid);
  };
  auto enable_rt = [&](CUpti_CallbackId cbid) {
    Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid), "enable callback");
    note(CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  };
  auto enable_drv = [&](CUpti_CallbackId cbid) {
    Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid), "enable callback");
    note(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  };
  enable_rt(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
  if (config_.capture == CaptureMode::kProfilerApi) {
    enable_rt(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    enable_rt(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
    if (config_.trace_driver_api) {  // driver callbacks cost every driver call (below)
      enable_drv(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
      enable_drv(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    }
  }
  // Without the driver kind, the kernels libraries launch through the driver
  // (cuBLAS/cuBLASLt GEMMs, cuDNN, Triton: most of a transformer step's GPU
  // time) would have no API record: no launch time, thread or call stack.
  // Only the four driver launch callbacks are enabled, and each outermost
  // call (not inside a runtime call) becomes an API record (CallbackApi).
  // SIGHTLINE_DRIVER_LAUNCH_RECORDS=0 turns this off.
  callback_driver_launches_ =
      config_.trace_cuda && !config_.trace_driver_api && config_.driver_launch_records;
  for_stacks = true;
  if (callback_driver_launches_) {
    for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
      if (IsLaunchCbid(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) enable_drv(cbid);
    }
    // Callbacks of every runtime launch call (cudaLaunch*, __cudaLaunch*,
    // cooperative and graph launches included): a driver launch inside one is
    // that call's own (t_runtime_depth), not a second API record.
    for (CUpti_CallbackId cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS) continue;
      if (IsLaunchCbid(CUPTI_CB_DOMAIN_RUNTIME_API, cbid) ||
          IsLaunchApiName(CUPTI_CB_DOMAIN_RUNTIME_API, name)) {
        enable_rt(cbid);
      }
    }
  }
  if (config_.trace_python) {
    for_python = true;
    // Runtime callbacks of the calls that get a Python stack; driver ones only
    // with -t cuda-driver (any driver callback costs every driver call, see
    // below), so direct driver launches (Triton) get stacks only then.
    python_ = std::make_unique<PythonStackCollector>(config_.python_require_gil);
    python_->SetWakeWriter([](void* self) { static_cast<CollectorImpl*>(self)->Wake(); }, this);
    auto fill = [&](CUpti_CallbackDomain domain, CUpti_CallbackId size,
                    std::vector<uint8_t>* table) {
      table->assign(size, 0);
      for (CUpti_CallbackId cbid = 1; cbid < size; ++cbid) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS) name = nullptr;
        if (IsPythonStackApi(domain, cbid, name, config_.trace_memory)) (*table)[cbid] = 1;
      }
    };
    fill(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, &python_rt_cbids_);
    if (config_.trace_driver_api) {
      fill(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, &python_drv_cbids_);
    } else if (callback_driver_launches_) {
      python_drv_cbids_.assign(CUPTI_DRIVER_TRACE_CBID_SIZE, 0);
      for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
        if (IsLaunchCbid(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) python_drv_cbids_[cbid] = 1;
      }
    }
    for (CUpti_CallbackId cbid = 0; cbid < python_rt_cbids_.size(); ++cbid) {
      if (python_rt_cbids_[cbid] != 0) enable_rt(cbid);
    }
    for (CUpti_CallbackId cbid = 0; cbid < python_drv_cbids_.size(); ++cbid) {
      if (python_drv_cbids_[cbid] != 0) enable_drv(cbid);
    }
  }
  for_stacks = false;
  for_python = false;
  if (config_.trace_backtrace) {
    if (config_.backtrace_threshold_us >= 0) {
      Check(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API), "enable runtime cbs");
    } else {
      for (CUpti_CallbackId cbid = 0; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
        if (IsSyncCbid(CUPTI_CB_DOMAIN_RUNTIME_API, cbid) ||
            (config_.trace_memory && IsAllocationCbid(CUPTI_CB_DOMAIN_RUNTIME_API, cbid))) {
          enable_rt(cbid);
        }
      }
    }
    // Driver-API callbacks only with driver tracing (-t cuda-driver). On the
    // H200 a PyTorch op cost +7.0 us with the runtime + driver sync-call
    // callbacks enabled and +3.3 us with neither (5 interleaved rounds,
    // bench/overhead/README.md run C; torch.profiler +3.6).
    // A runtime callback (cudaDeviceReset) was enabled in both, so the
    // difference is most likely the driver domain: with any driver callback
    // enabled CUPTI dispatches every driver call, and a PyTorch op makes
    // several. Runtime-API programs (PyTorch, most CUDA C++) synchronise
    // through the runtime callbacks, which stay.
    if (config_.trace_driver_api) {
      for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
        if (IsSyncCbid(CUPTI_CB_DOMAIN_DRIVER_API, cbid) ||
            (config_.trace_memory && IsAllocationCbid(CUPTI_CB_DOMAIN_DRIVER_API, cbid))) {
          enable_drv(cbid);
        }
      }
    }
  }
  if (detach_ && !config_.trace_backtrace) {
    // The detach runs from an outermost runtime API exit (MaybeTearDown):
    // without the backtrace callbacks, the synchronising calls provide it.
    for (CUpti_CallbackId cbid = 0; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
      if (IsSyncCbid(CUPTI_CB_DOMAIN_RUNTIME_API, cbid)) enable_rt(cbid);
    }
  }
  // Step ranges and markers (ForwardNvtxToMonitor), unless sightline's NVTX
  // handlers bring them (and OnNvtx forwards only while no NVTX instance
  // went through those handlers: never twice).
  if (monitor_config_.enabled && !nvtx_observed_) {
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
          CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangeStartA,
          CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
          CUPTI_CBID_NVTX_nvtxMarkA, CUPTI_CBID_NVTX_nvtxMarkEx,
          CUPTI_CBID_NVTX_nvtxDomainMarkEx}) {
      Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid), "enable NVTX cb");
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
  if (config_.trace_nccl) {
    // NCCL's range payloads (size, communicator): OnNcclNvtx.
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRangePushEx}) {
      Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid), "enable NVTX cb");
    }
  }
  if (config_.gpu_metrics) {
    PmSamplerConfig pc;
    pc.devices = config_.gpu_metrics_devices;
    pc.interval_ns = 1000000000u / config_.gpu_metrics_hz;
    pc.quiet = config_.quiet;
    // The sampler keeps the samples inside the capture windows
    // (SetRecording in ApplyLocked; a whole-run capture is one window).
    pm_sampler_ = PmSampler::Create(
        pc,
        [this](PmSampleBatch&& batch) {
          HostEvent e;
          e.kind = HostEvent::kGpuMetrics;
          e.samples = std::make_shared<PmSampleBatch>(std::move(batch));
          PushHostEvent(std::move(e));
        },
        [this](const std::string& message) { Warn(message); });
    if (activities_on_.load()) pm_sampler_->SetRecording(true, Now());  // deferred set-up
    using GetCurrentFn = int (*)(CUcontext*);
    auto get_current = reinterpret_cast<GetCurrentFn>(dlsym(RTLD_DEFAULT, "cuCtxGetCurrent"));
    CUcontext ctx = nullptr;
    if (get_current != nullptr && get_current(&ctx) == 0 && ctx != nullptr) {
      pm_sampler_->OnContextCreated(ctx);  // link-in after CUDA started
    }
  }
  if (!config_.metric_set.empty()) {
    KernelLaunchHookConfig hc = HookConfigFromCollectorConfig(config_);
    hc.on_in_place = [this](bool in_place) { SetKernelKindInPlace(in_place); };
    hc.on_unseen_kernels = [this](uint64_t n) { OnUnseenPassKernels(n); };
    hc.stream_captures = &captures_;
    if (config_.metric_inplace_untraced()) {
      MutexLock lock(kernel_kind_mu_);
      kernel_kind_.set_in_place_kind(CUPTI_ACTIVITY_KIND_INVALID);
    }
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
      // Graph and cooperative launches, stream captures: no metric pass may
      // hold them (KernelLaunchHook::OnUnhookedWork, stream_capture.h).
      for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
        if (IsUnhookedLaunchCbid(cbid) || IsStreamCaptureBeginCbid(cbid) ||
            IsStreamCaptureEndCbid(cbid)) {
          enable_drv(cbid);
        }
      }
      if (config_.metric_inplace_untraced()) untraced_passes_ = true;
      // Per-range metrics: every push and pop (the hook keeps each thread's
      // nesting depth).
      hook_wants_nvtx_ = hook_->WantsNvtx();
      hook_wants_graphs_ = hook_->WantsGraphLaunches();
      if (hook_wants_nvtx_) {
        for (CUpti_CallbackId cbid :
             {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
              CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
              CUPTI_CBID_NVTX_nvtxDomainRangePop}) {
          Check(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid), "enable NVTX cb");
        }
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
  // Each id once (a launch call is enabled both for the driver-launch
  // records and for its Python stack: run AE printed 97 ids, 78 distinct),
  // none that another part needs.
  std::sort(ab_cbids_.begin(), ab_cbids_.end());
  std::sort(for_others.begin(), for_others.end());
  ab_cbids_.erase(std::unique(ab_cbids_.begin(), ab_cbids_.end()), ab_cbids_.end());
  ab_cbids_.erase(std::remove_if(ab_cbids_.begin(), ab_cbids_.end(),
                                 [&](const auto& c) {
                                   return std::binary_search(for_others.begin(), for_others.end(), c);
                                 }),
                  ab_cbids_.end());
  std::sort(for_launch_records.begin(), for_launch_records.end());
  std::sort(ab_py_cbids_.begin(), ab_py_cbids_.end());
  ab_py_cbids_.erase(std::unique(ab_py_cbids_.begin(), ab_py_cbids_.end()), ab_py_cbids_.end());
  ab_py_cbids_.erase(
      std::remove_if(ab_py_cbids_.begin(), ab_py_cbids_.end(),
                     [&](const auto& c) {
                       return std::binary_search(for_others.begin(), for_others.end(), c) ||
                              std::binary_search(for_launch_records.begin(),
                                                 for_launch_records.end(), c);
                     }),
      ab_py_cbids_.end());
  return true;
}

void CollectorImpl::SetKernelKindInPlace(bool in_place) {
  MutexLock lock(kernel_kind_mu_);
  const bool recording = config_.trace_cuda && activities_on_.load();
  const uint64_t t0 = Now();
  const KernelKindSwitch::Outcome outcome = kernel_kind_.SetInPlace(in_place, recording);
  kernels_untraced_.store(kernel_kind_.untraced(), std::memory_order_relaxed);
  if (outcome == KernelKindSwitch::Outcome::kSwitched ||
      outcome == KernelKindSwitch::Outcome::kFailed) {
    kernel_kind_generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  switch (outcome) {
    case KernelKindSwitch::Outcome::kFailed: {
      const CUpti_ActivityKind now = kernel_kind_.kind();
      const std::string what =
          !kernel_kind_.back_on()
              ? "no kernel activity kind is enabled now: kernels are written from their launch "
                "calls, without durations"
          : now == CUPTI_ACTIVITY_KIND_KERNEL
              ? "kernels are traced with the KERNEL kind from now on (each ~1 us longer while "
                "measured in place)"
              : "kernels stay traced with CONCURRENT_KERNEL (in-place counters include its "
                "instrumentation)";
      const std::string message =
          std::string(in_place ? "switching the kernel activity kind for in-place metrics"
                               : "switching the kernel activity kind back after in-place metrics") +
          "; " + what;
      Check(kernel_kind_.last_error(), message.c_str());
      break;
    }
    case KernelKindSwitch::Outcome::kSwitched:
      if (config_.metric_debug) {
        std::fprintf(stderr, "sightline: kernels traced with %s (switch %u took %.3f ms)\n",
                     !in_place                 ? "CONCURRENT_KERNEL again"
                     : kernel_kind_.untraced() ? "no kind (not traced) while launches are measured "
                                                 "in place"
                                               : "KERNEL (serialized, not instrumented) while "
                                                 "launches are measured in place",
                     kernel_kind_.switches(), (Now() - t0) / 1e6);
      }
      break;
    case KernelKindSwitch::Outcome::kUnchanged:
    case KernelKindSwitch::Outcome::kDeferred:
    case KernelKindSwitch::Outcome::kGivenUp:
      break;
  }
}

void CollectorImpl::OnUnseenPassKernels(uint64_t kernels) {
  // Traced with the KERNEL kind, they are in the trace; with no kind, lost.
  if (!kernels_untraced_.load(std::memory_order_relaxed)) return;
  untraced_kernels_lost_.fetch_add(kernels, std::memory_order_relaxed);
  if (config_.metric_inplace_trace != CollectorConfig::InPlaceTrace::kAuto) {
    if (!unseen_warned_.exchange(true)) {
      Warn(std::to_string(kernels) + " kernels ran in a metric pass without a launch call "
           "sightline hooks (e.g. inside a CUDA graph launch) while kernels were not traced "
           "(SIGHTLINE_METRICS_INPLACE_TRACE=none): they have no record (counted lost)");
    }
    return;
  }
  {
    MutexLock lock(kernel_kind_mu_);
    // The next passes (this one is over) traced with the KERNEL kind.
    kernel_kind_.set_in_place_kind(CUPTI_ACTIVITY_KIND_KERNEL);
  }
  Warn(std::to_string(kernels) + " kernels ran in a metric pass without a launch call sightline "
       "hooks (e.g. inside a CUDA graph launch) while kernels were not traced: they have no "
       "record (counted lost); later passes trace kernels with the KERNEL kind");
}

void CollectorImpl::OnUnhookedLaunchWhileUntraced() {
  bool switched = false;
  {
    MutexLock lock(kernel_kind_mu_);
    if (!kernel_kind_.untraced()) return;  // another thread was first
    kernel_kind_.set_in_place_kind(CUPTI_ACTIVITY_KIND_KERNEL);
    const bool recording = config_.trace_cuda && activities_on_.load();
    const KernelKindSwitch::Outcome outcome = kernel_kind_.SetInPlace(true, recording);
    kernels_untraced_.store(kernel_kind_.untraced(), std::memory_order_relaxed);
    kernel_kind_generation_.fetch_add(1, std::memory_order_acq_rel);
    switched = outcome == KernelKindSwitch::Outcome::kSwitched;
  }
  if (!unhooked_warned_.exchange(true)) {
    Warn(std::string("a CUDA graph or cooperative launch ran while kernels measured in place were "
                     "not traced: ") +
         (switched ? "kernels are traced with the KERNEL kind from now on (each ~1 us longer "
                     "while measured in place)"
                   : "switching to the KERNEL kind failed; its kernels may have no record"));
  }
}

void CollectorImpl::SetActivities(bool enable) {
  // Held throughout: a switch of the kernel kind (a launching thread, the
  // hook) sees activities_on_ and the enabled kind agree.
  MutexLock kind_lock(kernel_kind_mu_);
  const CUpti_ActivityKind kernel_kind = kernel_kind_.kind();
  std::vector<CUpti_ActivityKind> kinds;
  if (config_.trace_cuda) {
    if (kernel_kind != CUPTI_ACTIVITY_KIND_INVALID) kinds.push_back(kernel_kind);
    kinds.insert(kinds.end(),
                 {CUPTI_ACTIVITY_KIND_MEMCPY,
                  CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD});
    if (!config_.runtime_records_per_api) kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (config_.graph_launch_records) kinds.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    if (config_.trace_memory) {
      kinds.push_back(CUPTI_ACTIVITY_KIND_MEMORY2);
      kinds.push_back(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
    }
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
  SelectApiRecords(enable);
  activities_on_ = enable;
  SetCapturingFlag(enable);
}

bool CollectorImpl::ApiSkipped(const char* name) const {
  return InApiSkipList(config_.api_skip, name);
}

void CollectorImpl::SelectApiRecords(bool enable) {
  // The skip list is applied at the source, so high-frequency no-op queries
  // (cudaGetDevice, cudaStreamIsCapturing, ... that PyTorch calls around
  // every op) cost no record; the converter applies the same list again.
  // Runtime records are enabled API by API (all but the skip list), the
  // RUNTIME kind never: with the kind on and the skipped APIs switched off
  // afterwards, the skipped calls still cost — a PyTorch op (a launch and a
  // few cudaGetDevice-style queries) paid +6.5 µs under sightline that way
  // and +2.1 µs this way, with the same records (H200, bench/overhead run
  // H, 4 of 4 rounds cheaper). SIGHTLINE_RUNTIME_PER_API=0 restores the
  // kind. The driver kind (-t cuda-driver) is still enabled whole.
  //
  // The callback ids of each list are looked up once (a window opened every
  // step would otherwise ask CUPTI the names of ~450 runtime APIs at every
  // opening).
  std::call_once(api_cbids_once_, [this] {
    auto each = [](CUpti_CallbackDomain domain, CUpti_CallbackId end, auto fn) {
      for (CUpti_CallbackId cbid = 1; cbid < end; ++cbid) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS) fn(cbid, name);
      }
    };
    each(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
         [&](CUpti_CallbackId cbid, const char* name) {
           (ApiSkipped(name) ? runtime_skipped_cbids_ : runtime_kept_cbids_).push_back(cbid);
         });
    each(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
         [&](CUpti_CallbackId cbid, const char* name) {
           if (ApiSkipped(name)) driver_skipped_cbids_.push_back(cbid);
         });
  });
  if (config_.trace_cuda && config_.runtime_records_per_api) {
    for (CUpti_CallbackId cbid : runtime_kept_cbids_) {
      cuptiActivityEnableRuntimeApi(cbid, enable ? 1 : 0);
    }
  } else if (config_.trace_cuda && enable && !config_.api_skip.empty()) {
    for (CUpti_CallbackId cbid : runtime_skipped_cbids_) cuptiActivityEnableRuntimeApi(cbid, 0);
  }
  if (config_.trace_driver_api && enable && !config_.api_skip.empty()) {
    for (CUpti_CallbackId cbid : driver_skipped_cbids_) cuptiActivityEnableDriverApi(cbid, 0);
  }
}

bool CollectorImpl::ApplyLocked(CaptureAction action, uint64_t now_ns) {
  if (action == CaptureAction::kNone) return false;
  CostScope cost(CostPart::kCapture);
  if (action == CaptureAction::kStart) {
    if (flight_recorder_) {
      ++recorder_captures_;
      HostEvent open;
      open.kind = HostEvent::kRecorderOpen;
      open.start_ns = now_ns;
      PushHostEvent(std::move(open));
    }
    if (!activities_on_ && !torn_down_) SetActivities(true);
    if (pm_sampler_ != nullptr) pm_sampler_->SetRecording(true, now_ns);
    if (hook_ != nullptr) hook_->OnCaptureStart();
    return false;
  }
  if (action == CaptureAction::kStop) {
    // With the flight recorder, recording goes on into the ring (what ran
    // until now is still written) while another capture can come; after the
    // last one it stops like a plain capture.
    if (flight_recorder_ && recorder_captures_ >= monitor_config_.max_captures) {
      flight_recorder_ = false;
    }
    if (flight_recorder_ && !shut_down_) {
      HostEvent close;
      close.kind = HostEvent::kRecorderClose;
      close.start_ns = now_ns;
      PushHostEvent(std::move(close));
    } else if (activities_on_) {
      SetActivities(false);
    }
    if (pm_sampler_ != nullptr && !(flight_recorder_ && !shut_down_)) {
      pm_sampler_->SetRecording(false, now_ns);
    }
    HostEvent w;
    w.kind = HostEvent::kWindow;
    w.start_ns = capture_->window_start_ns();
    w.end_ns = now_ns;
    w.index = capture_->window_index();
    w.name = capture_->label();
    w.trigger = capture_->trigger();
    PushHostEvent(std::move(w));
    if (capture_->trigger() == CaptureTrigger::kNvtx && config_.trace_nvtx) {
      // The range that opened the window was pushed before recording started,
      // so CUPTI has no record of it: write it from the callbacks' times.
      HostEvent r;
      r.kind = HostEvent::kRange;
      r.app_range = true;
      r.start_ns = capture_->window_start_ns();
      r.end_ns = now_ns;
      r.name = config_.capture_nvtx_name;
      r.thread_id = ThreadId();
      PushHostEvent(std::move(r));
    }
    if (capture_->finished() && !shut_down_) last_window_closed_ = true;
    return true;
  }
  return false;
}

void CollectorImpl::AfterWindowClosed() {
  CostScope cost(CostPart::kCapture);
  if (const uint64_t n = untraced_launches_.exchange(0); n > 0 && config_.metric_debug) {
    std::fprintf(stderr,
                 "sightline: %llu kernel launches measured in place without being traced, "
                 "written from their launch calls\n",
                 static_cast<unsigned long long>(n));
  }
  if (hook_ != nullptr) {
    const uint64_t withheld = captures_.withheld() - captures_withheld_reported_;
    captures_withheld_reported_ += withheld;
    const size_t open = captures_.open();
    if ((withheld > 0 || open > 0) && !config_.quiet) {
      std::fprintf(stderr,
                   "sightline: %llu kernel launches got no metrics: made while a CUDA graph "
                   "capture was in progress (the range profiler would invalidate it)%s\n",
                   static_cast<unsigned long long>(withheld),
                   open > 0 ? "; a capture is still in progress: no metrics until it ends" : "");
    }
    auto result = std::make_shared<MetricCaptureResult>(hook_->OnCaptureEnd());
    HostEvent m;
    m.kind = HostEvent::kMetrics;
    m.metrics = std::move(result);
    PushHostEvent(std::move(m));
  }
  if (last_window_closed_.exchange(false)) teardown_pending_ = true;
  flush_requested_ = true;
  Wake();
}

void CollectorImpl::Control(CaptureAction (CaptureStateMachine::*fn)(uint64_t)) {
  if (tracing_off_ || !initialized_) return;
  bool closed;
  {
    MutexLock lock(control_mu_);
    uint64_t now = Now();
    closed = ApplyLocked((capture_.get()->*fn)(now), now);
  }
  if (closed) AfterWindowClosed();
}

void CollectorImpl::PushHostEvent(HostEvent event) {
  MutexLock lock(host_mu_);
  // Windows and the flight recorder's open/close are never dropped: a lost
  // close would leave the recorder writing for ever, a lost open would send
  // a capture to the ring.
  const bool control = event.kind == HostEvent::kWindow || event.kind == HostEvent::kRecorderOpen ||
                       event.kind == HostEvent::kRecorderClose;
  if (host_events_.size() >= (1u << 20) && !control) {
    ++host_events_dropped_;
    return;
  }
  host_events_.push_back(std::move(event));
}

void CollectorImpl::PushCallbackApi(const CallbackApi& api) {
  MutexLock lock(host_mu_);
  if (callback_apis_.size() >= (1u << 20)) {
    ++host_events_dropped_;
    return;
  }
  callback_apis_.push_back(api);
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

bool CollectorImpl::SynchronizeContexts() {
  // On a helper thread, bounded: the app's queued work may wait for
  // something this thread does later (a peer's NCCL call, a host-written
  // flag), so waiting inline could hang the app. The helper switches its
  // stream-capture mode to relaxed so that a graph another thread is
  // capturing in global mode is not invalidated. Any failure or timeout:
  // false, and the caller stays attached.
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) return false;
  using CtxFn = int (*)(CUcontext);
  using PopFn = int (*)(CUcontext*);
  using SyncFn = int (*)();
  using ModeFn = int (*)(int*);
  auto push = reinterpret_cast<CtxFn>(dlsym(cuda, "cuCtxPushCurrent_v2"));
  auto pop = reinterpret_cast<PopFn>(dlsym(cuda, "cuCtxPopCurrent_v2"));
  auto sync = reinterpret_cast<SyncFn>(dlsym(cuda, "cuCtxSynchronize"));
  auto mode = reinterpret_cast<ModeFn>(dlsym(cuda, "cuThreadExchangeStreamCaptureMode"));
  dlclose(cuda);  // still loaded by the app (RTLD_NOLOAD succeeded)
  if (push == nullptr || pop == nullptr || sync == nullptr || mode == nullptr) return false;
  struct Shared {
    Mutex mu;
    CondVar cv;
    bool done SL_GUARDED_BY(mu) = false;
    bool ok SL_GUARDED_BY(mu) = true;
  };
  auto shared = std::make_shared<Shared>();
  std::vector<CUcontext> contexts;
  {
    MutexLock lock(contexts_mu_);
    contexts = contexts_;
  }
  std::thread([shared, contexts, push, pop, sync, mode] {
    int relaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED
    bool ok = mode(&relaxed) == 0;
    for (CUcontext ctx : contexts) {
      if (!ok) break;
      if (push(ctx) != 0) { ok = false; break; }
      ok = sync() == 0;
      CUcontext popped = nullptr;
      pop(&popped);
    }
    MutexLock lock(shared->mu);
    shared->ok = ok;
    shared->done = true;
    shared->cv.NotifyAll();
  }).detach();
  MutexLock lock(shared->mu);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!shared->done) {
    if (!shared->cv.WaitUntil(shared->mu, deadline)) {
      if (!shared->done) return false;  // the helper stays blocked; it owns only `shared` and copies
    }
  }
  return shared->ok;
}

void CollectorImpl::Quiesce() {
  // Activity recording is already off (the last window closed); here the
  // API and NVTX callbacks go too, so nothing of ours runs on the app's
  // calls any more (no backtraces, no NVTX bookkeeping), and then the
  // subscriber itself. Both are safe while app threads are inside a
  // callback (the domains are off first; those finish normally), unlike
  // cuptiFinalize. Measured on the H200 (bench/overhead/README.md, runs
  // E-G, launch loop after the capture vs no profiler, medians of 3-6 runs):
  // callbacks off but subscribed +54, +67 %; unsubscribed +22, +62, +29 %;
  // CUPTI alone with its kinds disabled +2..+16 % when they were enabled
  // before the context existed, +19 % when enabled after it (as a capture
  // start does) — that part is CUPTI's. Only cuptiFinalize
  // (SIGHTLINE_DETACH=1, crashes on CUDA 13.0) gets within noise. With the
  // metrics hook the subscriber stays (context destruction releases the
  // hook's per-context state); SIGHTLINE_DETACH=keep keeps it too.
  if (quiesced_ || subscriber_ == nullptr) return;
  quiesced_ = true;
  {
    CuptiCall cupti(this);
    if (!cupti.ok()) return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // the last window's records
    // With the metrics hook the launch callbacks stay: a profiled launch holds
    // the hook's lock from its enter to its exit callback, and an exit that
    // never comes would leave it held (none should be in flight here — the
    // hook admits no launch after its capture end — but this is cheap).
    std::vector<CUpti_CallbackDomain> domains = {CUPTI_CB_DOMAIN_NVTX};
    if (hook_ == nullptr) {
      domains.push_back(CUPTI_CB_DOMAIN_RUNTIME_API);
      domains.push_back(CUPTI_CB_DOMAIN_DRIVER_API);
    }
    for (CUpti_CallbackDomain domain : domains) {
      Check(cuptiEnableDomain(0, subscriber_, domain), "cuptiEnableDomain(0)");
    }
  }
  SetCapturingFlag(false);
  bool unsubscribed = false;
  if (unsubscribe_after_ && hook_ == nullptr) {
    // The resource callbacks go with the subscriber, so CUPTI's dropped
    // counts are read now and the context list is forgotten (a context
    // destroyed later would not be removed from it any more).
    CollectDroppedRecords();
    {
      MutexLock lock(contexts_mu_);
      contexts_.clear();
    }
    if (CuptiCall cupti(this); cupti.ok()) {
      unsubscribed = Check(cuptiUnsubscribe(subscriber_), "cuptiUnsubscribe");
      if (unsubscribed) subscriber_ = nullptr;
    }
  }
  if (!config_.quiet) {
    std::fprintf(stderr, "sightline: capture finished; recording and API callbacks are off for the "
                         "rest of the run%s\n", unsubscribed ? " (CUPTI subscriber removed)" : "");
  }
}

void CollectorImpl::MaybeTearDown() {
  // Runs on an API-exit callback, as NVIDIA's detach sample recommends
  // (finalising elsewhere raced FlushAll: kineto PR #686). Only once the
  // capture can no longer reopen.
  if (!teardown_pending_.exchange(false) || torn_down_) return;
  // Activity recording is already off (the window closed), but CUPTI left
  // attached keeps costing the app: on the H200 an empty-kernel launch loop
  // ran +33..+54 % slower after the capture than without a profiler, and
  // within noise of it after cuptiFinalize (bench/overhead, AFTER lines).
  // Detaching is still opt-in (SIGHTLINE_DETACH=1): on CUDA 13.0 / driver
  // 580 the app crashed (SIGSEGV) after a successful finalize — before the
  // context synchronisation below in 5 of 8 --duration runs, after it in 0
  // of 30 runs of tests/gpu/teardown_stress.sh (short tails after the
  // detach) but in 8 of 9 runs of `--duration 1 -- fragmented_kernels
  // --steps=20000`, mid-run (the app never printed its result; without
  // detaching 3 of 3 finished). Those runs detached from whatever API exit
  // came next, possibly a driver call nested in a runtime call; from an
  // outermost exit (as Kineto does) still 4 of 5 crashed (teardown_stress
  // case D, 2026-11-30).
  // NVIDIA lists CUDA 13.0 crashes after finalize fixed in 13.2 (PAPI PR
  // #594); the app's safety comes first.
  if (!detach_) return;
  // 0. No kernel of the app in flight: a --duration window closes while the
  // app keeps launching, and finalising with an instrumented kernel still
  // running crashed the app on the H200 (2-5 of 10 runs of
  // tests/gpu/teardown_stress.sh case A; the capture-range case, which
  // stops after a synchronize, never did). 1. Every record into our pool,
  // 2. the writer converts them all, 3. no thread of ours calls CUPTI any
  // more, 4. detach.
  // Abandoned before anything was torn down: the writer quiesces instead.
  auto abandon = [this](const char* why) {
    Warn(std::string(why) + "; CUPTI stays attached");
    detach_ = false;
    teardown_pending_ = true;
    Wake();
  };
  if (!SynchronizeContexts()) {
    abandon("the application's GPU work did not drain within 5 s (or could not be waited for)");
    return;
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (!WaitForWriterFlush(10)) {
    abandon("the writer did not drain the buffers in time");
    return;
  }
  CollectDroppedRecords();  // counters must be read before CUPTI forgets them
  torn_down_ = true;
  // Bounded: a thread stuck inside CUPTI must not hang the app; then CUPTI
  // stays attached (nothing of ours calls it any more either way).
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (threads_in_cupti_.load() > 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      Warn("a thread stayed inside CUPTI for 2 s; CUPTI stays attached");
      return;
    }
    std::this_thread::yield();
  }
  if (subscriber_ != nullptr) {
    Check(cuptiUnsubscribe(subscriber_), "cuptiUnsubscribe");
    subscriber_ = nullptr;
  }
  Check(cuptiFinalize(), "cuptiFinalize");
  SetCapturingFlag(false);
  if (!config_.quiet) {
    std::fprintf(stderr, "sightline: capture finished; CUPTI detached, the application runs "
                         "without instrumentation from here on\n");
  }
}

void CollectorImpl::RequestSignalFlush(bool finish) {
  if (finish) signal_finish_.store(true);
  signal_requested_.store(true);
  Wake();
}

int CollectorImpl::ApiStart() {
  if (!initialized_ && !Initialize(InitSource::kLinkIn)) return -1;
  if (tracing_off_) return -1;
  // The program's own window in monitor mode with CUPTI deferred (not from
  // a forked child: CUPTI and our locks are the parent's).
  if (defer_cupti_ && (getpid() != owner_pid_ || !AttachCupti())) return -1;
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
  if (cupti_attached_) {
    if (CuptiCall cupti(this); cupti.ok()) cuptiActivityFlushAll(0);
  }
  return WaitForWriterFlush(10) ? 0 : -1;
}

int CollectorImpl::FlushAfterCapture() {
  if (!initialized_ || tracing_off_ || getpid() != owner_pid_) return -1;
  // The monitor's capture just closed and is analysed next: the buffers
  // CUPTI has not completed are flushed too, once the GPU has finished the
  // window's work (bounded wait), so no record comes back incomplete. A
  // plain flush returns only completed buffers: the monitor analysed its
  // baseline capture from 2 of its 10 steps (H200, run M). Not while a
  // window is open or the flight recorder records into its ring (checked
  // again after the wait: the program may have opened one).
  auto quiet = [this] {
    MutexLock lock(control_mu_);
    return !capture_->capturing() && !activities_on_;
  };
  bool force = quiet() && SynchronizeContexts() && quiet();
  if (cupti_attached_) {
    if (CuptiCall cupti(this); cupti.ok()) {
      cuptiActivityFlushAll(force ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    }
  }
  return WaitForWriterFlush(10) ? 0 : -1;
}

void CollectorImpl::RangePush(const char* name) {
  if (t_ranges == nullptr) t_ranges = new std::vector<std::pair<uint64_t, const char*>>();
  t_ranges->emplace_back(Now(), name != nullptr ? name : "");
}

void CollectorImpl::RangePop() {
  if (t_ranges == nullptr || t_ranges->empty()) return;
  if (!cupti_attached_) {  // as in Step()
    t_ranges->pop_back();
    return;
  }
  HostEvent e;
  e.kind = HostEvent::kRange;
  e.start_ns = t_ranges->back().first;
  e.end_ns = Now();
  e.name = t_ranges->back().second;
  e.thread_id = ThreadId();
  t_ranges->pop_back();
  PushHostEvent(std::move(e));
}

bool CollectorImpl::AttachCupti() {
  if (cupti_attached_.load()) return true;
  MutexLock lock(attach_mu_);  // one attach (no CUPTI callback takes it)
  if (cupti_attached_.load()) return true;
  if (!SetUpCupti()) {
    // Tried again at the next capture (another CUPTI client, e.g. a
    // torch.profiler session, may have let go by then); said once.
    if (!attach_failed_.exchange(true)) {
      Warn("monitor: CUPTI could not be attached for a capture; monitoring goes on, and the "
           "next capture tries again");
    }
    return false;
  }
  if (NvtxObservedInstances() == 0) {
    Warn("monitor: no NVTX library initialised through sightline (NVTX_INJECTION64_PATH set "
         "after NVTX's first use?): step ranges were seen only through CUPTI, from now on");
  }
  // Contexts created before the subscription (no resource callback came for
  // them): the primary contexts that are active, for the dropped-record
  // counts and the end-of-run synchronisation.
  using GetCountFn = int (*)(int*);
  using GetDeviceFn = int (*)(int*, int);
  using StateFn = int (*)(int, unsigned int*, int*);
  using RetainFn = int (*)(CUcontext*, int);
  using ReleaseFn = int (*)(int);
  auto get_count = reinterpret_cast<GetCountFn>(dlsym(RTLD_DEFAULT, "cuDeviceGetCount"));
  auto get_device = reinterpret_cast<GetDeviceFn>(dlsym(RTLD_DEFAULT, "cuDeviceGet"));
  auto state = reinterpret_cast<StateFn>(dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxGetState"));
  auto retain = reinterpret_cast<RetainFn>(dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRetain"));
  auto release = reinterpret_cast<ReleaseFn>(dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRelease_v2"));
  int count = 0;
  if (get_count != nullptr && get_device != nullptr && state != nullptr && retain != nullptr &&
      release != nullptr && get_count(&count) == 0) {
    for (int i = 0; i < count; ++i) {
      int dev = 0, active = 0;
      unsigned int flags = 0;
      if (get_device(&dev, i) != 0 || state(dev, &flags, &active) != 0 || !active) continue;
      CUcontext ctx = nullptr;
      if (retain(&ctx, dev) != 0) continue;
      release(dev);  // active: the application holds it; we only read its handle
      MutexLock contexts(contexts_mu_);
      if (std::find(contexts_.begin(), contexts_.end(), ctx) == contexts_.end()) {
        contexts_.push_back(ctx);
      }
    }
  }
  cuda_ready_ = true;
  cupti_attached_ = true;
  if (!config_.quiet) {
    std::fprintf(stderr, "sightline: monitor: CUPTI attached for the first capture (none before it)\n");
  }
  return true;
}

uint32_t CollectorImpl::MonitorStart() {
  if (!initialized_ || tracing_off_) return 0;
  if (defer_cupti_ && !AttachCupti()) return 0;
  uint32_t opened = 0;
  bool closed = false;
  {
    MutexLock lock(control_mu_);
    if (capture_->capturing()) return 0;  // the program's own window: not ours to close
    const uint64_t now = Now();
    const uint32_t before = capture_->window_index();
    closed = ApplyLocked(capture_->OnApiStart(now), now);
    if (capture_->capturing() && capture_->window_index() != before) {
      opened = capture_->window_index();
    } else {
      // Held back (delay, count): withdraw the request, or the window would
      // open later with nobody to close it.
      closed = ApplyLocked(capture_->OnApiStop(now), now) || closed;
    }
  }
  if (closed) AfterWindowClosed();
  return opened;
}

void CollectorImpl::StartMonitor() {
  monitor::CaptureControl control;
  control.start = [this] { return MonitorStart(); };
  control.stop_and_flush = [this] { return ApiStop() == 0 && FlushAfterCapture() == 0; };
  control.trace_path = output_path_;
  monitor_ = monitor::MonitorAgent::Start(monitor_config_, std::move(control));
  monitor_live_.store(monitor_.get(), std::memory_order_release);
}

void CollectorImpl::Step(uint64_t step) {
  if (monitor_ != nullptr) monitor_->OnStepBegin(monitor::MonitorAgent::NowNs());
  // Recorded only while capturing (sightline_step() comes here between
  // captures too, for the monitor); with CUPTI deferred and not attached
  // the writer writes nothing yet, so nothing piles up in the queue.
  if (__atomic_load_n(&sightline_internal_capturing, __ATOMIC_RELAXED) == 0 || !cupti_attached_) {
    return;
  }
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
  StopStackAb();
  // The agent first: a capture in progress is closed and flushed while the
  // writer still runs.
  if (monitor_ != nullptr) {
    monitor_->Stop();
    if (SelfCost::Enabled()) SelfCost::Add(CostPart::kMonitor, monitor_->thread_cpu_ns());
  }
  // The last PM samples reach the writer before it finishes.
  if (pm_sampler_ != nullptr) pm_sampler_->Stop();
  bool closed;
  {
    MutexLock lock(control_mu_);
    uint64_t now = Now();
    closed = ApplyLocked(capture_->OnExit(now), now);
  }
  if (closed) AfterWindowClosed();
  if (cupti_attached_) {
    if (CuptiCall cupti(this); cupti.ok()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  finish_reason_ = reason;
  finish_requested_ = true;
  Wake();
  {
    MutexLock lock(done_mu_);
    done_cv_.WaitFor(done_mu_, std::chrono::seconds(20), [&] { return writer_done_.load(); });
  }
  if (writer_done_ && writer_thread_.joinable()) {
    writer_thread_.join();
  } else if (writer_thread_.joinable()) {
    writer_thread_.detach();
    Warn("the trace writer did not finish within 20 s; the trace may lack its footer");
  }
}

}  // namespace sightline::collect
