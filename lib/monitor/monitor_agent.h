// lib/monitor/monitor_agent.h — the always-on monitor of one process.
//
// Threads and locks:
//   * application threads call OnStepBegin() (NVTX callback or the C API's
//     sightline_step): one atomic exchange and, under steps_mu_ (a leaf
//     mutex held for a push_back into a bounded vector), the step's duration;
//     a full queue counts a drop. OnRangeOpened() also takes the Python
//     hook's allocator marker (OnTorchMemory: the latest sample per device,
//     under steps_mu_; a step boundary while the program marks no steps of
//     its own). Nothing else runs on application threads.
//   * the agent's own thread does everything else: loads and polls NVML,
//     runs the detectors, serves the metrics endpoint, starts and stops
//     captures through CaptureControl (never while holding a lock of ours),
//     appends to the events file, logs to stderr.
//   * SIGUSR2 (and RequestCapture) set an atomic flag and write one byte to
//     the wake pipe: async-signal-safe.
// Failure policy: nothing throws or aborts; an endpoint that cannot listen or
// an NVML that cannot load is one warning on stderr and the rest goes on.
#ifndef SIGHTLINE_LIB_MONITOR_MONITOR_AGENT_H_
#define SIGHTLINE_LIB_MONITOR_MONITOR_AGENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lib/monitor/monitor_config.h"
#include "lib/monitor/metrics_text.h"
#include "lib/trace/thread_annotations.h"
#include "lib/trace/torch_memory_marker.h"

namespace sightline::monitor {

// Name of the agent's thread (/proc/PID/task/*/comm): the handler for SIGUSR2
// is installed before the thread starts, so its presence means a trigger is safe.
inline constexpr const char* kAgentThreadName = "sl-monitor";

// How the agent records a capture (the collector's capture window in the
// injected library; fakes in tests). Called on the agent's thread only.
struct CaptureControl {
  // Opens a capture window; returns its index in the trace (1-based, what
  // `--window capture:N` names), 0 when none opened (tracing off, or a
  // window already open).
  std::function<uint32_t()> start;
  std::function<bool()> stop_and_flush;  // close it, write its records to disk
  std::string trace_path;                // where the records go (for the log)
};

class MonitorAgent {
 public:
  // Starts the agent's thread. Never fails as a whole: problems are warned.
  static std::unique_ptr<MonitorAgent> Start(const MonitorConfig& config, CaptureControl control);
  ~MonitorAgent();  // Stop()
  MonitorAgent(const MonitorAgent&) = delete;
  MonitorAgent& operator=(const MonitorAgent&) = delete;

  // A step the program marked (NVTX step range or marker, the C API's
  // sightline_step) begins now (CLOCK_MONOTONIC ns). From the first one on,
  // only marked steps count. Application threads.
  void OnStepBegin(uint64_t now_ns);
  // An NVTX range/marker named `name` opened: the Python hook's allocator
  // sample (trace::kTorchMemoryMarkerPrefix; it follows every optimizer step,
  // which is a step while the program marks none), else a step when the
  // name matches.
  void OnRangeOpened(const char* name, uint64_t now_ns);
  // PyTorch's allocator after an optimizer step (the latest per device is
  // served). Application threads.
  void OnTorchMemory(const trace::TorchMemoryMarker& sample);
  // On-demand capture (sightline trigger / SIGUSR2). Async-signal-safe.
  void RequestCapture();
  // Ends a capture in progress (writes it), stops the thread. Idempotent.
  void Stop();

  // CPU time the agent's thread used (NVML polls, detectors, the endpoint),
  // known once Stop() returned; 0 before.
  uint64_t thread_cpu_ns() const { return thread_cpu_ns_.load(); }

  // The endpoint's address ("" when none), for logs and tests.
  std::string bound_address() const;
  MetricsSnapshot Snapshot() const;
  const MonitorConfig& config() const { return config_; }

  static uint64_t NowNs();

 private:
  explicit MonitorAgent(const MonitorConfig& config, CaptureControl control);
  void Main();
  void PushStep(uint64_t now_ns);  // a step boundary, whatever its source
  void HandleAnomaly(const Anomaly& anomaly, uint64_t now_ns);
  void StartCapture(const Anomaly& anomaly, uint64_t now_ns);
  bool InCooldown(uint64_t now_ns) const;
  // The last anomaly refused by the cooldown, captured when it ends (a step
  // anomaly only while the steps are still slow).
  void StartDeferredCapture(uint64_t now_ns);
  // Time for the baseline capture: a full detector window of steps judged
  // since the last anomaly (or rejected baseline), at the level before the
  // first anomaly.
  bool BaselineDue() const;
  void FinishCapture(const char* why);
  void AppendEvent(const std::string& line);
  void Log(const std::string& line) const;

  MonitorConfig config_;
  CaptureControl control_;
  std::thread thread_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> thread_cpu_ns_{0};
  std::atomic<bool> capture_requested_{false};
  std::atomic<bool> capturing_{false};  // read on app threads: wake per step
  std::atomic<uint64_t> last_step_ns_{0};
  std::atomic<bool> marked_steps_{false};  // the program marks its own steps

  Mutex steps_mu_;  // leaf
  std::vector<double> pending_steps_ SL_GUARDED_BY(steps_mu_);
  uint64_t steps_dropped_ SL_GUARDED_BY(steps_mu_) = 0;
  std::vector<TorchMemoryGauge> pending_torch_ SL_GUARDED_BY(steps_mu_);  // by device
  bool torch_changed_ SL_GUARDED_BY(steps_mu_) = false;

  mutable Mutex state_mu_;  // the agent thread writes, scrapes and tests read
  MetricsSnapshot snapshot_ SL_GUARDED_BY(state_mu_);
  std::string bound_ SL_GUARDED_BY(state_mu_);

  // Agent thread only.
  StepTimeDetector step_detector_;
  std::vector<UtilizationDropDetector> util_detectors_;
  std::vector<MemoryGrowthDetector> memory_detectors_;
  uint32_t capture_index_ = 0;
  uint32_t capture_steps_seen_ = 0;
  uint32_t settle_steps_ = 0;    // steps after a capture not given to the detector
  uint32_t capture_window_ = 0;  // the open capture's window index in the trace
  uint64_t judged_steps_ = 0;    // steps given to the step detector
  // The detector's level before the first automatic anomaly (0: none yet;
  // -1: a device anomaly came first).
  double normal_level_ = 0;
  std::optional<Anomaly> deferred_;  // refused by the cooldown
  // The step level that started the last capture (0: not a step anomaly): a
  // slower one is captured within the cooldown.
  double last_captured_step_level_ = 0;
  bool baseline_done_ = false;
  uint32_t baseline_captures_ = 0;  // up to kBaselineAttempts: not counted in max_captures
  uint64_t baseline_judged_from_ = 0;  // judged_steps_ at the last anomaly or rejected baseline
  std::vector<double> baseline_steps_;  // step times seen during the baseline capture
  double step_detector_median_at_start_ = 0;
  uint64_t capture_start_ns_ = 0;
  uint64_t last_capture_end_ns_ = 0;
  Anomaly capture_reason_;
};

}  // namespace sightline::monitor

#endif  // SIGHTLINE_LIB_MONITOR_MONITOR_AGENT_H_
