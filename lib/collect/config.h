// lib/collect/config.h — collector settings, read from SIGHTLINE_* variables.
//
// Every `sightline profile` flag maps 1:1 onto one variable, so a process can be
// profiled by setting the variables by hand (CUDA_INJECTION64_PATH + these).
// This is the only reader of the collector's variables: the collector, the
// injection entry points and the range profiler take their settings from a
// CollectorConfig. Values are parsed by lib/trace/setting_value.h (one parser
// per kind: bool, count, size, number, enum); README.md has the table.
//
//   SIGHTLINE_OUTPUT     output path pattern or "unix:PATH"
//                        (default "sightline-%p.sltrace"; %p %h %r %q{VAR} %%).
//                        Without %p, processes of one run never share a file:
//                        see ChooseOutputPath
//   SIGHTLINE_SESSION_PID  pid of the run's first process (set by `sightline
//                        profile` in its child, else by the first traced
//                        process for its descendants); other processes write
//                        per-process files
//   SIGHTLINE_MANIFEST   file each traced process appends one line to when it
//                        starts and when its trace is finished (set by
//                        `sightline profile`, which lists the traces from it)
//   SIGHTLINE_TRACE      comma list of what to record (default
//                        "cuda,cuda-memory,nvtx,nccl,backtrace"):
//                        cuda        kernels, memcpy, memset, sync, overhead, runtime API
//                        cuda-driver driver API records too, and the driver-level
//                                    hooks: cuProfilerStart/Stop for cudaProfilerApi
//                                    capture, driver sync calls for backtrace (any
//                                    driver callback costs every driver call; off by
//                                    default)
//                        cuda-memory allocations and releases of device, pinned and
//                                    managed memory and stream-ordered pool operations
//                                    (CUPTI MEMORY2 / MEMORY_POOL records), with the call
//                                    stacks of the allocating calls
//                        nvtx        NVTX ranges and markers
//                        nccl        NCCL collectives (from kernels and NVTX)
//                        backtrace   host call stacks of synchronizing runtime API calls
//                        python      Python call stacks of launches, copies, memsets and
//                                    synchronizing calls (lib/collect/python_stacks.h)
//                        graph-launches  one record per CUDA graph launch instead of one
//                                    per kernel node (less detail; "graph", its old
//                                    name, still works with a deprecation warning)
//                        none        nothing (the collector stays passive)
//   SIGHTLINE_CAPTURE    "" | "cudaProfilerApi" | "nvtx:NAME" | "api"
//   SIGHTLINE_CAPTURE_END  "repeat" (default: every start/stop pair is a window)
//                        | "stop" (the first window ends tracing: activity
//                        recording is switched off for good)
//   SIGHTLINE_CAPTURE_SKIP N   the first N ranges / start-stop pairs open no
//                        window (torch.profiler's wait + warmup)
//   SIGHTLINE_CAPTURE_COUNT K  after K windows the capture ends for good, as
//                        with end=stop (torch.profiler's active)
//   SIGHTLINE_DETACH     0 (default) | keep | 1: once no window can open any more (end=stop, or a
//                        --duration of a whole-run capture) the collector always
//                        switches recording and its API/NVTX callbacks off and
//                        removes its CUPTI subscriber (Quiesce; not with
//                        metrics); "keep" = keep the subscriber; 1 = also
//                        detach CUPTI with cuptiFinalize from an API-exit
//                        callback (off by default: crashed the app on CUDA
//                        13.0, see MaybeTearDown)
//   SIGHTLINE_DELAY      seconds after start-up before capturing
//   SIGHTLINE_DURATION   seconds a capture window lasts at most
//   SIGHTLINE_METRICS    metric set for per-kernel hardware metrics ("" none)
//   SIGHTLINE_METRICS_KERNELS  substring filter on kernel names for metrics
//   SIGHTLINE_METRICS_LAUNCHES K  per kernel configuration (name + grid + block +
//                        dynamic shared memory) profile at most K launches
//                        (spread replay: K metric sets); 0 = no cap (default)
//   SIGHTLINE_METRICS_EVERY N     profile every Nth launch of a configuration
//                        (default 1)
//   SIGHTLINE_METRICS_REPLAY  kernel (default) | spread | sequence: how multi-pass
//                        metric sets are collected (lib/collect/range_profiler_spread.h,
//                        range_profiler_sequence.h; auto is refused)
//   SIGHTLINE_METRICS_SEQUENCES N  sequence replay: complete sequences of each
//                        learned step per capture window, so every launch
//                        position gets N sets (one per sequence; the report
//                        averages them per configuration); 1..8, default 1
//   SIGHTLINE_METRICS_REPLAY_TOP K  sequence replay: after the sequences,
//                        launches of each of the K configurations moving the
//                        most DRAM bytes (as many as SIGHTLINE_METRICS_SEQUENCES)
//                        are kernel-replayed with the dram__ metrics and the
//                        duration alone (one pass; ReplayMetrics), and the
//                        report takes their dram__* values from them (in-place
//                        passes add write-backs of their own,
//                        range_profiler_sequence.h ReplayTopChooser); 0..64,
//                        default 0 (off: on the LM the replays' DRAM bytes are
//                        further from ncu than the in-place ones, with 11
//                        passes (run CA) and with one (run CB); a replay starts
//                        from an L2 the step never had); only when the
//                        metrics include dram__ ones
//   SIGHTLINE_METRICS_RANGE  nvtx:NAME: metrics per instance of the application's
//                        NVTX range NAME (push/pop ranges; one pass per instance,
//                        lib/collect/range_profiler_user.h) instead of per kernel;
//                        graph: per launch of a CUDA graph (the first graph
//                        launched twice; ncu's --graph-profiling graph)
//   SIGHTLINE_METRICS_IMAGE  shared (default: one counter-data image per context,
//                        re-initialised when full) | per_launch (a fresh image and
//                        SetConfig for every profiled launch)
//   SIGHTLINE_METRICS_SESSION  launch (default: a profiler session around each
//                        profiled launch) | batch (one session across consecutive
//                        launches of a context; not with per_launch images)
//   SIGHTLINE_METRICS_SPREAD_REPLAY  application (default) | user: the CUPTI replay
//                        mode that carries spread replay's explicit pass index
//   SIGHTLINE_METRICS_DEBUG  bool: range profiler stage times and the first range
//                        name on stderr at each capture end
//   SIGHTLINE_GPU_METRICS  all | N[,N...] | none (default): PM sampling of SM,
//                        tensor-pipe, DRAM and PCIe/NVLink activity on every device
//                        the process uses (all) or on these CUDA device ordinals
//                        (lib/collect/pm_sampler.h); not with SIGHTLINE_METRICS
//   SIGHTLINE_GPU_METRICS_FREQUENCY  samples per second, 100..100000 (default 1000: the
//     sampler's CPU cost grows with the rate, bench/metrics/README.md)
//   SIGHTLINE_GPU_METRICS_DEBUG  bool: each PM-sampling CUPTI step on stderr
//   SIGHTLINE_BUFFER_KB  size of one activity buffer (default 8192)
//   SIGHTLINE_BUFFERS    most buffers alive at once (default 64; 4 preallocated)
//   SIGHTLINE_FLUSH_MS   period of the writer's CUPTI flush (default 500)
//   SIGHTLINE_API_SKIP   extra API names not to record ("none" clears the default
//                        list of high-frequency no-op queries)
//   SIGHTLINE_RUNTIME_PER_API  bool; 1 (default) = runtime API records enabled API by
//                        API, all but the skip list; 0 = the whole RUNTIME
//                        kind with the skipped APIs switched off (3x the cost
//                        per PyTorch op on the H200: bench/overhead/README.md)
//   SIGHTLINE_DRIVER_LAUNCH_RECORDS  bool; default = with Python stacks: kernels
//                        launched through the driver API (cuBLAS, cuDNN,
//                        Triton) get an API record from sightline's launch
//                        callbacks when the driver kind is not traced
//   SIGHTLINE_BACKTRACE_US  also capture stacks of any runtime API call longer than
//                        this (µs); unset = synchronizing calls only
//   SIGHTLINE_NATIVE_STACK_EVERY_CALL  bool (default 0): a native stack on every
//                        call that gets one, also when it has a Python stack
//                        (else once per Python stack, API and native caller:
//                        NativeStackOnce)
//   SIGHTLINE_SELF_COST  bool (default 0): time sightline's own callbacks, Python
//                        and native stack walks on the application's threads
//                        and print the totals at exit (self_cost.h)
//   SIGHTLINE_PYTHON_BACKTRACE  on | off | gil: Python call stacks (overrides the
//                        "python" item of SIGHTLINE_TRACE); gil = only calls made
//                        while the thread holds the GIL (PyTorch releases it around
//                        every op: few stacks)
//   SIGHTLINE_QUIET      bool: no banner, NVTX note or metrics summary on stderr
//                        (warnings are still printed)
//
// Parsing is pure (takes a getenv function) so it is tested on the CPU.
#ifndef SIGHTLINE_LIB_COLLECT_CONFIG_H_
#define SIGHTLINE_LIB_COLLECT_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace sightline::collect {

enum class CaptureMode : uint8_t {
  kWholeRun = 0,     // from the first CUDA call to exit
  kProfilerApi = 1,  // between cudaProfilerStart/Stop (cuProfilerStart/Stop with cuda-driver)
  kNvtx = 2,         // inside NVTX ranges named capture_nvtx_name
  kApi = 3,          // between sightline_start()/sightline_stop()
};

// How multi-pass metric sets are collected (SIGHTLINE_METRICS_REPLAY).
enum class MetricsReplay : uint8_t {
  kKernel = 0,  // CUPTI kernel replay: every pass on the same launch
  kSpread = 1,  // pass p on the p-th launch of the configuration; no replay
  kAuto = 2,    // spread; configurations incomplete at a capture end: kernel replay afterwards
  kSequence = 3,  // pass p over the p-th repetition of the launch sequence (a step); no replay
};
// "kernel" / "spread" / "auto" / "sequence".
const char* MetricsReplayName(MetricsReplay mode);

// What happens once no capture window can open any more (SIGHTLINE_DETACH).
enum class DetachMode : uint8_t {
  kUnsubscribe = 0,     // "0", default: callbacks and recording off, subscriber removed
  kKeepSubscriber = 1,  // "keep": callbacks and recording off, subscriber kept
  kFinalize = 2,        // "1": also cuptiFinalize from an API-exit callback
};

struct CollectorConfig {
  std::string output_pattern = "sightline-%p.sltrace";
  uint32_t session_pid = 0;    // SIGHTLINE_SESSION_PID; 0 = unset
  std::string manifest_path;   // SIGHTLINE_MANIFEST; "" = none
  CaptureMode capture = CaptureMode::kWholeRun;
  bool capture_set = false;       // SIGHTLINE_CAPTURE present (a linked-in program: else api)
  std::string capture_nvtx_name;  // for kNvtx
  bool capture_repeat = true;     // SIGHTLINE_CAPTURE_END=repeat
  uint32_t capture_skip = 0;      // SIGHTLINE_CAPTURE_SKIP: triggers skipped first
  uint32_t capture_count = 0;     // SIGHTLINE_CAPTURE_COUNT: windows, then stop (0 = no limit)
  double delay_s = 0;
  double duration_s = 0;  // 0 = unlimited

  bool trace_cuda = true;
  bool trace_driver_api = false;
  bool trace_memory = true;        // "cuda-memory": allocation records
  bool trace_nvtx = true;
  bool trace_nccl = true;
  bool trace_backtrace = true;
  bool graph_launch_records = false;  // "graph-launches": one record per graph launch, no nodes
  double backtrace_threshold_us = -1;  // < 0: synchronizing calls only
  bool trace_python = false;            // Python call stacks ("python", SIGHTLINE_PYTHON_BACKTRACE)
  bool python_require_gil = false;      // SIGHTLINE_PYTHON_BACKTRACE=gil

  std::string metric_set;
  std::string metric_kernel_filter;
  uint32_t metric_max_ranges = 2000;
  uint32_t metric_launches_per_kernel = 0;  // 0 = no cap
  uint32_t metric_every_nth = 1;
  uint32_t metric_sequences = 1;           // SIGHTLINE_METRICS_SEQUENCES
  // Off by default: the switch from application-replay passes to kernel
  // replay and back works (run CA, H100), but on the LM the replays' DRAM
  // bytes were further from ncu than the in-place ones for every launch
  // below L2's size (bench/metrics/README.md).
  uint32_t metric_replay_top = 0;          // SIGHTLINE_METRICS_REPLAY_TOP
  MetricsReplay metric_replay = MetricsReplay::kKernel;
  std::string metric_range_nvtx;           // SIGHTLINE_METRICS_RANGE=nvtx:NAME → NAME
  bool metric_range_graph = false;         // SIGHTLINE_METRICS_RANGE=graph
  bool metric_image_per_launch = false;    // SIGHTLINE_METRICS_IMAGE=per_launch
  bool metric_batch_sessions = false;      // SIGHTLINE_METRICS_SESSION=batch
  bool metric_spread_user_replay = false;  // SIGHTLINE_METRICS_SPREAD_REPLAY=user
  bool metric_debug = false;               // SIGHTLINE_METRICS_DEBUG
  // SIGHTLINE_METRICS_INPLACE_TRACE=auto|kernel|none: how kernels measured
  // in place are traced (kernel_kind_switch.h) — with the serialized KERNEL
  // kind (~1 us longer each), or not at all (written from their launch
  // calls, placed for their measured duration). auto: none during sequence
  // passes (every kernel gets its own duration measured), KERNEL inside
  // --metrics-range instances (no per-kernel duration to place them with).
  enum class InPlaceTrace : uint8_t { kAuto, kKernel, kNone };
  InPlaceTrace metric_inplace_trace = InPlaceTrace::kAuto;
  // Whether kernels measured in place go untraced, `auto` resolved. Only
  // sequence passes ever do: inside --metrics-range instances no kernel has
  // a duration of its own to be drawn with, so `none` keeps the KERNEL kind
  // there.
  bool metric_inplace_untraced() const {
    return metric_inplace_trace != InPlaceTrace::kKernel &&
           metric_replay == MetricsReplay::kSequence && metric_range_nvtx.empty();
  }

  // SIGHTLINE_METRICS names a set or list (not unset, not "none").
  bool metrics_on() const { return !metric_set.empty() && metric_set != "none"; }

  // Whether metric passes keep CUPTI's activity buffers out (kernel replay:
  // one per replayed launch; sequence passes: ~1.5 each), returned only by a
  // forced flush: the writer forces its flush when the pool runs low
  // (buffer_pool.h PoolNeedsForcedFlush). Not in plain tracing, where many
  // buffers out means many threads filling them, with records in flight.
  bool metric_passes_hold_buffers() const {
    return metrics_on() &&
           (metric_replay == MetricsReplay::kKernel || metric_replay == MetricsReplay::kSequence);
  }

  bool gpu_metrics = false;                   // SIGHTLINE_GPU_METRICS set (not none)
  std::vector<uint32_t> gpu_metrics_devices;  // empty = every device used
  uint32_t gpu_metrics_hz = 1000;             // SIGHTLINE_GPU_METRICS_FREQUENCY

  uint32_t buffer_bytes = 8u << 20;  // CUPTI's own device buffer size; bench/overhead/README.md
  uint32_t max_buffers = 32;        // 256 MiB bound
  // With kernel-replay metrics (config.cc): the same bound in smaller buffers.
  static constexpr uint32_t kReplayBufferBytes = 1u << 20;
  static constexpr uint32_t kReplayMaxBuffers = 256;
  uint32_t initial_buffers = 4;
  uint32_t flush_period_ms = 500;
  std::vector<std::string> api_skip;  // API names (e.g. "cudaGetDevice") not recorded
  bool runtime_records_per_api = true;  // SIGHTLINE_RUNTIME_PER_API
  bool driver_launch_records = false;   // SIGHTLINE_DRIVER_LAUNCH_RECORDS (default: trace_python)
  bool native_stack_every_call = false;  // SIGHTLINE_NATIVE_STACK_EVERY_CALL
  bool self_cost = false;                // SIGHTLINE_SELF_COST
  bool quiet = false;                   // SIGHTLINE_QUIET
  DetachMode detach = DetachMode::kUnsubscribe;  // SIGHTLINE_DETACH

  // The list written into TraceHeader.enabled ("cuda", "nvtx", ...).
  std::vector<std::string> EnabledList() const;
  // The capture setting as written in TraceHeader.capture_range.
  std::string CaptureDescription() const;
};

// API calls left out by default: cheap queries that programs call in tight
// loops and that say nothing about performance.
const std::vector<std::string>& DefaultApiSkipList();
// Whether the API `name` (a CUPTI callback name, "cudaGetDevice_v3020") is in
// `skip`, with or without CUPTI's _vNNNN suffix.
bool InApiSkipList(const std::vector<std::string>& skip, const char* name);

// Reads SIGHTLINE_* through `getenv_fn` (getenv when null). Bad values are
// reported in *problems ("SIGHTLINE_DELAY: 'abc' is not a number") and the
// default is kept; parsing never fails as a whole.
CollectorConfig ConfigFromEnvironment(const char* (*getenv_fn)(const char*),
                                      std::vector<std::string>* problems);

// Parses one SIGHTLINE_CAPTURE value into *config. False on an unknown value.
bool ParseCaptureRange(const std::string& value, CollectorConfig* config);

// Resolves the output pattern for this process: expands %p/%h/%r/%q{VAR} and
// appends ".sltrace" when a file path has no extension.
std::string ResolveOutputPath(const std::string& pattern, uint32_t pid, const std::string& host,
                              const char* (*getenv_fn)(const char*));

// "run.sltrace" → "run.<pid>.sltrace" ("dir/run" → "dir/run.<pid>"), with a
// rank (>= 0: RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID / PMI_RANK of a
// launcher's worker) "run.rank<R>.<pid>.sltrace"; a "unix:" destination is
// returned unchanged (the server keeps streams apart).
std::string PerProcessPath(const std::string& path, uint32_t pid, int32_t rank = -1);

// Where this process writes. Several processes of one run inherit one
// SIGHTLINE_OUTPUT (a launcher and its workers, DataLoader or torch.compile
// worker pools, fork+exec'd tools); no process may replace another's trace.
//   * a pattern with %p, or a unix socket: the expanded pattern;
//   * else the run's first process (session_pid unset or equal to pid) gets
//     the expanded path itself (`shared_name`: it must still check that no
//     live writer holds it, FileSinkOptions::lock), every other process
//     PerProcessPath(path, pid, its rank unless the pattern has %r).
struct OutputChoice {
  std::string path;
  bool shared_name = false;  // the pattern's own name, claimed under a lock
};
OutputChoice ChooseOutputPath(const CollectorConfig& config, uint32_t pid,
                              const std::string& host, const char* (*getenv_fn)(const char*));

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_CONFIG_H_
