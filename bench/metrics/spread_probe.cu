// bench/metrics/spread_probe.cu — standalone probe of the CUPTI 13.0 range
// profiler's pass semantics without kernel replay ("spread": pass p of a
// multi-pass metric set collected on the p-th launch of the same kernel).
// Self-contained: links only cudart and libcupti (which loads nvperf_host).
//
//   spread_probe [--only A,B2,F3] [--timeout S (15)] [--budget S (55)]
//                [--trace none|concurrent|kernel] [--kernel fma|small]
//                [--launch kernel|graph] 2>&1
//
// --trace enables that CUPTI activity kind (records counted and discarded)
// before the context exists, as a tracer does: CUPTI instruments kernel code
// for concurrent-kernel timestamps, and a counter measured in place (the
// application/user replay variants) sees that code, a kernel-replay pass may
// not. --kernel small launches one element per thread (a few instructions a
// warp, so a fixed per-warp addition shows); fma (default) is compute-heavy.
// --launch graph replaces each launch by one launch of a CUDA graph of three
// kernel nodes (the kernel, Small, the kernel; captured from a stream before
// any profiling): how many ranges, and which names, each replay mode gives a
// graph launch — one per kernel node (as ncu's --graph-profiling node) or
// one for the whole graph — decides whether per-kernel metrics of a graph's
// own kernels are within reach of the range profiler (issue 14). Not run yet.
//
// Each variant runs in a forked child with an alarm(S) watchdog; the parent
// never touches CUDA, reports a crash/timeout as "killed by signal N" and goes
// on. Every CUPTI call prints NAME=OK or NAME=ERR(code text); every Stop prints
// its outputs; "img=N" is the number of ranges the counter-data image holds.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <cupti_activity.h>
#include <cupti_version.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lib/collect/cupti_params.h"

namespace {

// sightline's `full` set (lib/collect/metric_sets.cc); the gmma one is GH100 only.
const char* const kFullSet[] = {
    "gpu__time_duration.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__cycles_active.avg",
    "sm__cycles_active.max",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
};
constexpr int kMaxMetrics = 32;
constexpr size_t kImageRanges = 4;  // ranges per counter-data image (and maxRangesPerPass)
constexpr int kGrid = 132 * 4, kBlock = 256, kN = 1 << 24;  // 64 MiB of floats (> L2)
constexpr int kExitNoGpu = 3;

__global__ void Small(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}

__global__ void Work(float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = x[i];
#pragma unroll 8
    for (int k = 0; k < 256; ++k) v = fmaf(v, 0.999f, 0.001f);
    x[i] = v;
  }
}

#define PARAMS(T) sightline::collect::MakeParams<T>(T##_STRUCT_SIZE)

// Prints " what=OK" or " what=ERR(code text)"; true on success.
bool Ok(const char* what, CUptiResult r) {
  if (r == CUPTI_SUCCESS) {
    std::printf(" %s=OK", what);
    return true;
  }
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) s = "?";
  std::printf(" %s=ERR(%d %s)", what, static_cast<int>(r), s);
  return false;
}

// What a child hands back to the parent through a pipe (latest write wins).
struct Outcome {
  int launches = 0, all_submitted = 0, evaluated = 0, within = 0, total = 0, finished = 0;
  double values[kMaxMetrics] = {};
};
bool g_small = false;   // --kernel small
CUpti_ActivityKind g_trace_kind = CUPTI_ACTIVITY_KIND_INVALID;  // --trace
unsigned long long g_trace_records = 0;

bool g_graph = false;   // --launch graph
cudaStream_t g_graph_stream = nullptr;
cudaGraphExec_t g_graph_exec = nullptr;

void LaunchKernel(float* x, cudaStream_t stream) {
  if (g_small) {
    Small<<<kN / kBlock, kBlock, 0, stream>>>(x, kN);
  } else {
    Work<<<kGrid, kBlock, 0, stream>>>(x, kN);
  }
}
// The graph of --launch graph: the kernel, Small, the kernel, on one stream.
bool BuildGraph(float* x) {
  cudaGraph_t graph = nullptr;
  if (cudaStreamCreateWithFlags(&g_graph_stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamBeginCapture(g_graph_stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    return false;
  }
  LaunchKernel(x, g_graph_stream);
  Small<<<kN / kBlock, kBlock, 0, g_graph_stream>>>(x, kN);
  LaunchKernel(x, g_graph_stream);
  if (cudaStreamEndCapture(g_graph_stream, &graph) != cudaSuccess || graph == nullptr) return false;
  const bool ok = cudaGraphInstantiate(&g_graph_exec, graph, 0) == cudaSuccess;
  cudaGraphDestroy(graph);
  return ok;
}

void LaunchWork(float* x) {
  if (g_graph) {
    cudaGraphLaunch(g_graph_exec, g_graph_stream);
  } else if (g_small) {
    Small<<<kN / kBlock, kBlock>>>(x, kN);
  } else {
    Work<<<kGrid, kBlock>>>(x, kN);
  }
}
long long Warps() { return g_small ? (long long)(kN / kBlock) * (kBlock / 32) : (long long)kGrid * (kBlock / 32); }

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) ++g_trace_records;
  free(buffer);
}
// Before any context: what a tracer injected at start-up does.
void StartTrace() {
  if (g_trace_kind == CUPTI_ACTIVITY_KIND_INVALID) return;
  std::printf("  trace:");
  Ok("ActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
  Ok("ActivityEnable", cuptiActivityEnable(g_trace_kind));
  std::printf("\n");
}
void StopTrace() {
  if (g_trace_kind == CUPTI_ACTIVITY_KIND_INVALID) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::printf("  trace: %llu activity records of kind %d\n", g_trace_records, static_cast<int>(g_trace_kind));
}

Outcome g_ref;          // variant A's values (set in the parent before later forks)
bool g_have_ref = false;
int g_out_fd = -1;      // child: write end of the pipe
void Report(const Outcome& o) {
  if (g_out_fd >= 0 && write(g_out_fd, &o, sizeof(o)) != static_cast<ssize_t>(sizeof(o))) std::printf("  (pipe write failed)\n");
}

// Counter-data image in its own mapping, so freeing it (F3) really unmaps it.
struct Image {
  uint8_t* p = nullptr;
  size_t n = 0;
  void Free() {
    if (p != nullptr) munmap(p, n);
    p = nullptr;
  }
};

struct Probe {
  CUcontext ctx = nullptr;
  std::vector<const char*> metrics;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> config;
  size_t passes = 0;
  CUpti_RangeProfiler_Object* obj = nullptr;
  float* x = nullptr;
};

// When SetConfig is called, with which passIndex: once (0); before launch p
// with p; with the previous Stop's; with numPasses-1-p; two images X and Y
// alternating, launch 2p+i → image i, passIndex p (several configurations).
enum Cfg { kOnce, kEveryP, kFromStop, kReverse, kInterleaved };
// Kernel replay mixed in, on the same range-profiler object or a fresh one.
enum After { kNone, kReenable, kSameObject, kSameObjectFreed, kKernelFirst, kKernelFirstReenable };
struct Variant {
  const char* id;
  CUpti_ProfilerReplayMode replay;
  CUpti_ProfilerRange range;
  Cfg cfg;
  bool decode_each;  // DecodeData after every Stop (else once, after the loop)
  After after;       // kernel replay before/after the loop, in the same process
  const char* what;
};
const Variant kVariants[] = {
    {"A", CUPTI_KernelReplay, CUPTI_AutoRange, kOnce, false, kNone, "kernel replay, one launch (reference)"},
    {"B", CUPTI_ApplicationReplay, CUPTI_AutoRange, kEveryP, true, kNone,
     "application replay, SetConfig(passIndex=p) before launch p, p < numPasses; decode after every pass"},
    {"B2", CUPTI_ApplicationReplay, CUPTI_AutoRange, kEveryP, false, kNone, "as B, DecodeData once after the last pass"},
    {"C", CUPTI_ApplicationReplay, CUPTI_AutoRange, kOnce, true, kNone,
     "application replay, SetConfig once (passIndex 0), Start/launch/Stop until isAllPassSubmitted; decode every pass"},
    {"C2", CUPTI_ApplicationReplay, CUPTI_AutoRange, kOnce, false, kNone, "as C, DecodeData once at the end"},
    {"D", CUPTI_ApplicationReplay, CUPTI_AutoRange, kFromStop, true, kNone,
     "application replay, SetConfig before every Start with the previous Stop's passIndex/targetNestingLevel"},
    {"E", CUPTI_UserReplay, CUPTI_AutoRange, kFromStop, true, kNone, "user replay, auto range, loop as D"},
    {"E2", CUPTI_UserReplay, CUPTI_UserRange, kOnce, false, kNone,
     "user replay, user range (Push/Pop around the launch), SetConfig once, decode at end (NVIDIA sample's flow)"},
    {"F", CUPTI_ApplicationReplay, CUPTI_AutoRange, kFromStop, true, kReenable,
     "D, then Disable + Enable (new object) and kernel replay as A"},
    {"F2", CUPTI_ApplicationReplay, CUPTI_AutoRange, kFromStop, true, kSameObject,
     "D, then kernel replay on the SAME object (new image, no Disable), spread image kept"},
    {"F3", CUPTI_ApplicationReplay, CUPTI_AutoRange, kFromStop, true, kSameObjectFreed,
     "as F2, but the spread image is unmapped first (sightline's ReleaseImage frees it)"},
    {"G", CUPTI_ApplicationReplay, CUPTI_AutoRange, kFromStop, true, kKernelFirst,
     "kernel replay of one launch first, then D on the SAME object (sightline's auto mode order)"},
    {"G2", CUPTI_ApplicationReplay, CUPTI_AutoRange, kFromStop, true, kKernelFirstReenable,
     "as G, with Disable + Enable between kernel replay and D"},
    {"H", CUPTI_ApplicationReplay, CUPTI_AutoRange, kReverse, true, kNone,
     "application replay, SetConfig(passIndex=numPasses-1-p) before launch p: is passIndex honoured?"},
    {"I", CUPTI_ApplicationReplay, CUPTI_AutoRange, kInterleaved, true, kNone,
     "application replay, two images X/Y on one object, alternating launches, SetConfig(passIndex=p) each"},
};
const Variant kKernelPass = {"k", CUPTI_KernelReplay, CUPTI_AutoRange, kOnce, false, kNone, ""};
const char* ReplayName(CUpti_ProfilerReplayMode m) {
  return m == CUPTI_KernelReplay ? "kernel" : m == CUPTI_UserReplay ? "user" : "application";
}

bool Setup(Probe* pr, bool verbose) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("  no CUDA device (cudaGetDeviceCount: %s, count %d): nothing to probe\n",
                cudaGetErrorString(e), count);
    std::fflush(stdout);
    std::exit(kExitNoGpu);
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  int drv = 0, rt = 0;
  uint32_t cupti_version = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  cuptiGetVersion(&cupti_version);
  if (verbose) {
    std::printf("  device 0: %s cc %d.%d, %d SMs; driver %d, runtime %d, CUPTI API %u\n", prop.name,
                prop.major, prop.minor, prop.multiProcessorCount, drv, rt, cupti_version);
  }
  // The primary context, and its handle through cudart (no libcuda link).
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess ||
      cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      fn == nullptr || reinterpret_cast<CUresult (*)(CUcontext*)>(fn)(&pr->ctx) != CUDA_SUCCESS) {
    std::printf("  cannot create/read the CUDA context: %s\n", cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  cudaMalloc(&pr->x, sizeof(float) * kN);
  cudaMemset(pr->x, 0, sizeof(float) * kN);
  if (g_graph && !BuildGraph(pr->x)) {
    std::printf("  cannot capture the graph: %s\n", cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  LaunchWork(pr->x);  // warm-up, not profiled
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("  warm-up launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  std::printf("  setup:");
  auto ip = PARAMS(CUpti_Profiler_Initialize_Params);
  if (!Ok("ProfilerInitialize", cuptiProfilerInitialize(&ip))) return false;
  auto cp = PARAMS(CUpti_Device_GetChipName_Params);
  cp.deviceIndex = 0;
  if (!Ok("GetChipName", cuptiDeviceGetChipName(&cp)) || cp.pChipName == nullptr) return false;
  const std::string chip = cp.pChipName;
  std::printf("(%s)", chip.c_str());
  auto ap = PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  ap.ctx = pr->ctx;
  if (!Ok("GetCounterAvailability(size)", cuptiProfilerGetCounterAvailability(&ap))) return false;
  std::vector<uint8_t> avail(ap.counterAvailabilityImageSize);
  ap.pCounterAvailabilityImage = avail.data();
  if (!Ok("GetCounterAvailability", cuptiProfilerGetCounterAvailability(&ap))) return false;
  auto hp = PARAMS(CUpti_Profiler_Host_Initialize_Params);
  hp.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hp.pChipName = chip.c_str();
  hp.pCounterAvailabilityImage = avail.data();
  if (!Ok("HostInitialize", cuptiProfilerHostInitialize(&hp))) return false;
  pr->host = hp.pHostObject;
  for (const char* m : kFullSet) {
    auto mp = PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
    mp.pHostObject = pr->host;
    mp.pMetricName = m;
    if (cuptiProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS) pr->metrics.push_back(m);
    else std::printf(" (dropped unknown metric %s)", m);
  }
  auto am = PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  am.pHostObject = pr->host;
  am.ppMetricNames = pr->metrics.data();
  am.numMetrics = pr->metrics.size();
  if (!Ok("ConfigAddMetrics", cuptiProfilerHostConfigAddMetrics(&am))) return false;
  auto sp = PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  sp.pHostObject = pr->host;
  if (!Ok("GetConfigImageSize", cuptiProfilerHostGetConfigImageSize(&sp))) return false;
  pr->config.assign(sp.configImageSize, 0);
  auto gp = PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  gp.pHostObject = pr->host;
  gp.configImageSize = pr->config.size();
  gp.pConfigImage = pr->config.data();
  if (!Ok("GetConfigImage", cuptiProfilerHostGetConfigImage(&gp))) return false;
  auto np = PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  np.configImageSize = pr->config.size();
  np.pConfigImage = pr->config.data();
  if (!Ok("GetNumOfPasses", cuptiProfilerHostGetNumOfPasses(&np))) return false;
  pr->passes = np.numOfPasses;
  std::printf(" numPasses=%zu metrics=%zu", pr->passes, pr->metrics.size());
  auto ep = PARAMS(CUpti_RangeProfiler_Enable_Params);
  ep.ctx = pr->ctx;
  if (!Ok("Enable", cuptiRangeProfilerEnable(&ep))) return false;
  pr->obj = ep.pRangeProfilerObject;
  std::printf("\n");
  if (verbose) {
    for (size_t i = 0; i < pr->metrics.size(); ++i) std::printf("  metric %2zu: %s\n", i, pr->metrics[i]);
  }
  return true;
}

bool NewImage(const Probe& pr, Image* img) {
  auto sp = PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  sp.pRangeProfilerObject = pr.obj;
  sp.pMetricNames = const_cast<const char**>(pr.metrics.data());
  sp.numMetrics = pr.metrics.size();
  sp.maxNumOfRanges = kImageRanges;
  sp.maxNumRangeTreeNodes = kImageRanges;
  if (!Ok("GetCounterDataSize", cuptiRangeProfilerGetCounterDataSize(&sp))) return false;
  void* p = mmap(nullptr, sp.counterDataSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  img->p = static_cast<uint8_t*>(p);
  img->n = sp.counterDataSize;
  auto ip = PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  ip.pRangeProfilerObject = pr.obj;
  ip.counterDataSize = img->n;
  ip.pCounterData = img->p;
  const bool ok = Ok("CounterDataImageInitialize", cuptiRangeProfilerCounterDataImageInitialize(&ip));
  std::printf(" (image %zu bytes)", img->n);
  return ok;
}

// Ranges the image holds, printed as " img=N"; -1 when the call fails.
long Ranges(const Image& img) {
  auto ip = PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  ip.pCounterDataImage = img.p;
  ip.counterDataImageSize = img.n;
  const CUptiResult r = cuptiRangeProfilerGetCounterDataInfo(&ip);
  if (r != CUPTI_SUCCESS) return Ok("GetCounterDataInfo", r) ? 0 : -1;
  std::printf(" img=%zu", ip.numTotalRanges);
  return static_cast<long>(ip.numTotalRanges);
}

CUptiResult Evaluate(const Probe& pr, const Image& img, size_t range, double* values) {
  auto ev = PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  ev.pHostObject = pr.host;
  ev.pCounterDataImage = img.p;
  ev.counterDataImageSize = img.n;
  ev.rangeIndex = range;
  ev.ppMetricNames = const_cast<const char**>(pr.metrics.data());
  ev.numMetrics = pr.metrics.size();
  ev.pMetricValues = values;
  return cuptiProfilerHostEvaluateToGpuValues(&ev);
}

bool Decode(const Probe& pr) {
  auto dp = PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  dp.pRangeProfilerObject = pr.obj;
  const bool ok = Ok("Decode", cuptiRangeProfilerDecodeData(&dp));
  if (ok) std::printf("(dropped=%zu)", dp.numOfRangeDropped);
  return ok;
}

// The Start/launch/Stop cycles of one variant.
void Loop(const Probe& pr, const Variant& v, const Image& img0, Outcome* out, const Image* img1 = nullptr) {
  const size_t max_launches = v.replay == CUPTI_KernelReplay             ? 1
                              : v.cfg == kEveryP || v.cfg == kReverse ? pr.passes
                                                                        : 2 * pr.passes;
  size_t pass = 0, tnl = 1;  // fed to SetConfig (kFromStop: the previous Stop's outputs)
  for (size_t launch = 0; launch < max_launches; ++launch) {
    const Image& img = img1 != nullptr && launch % 2 == 1 ? *img1 : img0;
    std::printf("  launch %2zu:%s", launch, img1 == nullptr ? "" : launch % 2 ? " Y" : " X");
    if (v.cfg != kOnce || launch == 0) {
      auto cp = PARAMS(CUpti_RangeProfiler_SetConfig_Params);
      cp.pRangeProfilerObject = pr.obj;
      cp.configSize = pr.config.size();
      cp.pConfig = pr.config.data();
      cp.counterDataImageSize = img.n;
      cp.pCounterDataImage = img.p;
      cp.range = v.range;
      cp.replayMode = v.replay;
      cp.maxRangesPerPass = kImageRanges;
      cp.numNestingLevels = 1;
      cp.minNestingLevel = 1;
      cp.passIndex = v.cfg == kEveryP ? launch : v.cfg == kReverse ? pr.passes - 1 - launch
                     : v.cfg == kInterleaved ? launch / 2 : pass;
      cp.targetNestingLevel = static_cast<uint16_t>(tnl);
      std::printf(" [passIndex=%zu tnl=%zu]", cp.passIndex, tnl);
      if (!Ok("SetConfig", cuptiRangeProfilerSetConfig(&cp))) break;
      Ranges(img);
    }
    auto st = PARAMS(CUpti_RangeProfiler_Start_Params);
    st.pRangeProfilerObject = pr.obj;
    if (!Ok("Start", cuptiRangeProfilerStart(&st))) break;
    if (v.range == CUPTI_UserRange) {
      auto pp = PARAMS(CUpti_RangeProfiler_PushRange_Params);
      pp.pRangeProfilerObject = pr.obj;
      pp.pRangeName = "work";
      Ok("PushRange", cuptiRangeProfilerPushRange(&pp));
    }
    LaunchWork(pr.x);
    const cudaError_t ce = cudaDeviceSynchronize();
    std::printf(" launch=%s", ce == cudaSuccess ? "OK" : cudaGetErrorString(ce));
    if (v.range == CUPTI_UserRange) {
      auto pp = PARAMS(CUpti_RangeProfiler_PopRange_Params);
      pp.pRangeProfilerObject = pr.obj;
      Ok("PopRange", cuptiRangeProfilerPopRange(&pp));
    }
    auto sp = PARAMS(CUpti_RangeProfiler_Stop_Params);
    sp.pRangeProfilerObject = pr.obj;
    if (!Ok("Stop", cuptiRangeProfilerStop(&sp))) break;
    std::printf(" -> passIndex=%zu targetNestingLevel=%zu isAllPassSubmitted=%u", sp.passIndex,
                sp.targetNestingLevel, sp.isAllPassSubmitted);
    ++out->launches;
    out->all_submitted = sp.isAllPassSubmitted;
    pass = sp.passIndex;
    tnl = sp.targetNestingLevel;
    Ranges(img);
    if (v.decode_each && Decode(pr) && Ranges(img) > 0) {
      double vals[kMaxMetrics];
      if (Ok("Eval", Evaluate(pr, img, 0, vals))) {
        int nonzero = 0, nan = 0;
        for (size_t i = 0; i < pr.metrics.size(); ++i) {
          nonzero += vals[i] != 0.0 && std::isfinite(vals[i]);
          nan += !std::isfinite(vals[i]);
        }
        std::printf("(nonzero=%d nan=%d of %zu)", nonzero, nan, pr.metrics.size());
      }
    }
    std::printf("\n");
    if ((v.cfg == kOnce || v.cfg == kFromStop) && sp.isAllPassSubmitted) break;
  }
}

// Decode (if not done per pass), evaluate every range, compare range 0 with A.
void Finish(const Probe& pr, const Variant& v, const Image& img, Outcome* out) {
  std::printf("  final:");
  if (!v.decode_each) Decode(pr);
  const long n = Ranges(img);
  std::printf("\n");
  for (long r = 0; r < n && r < static_cast<long>(kImageRanges); ++r) {
    auto rp = PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
    rp.pCounterDataImage = img.p;
    rp.counterDataImageSize = img.n;
    rp.rangeIndex = r;
    rp.rangeDelimiter = "/";
    std::printf("  range %ld:", r);
    if (Ok("GetRangeInfo", cuptiRangeProfilerCounterDataGetRangeInfo(&rp))) std::printf("('%s')", rp.rangeName ? rp.rangeName : "");
    double vals[kMaxMetrics] = {};
    const bool ok = Ok("Eval", Evaluate(pr, img, r, vals));
    std::printf("\n");
    if (!ok || r != 0) continue;
    out->evaluated = 1;
    out->total = static_cast<int>(pr.metrics.size());
    out->within = 0;
    for (size_t i = 0; i < pr.metrics.size(); ++i) {
      out->values[i] = vals[i];
      const double ref = g_ref.values[i];
      const double rel = ref == vals[i] ? 0.0 : std::fabs(vals[i] - ref) / std::fmax(std::fabs(ref), 1e-12);
      const bool within = g_have_ref && rel <= 0.02;
      out->within += within;
      if (g_have_ref) {
        std::printf("    %-72s %16.10g  A=%16.10g  rel=%8.4f %s\n", pr.metrics[i], vals[i], ref, rel, within ? "ok" : "DIFF");
      } else {
        std::printf("    %-72s %16.10g\n", pr.metrics[i], vals[i]);
      }
      if (std::strcmp(pr.metrics[i], "smsp__inst_executed.sum") == 0) {
        std::printf("    INSTR variant=%s trace=%d kernel=%s inst=%.0f warps=%lld per_warp=%.4f\n", v.id,
                    static_cast<int>(g_trace_kind), g_small ? "small" : "fma", vals[i], Warps(),
                    vals[i] / static_cast<double>(Warps()));
      }
    }
  }
}

bool Reenable(Probe* pr) {
  auto dp = PARAMS(CUpti_RangeProfiler_Disable_Params);
  dp.pRangeProfilerObject = pr->obj;
  Ok("Disable", cuptiRangeProfilerDisable(&dp));
  auto ep = PARAMS(CUpti_RangeProfiler_Enable_Params);
  ep.ctx = pr->ctx;
  if (!Ok("Enable", cuptiRangeProfilerEnable(&ep))) return false;
  pr->obj = ep.pRangeProfilerObject;
  return true;
}

// One kernel-replayed launch into a fresh image (values compared with A).
bool KernelPass(const Probe& pr, Outcome* out) {
  Image kimg;
  const bool ok = NewImage(pr, &kimg);
  std::printf("\n");
  if (!ok) return false;
  Loop(pr, kKernelPass, kimg, out);
  Finish(pr, kKernelPass, kimg, out);
  return true;
}

int RunVariant(const Variant& v) {
  Probe pr;
  Outcome out;
  StartTrace();
  if (!Setup(&pr, std::strcmp(v.id, "A") == 0)) return 1;
  if (v.after == kKernelFirst || v.after == kKernelFirstReenable) {
    std::printf("  kernel replay first:");
    Outcome kout;
    if (!KernelPass(pr, &kout)) return 1;
    std::printf("  switch to %s replay:", ReplayName(v.replay));
    if (v.after == kKernelFirstReenable && !Reenable(&pr)) return 1;
    std::printf(v.after == kKernelFirst ? " (same object)\n" : "\n");
  }
  Image img;
  std::printf("  image:");
  const bool image_ok = NewImage(pr, &img);
  std::printf("\n");
  if (!image_ok) return 1;
  Image img_y;  // kInterleaved: the second configuration's image
  if (v.cfg == kInterleaved) {
    std::printf("  image Y:");
    const bool ok = NewImage(pr, &img_y);
    std::printf("\n");
    if (!ok) return 1;
  }
  Loop(pr, v, img, &out, v.cfg == kInterleaved ? &img_y : nullptr);
  if (v.cfg == kInterleaved) {
    Outcome y;
    std::printf("  image Y");
    Finish(pr, v, img_y, &y);
    std::printf("  image X");
  }
  Finish(pr, v, img, &out);
  Report(out);
  if (v.after == kReenable || v.after == kSameObject || v.after == kSameObjectFreed) {
    // Switch to kernel replay as sightline's fall-back does; its values replace D's.
    std::printf("  switch to kernel replay:");
    if (v.after == kReenable && !Reenable(&pr)) return 1;
    if (v.after == kSameObjectFreed) {
      img.Free();
      std::printf(" (spread image unmapped)");
    }
    Outcome kout;
    kout.launches = out.launches;
    if (!KernelPass(pr, &kout)) return 1;
    out = kout;
    Report(out);
  }
  std::printf("  cleanup:");
  auto dp = PARAMS(CUpti_RangeProfiler_Disable_Params);
  dp.pRangeProfilerObject = pr.obj;
  Ok("Disable", cuptiRangeProfilerDisable(&dp));
  auto hd = PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  hd.pHostObject = pr.host;
  Ok("HostDeinitialize", cuptiProfilerHostDeinitialize(&hd));
  auto pd = PARAMS(CUpti_Profiler_DeInitialize_Params);
  Ok("ProfilerDeInitialize", cuptiProfilerDeInitialize(&pd));
  std::printf("\n");
  StopTrace();
  out.finished = 1;
  Report(out);
  return 0;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);  // nothing is lost when a child dies
  std::string only;
  double timeout = 15, budget = 55;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--only") == 0) only = "," + std::string(argv[i + 1]) + ",";
    else if (std::strcmp(argv[i], "--timeout") == 0) timeout = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--budget") == 0) budget = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--kernel") == 0) {
      const std::string k = argv[i + 1];
      if (k != "small" && k != "fma") {
        std::fprintf(stderr, "spread_probe: --kernel takes small or fma, not '%s'\n", k.c_str());
        return 2;
      }
      g_small = k == "small";
    } else if (std::strcmp(argv[i], "--launch") == 0) {
      const std::string l = argv[i + 1];
      if (l != "kernel" && l != "graph") {
        std::fprintf(stderr, "spread_probe: --launch takes kernel or graph, not '%s'\n", l.c_str());
        return 2;
      }
      g_graph = l == "graph";
    } else if (std::strcmp(argv[i], "--trace") == 0) {
      const std::string t = argv[i + 1];
      if (t != "none" && t != "concurrent" && t != "kernel") {
        std::fprintf(stderr, "spread_probe: --trace takes none, concurrent or kernel, not '%s'\n",
                     t.c_str());
        return 2;
      }
      g_trace_kind = t == "concurrent" ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                     : t == "kernel"   ? CUPTI_ACTIVITY_KIND_KERNEL
                                       : CUPTI_ACTIVITY_KIND_INVALID;
    }
  }
  std::printf("spread_probe: per-variant watchdog %.0f s, total budget %.0f s, kernel %s, grid %dx%d, %d floats%s\n",
              timeout, budget, g_small ? "small" : "fma", g_small ? kN / kBlock : kGrid, kBlock, kN,
              g_graph ? ", each launch a graph of 3 kernel nodes" : "");
  struct Row { const char* id; Outcome o; bool got; std::string end; };
  std::vector<Row> rows;
  const double t0 = Now();
  for (const Variant& v : kVariants) {
    if (!only.empty() && only.find("," + std::string(v.id) + ",") == std::string::npos) continue;
    Row row{v.id, Outcome(), false, ""};
    const double left = budget - (Now() - t0);
    if (left < 4) {
      row.end = "skipped (time budget)";
      rows.push_back(row);
      continue;
    }
    const unsigned limit = static_cast<unsigned>(std::fmin(timeout, left - 1));
    std::printf("\n=== variant %s: %s [%s replay]\n", v.id, v.what, ReplayName(v.replay));
    int fd[2];
    if (pipe(fd) != 0) return 1;
    const double start = Now();
    const pid_t pid = fork();
    if (pid == 0) {
      close(fd[0]);
      g_out_fd = fd[1];
      alarm(limit);
      std::exit(RunVariant(v));
    }
    close(fd[1]);
    fcntl(fd[0], F_SETFL, O_NONBLOCK);
    int status = 0;
    bool reaped = false, killed = false;
    while (!reaped) {  // the parent's own guard, should the alarm not end the child
      if (waitpid(pid, &status, WNOHANG) == pid) { reaped = true; break; }
      const double waited = Now() - start;
      if (!killed && waited > limit + 3) { kill(pid, SIGKILL); killed = true; }
      if (waited > limit + 8) break;
      usleep(20000);
    }
    Outcome o;
    while (read(fd[0], &o, sizeof(o)) == static_cast<ssize_t>(sizeof(o))) { row.o = o; row.got = true; }
    close(fd[0]);
    char end[160];
    if (!reaped) {
      std::snprintf(end, sizeof(end), "unreapable after SIGKILL (pid %d)", static_cast<int>(pid));
    } else if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      std::snprintf(end, sizeof(end), "killed by signal %d (%s%s)%s", sig, strsignal(sig),
                    sig == SIGALRM ? ": watchdog timeout" : "",
                    row.got && row.o.finished ? " after finishing" : "");
    } else {
      std::snprintf(end, sizeof(end), "exit %d", WEXITSTATUS(status));
    }
    row.end = end;
    std::printf("=== variant %s: %s, %.2f s\n", v.id, end, Now() - start);
    if (reaped && WIFEXITED(status) && WEXITSTATUS(status) == kExitNoGpu) {
      std::printf("spread_probe: no CUDA device on this machine; run it on the GPU machine\n");
      return kExitNoGpu;
    }
    if (std::strcmp(v.id, "A") == 0 && row.got && row.o.evaluated) {
      g_ref = row.o;
      g_have_ref = true;
    }
    rows.push_back(row);
  }
  std::printf("\n=== summary (%.1f s; values compared with variant A, +-2%%)\n", Now() - t0);
  std::printf("%-4s %8s %13s %10s %9s  %s\n", "var", "launches", "allSubmitted", "evaluated", "within", "end");
  for (const Row& r : rows) {
    char within[32] = "-";
    if (r.got && r.o.evaluated && g_have_ref) std::snprintf(within, sizeof(within), "%d/%d", r.o.within, r.o.total);
    std::printf("%-4s %8d %13d %10s %9s  %s\n", r.id, r.got ? r.o.launches : 0, r.got ? r.o.all_submitted : 0,
                r.got && r.o.evaluated ? "yes" : "no", within, r.end.c_str());
  }
  return 0;
}
