// lib/monitor/monitor_config.h — monitor-mode settings, read from SIGHTLINE_*
// variables (`sightline monitor` flags map onto them 1:1):
//
//   SIGHTLINE_MODE=monitor        monitor instead of trace: no activity records
//                                 until a capture; step times, NVML, endpoint
//   SIGHTLINE_METRICS_LISTEN      HOST:PORT | :PORT | unix:PATH ("" = no endpoint)
//   SIGHTLINE_STEP_RANGE          comma list of NVTX range/marker names that
//                                 open a step; NAME* matches a prefix
//                                 (default "train_step,step,ProfilerStep#*");
//                                 sightline_step() (C API) always counts
//   SIGHTLINE_MONITOR_INTERVAL_MS NVML sample period (default 1000, 50..60000)
//   SIGHTLINE_CAPTURE_STEPS       steps one capture records (default 10)
//   SIGHTLINE_CAPTURE_MAX_S       a capture ends after this even without steps (30)
//   SIGHTLINE_MAX_CAPTURES        captures per process at most (default 5)
//   SIGHTLINE_BASELINE_CAPTURE    bool (default off): once the step detector's
//                                 baseline is full (window + group steps) and
//                                 no anomaly came first, capture the steady
//                                 state once, so later captures can be
//                                 compared with it; not with the flight
//                                 recorder, not counted in MAX_CAPTURES. Off
//                                 by default: after a capture CUPTI leaves
//                                 the app slower (H200 launch loop after a
//                                 bounded `sightline profile` capture:
//                                 +11..+39 %), and an eager LM step ran a
//                                 median ~21 points slower with the baseline
//                                 capture than without (5 rounds), so an
//                                 always-on baseline would charge every
//                                 monitored run
//   SIGHTLINE_FLIGHT_RECORDER_S   seconds of lead-up a capture includes: CUPTI
//                                 stays on and the last N s of events wait in
//                                 memory (0 = off, default; 1..3600)
//   SIGHTLINE_FLIGHT_RECORDER_MB  most memory that ring holds (default 1024)
//   SIGHTLINE_ANOMALY_COOLDOWN_S  no anomaly-triggered capture sooner than this
//                                 after the last one ended (default 60; on-demand
//                                 triggers ignore it): a repeat is deferred to its
//                                 end (taken if the steps are still slow), a step
//                                 anomaly slower than the last capture's by the
//                                 detector's margin is taken at once
//   SIGHTLINE_ANOMALY_P           chance under the baseline's noise below which a
//                                 group of steps is slow (default 1e-5)
//   SIGHTLINE_ANOMALY_MIN_PCT     and at least this % over the median (default 10)
//   SIGHTLINE_ANOMALY_STEPS       steps judged together, 1..1000 (default 8; raised
//                                 to the smallest group that can fire: 5 by default)
//   SIGHTLINE_ANOMALY_WARMUP      steps before judging (default 16)
//   SIGHTLINE_JOB                 the job label (default: program name)
//   SIGHTLINE_MONITOR_EVENTS      file each finished capture appends a line to
//                                 (set by `sightline monitor`, which analyzes it)
//   SIGHTLINE_MONITOR_DEVICES     NVML indexes to report (default: per
//                                 CUDA_VISIBLE_DEVICES, else all)
//   SIGHTLINE_NVML_LIB            NVML library to load (default libnvidia-ml.so.1)
//   SIGHTLINE_QUIET               bool (lib/trace/setting_value.h), as for the collector
// Parsing is pure (getenv function passed in); bad values are reported and
// the default kept, like lib/collect/config.h.
#ifndef SIGHTLINE_LIB_MONITOR_MONITOR_CONFIG_H_
#define SIGHTLINE_LIB_MONITOR_MONITOR_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/monitor/anomaly_detector.h"

namespace sightline::monitor {

struct MonitorConfig {
  bool enabled = false;
  std::string listen;
  std::vector<std::string> step_names = {"train_step", "step", "ProfilerStep#*"};
  uint32_t interval_ms = 1000;
  uint32_t capture_steps = 10;
  double capture_max_s = 30;
  uint32_t max_captures = 5;
  bool baseline_capture = false;  // see SIGHTLINE_BASELINE_CAPTURE above
  double flight_recorder_s = 0;        // 0: off (collector: lib/collect/flight_recorder.h)
  uint32_t flight_recorder_mb = 1024;
  double cooldown_s = 60;
  StepDetectorOptions step;
  UtilizationDetectorOptions utilization;
  MemoryDetectorOptions memory;
  // Device detectors (utilization, memory) start judging once the step
  // detector is past its warm-up, or, in a program without steps, this long
  // after the agent started (start-up grows memory by design).
  uint32_t device_grace_ms = 60000;
  std::string job;
  std::string rank;  // from RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID
  std::string events_path;
  std::string devices;
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES
  std::string nvml_library;
  bool quiet = false;
  bool handle_sigusr2 = true;  // tests turn it off
};

MonitorConfig MonitorConfigFromEnvironment(const char* (*getenv_fn)(const char*),
                                           std::vector<std::string>* problems);

// True when `name` matches one of `patterns` (exact, or prefix for "NAME*").
bool MatchesStepName(const std::vector<std::string>& patterns, const char* name);

}  // namespace sightline::monitor

#endif  // SIGHTLINE_LIB_MONITOR_MONITOR_CONFIG_H_
