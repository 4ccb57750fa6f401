// lib/collect/collector.h — the process-wide CUPTI collector.
//
// One per process, shared by every way in: CUDA_INJECTION64_PATH
// (InitializeInjection), LD_PRELOAD (the driver calls InitializeInjection at
// cuInit because the preloaded library points CUDA_INJECTION64_PATH at
// itself), and the link-in C API (sightline_start). Initialize() is idempotent.
//
// Threads and locks (lock order, STYLE.md #8):
//   * application threads run CUPTI callbacks (API enter/exit, resource, NVTX)
//     and the buffer-requested callback;
//   * CUPTI's own thread runs the buffer-completed callback;
//   * our writer thread owns the TraceWriter, the RecordConverter and the
//     symboliser, calls cuptiActivityFlushAll periodically, and is woken
//     through a pipe (writable from signal handlers).
//   control_mu_ guards the capture state machine and activity enable/disable;
//   host_mu_ guards link-in API events; the pool and the stack queue have leaf
//   mutexes. No mutex of ours is held across cuptiActivityFlushAll,
//   cuptiActivityGetNumDroppedRecords or a call into the KernelLaunchHook.
//   Each field a mutex guards is marked SL_GUARDED_BY (checked by clang's
//   -Wthread-safety, scripts/test.sh stage 5; lib/trace/thread_annotations.h).
//   A CUPTI call that can race with the teardown sits in a CuptiCall scope
//   (collector_impl.h), which the teardown waits for. docs/architecture.md
//   has the whole picture.
//
// Failure policy: every CUPTI/CUDA call goes through Check(), which records the
// first error (last_error()) and degrades; nothing throws or aborts into the
// host. If CUPTI is held by another subscriber, one warning is printed and the
// collector stays off.
#ifndef SIGHTLINE_LIB_COLLECT_COLLECTOR_H_
#define SIGHTLINE_LIB_COLLECT_COLLECTOR_H_

#include <cstdint>
#include <string>

namespace sightline::collect {

enum class InitSource : uint8_t { kInjection = 0, kPreload = 1, kLinkIn = 2 };

// Thin, stable facade; the implementation lives in collector.cc.
class Collector {
 public:
  // The process's collector (created on first call, never destroyed).
  static Collector& Get();

  // Subscribes to CUPTI, enables activity kinds per the configuration and the
  // capture mode, starts the writer thread, registers exit/signal/fork hooks.
  // Returns true when tracing is (or already was) set up.
  virtual bool Initialize(InitSource source) = 0;
  virtual bool initialized() const = 0;

  // Link-in API (sightline.h). Start/stop open and close capture windows when
  // the capture mode is "api" (the default when only linked in).
  virtual int ApiStart() = 0;
  virtual int ApiStop() = 0;
  // Flushes CUPTI buffers and writes a chunk now. Must not be called from a
  // CUPTI callback.
  virtual int ApiFlush() = 0;
  virtual void RangePush(const char* name) = 0;
  virtual void RangePop() = 0;
  virtual void Step(uint64_t step) = 0;

  // Ends the trace: closes the capture, forces CUPTI to flush, writes the
  // footer, stops the writer. Called at exit; idempotent.
  virtual void Shutdown(const char* reason) = 0;

  virtual std::string last_error() const = 0;

  // Monitor mode with sightline's NVTX handlers in front of CUPTI's
  // (nvtx_observer.h): the ASCII message of a push, start or mark, from the
  // application's thread. Does nothing until the monitor runs.
  virtual void OnNvtxMessage(const char* message) = 0;

 protected:
  virtual ~Collector() = default;
};

// Fast flag for the link-in API's range push/pop: non-zero while a capture
// window is open. Read and written only with relaxed atomic builtins
// (__atomic_load_n / __atomic_store_n): a plain int keeps the C symbol.
// Monitor mode defers CUPTI to its first capture (SIGHTLINE_MODE=monitor
// without the flight recorder or hardware metrics; SIGHTLINE_MONITOR_DEFER_CUPTI=0
// turns it off): between captures no CUPTI subscriber exists, and the step
// ranges and markers reach the monitor through sightline's NVTX handlers.
// Decided from the environment alone, so the NVTX initialiser and the
// collector agree whichever runs first.
bool MonitorDefersCupti();

extern "C" int sightline_internal_capturing;

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_COLLECTOR_H_
