// lib/collect/collector_impl.h — internals of the collector (see collector.h);
// split over collector.cc (set-up, CUPTI callbacks, capture control) and
// collector_writer.cc (the writer thread). Not a public header.
#ifndef SIGHTLINE_LIB_COLLECT_COLLECTOR_IMPL_H_
#define SIGHTLINE_LIB_COLLECT_COLLECTOR_IMPL_H_

#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/collect/api_classes.h"
#include "lib/collect/buffer_pool.h"
#include "lib/collect/call_stacks.h"
#include "lib/collect/python_stacks.h"
#include "lib/collect/capture_state.h"
#include "lib/collect/collector.h"
#include "lib/collect/launch_callbacks.h"
#include "lib/collect/config.h"
#include "lib/collect/kernel_kind_switch.h"
#include "lib/collect/kernel_launch_hook.h"
#include "lib/collect/stream_capture.h"
#include "lib/collect/nccl_payload.h"
#include "lib/collect/pm_sampler.h"
#include "lib/collect/record_converter.h"
#include "lib/monitor/monitor_agent.h"
#include "lib/monitor/monitor_config.h"
#include "lib/trace/sink.h"
#include "lib/trace/thread_annotations.h"
#include "lib/trace/writer.h"

namespace sightline::collect {

// Events produced outside CUPTI (link-in API, capture windows, metrics, NCCL
// NVTX payloads); the writer thread interns their strings.
struct HostEvent {
  // kRecorderOpen / kRecorderClose (start_ns = when): a capture opened /
  // closed in monitor mode with the flight recorder (lib/collect/flight_recorder.h).
  enum Kind : uint8_t {
    kRange,
    kStep,
    kWindow,
    kMetrics,
    kNcclPayload,
    kRecorderOpen,
    kRecorderClose,
    kGpuMetrics,
    kUntracedKernel
  } kind = kRange;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t step = 0;
  uint32_t thread_id = 0;
  uint32_t index = 0;
  CaptureTrigger trigger = CaptureTrigger::kWholeRun;
  std::string name;  // range name / window label
  // kRange: the application's own range (default NVTX domain), not one of
  // sightline's C API ranges (domain "sightline").
  bool app_range = false;
  std::shared_ptr<MetricCaptureResult> metrics;
  // kNcclPayload: decoded at an nvtxDomainRangePushEx in domain NCCL; start_ns
  // = CUPTI timestamp of the callback, thread_id = CUPTI's thread id.
  NcclPayload nccl;
  // kGpuMetrics: a batch of PM samples (lib/collect/pm_sampler.h).
  std::shared_ptr<PmSampleBatch> samples;
  // kUntracedKernel: a launch measured in place while kernels were not
  // traced (RecordConverter::AddUntracedKernel; `name` its kernel's name);
  // `maybe_traced`: the kind changed during its launch call.
  KernelEvent kernel;
  bool maybe_traced = false;
};


class CollectorImpl final : public Collector {
 public:
  CollectorImpl();

  bool Initialize(InitSource source) override;
  bool initialized() const override { return initialized_.load(); }
  int ApiStart() override;
  int ApiStop() override;
  int ApiFlush() override;
  void RangePush(const char* name) override;
  void RangePop() override;
  void Step(uint64_t step) override;
  void Shutdown(const char* reason) override;
  std::string last_error() const override;
  void OnNvtxMessage(const char* message) override;
  // pthread_atfork child handler: a forked child (a DataLoader worker) has
  // a copy of the monitor agent without its thread, and perhaps a lock held
  // at the fork; its NVTX calls no longer reach it, and its CUPTI callbacks
  // return at once (forked_child_, read instead of a getpid() system call
  // in every callback: ~160 ns each, four per PyTorch op with Python stacks).
  void OnForkChild() {
    forked_child_.store(true, std::memory_order_relaxed);
    monitor_live_.store(nullptr, std::memory_order_release);
  }

  // CUPTI entry points (static trampolines call these).
  void OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  void OnBufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                         size_t valid_size);
  void OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  // Signal handler path (async-signal-safe).
  void RequestSignalFlush(bool finish);

 private:
  // collector.cc
  bool Check(CUptiResult result, const char* what);
  void SetError(const std::string& message);
  void Warn(const std::string& message);
  bool SetUpCupti();
  // collector_stack_ab.cc: SIGHTLINE_AB_STACKS_MS (benchmarks only).
  void StartStackAb();
  void StopStackAb();
  // Chooses this process's trace path (ChooseOutputPath; a name held by a
  // live writer of the same run falls back to the per-process name) and
  // opens it; nullptr (last_error() says why) when it cannot.
  std::unique_ptr<trace::Sink> OpenOutput(const std::string& host);
  // One line "WHAT\tPID\tGPU_RECORDS\tEVENTS\tPATH" to SIGHTLINE_MANIFEST.
  void AppendManifest(const char* what, uint64_t gpu_records, uint64_t events);
  void SetActivities(bool enable);
  // The hook's on_in_place (kernel_launch_hook.h): kernels traced with the
  // serialized, uninstrumented CUPTI_ACTIVITY_KIND_KERNEL while launches are
  // measured in place, with CONCURRENT_KERNEL otherwise.
  void SetKernelKindInPlace(bool in_place) SL_EXCLUDES(kernel_kind_mu_);
  // The hook's on_unseen_kernels: kernels a pass ran that no hooked launch
  // announced; lost when not traced (and auto falls back to KERNEL).
  void OnUnseenPassKernels(uint64_t kernels) SL_EXCLUDES(kernel_kind_mu_);
  // cuStreamBeginCapture* / cuStreamEndCapture* enter and exit (hook only).
  void OnStreamCaptureCall(CUpti_CallbackId cbid, const CUpti_CallbackData* data);
  // Runtime API records on/off API by API (or the skip list switched off
  // under the whole kind); the driver kind's skip list.
  void SelectApiRecords(bool enable);
  // SelectApiRecords' callback ids, looked up once: runtime APIs recorded and
  // skipped (config_.api_skip), driver APIs skipped.
  std::once_flag api_cbids_once_;
  std::vector<CUpti_CallbackId> runtime_kept_cbids_, runtime_skipped_cbids_, driver_skipped_cbids_;
  bool ApiSkipped(const char* name) const;  // config_.api_skip, CUPTI's _vN suffix ignored
  // Applies a state-machine answer; returns true when a window just closed.
  bool ApplyLocked(CaptureAction action, uint64_t now_ns) SL_REQUIRES(control_mu_);
  // The monitor's capture start: opens a window and returns its index, or 0
  // (and leaves no pending request behind) when none opened — a window the
  // program opened is open, a delay or a capture count holds it back.
  uint32_t MonitorStart() SL_EXCLUDES(control_mu_);
  void AfterWindowClosed() SL_EXCLUDES(control_mu_);  // metrics, flush request
  void Control(CaptureAction (CaptureStateMachine::*fn)(uint64_t)) SL_EXCLUDES(control_mu_);
  void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data);
  void OnApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data);
  void OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data);
  // NCCL tracing: learns NCCL's domain handle, decodes NCCL's range payloads.
  void OnNcclNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data);
  // Monitor mode (SIGHTLINE_MODE=monitor, lib/monitor): step ranges and
  // markers opened by the app go to the agent (collector_callbacks.cc).
  // After the metrics hook's exit of a launch: a replayed one asks the writer
  // to flush; one made while kernels are not traced is written from `launch`.
  // `enter_generation`: kernel_kind_generation_ read after the hook's enter
  // of this launch.
  void AfterHookedLaunch(const KernelLaunchInfo& launch, uint64_t enter_generation);
  // A launch the hook does not see (a CUDA graph, a cooperative launch)
  // while kernels are not traced: kernels are traced with the KERNEL kind
  // from now on (its kernels would have no record at all).
  void OnUnhookedLaunchWhileUntraced() SL_EXCLUDES(kernel_kind_mu_);
  void ForwardNvtxToMonitor(CUpti_CallbackId cbid, const CUpti_NvtxData* data);
  // Per-range metrics (--metrics-range nvtx:NAME): pushes and pops to the hook.
  void ForwardNvtxToHook(CUpti_CallbackId cbid, const CUpti_NvtxData* data);
  void StartMonitor();  // collector.cc, after the writer thread started
  // The monitor's flush after closing a capture (its analysis follows):
  // forced, after a bounded wait for the GPU, when no window is open.
  int FlushAfterCapture() SL_EXCLUDES(control_mu_);
  // Deferred CUPTI (MonitorDefersCupti): subscribes at the first capture
  // (the agent thread) or the program's first sightline_start() (SetUpCupti,
  // then the contexts that already exist); false, warned once, when CUPTI
  // cannot be set up: the next capture tries again.
  bool AttachCupti() SL_EXCLUDES(control_mu_, attach_mu_);
  void MaybeTearDown();
  // Writer thread, once no capture window can open any more (default, no
  // SIGHTLINE_DETACH): every API and NVTX callback of ours switched off, so
  // CUPTI no longer dispatches the app's calls to us.
  void Quiesce();
  void PushHostEvent(HostEvent event) SL_EXCLUDES(host_mu_);
  struct CallbackApi;
  void PushCallbackApi(const CallbackApi& api) SL_EXCLUDES(host_mu_);
  void Wake();
  uint64_t Now();

  // collector_writer.cc
  void WriterMain();
  void EnsureHeader();
  void ProcessPending();
  void WriteLossReport();
  void FinishTrace(const std::string& reason);
  void PrintSummary();
  // CUPTI's dropped records so far (ReadDroppedRecords added to
  // cupti_dropped_total_); any thread, no lock of ours held.
  uint64_t CollectDroppedRecords() SL_EXCLUDES(contexts_mu_);
  // Scoped guard around a call of ours into CUPTI that can race with the
  // teardown (MaybeTearDown), on any thread (the writer, application threads
  // in callbacks): counts the thread in threads_in_cupti_ while it lives; ok() is false
  // once CUPTI is torn down, and then nothing may call it (a call would
  // re-initialise CUPTI). The teardown waits for the count to drop to zero
  // before cuptiFinalize.
  //   if (CuptiCall cupti(this); cupti.ok()) cuptiActivityFlushAll(0);
  class CuptiCall {
   public:
    explicit CuptiCall(CollectorImpl* collector);
    ~CuptiCall();
    CuptiCall(const CuptiCall&) = delete;
    CuptiCall& operator=(const CuptiCall&) = delete;
    bool ok() const { return ok_; }

   private:
    CollectorImpl* collector_;
    bool ok_ = true;
  };
  // Waits (bounded) for the work queued on every context we saw (teardown
  // only); false when it could not, and then the teardown is abandoned.
  bool SynchronizeContexts();
  // SIGHTLINE_DETACH=1, read at initialisation; cleared when a teardown is
  // abandoned (the writer then quiesces instead).
  std::atomic<bool> detach_{false};
  // Quiesce also removes the subscriber (not with SIGHTLINE_DETACH=keep).
  bool unsubscribe_after_ = true;
  // The window that just closed was the last one: teardown_pending_ is set
  // once the metrics hook has finished it (AfterWindowClosed), not before —
  // a quiesce while a profiled launch holds the hook would lose its exit.
  std::atomic<bool> last_window_closed_{false};
  bool WaitForWriterFlush(int timeout_s);

  CollectorConfig config_;
  std::vector<std::string> config_problems_;
  std::string output_path_;
  bool owns_output_file_ = false;  // a file of ours (not a socket): removable
  InitSource source_ = InitSource::kInjection;
  std::atomic<bool> initialized_{false};
  std::atomic<bool> initializing_{false};
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> tracing_off_{false};  // degraded: another client, errors
  int owner_pid_ = 0;

  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::unique_ptr<ActivityBufferPool> pool_;
  StackCollector stacks_;
  NativeStackOnce native_once_;  // native stacks of calls with a Python stack
  // Python call stacks (config_.trace_python); the tables say which callback
  // ids capture one (indexed by cbid, filled before the callbacks are on).
  std::unique_ptr<PythonStackCollector> python_;
  std::vector<uint8_t> python_rt_cbids_, python_drv_cbids_;
  // Python stacks without -t cuda-driver: direct driver launches (cuBLAS's
  // and cuDNN's cuLaunchKernelEx, Triton's cuLaunchKernel) get their API
  // record from our launch callbacks (CallbackApi), as CUPTI makes none.
  bool callback_driver_launches_ = false;
  // Monitor mode with SIGHTLINE_FLIGHT_RECORDER_S: CUPTI records all the
  // time; the writer keeps the last seconds in a ring until a capture.
  bool flight_recorder_ = false;     // under control_mu_ after Initialize
  uint32_t recorder_captures_ = 0;   // captures opened (the agent allows max_captures)
  std::unique_ptr<KernelLaunchHook> hook_;
  // --gpu-metrics: created in SetUpCupti, stopped in Shutdown (before the
  // writer's last drain).
  std::unique_ptr<PmSampler> pm_sampler_;
  bool hook_wants_nvtx_ = false;  // set once, before callbacks are enabled for it
  bool hook_wants_graphs_ = false;  // --metrics-range graph; set as hook_wants_nvtx_

  Mutex control_mu_;
  // Set at initialisation; the state machine itself only under control_mu_.
  std::unique_ptr<CaptureStateMachine> capture_ SL_PT_GUARDED_BY(control_mu_);
  std::atomic<bool> activities_on_{false};  // read on app threads (callbacks)
  std::atomic<bool> teardown_pending_{false};
  bool quiesced_ = false;  // writer thread only
  // Set once every record is converted and CUPTI is about to be finalised;
  // from then on nobody calls CUPTI (any call would re-initialise it).
  std::atomic<bool> torn_down_{false};
  // Threads of ours (the writer and application threads in our callbacks)
  // inside a CuptiCall.
  std::atomic<int> threads_in_cupti_{0};
  int64_t clock_offset_ns_ = 0;          // CUPTI timestamp - CLOCK_MONOTONIC_RAW

  // The kernel activity kind SetActivities enables (SetKernelKindInPlace
  // switches it); taken after control_mu_ and the hook's lock, never before;
  // under it only error_mu_ (Check → SetError).
  Mutex kernel_kind_mu_;
  KernelKindSwitch kernel_kind_ SL_GUARDED_BY(kernel_kind_mu_){
      [](CUpti_ActivityKind kind, bool enable) {
        return enable ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
      }};

  // SIGHTLINE_METRICS_INPLACE_TRACE=none: no kernel kind is enabled now
  // (set by SetKernelKindInPlace); the hooked launches made meanwhile are
  // written from their launch calls (AfterHookedLaunch).
  std::atomic<bool> kernels_untraced_{false};
  // Bumped at every change of the enabled kernel kind: a launch that saw it
  // move between its enter and exit may have been submitted either way.
  std::atomic<uint64_t> kernel_kind_generation_{0};
  std::atomic<uint64_t> untraced_launches_{0};
  // Kernels CUPTI counted in an untraced pass beyond the launches the hook
  // saw (on_unseen_kernels): no record of them (LossReport).
  std::atomic<uint64_t> untraced_kernels_lost_{0};
  // Stream captures in progress (cuStreamBeginCapture* .. cuStreamEndCapture*,
  // tracked when a metrics hook exists): while any is, no launch reaches the
  // hook (stream_capture.h).
  StreamCaptureTracker captures_;
  uint64_t captures_withheld_reported_ = 0;  // writer/control thread only
  std::atomic<bool> unseen_warned_{false};
  std::atomic<bool> unhooked_warned_{false};
  // Sequence passes may run with no kernel kind (metric_inplace_untraced()
  // and a hook): launches are written untraced (AfterHookedLaunch), graph
  // and cooperative launches are watched. Never in per-range mode, whose
  // switches (to the KERNEL kind) must not make launches "maybe traced".
  bool untraced_passes_ = false;

  Mutex contexts_mu_;  // leaf
  std::vector<CUcontext> contexts_ SL_GUARDED_BY(contexts_mu_);
  // CUPTI's dropped records read so far (its counters reset when read):
  // added to by the writer (loss reports), by application threads (a
  // context being destroyed, the teardown).
  uint64_t cupti_dropped_total_ SL_GUARDED_BY(contexts_mu_) = 0;
  std::atomic<bool> cuda_ready_{false};

  Mutex host_mu_;  // leaf
  std::vector<HostEvent> host_events_ SL_GUARDED_BY(host_mu_);
  uint64_t host_events_dropped_ SL_GUARDED_BY(host_mu_) = 0;
  // API calls timed by our callbacks (callback_driver_launches_), converted
  // by the writer like CUPTI's API records; counted in host_events_dropped_
  // past the cap.
  struct CallbackApi {
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint32_t correlation_id = 0;
    uint32_t thread_id = 0;
    uint32_t cbid = 0;
  };
  std::vector<CallbackApi> callback_apis_ SL_GUARDED_BY(host_mu_);

  mutable Mutex error_mu_;  // leaf
  std::string last_error_ SL_GUARDED_BY(error_mu_);
  std::atomic<bool> warned_other_client_{false};

  // The writer thread: started by Initialize, then only it touches the
  // plain members below (the atomics are flags other threads set).
  std::thread writer_thread_;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> finish_requested_{false};
  std::atomic<bool> flush_requested_{false};
  std::atomic<bool> signal_requested_{false};
  std::atomic<bool> signal_finish_{false};
  std::atomic<bool> writer_done_{false};
  std::atomic<uint64_t> flush_generation_{0};
  std::atomic<uint64_t> flushed_generation_{0};
  // With done_cv_: the writer announces flushed generations and its end
  // (the state itself is atomic: flushed_generation_, writer_done_).
  Mutex done_mu_;
  CondVar done_cv_;
  std::string finish_reason_;
  std::unique_ptr<trace::TraceWriter> writer_;
  bool header_written_ = false;
  uint64_t broken_buffers_ = 0;
  uint64_t metric_ranges_dropped_ = 0;
  LossReport last_loss_report_;
  // Writer thread only: periodic cuptiActivityFlushAll calls (SIGHTLINE_METRICS_DEBUG line).
  uint64_t flush_calls_ = 0, flush_ns_total_ = 0, flush_ns_max_ = 0;
  uint64_t forced_flushes_ = 0;  // of those, forced because the pool ran low
  NcclJoinStats nccl_join_stats_;
  // Monitor mode: read once at initialisation; the agent owns its thread and
  // opens/closes capture windows through ApiStart/ApiStop/ApiFlush.
  monitor::MonitorConfig monitor_config_;
  std::unique_ptr<monitor::MonitorAgent> monitor_;  // writer thread: for the exit summary
  // The running agent, for NVTX messages from any thread (OnNvtxMessage).
  std::atomic<monitor::MonitorAgent*> monitor_live_{nullptr};
  std::atomic<bool> forked_child_{false};  // set in a fork()ed child only
  // SIGHTLINE_AB_STACKS_MS: the callbacks switched (SetUpCupti: those it
  // enabled only for Python stacks and driver-launch records), and the stop
  // the exit path sets (no switch once it holds ab_mu_).
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> ab_cbids_;
  // SIGHTLINE_AB_STACKS_PART=python: only what Python stacks add to the
  // default: the callbacks only they enable (ab_py_cbids_) and the stack walk
  // in the launch callbacks that driver-launch records keep (python_walk_on_).
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> ab_py_cbids_;
  std::atomic<bool> python_walk_on_{true};
  Mutex ab_mu_;
  bool ab_stop_ = false;  // ab_mu_
  // Counts those switches (OnApi resets a thread's runtime depth after one).
  std::atomic<uint32_t> ab_generation_{0};
  // Monitor mode: CUPTI subscribed only at the first capture. While
  // cupti_attached_ is false no CUPTI call is made (the writer's periodic
  // flush included).
  bool defer_cupti_ = false;
  // Held only by AttachCupti (the agent thread): one attach. Not
  // control_mu_: SetUpCupti calls into CUPTI, which may call back.
  Mutex attach_mu_;
  std::atomic<bool> cupti_attached_{true};
  std::atomic<bool> attach_failed_{false};
  // NVTX is expected to reach the monitor through sightline's handlers
  // (NVTX_INJECTION64_PATH names this library): the monitor's CUPTI NVTX
  // callbacks are not enabled; OnNvtx also checks NvtxObservedInstances().
  bool nvtx_observed_ = false;
  // NCCL's NVTX domain handle (nvtxDomainHandle_t), once seen being created.
  std::atomic<const void*> nccl_domain_{nullptr};
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_COLLECTOR_IMPL_H_
