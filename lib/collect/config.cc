// lib/collect/config.cc — SIGHTLINE_* parsing (see config.h).
#include "lib/collect/config.h"

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lib/trace/setting_value.h"
#include "lib/trace/sink.h"

namespace sightline::collect {
namespace {

const char* DefaultGetenv(const char* name) { return std::getenv(name); }

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find(',', begin);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(begin, end - begin);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    begin = end + 1;
  }
  return out;
}

}  // namespace

const std::vector<std::string>& DefaultApiSkipList() {
  static const auto* list = new std::vector<std::string>{
      "cudaGetDevice",         "cudaGetLastError",        "cudaPeekAtLastError",
      "cudaGetDeviceCount",    "cudaStreamIsCapturing",   "cudaStreamGetCaptureInfo",
      "cudaDriverGetVersion",  "cudaRuntimeGetVersion",   "cudaGetDeviceProperties",
      "cudaDeviceGetAttribute", "cudaPointerGetAttributes", "cudaGetFuncBySymbol",
      "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
      "cuCtxGetCurrent",       "cuCtxGetDevice",          "cuDeviceGet",
      "cuDeviceGetCount",      "cuDeviceGetAttribute",    "cuGetProcAddress",
      "cuGetProcAddress_v2",   "cuStreamIsCapturing",     "cuPointerGetAttribute",
      "cuPointerGetAttributes", "cuDriverGetVersion",     "cuGetErrorString",
      "cuGetErrorName",        "cuStreamGetCaptureInfo",  "cuCtxGetStreamPriorityRange",
      "cuDevicePrimaryCtxGetState", "cuKernelGetAttribute", "cuFuncGetAttribute",
  };
  return *list;
}

bool InApiSkipList(const std::vector<std::string>& skip, const char* name) {
  if (name == nullptr) return false;
  std::string text = name;
  size_t v = text.rfind("_v");
  if (v != std::string::npos && v + 2 < text.size() &&
      text.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    text.resize(v);
  }
  for (const std::string& s : skip) {
    if (s == text || s == name) return true;
  }
  return false;
}

bool ParseCaptureRange(const std::string& value, CollectorConfig* config) {
  if (value.empty() || value == "none" || value == "whole") {
    config->capture = CaptureMode::kWholeRun;
  } else if (value == "cudaProfilerApi") {
    config->capture = CaptureMode::kProfilerApi;
  } else if (value == "api") {
    config->capture = CaptureMode::kApi;
  } else if (value.rfind("nvtx:", 0) == 0 && value.size() > 5) {
    config->capture = CaptureMode::kNvtx;
    config->capture_nvtx_name = value.substr(5);
  } else {
    return false;
  }
  return true;
}

CollectorConfig ConfigFromEnvironment(const char* (*getenv_fn)(const char*),
                                      std::vector<std::string>* problems) {
  if (getenv_fn == nullptr) getenv_fn = &DefaultGetenv;
  CollectorConfig c;
  auto problem = [&](const char* var, const char* value, const char* what) {
    if (problems != nullptr) {
      problems->push_back(std::string(var) + ": '" + value + "' " + what);
    }
  };
  if (const char* v = getenv_fn("SIGHTLINE_OUTPUT"); v != nullptr && *v != '\0') {
    c.output_pattern = v;
  }
  uint64_t n = 0;
  constexpr double kHuge = 1e300;  // numbers of seconds / µs: any finite non-negative value
  auto boolean = [&](const char* var, bool* field) {
    const char* v = getenv_fn(var);
    if (v == nullptr || *v == '\0') return;
    if (!trace::ParseBoolValue(v, field)) {
      problem(var, v, (std::string("is not a boolean (") + trace::BoolValueWords() + ")").c_str());
    }
  };
  if (const char* v = getenv_fn("SIGHTLINE_SESSION_PID"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 1, UINT32_MAX, &n)) {
      c.session_pid = static_cast<uint32_t>(n);
    } else {
      problem("SIGHTLINE_SESSION_PID", v, "is not a process id");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_MANIFEST"); v != nullptr) c.manifest_path = v;
  if (const char* v = getenv_fn("SIGHTLINE_TRACE"); v != nullptr && *v != '\0') {
    c.trace_cuda = c.trace_driver_api = c.trace_nvtx = c.trace_nccl = c.trace_backtrace = false;
    c.trace_python = c.trace_memory = false;
    for (const std::string& item : SplitList(v)) {
      if (item == "cuda") {
        c.trace_cuda = true;
      } else if (item == "cuda-driver") {
        c.trace_cuda = c.trace_driver_api = true;
      } else if (item == "cuda-memory") {
        c.trace_cuda = c.trace_memory = true;
      } else if (item == "nvtx") {
        c.trace_nvtx = true;
      } else if (item == "nccl") {
        c.trace_nccl = true;
      } else if (item == "backtrace" || item == "cudabacktrace") {
        c.trace_backtrace = true;
      } else if (item == "python") {
        c.trace_python = true;
      } else if (item == "graph-launches" || item == "graph") {
        // Less detail, not more: one record per graph launch instead of one
        // per kernel node. "graph" read like an item that adds graphs.
        c.graph_launch_records = true;
        if (item == "graph") {
          problem("SIGHTLINE_TRACE", "graph",
                  "is deprecated: use graph-launches (one record per CUDA graph launch instead "
                  "of one per kernel node)");
        }
      } else if (item == "none") {
      } else {
        problem("SIGHTLINE_TRACE", item.c_str(),
                "is unknown (expected cuda, cuda-driver, cuda-memory, nvtx, nccl, backtrace, "
                "python, graph-launches, none)");
      }
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_CAPTURE"); v != nullptr) {
    c.capture_set = true;
    if (!ParseCaptureRange(v, &c)) {
      problem("SIGHTLINE_CAPTURE", v, "is unknown (expected cudaProfilerApi, nvtx:NAME or api)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_CAPTURE_END"); v != nullptr && *v != '\0') {
    if (std::strcmp(v, "repeat") == 0) {
      c.capture_repeat = true;
    } else if (std::strcmp(v, "stop") == 0) {
      c.capture_repeat = false;
    } else {
      problem("SIGHTLINE_CAPTURE_END", v, "is unknown (expected repeat or stop)");
    }
  }
  for (auto [name, field] : {std::pair<const char*, uint32_t*>{"SIGHTLINE_CAPTURE_SKIP", &c.capture_skip},
                              {"SIGHTLINE_CAPTURE_COUNT", &c.capture_count}}) {
    const char* v = getenv_fn(name);
    if (v == nullptr || *v == '\0') continue;
    if (trace::ParseCountValue(v, 0, 100000000, &n)) {
      *field = static_cast<uint32_t>(n);
    } else {
      problem(name, v, "is not a count (0..100000000)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_DELAY"); v != nullptr && *v != '\0') {
    if (!trace::ParseNumberValue(v, 0, kHuge, &c.delay_s)) problem("SIGHTLINE_DELAY", v, "is not a number of seconds");
  }
  if (const char* v = getenv_fn("SIGHTLINE_DURATION"); v != nullptr && *v != '\0') {
    if (!trace::ParseNumberValue(v, 0, kHuge, &c.duration_s)) {
      problem("SIGHTLINE_DURATION", v, "is not a number of seconds");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS"); v != nullptr) c.metric_set = v;
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_KERNELS"); v != nullptr) {
    c.metric_kernel_filter = v;
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_MAX_RANGES"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 1, 1u << 24, &n)) {
      c.metric_max_ranges = static_cast<uint32_t>(n);
    } else {
      problem("SIGHTLINE_METRICS_MAX_RANGES", v, "is not a count in [1, 16777216]");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_LAUNCHES"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 0, 1u << 24, &n)) {
      c.metric_launches_per_kernel = static_cast<uint32_t>(n);
    } else {
      problem("SIGHTLINE_METRICS_LAUNCHES", v,
              "is not a count in [0, 16777216] (launches per kernel configuration; 0 = no cap)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_SEQUENCES"); v != nullptr && *v != '\0') {
    // At most 8: on the CNN, CUPTI kept ~1.5 more activity buffers out with
    // every sequence pass (H100, run BH: 51 buffers in use after 33 passes,
    // 100 after 66); 8 sequences of an 11-pass set stay inside the pool of
    // 256 that sequence replay uses.
    if (trace::ParseCountValue(v, 1, 8, &n)) {
      c.metric_sequences = static_cast<uint32_t>(n);
    } else {
      problem("SIGHTLINE_METRICS_SEQUENCES", v,
              "is not a count in [1, 8] (sequences of each step, sequence replay)");
    }
  }
  bool replay_top_given = false;
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_REPLAY_TOP"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 0, 64, &n)) {
      c.metric_replay_top = static_cast<uint32_t>(n);
      replay_top_given = true;
    } else {
      problem("SIGHTLINE_METRICS_REPLAY_TOP", v,
              "is not a count in [0, 64] (configurations kernel-replayed after sequence replay)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_EVERY"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 1, 1u << 24, &n)) {
      c.metric_every_nth = static_cast<uint32_t>(n);
    } else {
      problem("SIGHTLINE_METRICS_EVERY", v, "is not a count in [1, 16777216] (every Nth launch)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_REPLAY"); v != nullptr && *v != '\0') {
    if (std::strcmp(v, "auto") == 0) {
      // auto interleaves kernel replay and spread passes on one range
      // profiler object, and kernel replay on an object that had run
      // application-replay passes crashed the process on CUDA 13.0 (H200,
      // bench/metrics/spread_probe.cu variants F2/F3). Not offered.
      problem("SIGHTLINE_METRICS_REPLAY", v,
              "is not available: kernel replay after spread passes on one range-profiler object "
              "crashed on CUDA 13.0 (H200); using kernel replay (choose spread or kernel)");
    } else if (!trace::ParseEnumValue<MetricsReplay>(v,
                                                     {{"kernel", MetricsReplay::kKernel},
                                                      {"spread", MetricsReplay::kSpread},
                                                      {"sequence", MetricsReplay::kSequence}},
                                                     &c.metric_replay)) {
      problem("SIGHTLINE_METRICS_REPLAY", v, "is unknown (expected kernel, spread or sequence)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_RANGE"); v != nullptr && *v != '\0') {
    if (std::strncmp(v, "nvtx:", 5) == 0 && v[5] != '\0') {
      c.metric_range_nvtx = v + 5;
    } else if (std::strcmp(v, "graph") == 0) {
      c.metric_range_graph = true;
    } else {
      problem("SIGHTLINE_METRICS_RANGE", v, "is not nvtx:NAME or graph");
    }
  }
  if ((!c.metric_range_nvtx.empty() || c.metric_range_graph) && !c.metrics_on()) {
    problem("SIGHTLINE_METRICS_RANGE", getenv_fn("SIGHTLINE_METRICS_RANGE"),
            "needs SIGHTLINE_METRICS (the metrics to measure over the range); ignored");
    c.metric_range_nvtx.clear();
    c.metric_range_graph = false;
  }
  // Per-kernel values attach to kernel records: with -t none (no cuda) a run
  // measured every launch and the trace held 24 metric ranges and 0 kernels
  // (H200, 2026-12-06), which the analyzer cannot place.
  if (c.metrics_on() && c.metric_range_nvtx.empty() && !c.metric_range_graph && !c.trace_cuda) {
    problem("SIGHTLINE_TRACE", getenv_fn("SIGHTLINE_TRACE"),
            "leaves out cuda, which SIGHTLINE_METRICS needs (each kernel's values attach to its "
            "kernel record); cuda tracing turned on");
    c.trace_cuda = true;
  }
  if (c.metric_sequences > 1 && c.metric_replay != MetricsReplay::kSequence) {
    problem("SIGHTLINE_METRICS_SEQUENCES", getenv_fn("SIGHTLINE_METRICS_SEQUENCES"),
            "needs SIGHTLINE_METRICS_REPLAY=sequence; ignored");
    c.metric_sequences = 1;
  }
  if (c.metric_replay != MetricsReplay::kSequence) {
    if (replay_top_given && c.metric_replay_top > 0) {
      problem("SIGHTLINE_METRICS_REPLAY_TOP", getenv_fn("SIGHTLINE_METRICS_REPLAY_TOP"),
              "needs SIGHTLINE_METRICS_REPLAY=sequence; ignored");
    }
    c.metric_replay_top = 0;
  }
  if (const char* v = getenv_fn("SIGHTLINE_GPU_METRICS"); v != nullptr && *v != '\0') {
    std::string_view list(v);
    if (list == "all") {
      c.gpu_metrics = true;
    } else if (list != "none") {
      std::vector<uint32_t> devices;
      if (trace::ParseCountList(v, 0, 1023, &devices)) {
        c.gpu_metrics = true;
        c.gpu_metrics_devices = std::move(devices);
      } else {
        problem("SIGHTLINE_GPU_METRICS", v,
                "is not all, none or a list of CUDA device ordinals (0,1,...); no PM sampling");
      }
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_GPU_METRICS_FREQUENCY"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 100, 100000, &n)) {
      c.gpu_metrics_hz = static_cast<uint32_t>(n);
    } else {
      problem("SIGHTLINE_GPU_METRICS_FREQUENCY", v,
              "is not a sampling frequency in Hz (100..100000); using 1000");
    }
  }
  if (c.gpu_metrics && c.metrics_on()) {
    problem("SIGHTLINE_GPU_METRICS", getenv_fn("SIGHTLINE_GPU_METRICS"),
            "cannot be combined with SIGHTLINE_METRICS (both need the GPU's performance "
            "monitors); no PM sampling");
    c.gpu_metrics = false;
    c.gpu_metrics_devices.clear();
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_IMAGE"); v != nullptr && *v != '\0') {
    if (!trace::ParseEnumValue<bool>(v, {{"shared", false}, {"per_launch", true}},
                                     &c.metric_image_per_launch)) {
      problem("SIGHTLINE_METRICS_IMAGE", v, "is unknown (expected shared or per_launch)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_SESSION"); v != nullptr && *v != '\0') {
    if (!trace::ParseEnumValue<bool>(v, {{"launch", false}, {"batch", true}},
                                     &c.metric_batch_sessions)) {
      problem("SIGHTLINE_METRICS_SESSION", v, "is unknown (expected launch or batch)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_SPREAD_REPLAY"); v != nullptr && *v != '\0') {
    if (!trace::ParseEnumValue<bool>(v, {{"application", false}, {"user", true}},
                                     &c.metric_spread_user_replay)) {
      problem("SIGHTLINE_METRICS_SPREAD_REPLAY", v, "is unknown (expected application or user)");
    }
  }
  boolean("SIGHTLINE_METRICS_DEBUG", &c.metric_debug);
  if (const char* v = getenv_fn("SIGHTLINE_METRICS_INPLACE_TRACE"); v != nullptr && *v != '\0') {
    using T = CollectorConfig::InPlaceTrace;
    if (!trace::ParseEnumValue<T>(v, {{"auto", T::kAuto}, {"kernel", T::kKernel}, {"none", T::kNone}},
                                  &c.metric_inplace_trace)) {
      problem("SIGHTLINE_METRICS_INPLACE_TRACE", v, "is unknown (expected auto, kernel or none)");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_BUFFER_KB"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 64, 256 * 1024, &n)) {
      c.buffer_bytes = static_cast<uint32_t>(n * 1024);
    } else {
      problem("SIGHTLINE_BUFFER_KB", v, "is not a size in [64, 262144] KiB");
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_BUFFERS"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 2, 4096, &n)) {
      c.max_buffers = static_cast<uint32_t>(n);
      if (c.initial_buffers > c.max_buffers) c.initial_buffers = c.max_buffers;
    } else {
      problem("SIGHTLINE_BUFFERS", v, "is not a count in [2, 4096]");
    }
  }
  // Kernel replay (the default metrics mode): CUPTI closes the activity
  // buffer at every replay pass and asks for a new one (H200, CUDA 13.0: 67
  // buffers of ~4.6 KB each for 75 replayed launches, and 17463 records lost
  // once 32 were out), so the 256 MiB bound is spent on more, smaller
  // buffers unless the user chose the sizes. A plain flush does not return
  // them all (LM in a capture window, 2026-12-06: 256 out after 256 replays,
  // 1334 records refused): the writer forces its flush once three quarters
  // are out (buffer_pool.h PoolNeedsForcedFlush).
  const bool sizes_chosen = (getenv_fn("SIGHTLINE_BUFFER_KB") != nullptr &&
                             *getenv_fn("SIGHTLINE_BUFFER_KB") != '\0') ||
                            (getenv_fn("SIGHTLINE_BUFFERS") != nullptr &&
                             *getenv_fn("SIGHTLINE_BUFFERS") != '\0');
  // Sequence replay too: CUPTI holds buffers back across its passes (H100,
  // 2026-12-06, runs BF-BH: the CNN with --metrics-sequences 3, 33 passes,
  // lost 14507 records in its last passes once the 32 buffers of 8 MiB were
  // all out; with 256 of 1 MiB, 0 lost and 51 buffers in use, 100 after 66
  // passes; one sequence's 11 passes had fitted in 32).
  if (!sizes_chosen && c.metric_passes_hold_buffers() && c.metric_range_nvtx.empty()) {
    c.buffer_bytes = CollectorConfig::kReplayBufferBytes;
    c.max_buffers = CollectorConfig::kReplayMaxBuffers;
  }
  if (const char* v = getenv_fn("SIGHTLINE_FLUSH_MS"); v != nullptr && *v != '\0') {
    if (trace::ParseCountValue(v, 10, 600000, &n)) {
      c.flush_period_ms = static_cast<uint32_t>(n);
    } else {
      problem("SIGHTLINE_FLUSH_MS", v, "is not a period in [10, 600000] ms");
    }
  }
  c.api_skip = DefaultApiSkipList();
  if (const char* v = getenv_fn("SIGHTLINE_API_SKIP"); v != nullptr && *v != '\0') {
    for (const std::string& item : SplitList(v)) {
      if (item == "none") {
        c.api_skip.clear();
      } else {
        c.api_skip.push_back(item);
      }
    }
  }
  if (const char* v = getenv_fn("SIGHTLINE_BACKTRACE_US"); v != nullptr && *v != '\0') {
    if (!trace::ParseNumberValue(v, 0, kHuge, &c.backtrace_threshold_us)) {
      problem("SIGHTLINE_BACKTRACE_US", v, "is not a number of microseconds");
    }
  }
  // Capture windows open after the CUDA context exists, and runtime API
  // records enabled API by API then never arrive (H200, CUPTI 13.0: 0 API
  // records in 80 nvtx windows of a PyTorch loop, 26589 with the RUNTIME
  // kind; scripts/gpu/call-a.sh): windows use the kind (and the skip list
  // is switched off after it), whole-run capture keeps per-API records.
  if (c.capture != CaptureMode::kWholeRun) c.runtime_records_per_api = false;
  boolean("SIGHTLINE_RUNTIME_PER_API", &c.runtime_records_per_api);
  if (const char* v = getenv_fn("SIGHTLINE_PYTHON_BACKTRACE"); v != nullptr && *v != '\0') {
    std::string s = v;
    if (s == "on" || s == "1") {
      c.trace_python = true;
    } else if (s == "off" || s == "0") {
      c.trace_python = false;
    } else if (s == "gil") {
      c.trace_python = c.python_require_gil = true;
    } else {
      problem("SIGHTLINE_PYTHON_BACKTRACE", v, "is not on, off or gil");
    }
  }
  // Default: with Python stacks, where the runtime launch callbacks that tell
  // a library's own driver launch from the one inside a runtime launch are on
  // anyway; a C/C++ program would pay them on every runtime launch (launch
  // loop, H200: +0.6 us a launch, bench/overhead/README.md run I).
  c.driver_launch_records = c.trace_python;
  boolean("SIGHTLINE_DRIVER_LAUNCH_RECORDS", &c.driver_launch_records);
  boolean("SIGHTLINE_NATIVE_STACK_EVERY_CALL", &c.native_stack_every_call);
  boolean("SIGHTLINE_SELF_COST", &c.self_cost);
  boolean("SIGHTLINE_QUIET", &c.quiet);
  if (const char* v = getenv_fn("SIGHTLINE_DETACH"); v != nullptr && *v != '\0') {
    if (!trace::ParseEnumValue<DetachMode>(v,
                                           {{"0", DetachMode::kUnsubscribe},
                                            {"keep", DetachMode::kKeepSubscriber},
                                            {"1", DetachMode::kFinalize}},
                                           &c.detach)) {
      problem("SIGHTLINE_DETACH", v, "is unknown (expected 0, keep or 1)");
    }
  }
  if (c.detach == DetachMode::kFinalize && c.gpu_metrics) {
    // The PM sampler's thread calls CUPTI until the process exits (or the
    // device's context goes): cuptiFinalize must not pull CUPTI from under it.
    problem("SIGHTLINE_DETACH", getenv_fn("SIGHTLINE_DETACH"),
            "cannot finalize CUPTI while SIGHTLINE_GPU_METRICS samples; CUPTI stays attached");
    c.detach = DetachMode::kUnsubscribe;
  }
  return c;
}

const char* MetricsReplayName(MetricsReplay mode) {
  switch (mode) {
    case MetricsReplay::kSpread: return "spread";
    case MetricsReplay::kAuto: return "auto";
    case MetricsReplay::kSequence: return "sequence";
    case MetricsReplay::kKernel: break;
  }
  return "kernel";
}

std::vector<std::string> CollectorConfig::EnabledList() const {
  std::vector<std::string> out;
  if (trace_cuda) out.push_back("cuda");
  if (trace_driver_api) out.push_back("cuda-driver");
  if (trace_memory) out.push_back("cuda-memory");
  if (trace_nvtx) out.push_back("nvtx");
  if (trace_nccl) out.push_back("nccl");
  if (trace_backtrace) out.push_back("backtrace");
  if (trace_python) out.push_back(python_require_gil ? "python-gil" : "python");
  if (graph_launch_records) out.push_back("graph-launches");
  if (!metric_set.empty()) out.push_back("metrics");
  return out;
}

std::string CollectorConfig::CaptureDescription() const {
  std::string s;
  switch (capture) {
    case CaptureMode::kWholeRun: s = "whole"; break;
    case CaptureMode::kProfilerApi: s = "cudaProfilerApi"; break;
    case CaptureMode::kNvtx: s = "nvtx:" + capture_nvtx_name; break;
    case CaptureMode::kApi: s = "api"; break;
  }
  char buf[96];
  if (delay_s > 0) {
    std::snprintf(buf, sizeof(buf), " delay=%gs", delay_s);
    s += buf;
  }
  if (duration_s > 0) {
    std::snprintf(buf, sizeof(buf), " duration=%gs", duration_s);
    s += buf;
  }
  if (!capture_repeat) s += " end=stop";
  if (capture_skip > 0) s += " skip=" + std::to_string(capture_skip);
  if (capture_count > 0) s += " count=" + std::to_string(capture_count);
  return s;
}

std::string ResolveOutputPath(const std::string& pattern, uint32_t pid, const std::string& host,
                              const char* (*getenv_fn)(const char*)) {
  trace::PatternContext context;
  context.pid = pid;
  context.host = host;
  context.getenv_fn = getenv_fn;
  context.rank = trace::RankFromEnvironment(getenv_fn);
  std::string path = trace::ExpandOutputPattern(pattern, context);
  if (path.rfind("unix:", 0) == 0) return path;
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    path += ".sltrace";
  }
  return path;
}

std::string PerProcessPath(const std::string& path, uint32_t pid, int32_t rank) {
  if (path.rfind("unix:", 0) == 0) return path;
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  size_t base = slash == std::string::npos ? 0 : slash + 1;
  std::string tag = (rank >= 0 ? ".rank" + std::to_string(rank) : std::string()) + "." +
                    std::to_string(pid);
  if (dot == std::string::npos || dot <= base) return path + tag;  // no extension (or ".name")
  return path.substr(0, dot) + tag + path.substr(dot);
}

OutputChoice ChooseOutputPath(const CollectorConfig& config, uint32_t pid,
                              const std::string& host, const char* (*getenv_fn)(const char*)) {
  OutputChoice out;
  out.path = ResolveOutputPath(config.output_pattern, pid, host, getenv_fn);
  if (out.path.rfind("unix:", 0) == 0) return out;
  // %p makes every process's name its own ("%%p" is a literal "%p").
  const std::string& p = config.output_pattern;
  bool rank_in_name = false;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i] != '%') continue;
    if (p[i + 1] == 'p') return out;
    rank_in_name = rank_in_name || p[i + 1] == 'r';
    ++i;  // skip the escaped character ("%%", "%r", ...)
  }
  if (config.session_pid != 0 && config.session_pid != pid) {
    // A launcher's workers (torchrun sets RANK) are named by rank as well.
    out.path = PerProcessPath(out.path, pid,
                              rank_in_name ? -1 : trace::RankFromEnvironment(getenv_fn));
    return out;
  }
  out.shared_name = true;
  return out;
}

}  // namespace sightline::collect
