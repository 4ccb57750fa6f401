// tests/gpu_metrics/metrics_harness.cu — drives the range profiler
// (lib/collect/range_profiler.cc, through the KernelLaunchHook interface) from
// its own minimal CUPTI subscriber, on the kernels of
// examples/metrics/metrics_workload.cuh, independently of the injected
// collector. Used by compare_ncu.py (values vs ncu), by the metrics benchmark
// (wall time vs ncu) and to record tests/data/metrics/*.sltrace.
//
//   metrics_harness --metrics SPEC [--repeat N] [--json OUT.jsonl] [--trace OUT.sltrace]
//                   [--kernels REGEX] [--launches K] [--every N] [--replay kernel|spread|auto]
//
// --json writes one line per profiled range:
//   {"index":0,"name":"matmul_naive","correlation":12,"passes":11,
//    "launches":1,"first_correlation":12,"passes_collected":11,"spread":false,
//    "metrics":{"gpu__time_duration.sum":123.0,...}}
// (spread replay: "launches" > 1, "correlation" is the last launch's; an
// incomplete set has passes_collected < passes and no metrics)
// followed by one summary line {"summary":{...}}.
// --trace also records kernel activity (CONCURRENT_KERNEL) and writes a
// sightline trace with the kernels (replayed ones marked) and metric ranges.
#include <cupti.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "examples/metrics/metrics_workload.cuh"
#include "lib/collect/kernel_launch_hook.h"
#include "lib/collect/launch_callbacks.h"
#include "lib/collect/range_profiler.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"

namespace {

using sightline::collect::KernelLaunchHook;
using sightline::collect::KernelLaunchInfo;
using sightline::collect::FillLaunchFromDriverParams;
using sightline::collect::IsLaunchCbid;

KernelLaunchHook* g_hook = nullptr;
std::mutex g_kernels_mu;
std::vector<sightline::KernelEvent> g_kernels;  // from activity records
std::vector<std::string> g_kernel_names;        // parallel

// Launch bookkeeping per thread: the runtime callback of a launch may not carry
// the grid (CUDA 13's __cudaLaunchKernel), the driver callback inside it does.
thread_local int t_runtime_depth = 0;
thread_local uint32_t t_runtime_correlation = 0;
thread_local bool t_entered = false;
thread_local KernelLaunchInfo t_info;

// Where the time of a profiled run goes (seconds): inside the hook's enter
// (enable, image, SetConfig, Start), inside the launch (CUPTI's replay), and
// inside the hook's exit (Stop, decode, evaluate).
double g_enter_s = 0, g_launch_s = 0, g_exit_s = 0;
thread_local std::chrono::steady_clock::time_point t_enter_done;

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
void TimedEnter(const KernelLaunchInfo& info) {
  const auto t = std::chrono::steady_clock::now();
  g_hook->OnLaunchEnter(info);
  g_enter_s += Since(t);
  t_enter_done = std::chrono::steady_clock::now();
}
void TimedExit(const KernelLaunchInfo& info) {
  g_launch_s += Since(t_enter_done);
  const auto t = std::chrono::steady_clock::now();
  g_hook->OnLaunchExit(info);
  g_exit_s += Since(t);
}

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (g_hook == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    const auto* r = static_cast<const CUpti_ResourceData*>(data);
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
      CUdevice dev = 0;
      cuCtxGetDevice(&dev);
      g_hook->OnContextCreated(r->context, static_cast<uint32_t>(dev));
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
      g_hook->OnContextDestroy(r->context);
    }
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && IsLaunchCbid(domain, cbid)) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
      ++t_runtime_depth;
      t_runtime_correlation = cb->correlationId;
    } else {
      if (t_entered) {
        TimedExit(t_info);
        t_entered = false;
      }
      --t_runtime_depth;
    }
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && IsLaunchCbid(domain, cbid)) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
      if (t_entered) return;
      KernelLaunchInfo info;
      info.context = cb->context;
      CUdevice dev = 0;
      cuCtxGetDevice(&dev);
      info.device_id = static_cast<uint32_t>(dev);
      info.correlation_id = t_runtime_depth > 0 ? t_runtime_correlation : cb->correlationId;
      info.kernel_name = cb->symbolName != nullptr ? cb->symbolName : "";
      info.cbid = cbid;
      FillLaunchFromDriverParams(cbid, cb->functionParams, &info);
      t_info = info;
      t_entered = true;
      TimedEnter(t_info);
    } else if (t_entered && t_runtime_depth == 0) {
      TimedExit(t_info);
      t_entered = false;
    }
  }
}

constexpr size_t kActivityBufferBytes = 8u << 20;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kActivityBufferBytes));
  *size = kActivityBufferBytes;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    sightline::KernelEvent e;
    e.start_ns = k->start;
    e.end_ns = k->end;
    e.device_id = k->deviceId;
    e.context_id = k->contextId;
    e.stream_id = k->streamId;
    e.correlation_id = k->correlationId;
    e.grid_x = k->gridX; e.grid_y = k->gridY; e.grid_z = k->gridZ;
    e.block_x = k->blockX; e.block_y = k->blockY; e.block_z = k->blockZ;
    e.registers_per_thread = k->registersPerThread;
    e.static_shared_bytes = k->staticSharedMemory;
    e.dynamic_shared_bytes = k->dynamicSharedMemory;
    e.local_bytes_per_thread = k->localMemoryPerThread;
    e.shared_memory_config_bytes = k->sharedMemoryExecuted;
    e.launch_type = k->launchType;
    e.cluster_x = k->clusterX; e.cluster_y = k->clusterY; e.cluster_z = k->clusterZ;
    g_kernels.push_back(e);
    g_kernel_names.emplace_back(k->name != nullptr ? k->name : "");
  }
  std::free(buffer);
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

sightline::DeviceInfo DeviceInfoOf(int dev) {
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, dev);
  sightline::DeviceInfo d;
  d.id = dev;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.max_warps_per_sm = p.maxThreadsPerMultiProcessor / p.warpSize;
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.registers_per_sm = p.regsPerMultiprocessor;
  d.registers_per_block = p.regsPerBlock;
  d.shared_memory_per_sm = p.sharedMemPerMultiprocessor;
  d.shared_memory_per_block = p.sharedMemPerBlock;
  d.shared_memory_per_block_optin = p.sharedMemPerBlockOptin;
  d.reserved_shared_memory_per_block = p.reservedSharedMemPerBlock;
  d.warp_size = p.warpSize;
  int clock_khz = 0, mem_clock_khz = 0, bus = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, dev);
  d.core_clock_khz = clock_khz;
  d.memory_clock_khz = mem_clock_khz;
  d.memory_bus_width_bits = bus;
  d.global_memory_bytes = p.totalGlobalMem;
  d.l2_cache_bytes = p.l2CacheSize;
  d.memory_bandwidth_gbps = 2.0 * mem_clock_khz * 1e3 * (bus / 8.0) / 1e9;
  d.pci_bus_id = p.pciBusID;
  d.async_engine_count = p.asyncEngineCount;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  sightline::collect::KernelLaunchHookConfig config;
  config.metric_set = "full";
  config.every_nth = 1;
  int repeat = 1;
  int extra_alloc_mb = 0;  // device memory the kernels never touch (replay save/restore cost)
  std::string json_path, trace_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--metrics") config.metric_set = next();
    else if (arg == "--repeat") repeat = std::atoi(next().c_str());
    else if (arg == "--json") json_path = next();
    else if (arg == "--trace") trace_path = next();
    else if (arg == "--kernels") config.kernel_filter = next();
    else if (arg == "--launches") config.launches_per_kernel = std::atoi(next().c_str());
    else if (arg == "--every") config.every_nth = std::atoi(next().c_str());
    else if (arg == "--extra-alloc-mb") extra_alloc_mb = std::atoi(next().c_str());
    else if (arg == "--replay") {
      const std::string mode = next();
      if (mode == "kernel") config.replay = sightline::collect::MetricsReplay::kKernel;
      else if (mode == "spread") config.replay = sightline::collect::MetricsReplay::kSpread;
      else if (mode == "auto") config.replay = sightline::collect::MetricsReplay::kAuto;
      else if (mode == "sequence") config.replay = sightline::collect::MetricsReplay::kSequence;
      else {
        std::fprintf(stderr, "metrics_harness: --replay '%s' is not kernel, spread or auto\n", mode.c_str());
        return 2;
      }
    }
    else {
      std::fprintf(stderr, "metrics_harness: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (cuInit(0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "metrics_harness: no CUDA driver/device\n");
    return 77;
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, OnCallback, nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "metrics_harness: cuptiSubscribe failed\n");
    return 1;
  }
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  if (!trace_path.empty()) {
    cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  std::string error;
  std::unique_ptr<KernelLaunchHook> hook = sightline::collect::CreateKernelLaunchHook(config, &error);
  if (!hook) {
    std::fprintf(stderr, "metrics_harness: %s\n", error.c_str());
    return 3;
  }
  g_hook = hook.get();
  const double setup_s = Since(t0);

  sightline_examples::WorkloadBuffers w;
  if (!sightline_examples::PrepareWorkload() || !sightline_examples::AllocWorkload(&w)) return 1;
  void* extra = nullptr;
  if (extra_alloc_mb > 0) {
    cudaMalloc(&extra, size_t(extra_alloc_mb) << 20);
    cudaMemset(extra, 1, size_t(extra_alloc_mb) << 20);
    cudaDeviceSynchronize();
  }
  for (int r = 0; r < repeat; ++r) {
    if (!sightline_examples::RunWorkloadOnce(w)) return 1;
  }
  sightline::collect::MetricCaptureResult result = hook->OnCaptureEnd();
  const uint32_t passes = hook->num_passes();
  sightline_examples::FreeWorkload(&w);
  if (extra != nullptr) cudaFree(extra);
  if (!trace_path.empty()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::FILE* out = json_path.empty() ? stdout : std::fopen(json_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "metrics_harness: cannot write %s\n", json_path.c_str());
    return 1;
  }
  for (size_t i = 0; i < result.ranges.size(); ++i) {
    const auto& r = result.ranges[i];
    sightline::collect::MetricRangeSpan span;
    if (i < result.spans.size()) span = result.spans[i];
    std::fprintf(out,
                 "{\"index\":%u,\"name\":\"%s\",\"demangled\":\"%s\",\"correlation\":%u,\"passes\":%u,\"launches\":%u,"
                 "\"first_correlation\":%u,\"passes_collected\":%u,\"spread\":%s,\"metrics\":{",
                 r.range_index, JsonEscape(result.range_names[i]).c_str(),
                 JsonEscape(sightline::collect::DemangleKernelName(result.range_names[i])).c_str(),
                 r.correlation_id, r.num_passes, span.launches, span.first_correlation_id, span.passes_collected,
                 span.spread ? "true" : "false");
    for (size_t m = 0; m < r.values.size(); ++m) {
      std::fprintf(out, "%s\"%s\":%.6f", m ? "," : "", result.metric_names[i][m].c_str(), r.values[m].value);
    }
    std::fprintf(out, "}}\n");
  }
  std::fprintf(out,
               "{\"summary\":{\"ranges\":%zu,\"dropped\":%llu,\"passes\":%u,\"seconds\":%.3f,"
               "\"spread_completed\":%llu,\"spread_incomplete\":%llu,\"spread_discarded\":%llu,"
               "\"setup_s\":%.3f,\"enter_s\":%.3f,\"launch_s\":%.3f,\"exit_s\":%.3f,"
               "\"error\":\"%s\",\"last_error\":\"%s\"}}\n",
               result.ranges.size(), static_cast<unsigned long long>(result.ranges_dropped), passes,
               seconds, static_cast<unsigned long long>(result.spread_completed),
               static_cast<unsigned long long>(result.spread_incomplete),
               static_cast<unsigned long long>(result.spread_discarded), setup_s, g_enter_s, g_launch_s, g_exit_s, JsonEscape(result.error).c_str(), JsonEscape(hook->last_error()).c_str());
  if (out != stdout) std::fclose(out);

  if (!trace_path.empty()) {
    std::unique_ptr<sightline::trace::Sink> sink =
        sightline::trace::OpenFileSink(trace_path, {true}, &error);
    if (!sink) {
      std::fprintf(stderr, "metrics_harness: %s\n", error.c_str());
      return 1;
    }
    sightline::trace::TraceWriter writer(std::move(sink));
    sightline::TraceHeaderData header;
    header.tool_version = "metrics_harness";
    header.process.pid = 0;
    header.process.host = "h200";
    header.process.command_line = {"metrics_harness", "--metrics", config.metric_set};
    int dev = 0;
    cudaGetDevice(&dev);
    header.devices.push_back(DeviceInfoOf(dev));
    header.devices.back().chip_name = "GH100";
    uint32_t cupti_version = 0;
    cuptiGetVersion(&cupti_version);
    header.cupti_api_version = cupti_version;
    header.enabled = {"cuda", "metrics"};
    header.metric_set = config.metric_set;
    writer.Begin(header);
    std::lock_guard<std::mutex> lock(g_kernels_mu);
    for (size_t i = 0; i < g_kernels.size(); ++i) {
      sightline::KernelEvent e = g_kernels[i];
      e.name_id = writer.Intern(sightline::collect::DemangleKernelName(g_kernel_names[i]));
      e.replayed = hook->IsReplayedCorrelation(e.correlation_id);
      writer.Add(e);
    }
    for (size_t i = 0; i < result.ranges.size(); ++i) {
      sightline::MetricRangeEvent r = result.ranges[i];
      r.range_name_id = writer.Intern(sightline::collect::DemangleKernelName(result.range_names[i]));
      for (size_t m = 0; m < r.values.size(); ++m) r.values[m].name_id = writer.Intern(result.metric_names[i][m]);
      writer.Add(r);
    }
    sightline::LossReport loss;
    loss.metric_ranges_dropped = result.ranges_dropped;
    writer.Add(loss);
    writer.Finish("exit");
  }
  g_hook = nullptr;
  hook.reset();
  cuptiUnsubscribe(subscriber);
  return 0;
}
