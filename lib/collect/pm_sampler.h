// lib/collect/pm_sampler.h — PM sampling (--gpu-metrics, SIGHTLINE_GPU_METRICS):
// SM active, SM issue, tensor-pipe active, DRAM read/write throughput,
// PCIe and NVLink bytes per second and the SM clock, sampled by the GPU at a
// fixed interval (CUPTI's PM sampling API, cupti_pmsampling.h; nsys's
// --gpu-metrics-devices) through the whole run, on every device the process
// uses or the ones listed.
//
// Threading. Set-up runs on the application's thread, in the CUPTI callback
// of the device's first context (once per device; 0.4-0.6 s on the H200):
// run on a thread of ours it raced the process's exit and crashed inside
// libnvperf_host (H200, a program shorter than the set-up). Set-up:
//   cuptiProfilerInitialize (not allowed inside CUDA's injection entry, so
//   never at the collector's start-up), the chip name, a PM-sampling host
//   object; the metrics (pm_config.h: each quantity's first candidate that
//   configures alone in one pass, then all in one call); then Enable, SetConfig
//   (GPU_TIME_INTERVAL in ns; SYSCLK_INTERVAL where that is refused, as on
//   GA100), a counter-data image of 2 s of samples, Start.
// The sampler's own thread (nice +10), every 100 samples (10..100 ms):
// DecodeData into the image, evaluate the samples completed since the last
// poll that a recording span keeps to GPU values (float), hand them to
// `emit` in batches, re-initialise the image once half of it is harvested.
// Cost on the H200 (10 quantities): 60-90 % of one core at 10 kHz, 6-8 % at
// 1 kHz, the default (bench/metrics/README.md).
// Stop (the process's exit, the collector's shutdown, or a context's
// destruction): Stop, decode until the end of the records, emit the rest,
// Disable. At exit this must run before libnvperf_host's statics go, which
// are registered with atexit when first used: the sampler registers its own
// exit handler after set-up and after its first evaluation.
// libcupti loads libnvperf_host by name: the one beside the libcupti in use
// is loaded first (PyTorch wheels bring their own libcupti; a libnvperf_host
// of another CUDA install found through LD_LIBRARY_PATH crashed decoding).
// SIGHTLINE_GPU_METRICS_DEBUG=1 prints each CUPTI step. Benchmarks only:
// SIGHTLINE_AB_PM_MS=P stops and restarts the sampling every P ms and logs
// each switch to SIGHTLINE_AB_LOG (bench/overhead/ab.sh, case sightline-pm).
//
// Recording: samples are kept only where they overlap a recording span
// (SetRecording: the collector's capture windows; a whole-run capture is one
// span), filtered sample by sample, so a capture window of a few ms keeps its
// samples although the poll thread harvests them every 10-100 ms.
// Losses: a sample CUPTI cannot describe, and any gap between consecutive
// kept samples of one span (one's end, the next one's start) longer than half
// an interval (a hardware-buffer overflow shows as such a gap) count the
// samples the gap would have held
// (stats().samples_dropped → LossReport).
// Any CUPTI error: one warning, that device is not sampled; tracing goes on.
// Not with per-kernel metrics (the range profiler holds the same monitors):
// the config refuses the combination.
#ifndef SIGHTLINE_LIB_COLLECT_PM_SAMPLER_H_
#define SIGHTLINE_LIB_COLLECT_PM_SAMPLER_H_

#include <cuda.h>

#include "lib/collect/pm_spans.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sightline::collect {

struct PmSamplerConfig {
  std::vector<uint32_t> devices;  // CUDA ordinals; empty = every device used
  uint32_t interval_ns = 1000000;  // 1 kHz
  bool quiet = false;
};

struct PmSamplerStats {
  uint64_t samples = 0;
  uint64_t samples_dropped = 0;
  uint32_t devices_sampled = 0;
  uint32_t devices_failed = 0;
  // The sampler's own cost: set-up on the application's thread (context
  // creation callbacks), and CPU time of the poll thread and of the final
  // decode; wall time from the first Start to Stop.
  uint64_t setup_ns = 0;
  uint64_t poll_cpu_ns = 0;
  uint64_t sampling_wall_ns = 0;
};

class PmSampler {
 public:
  using EmitFn = std::function<void(PmSampleBatch&&)>;
  using WarnFn = std::function<void(const std::string&)>;
  // emit and warn are called from the sampler's thread (and from Stop's
  // caller); both must be thread-safe.
  static std::unique_ptr<PmSampler> Create(const PmSamplerConfig& config, EmitFn emit,
                                           WarnFn warn);
  virtual ~PmSampler() = default;

  // Application threads (CUPTI resource callbacks).
  virtual void OnContextCreated(CUcontext context) = 0;
  virtual void OnContextDestroying(CUcontext context) = 0;
  // Capture windows (the collector's control paths): samples outside every
  // recording span are not emitted.
  virtual void SetRecording(bool on, uint64_t now_ns) = 0;
  // Stops every device's sampling, emits what is left, joins the thread.
  // Idempotent.
  virtual void Stop() = 0;
  virtual PmSamplerStats stats() const = 0;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_PM_SAMPLER_H_
