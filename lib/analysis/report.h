// lib/analysis/report.h — the analyzer's output: plain data, no behaviour.
//
// lib/export renders a Report as text / JSON ("schema": "sightline.report.v1") /
// HTML and diffs two of them. Every field is a value (strings, numbers,
// vectors of structs) so a renderer just walks it. Times are nanoseconds;
// absolute times (`*_start_ns`, `*_end_ns`) are CLOCK_REALTIME nanoseconds on
// the merged clock (see model.h), durations are plain nanoseconds;
// percentages are 0..100.
#ifndef SIGHTLINE_LIB_ANALYSIS_REPORT_H_
#define SIGHTLINE_LIB_ANALYSIS_REPORT_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sightline::analysis {

inline constexpr const char kReportSchema[] = "sightline.report.v1";

enum class Severity : uint8_t { kHigh = 0, kMedium = 1, kLow = 2, kInfo = 3 };
const char* SeverityName(Severity s);  // "high", "medium", "low", "info"
// Default mapping from estimated saving (% of window): >= 20 high, >= 5
// medium, >= 1 low, else info.
Severity SeverityForSavingPct(double pct);

// One structured evidence item: a number (with a unit) or a text.
struct EvidenceItem {
  std::string key;    // snake_case, stable: "gap_count", "host_wait_pct"
  bool is_number = true;
  double number = 0;
  std::string unit;   // "ns", "pct", "count", "bytes", "GB/s", "" ...
  std::string text;   // when !is_number
};

// A top offender: a kernel, API call site, NVTX range, stream, rank...
struct Offender {
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  double share_pct = 0;  // rule-defined share (e.g. of the idle it explains)
  std::string detail;    // free text, e.g. a call stack or "stream 7"
  // The user's Python line behind this offender ("train.py:42 in step"),
  // "" when none applies or no Python stacks were recorded.
  std::string python_site;
};

struct Finding {
  std::string rule;  // stable rule id, e.g. "kernel_fragmentation"
  Severity severity = Severity::kInfo;
  std::string title;  // one line, with the key number
  std::string scope;  // "" (whole run), "device 0 (rank 1)", "kernel foo" ...
  std::vector<EvidenceItem> evidence;
  std::vector<Offender> offenders;  // most important first
  uint64_t est_saving_ns = 0;
  double est_saving_pct = 0;  // of the analysed window
  std::string recommendation;
  // Rules whose findings restate this one's cause (idle time, short kernels,
  // launch latency, pageable copies...): folded into it, not listed apart.
  std::vector<std::string> symptoms;

  // Builders (keep rule code short).
  Finding& Number(std::string key, double value, std::string unit = "");
  Finding& Text(std::string key, std::string value);
  // Number of evidence `key`, or `fallback`.
  double EvidenceNumber(const std::string& key, double fallback = -1) const;
};

struct TraceSummary {
  std::string path;
  uint32_t pid = 0;
  int32_t rank = -1;
  std::string host;
  bool complete = false;
  std::string integrity_reason;  // why not complete
  uint64_t lost_records = 0;
  uint64_t events = 0;
  uint64_t invalid_timestamps = 0;  // zero / inverted, not on the timeline
  uint64_t replayed_kernels = 0;    // excluded from timing
  uint64_t untraced_kernels = 0;    // measured in place, not traced: excluded from timing
  uint64_t untraced_memsets = 0;    // no GPU timestamps (metrics on): excluded from timing
  int64_t clock_offset_ns = 0;
  bool has_clock_mapping = false;
};

struct StreamSummary {
  uint32_t device_index = 0;  // into Summary::devices
  uint32_t stream_id = 0;
  int32_t rank = -1;
  uint64_t ops = 0, kernels = 0, memcpys = 0, memsets = 0;
  uint64_t busy_ns = 0;  // union of the stream's activities
  double busy_pct = 0;   // of the device window
  // HTA's per-stream idle attribution: the gaps between consecutive
  // operations of the stream (first to last operation), by cause.
  uint64_t idle_ns = 0;
  uint64_t idle_host_wait_ns = 0, idle_sync_wait_ns = 0, idle_kernel_wait_ns = 0,
           idle_other_ns = 0, idle_profiler_ns = 0;
  // HTA's queue length: operations launched (API call started) and not yet
  // finished on this stream; the hardware queue saturates around 1024.
  uint64_t max_queue_length = 0;
  double mean_queue_length = 0;  // time-weighted over the stream's window
};

struct DeviceSummary {
  uint32_t index = 0;      // model device index
  uint32_t id = 0;         // CUDA ordinal
  int32_t rank = -1;
  uint32_t trace = 0;
  std::string name;        // "NVIDIA H200" or ""
  // HTA window: first activity start .. last activity end on this device.
  uint64_t window_start_ns = 0, window_end_ns = 0, window_ns = 0;
  uint64_t busy_ns = 0;    // union of all activity
  uint64_t compute_ns = 0, comm_ns = 0, memory_ns = 0, idle_ns = 0;
  double gpu_utilization_pct = 0;  // busy / window
  double compute_pct = 0, comm_pct = 0, memory_pct = 0, idle_pct = 0;
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  // Time with 0, 1, 2, 3+ kernels running at once (within the window).
  std::array<uint64_t, 4> concurrency_ns{};
  // Idle attribution (ns): host-wait, sync-wait, kernel-wait, other.
  uint64_t idle_host_wait_ns = 0, idle_sync_wait_ns = 0, idle_kernel_wait_ns = 0,
           idle_other_ns = 0, idle_profiler_ns = 0;
  // Communication/compute overlap (HTA): |comm ∩ compute| / comm.
  double comm_overlap_pct = 0;
  // Peak device memory allocated over the whole trace (MemoryDevice
  // peak_bytes); 0 without memory records (-t cuda-memory).
  uint64_t memory_peak_bytes = 0;
};

struct StepRow {
  uint32_t index = 0;
  uint32_t trace = 0;  // the trace whose step it is (not in the JSON)
  uint64_t start_ns = 0, end_ns = 0, duration_ns = 0;
  double gpu_utilization_pct = 0;  // union of GPU activity in the step / duration
};

struct StepSummary {
  // "step_marker", "nvtx", "capture_window", "launch_pattern", "" (none)
  std::string source;
  std::string name;    // NVTX range / marker name; launch_pattern: the step's first operation
  uint64_t detected = 0;      // steps found in the whole trace
  uint64_t warmup_steps = 0;  // of which leading warm-up steps
  // Of the warm-up steps: those that ran hardware-metric passes or replays
  // (DetectSteps); the steady state begins after the last.
  uint64_t metrics_steps = 0;
  uint32_t period = 0;        // launch_pattern: GPU operations per step
  double match_pct = 0;       // launch_pattern: share of the loop that repeats exactly
  uint64_t count = 0;  // steps in the analysed scope (rows below)
  double mean_ns = 0, stddev_ns = 0;
  uint64_t p50_ns = 0, p99_ns = 0, min_ns = 0, max_ns = 0;
  double mean_gpu_utilization_pct = 0;
  std::vector<StepRow> steps;  // index = position among all detected steps
};

// What came before the analysed steady state (scope "steady_state").
struct StartupSummary {
  uint64_t duration_ns = 0;       // trace start .. first steady step
  uint64_t warmup_ns = 0;         // warm-up steps inside it
  uint64_t cuda_api_ns = 0;       // union of CUDA API calls (all threads)
  uint64_t module_loading_ns = 0; // module / function loading calls
  uint64_t memory_alloc_ns = 0;   // cudaMalloc*/cuMemAlloc*/host allocation calls
  uint64_t sync_ns = 0;           // synchronizing calls
  uint64_t gpu_busy_ns = 0;       // union of GPU activity
  uint64_t host_other_ns = 0;     // neither CUDA calls nor GPU: imports, data loading, Python
  uint64_t lazy_loading_ns = 0;   // CUPTI overhead records: lazy function / module loading
  uint64_t compilation_ns = 0;    // CUPTI overhead records: driver JIT compilation
};

// The report's first line of advice: the top root-cause finding and the step
// time expected once it is fixed.
struct FirstAction {
  std::string rule;        // "" when no finding saves anything
  std::string title;
  double saving_pct = 0;   // of the analysed window
  uint64_t step_ns = 0;    // median steady step period, start to next start (0 without steps)
  uint64_t expected_step_ns = 0;
};

struct Summary {
  uint64_t window_start_ns = 0, window_end_ns = 0, window_ns = 0;
  FirstAction first_action;
  // What was analysed: "steady_state" (default when steps are found),
  // "whole", "steps" or "time" (--window). scope_*: host time range chosen
  // (0 for whole); the GPU window above follows the work launched in it.
  std::string scope = "whole";
  uint64_t scope_start_ns = 0, scope_end_ns = 0;
  int64_t steady_first_step = -1;  // index of the first analysed step
  uint64_t startup_ns = 0;         // == startup.duration_ns
  StartupSummary startup;
  std::vector<DeviceSummary> devices;
  StepSummary steps;
  uint64_t gpu_activities = 0, api_calls = 0, nvtx_ranges = 0;
};

// One hardware metric of a kernel: the mean over its profiled launches.
struct KernelMetricValue {
  std::string name;  // ncu's name, e.g. "sm__throughput.avg.pct_of_peak_sustained_elapsed"
  double value = 0;  // mean over the measured launches (metric sets)
  uint64_t samples = 0;
  double min = 0, max = 0;  // over the same sets: how far one launch's value strays
  // Taken from kernel-replayed sets where in-place sets exist too (dram__*
  // values after sequence replay's --metrics-replay-top; MetricAggregate).
  bool kernel_replay = false;
};

// A kernel's metrics for one launch configuration (kernels measured with
// several configurations: a GEMM on two shapes).
struct KernelConfigMetrics {
  std::array<uint32_t, 3> grid{}, block{};
  uint64_t shared_bytes = 0;
  uint32_t registers_per_thread = 0;
  uint64_t count = 0;    // timed launches of this configuration in the window
  uint64_t samples = 0;  // metric sets measured on it
  std::vector<KernelMetricValue> metrics;
};

struct KernelRow {
  std::string name;
  std::string klass;  // "compute", "communication"
  uint64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0, stddev_ns = 0, share_pct = 0;
  // Launches replayed for hardware metrics: listed, but not in count/timing.
  uint64_t replayed_count = 0;
  // Most frequent launch configuration.
  std::array<uint32_t, 3> grid{}, block{};
  uint32_t registers_per_thread = 0;
  uint64_t shared_bytes = 0;  // static + dynamic
  uint32_t launch_configs = 0;  // distinct configurations seen
  // From the occupancy calculator when the device is known; -1 = unknown.
  double theoretical_occupancy_pct = -1;
  std::string occupancy_limiter;  // "registers", "shared_memory", "warps", "blocks", ""
  // The Python call site with the most GPU time of this kernel and the
  // PyTorch op (innermost aten op range, --pytorch) with the most; "" = none.
  std::string python_site;
  std::string op;
  // Hardware metrics (--metrics): means over the kernel's measured launches,
  // by name; per configuration when more than one configuration was measured.
  uint64_t metric_samples = 0;
  std::vector<KernelMetricValue> metrics;
  std::vector<KernelConfigMetrics> metrics_by_config;
};

// How much of the analysed kernel time has hardware metrics (kernel_metrics.h).
struct MetricsCoverage {
  bool present = false;       // the trace(s) hold metric sets
  double kernel_time_pct = 0; // of kernel time in the window, by kernel name + configuration
  uint64_t configs_with = 0, configs_without = 0;  // distinct (kernel, configuration) in the window
  uint64_t covered_ns = 0, kernel_ns = 0;
  struct Missing {
    std::string name;
    std::array<uint32_t, 3> grid{}, block{};
    uint64_t count = 0, total_ns = 0;
    double share_pct = 0;  // of kernel time in the window
    std::string reason;
  };
  std::vector<Missing> missing;  // heaviest first, at most 10
};

// Metrics of an NVTX range measured as a whole (--metrics-range nvtx:NAME;
// range_metrics.h): one row per range name.
struct RangeMetricSetRow {
  uint64_t start_ns = 0, end_ns = 0;  // first instance's push, last one's pop
  uint32_t instances = 0;
  uint32_t passes_needed = 0, passes_collected = 0;
  bool complete = false;   // all passes: values
  bool in_window = false;  // inside the analysed window (scope)
  std::vector<KernelMetricValue> metrics;  // samples = 1
};
struct RangeMetricsRow {
  std::string range;
  uint64_t sets = 0, complete = 0, complete_in_window = 0;
  uint64_t instances = 0;  // instances the sets were measured on
  // Mean over the complete sets inside the window (over every complete set
  // when none is inside; `from_window` says which); samples = sets averaged.
  std::vector<KernelMetricValue> metrics;
  bool from_window = false;
  std::vector<RangeMetricSetRow> set_rows;  // by start
};

// PM sampling (--gpu-metrics; gpu_metrics.h): one device's samples over the
// analysed window.
struct GpuMetricStat {
  std::string key;     // quantity key ("sm_active", "dram_read", ...; pm_quantities.h)
  std::string label;   // "SM active", ...
  std::string metric;  // the CUPTI metric sampled
  std::string unit;    // "%", "B/s", "Hz"
  // Time-weighted mean over the window; p50/p95/max over the samples in it.
  double mean = 0, p50 = 0, p95 = 0, max = 0;
  // Percent quantities only (else -1): share of the window's sampled time at
  // >= busy_threshold_pct ("busy") and at >= saturated_threshold_pct
  // ("saturated") of peak.
  double busy_pct = -1, saturated_pct = -1;
};
// The samples overlapping a step, an NVTX range name or a kernel name,
// weighted by overlap. Steps and ranges are projected onto the GPU: from the
// first start to the last end of the work their CUDA calls launched.
struct GpuMetricSpanRow {
  std::string name;    // kernel / range name; steps: ""
  uint32_t index = 0;  // steps: the step's index (StepRow::index)
  uint64_t start_ns = 0, end_ns = 0;  // steps: the GPU span
  uint64_t instances = 0;
  uint64_t time_ns = 0;   // covered time (sum over instances)
  std::vector<double> values;  // parallel to GpuMetricsDevice::stats; NaN = no sample
  // Kernels: the mean instance lasts at least two sampling intervals, so its
  // values describe it rather than its neighbours too.
  bool resolved = true;
};
struct GpuMetricsDevice {
  uint32_t trace = 0;
  uint32_t device_id = 0;   // CUDA ordinal
  std::string device_name;
  uint64_t samples = 0;         // overlapping the window
  uint64_t samples_total = 0;   // in the trace
  uint64_t samples_missing = 0;  // the trace's LossReport (gaps, overflow)
  uint64_t samples_missing_in_window = 0;  // gaps inside the window (capture windows)
  double interval_ns = 0;        // median sample duration in the window
  uint32_t interval_asked_ns = 0;
  double coverage_pct = 0;       // of the window's recorded time (capture windows) covered
  std::vector<std::string> unavailable;  // quantity keys not sampled on this device
  std::vector<GpuMetricStat> stats;
  std::vector<GpuMetricSpanRow> steps;    // by index
  std::vector<GpuMetricSpanRow> ranges;   // by time_ns, at most 10
  std::vector<GpuMetricSpanRow> kernels;  // by time_ns, at most 10
  // For plots: bucket means (at most 600 buckets over the window), one
  // vector per stat, NaN where no sample fell.
  std::vector<uint64_t> timeline_ns;
  std::vector<std::vector<float>> timeline;
};

// An ncu-style details page of one kernel (kernel_metrics.h).
struct KernelPageRow {
  std::string label;
  std::string value;  // formatted, "n/a" when not collected
  std::string note;   // what it means or what to do; may be ""
};

struct KernelPageSection {
  std::string title;
  std::vector<KernelPageRow> rows;
};

struct KernelPage {
  std::string name;          // as traced (possibly mangled)
  std::string display_name;  // demangled
  std::string bound;         // "memory", "compute", "latency", "" (no speed-of-light metrics)
  std::vector<KernelPageSection> sections;
  std::vector<std::string> findings;  // "rule: title (saving)" of findings naming the kernel
};

// GPU and host-blocked time by the user's Python line (python_sites.h).
struct PythonSiteRow {
  std::string site;            // "path.py:LINE in function"
  bool inferred = false;       // work of threads without Python frames, see python_sites.h
  uint64_t gpu_ns = 0;         // kernels, copies and memsets launched from here
  uint64_t host_blocked_ns = 0;  // synchronizing calls / synchronous copies made here
  uint64_t launches = 0;       // kernel and graph launches made here
  uint64_t calls = 0;          // CUDA calls with this site
};

// GPU time by PyTorch op (NVTX ranges of --pytorch).
struct OpRow {
  std::string op;
  uint64_t gpu_ns = 0;
  uint64_t kernels = 0;
};

// One whole Python stack (outermost frame first) with its times: the
// call-site view of the HTML report.
struct PythonStackRow {
  std::vector<std::string> frames;  // "function (file:line)", outermost first
  uint64_t gpu_ns = 0, host_blocked_ns = 0;
};

struct ApiRow {
  std::string name;      // without CUPTI's version suffix: "cudaLaunchKernel"
  std::string raw_name;  // as recorded: "cudaLaunchKernel_v7000"
  uint64_t count = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns = 0, stddev_ns = 0, share_pct = 0;  // share of all API time
};

struct MemcpyRow {
  std::string kind;         // "HtoD", "DtoH", ..., "memset"
  std::string memory;       // "pageable->device", "pinned->device", "device"...
  uint64_t count = 0, bytes = 0, total_ns = 0;
  double mean_ns = 0;
  double bandwidth_gbps = 0;  // bytes / total time, GB/s (1e9)
};

// NVTX range projected onto the GPU (per range name).
struct NvtxRow {
  std::string name;
  std::string domain;
  uint64_t count = 0;
  uint64_t cpu_total_ns = 0;     // sum of range durations
  uint64_t gpu_total_ns = 0;     // GPU time of the work launched inside
  uint64_t gpu_ops = 0;          // activities launched inside
  double gpu_share_pct = 0;      // gpu_total / all GPU activity time
};

struct NcclRow {  // per rank
  int32_t rank = -1;
  uint32_t device_index = 0;
  uint64_t count = 0, total_ns = 0, overlapped_ns = 0;
  double comm_share_pct = 0;     // comm union / device window
  double overlap_pct = 0;        // HTA comm/compute overlap
};

// NCCL operations per trace and operation: what NCCL's NVTX payloads say
// (message size, communicator) next to the GPU time of the op's kernels.
struct NcclOpRow {
  uint32_t trace_index = 0;      // into traces
  int32_t rank = -1;             // the process's rank (trace header)
  std::string op;                // "AllReduce", ...; "Unknown"
  uint64_t count = 0;            // host calls (NCCL NVTX ranges)
  uint64_t sized_count = 0;      // of which with a message size
  uint64_t bytes_total = 0;      // sum of message sizes (one rank's buffer)
  uint64_t bytes_min = 0, bytes_max = 0;
  uint64_t gpu_count = 0;        // NCCL kernels of this op
  uint64_t gpu_total_ns = 0;
  // bytes_total / gpu_total_ns when every call has a size and calls and
  // kernels pair one to one (else 0): NCCL-tests' "algbw".
  double algbw_gbps = 0;
  std::string comm_id;           // "0x…" communicator hash; "" none; "multiple"
  int32_t comm_rank = -1;        // rank in that communicator (-1 unknown)
  int32_t comm_nranks = 0;       // its size (0 unknown)
};

// NCCL operations matched across ranks (lib/analysis/cross_rank.h): one row
// per rank with NCCL work. Present only with two or more such ranks.
struct CrossRankRow {
  uint32_t trace_index = 0;       // into traces
  int32_t rank = -1;              // the process's rank (trace header)
  int64_t clock_offset_ns = 0;    // added to its clock to align it with the others
  bool clock_aligned = false;     // offset estimated from matched completions
  uint64_t calls = 0, matched_calls = 0, unmatched_calls = 0;
  uint64_t arrival_delay_ns = 0;  // Σ (its arrival − earliest arrival) over matched ops
  uint64_t wait_ns = 0;           // Σ (last arrival − its arrival): waited for others
  uint64_t last_arrivals = 0;     // matched ops it arrived last at
  uint64_t late_margin_ns = 0;    // Σ (its arrival − second-last) where it was last
  uint64_t comm_ns = 0;           // its device's communication time (union)
  uint64_t exposed_comm_ns = 0;   // of which not overlapped by compute kernels
};

// One matched NCCL operation (aligned clock).
struct CrossRankOpRow {
  std::string comm_id;         // "0x…" communicator hash; "" in device order
  std::string op;              // "AllReduce", ... ("Unknown" in device order without NCCL events)
  uint64_t bytes = 0;          // message size (0 unknown)
  uint64_t seq = 0;            // position in its channel (communicator or send/receive pair)
  bool p2p = false;            // a Send/Recv pair
  uint64_t ranks = 0;          // ranks whose call matched
  uint64_t first_arrival_ns = 0;  // earliest arrival, aligned clock
  int32_t last_rank = -1;      // the rank that arrived last
  uint64_t last_margin_ns = 0; // its arrival − the second-last arrival
  uint64_t end_spread_ns = 0;  // aligned completion spread (0 with < 2 GPU ends)
};

// One analysed step seen across ranks: the steps of one rank (the one with
// the most analysed steps; every rank runs the same loop) on its aligned
// clock, the matched operations that began in it (earliest arrival) and the
// rank whose late arrivals cost the most in it.
struct CrossRankStepRow {
  uint32_t index = 0;          // summary.steps.steps[].index
  uint64_t ops = 0;            // matched operations beginning in the step
  int32_t last_rank = -1;      // the rank with the largest summed margin in the step (-1: none late)
  uint64_t late_ns = 0;        // that rank's summed margins in the step
  uint64_t last_arrivals = 0;  // operations of the step it arrived last at
};

struct CrossRankSummary {
  std::string method;         // "" none, "communicator", "device_order"
  std::string clock_source;   // "collective_ends" or "realtime"
  uint64_t channels = 0;      // communicators (+ point-to-point sender/receiver pairs)
  uint64_t collectives_matched = 0;  // matched operations (each counted once)
  uint64_t calls = 0, matched_calls = 0, unmatched_calls = 0;  // per-rank calls
  uint64_t skew_median_ns = 0, skew_max_ns = 0;  // aligned end spread of matched ops
  uint64_t skew_samples = 0;
  std::vector<CrossRankRow> ranks;  // by trace
  // The operations whose last rank was latest (largest margin first), at most 20.
  std::vector<CrossRankOpRow> latest;
  // Per analysed step (empty without steps), in step order.
  std::vector<CrossRankStepRow> steps;
};

// GPU memory (-t cuda-memory; lib/analysis/memory.h). Bytes are those the
// program allocated through CUDA (cudaMalloc and friends, stream-ordered
// pools at their reserved size, module statics), not the CUDA context's own.
struct MemorySite {
  std::string site;        // Python line, native frames, or the API name
  uint64_t bytes = 0;
  uint64_t allocations = 0;  // allocations (churn_sites: allocation and release calls)
  uint64_t call_ns = 0;      // churn_sites: host time of those calls
};

// Device memory by the library that requested it (CUPTI's record source:
// libc10_cuda.so is PyTorch's caching allocator, whose peak is
// torch.cuda.max_memory_reserved(); libcublas*.so cuBLAS's own buffers...).
struct MemorySource {
  std::string source;      // module file name, "" unknown (module statics, old traces)
  uint64_t peak_bytes = 0;     // its own peak
  uint64_t bytes_at_peak = 0;  // its share of the device's peak
  uint64_t end_bytes = 0;
};

struct MemoryPoint {       // device memory in use from t_ns on
  uint64_t t_ns = 0;
  uint64_t bytes = 0;
};

// A stream-ordered memory pool (cudaMallocAsync / cudaMemPool*): what it held
// on the device (its reported reserved size, else its live allocations) and
// what its allocations used.
struct MemoryPoolSummary {
  uint64_t address = 0;           // the pool's base address as CUPTI reports it
  uint64_t peak_bytes = 0;        // most the pool held on the device
  uint64_t peak_used_bytes = 0;   // most bytes of its live allocations
  uint64_t end_bytes = 0;         // held when the trace ends (0 when destroyed)
  uint64_t allocations = 0;       // stream-ordered allocations from it
  bool destroyed = false;
  std::vector<MemoryPoint> timeline;  // what it held over time, at most ~300 points
};

struct MemoryDevice {
  uint32_t device_index = 0;  // model device index (summary.devices[].index)
  uint32_t id = 0;            // CUDA ordinal
  int32_t rank = -1;
  uint64_t capacity_bytes = 0;  // the device's global memory (0 unknown)
  // Device memory in use: dynamic allocations (cudaMalloc, cuMemAlloc,
  // arrays), stream-ordered pools at their size, and module statics.
  uint64_t peak_bytes = 0;
  uint64_t peak_ns = 0;          // first time the peak was reached
  uint64_t static_bytes = 0;     // of which module statics (__device__ globals) at the peak
  uint64_t pool_bytes = 0;       // of which stream-ordered pools at the peak
  uint64_t scope_peak_bytes = 0; // peak inside the analysed window
  uint64_t end_bytes = 0;        // in use when the trace ends
  uint64_t end_allocations = 0;  // allocations never released before the trace ended
  uint64_t pinned_peak_bytes = 0;   // page-locked host memory (cudaHostAlloc, cudaMallocHost)
  uint64_t managed_peak_bytes = 0;  // managed memory (cudaMallocManaged)
  uint64_t allocations = 0, releases = 0;
  // Releases of memory allocated before recording began (a capture window,
  // attach): their size is unknown, so in-use counts start from zero.
  uint64_t unmatched_releases = 0;
  // Inside the analysed window: synchronous allocations and releases (not
  // stream-ordered) and the host time of their calls.
  uint64_t scope_allocations = 0, scope_releases = 0;
  uint64_t scope_alloc_call_ns = 0;
  double allocations_per_step = 0;  // (allocations + releases) per analysed step; 0 without steps
  // In use at the end of each analysed step (step order) and its trend.
  std::vector<uint64_t> step_end_bytes;
  double growth_bytes_per_step = 0;  // Theil–Sen slope of step_end_bytes
  uint64_t steps_increasing = 0, steps_decreasing = 0;
  std::vector<MemorySite> peak_sites;  // live at the peak, by bytes (at most 10)
  std::vector<MemorySite> end_sites;   // never released, by bytes (at most 10)
  // Allocated inside the analysed window and still live at its end (the
  // candidates of a leak across steps), by bytes (at most 10).
  std::vector<MemorySite> scope_live_sites;
  std::vector<MemorySite> churn_sites;  // synchronous alloc/release calls in the window, by count
  std::vector<MemorySource> sources;    // by peak_bytes; dynamic device memory and pools
  // PyTorch's own view (--pytorch: samples after each optimizer step; 0
  // samples without them): the tensors' bytes next to the allocator's.
  uint64_t torch_samples = 0;
  uint64_t torch_allocated_peak_bytes = 0;  // max of torch.cuda.max_memory_allocated()
  uint64_t torch_reserved_peak_bytes = 0;   // max of torch.cuda.memory_reserved()
  uint64_t torch_allocated_end_bytes = 0;   // the last sample's memory_allocated()
  uint64_t torch_reserved_end_bytes = 0;
  std::vector<MemoryPoint> timeline;    // step function, at most ~2000 points (peaks kept)
  std::vector<MemoryPoolSummary> pools;  // stream-ordered pools, by peak_bytes (at most 16)
};

struct MemorySummary {
  bool recorded = false;  // the trace(s) hold memory records
  std::vector<MemoryDevice> devices;
};

struct Report {
  std::string schema = kReportSchema;
  std::vector<TraceSummary> traces;
  Summary summary;
  std::vector<KernelRow> kernels;   // by total descending
  std::vector<ApiRow> apis;         // by total descending
  std::vector<MemcpyRow> memcpys;   // by total descending
  std::vector<StreamSummary> streams;
  std::vector<NvtxRow> nvtx;        // by gpu_total descending
  std::vector<NcclRow> nccl;
  std::vector<NcclOpRow> nccl_ops;  // by (trace, op)
  CrossRankSummary cross_rank;      // method "" with fewer than two ranks
  MemorySummary memory;
  MetricsCoverage metrics_coverage;
  std::vector<RangeMetricsRow> range_metrics;  // by name
  std::vector<GpuMetricsDevice> gpu_metrics;   // PM sampling, by (trace, device)
  // Details pages: the heaviest kernels' (AnalysisOptions::kernel_pages*).
  std::vector<KernelPage> kernel_pages;
  std::vector<Finding> findings;    // ranked by est_saving_ns descending
  std::vector<std::string> notes;   // warnings: losses, invalid timestamps, skew
  // Python call sites and ops (empty without --python-backtrace / --pytorch).
  std::vector<PythonSiteRow> python_sites;  // by gpu_ns + host_blocked_ns descending
  std::vector<OpRow> ops;                   // by gpu_ns descending
  std::vector<PythonStackRow> python_stacks;  // by gpu_ns + host_blocked_ns, at most 500
  double python_attributed_gpu_pct = 0;     // of kernel time, to a user line (incl. inferred)
  double python_inferred_gpu_pct = 0;       // of kernel time, to a user line by inference
  double op_attributed_gpu_pct = 0;         // of kernel time, to an op
};

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_REPORT_H_
