// tests/export/synthetic_trace.h — deterministic synthetic training-loop
// traces written with trace::TraceWriter, for the export / report / serve
// tests and benchmarks (and the sightline_trace_gen tool).
//
// Each step on the main thread: an NVTX push/pop range "train_step", optional
// host work (the GPU idles: a CPU-bound input pipeline), a pageable or pinned
// HtoD cudaMemcpyAsync, `kernels_per_step` cudaLaunchKernel calls each
// launching one kernel on stream 7 (names cycle through kKernelNames), a
// cudaStreamSynchronize (API call + CUPTI sync record), a step marker and an
// NVTX marker. Every GPU record carries its launch's correlation id.
// Expected counts are exposed so tests check numbers, not just "no crash".
#ifndef SIGHTLINE_TESTS_EXPORT_SYNTHETIC_TRACE_H_
#define SIGHTLINE_TESTS_EXPORT_SYNTHETIC_TRACE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "lib/trace/sink.h"
#include "lib/trace/writer.h"

namespace sightline::testing {

inline constexpr const char* kKernelNames[] = {"gemm_bf16_128x128", "layernorm_fwd",
                                               "relu_fwd", "softmax_fwd"};
inline constexpr uint32_t kMainThread = 4100;
inline constexpr uint32_t kStream = 7;

struct SyntheticOptions {
  uint32_t pid = 4242;
  std::string host = "synthetic-host";
  int32_t rank = -1;
  uint32_t steps = 10;
  uint32_t kernels_per_step = 20;
  uint64_t kernel_ns = 50'000;
  uint64_t launch_ns = 4'000;      // duration of each cudaLaunchKernel
  uint64_t launch_gap_ns = 1'000;  // CPU time between consecutive launches
  uint64_t host_work_ns = 0;       // CPU-only work at the start of each step
  uint64_t copy_bytes = 4 << 20;
  bool pageable_copy = true;
  size_t chunk_bytes = 16 << 10;
  uint64_t start_ns = 1'000'000'000;
  // Hostile-input tests: the first kernel name replaced (control characters,
  // "<!--<script>", ...), a command-line argument added, and one extra kernel
  // at this timestamp (0 = none; e.g. near INT64_MAX so that the trace's
  // timestamps span the int64 range).
  std::string kernel_name;
  std::string extra_argument;
  uint64_t outlier_kernel_ns = 0;
  // Called after every step (serve tests pace or kill clients here).
  std::function<void(uint32_t step)> after_step;
};

struct SyntheticCounts {
  uint64_t kernels = 0, memcpys = 0, syncs = 0, apis = 0, nvtx_ranges = 0, nvtx_markers = 0,
           steps = 0, losses = 0, capture_windows = 0;
  uint64_t launches = 0;  // APIs with GPU work (kernels + memcpys)
  uint64_t total() const {
    return kernels + memcpys + syncs + apis + nvtx_ranges + nvtx_markers + steps + losses +
           capture_windows;
  }
  uint64_t last_ns = 0;
};

// Expected counts for `options` (same arithmetic as WriteSyntheticTrace).
SyntheticCounts ExpectedCounts(const SyntheticOptions& options);

// Writes the trace to `sink`. Returns false and sets *error on failure.
bool WriteSyntheticTrace(std::unique_ptr<trace::Sink> sink, const SyntheticOptions& options,
                         std::string* error, bool finish = true);
// Convenience: to a file path (overwritten) or "unix:PATH".
bool WriteSyntheticTraceTo(const std::string& spec, const SyntheticOptions& options,
                           std::string* error);

// A kernel-replay metrics trace (header metric_set "full"): replayed kernels
// without timestamps, their launches (5 ms and 9 ms, 200 ms long: the
// passes run inside the call) and metric ranges measuring 12345 ns and
// 2000 ns, in either order; a third replayed kernel has no range.
bool WriteReplayTraceTo(const std::string& path, std::string* error);

// Two cudaStreamSynchronize calls (thread 5, 1000-2000 ns and 3000-4000 ns)
// with the same Python stack ("Model.\"forward\"" at /work/train.py:42 <-
// "<module>" at line 7) and native stack ("main" in /usr/bin/app+0x40).
bool WriteStacksTraceTo(const std::string& path, std::string* error);

// PM samples (--gpu-metrics) of device 0: three 100 us samples from 1 ms of
// SM active (50, NaN, 75 %), DRAM read (2e12, 1e12, 0 B/s) and the SM clock
// (1.5e9, 1.98e9, 1.98e9 Hz), one GpuMetricSamplesEvent.
bool WritePmSamplesTraceTo(const std::string& path, std::string* error);

}  // namespace sightline::testing

#endif  // SIGHTLINE_TESTS_EXPORT_SYNTHETIC_TRACE_H_
