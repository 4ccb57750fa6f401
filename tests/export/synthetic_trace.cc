// tests/export/synthetic_trace.cc — see synthetic_trace.h.
#include "tests/export/synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "tests/support/h200_device.h"

namespace sightline::testing {

SyntheticCounts ExpectedCounts(const SyntheticOptions& o) {
  SyntheticCounts c;
  c.kernels = uint64_t{o.steps} * o.kernels_per_step;
  c.memcpys = o.steps;
  c.syncs = o.steps;
  c.apis = uint64_t{o.steps} * (o.kernels_per_step + 2);
  c.nvtx_ranges = o.steps;
  c.nvtx_markers = o.steps;
  c.steps = o.steps;
  c.losses = 1;
  c.capture_windows = 1;
  c.launches = c.kernels + c.memcpys;
  return c;
}

bool WriteSyntheticTrace(std::unique_ptr<trace::Sink> sink, const SyntheticOptions& o,
                         std::string* error, bool finish) {
  trace::WriterOptions wo;
  wo.chunk_bytes = o.chunk_bytes;
  trace::TraceWriter w(std::move(sink), wo);
  TraceHeaderData h;
  h.tool_version = "synthetic";
  h.process.pid = o.pid;
  h.process.host = o.host;
  h.process.rank = o.rank;
  h.process.command_line = {"/usr/bin/python3", "train.py", "--synthetic"};
  if (!o.extra_argument.empty()) h.process.command_line.push_back(o.extra_argument);
  h.devices.push_back(test_fixtures::H200Device(0));
  h.clock.trace_ns = o.start_ns;
  h.clock.realtime_ns = 1'790'000'000'000'000'000ull;
  h.enabled = {"kernel", "memcpy", "runtime", "nvtx", "sync"};
  if (!w.Begin(h)) {
    *error = w.error();
    return false;
  }
  uint32_t launch_name = w.Intern("cudaLaunchKernel");
  uint32_t memcpy_name = w.Intern("cudaMemcpyAsync");
  uint32_t sync_name = w.Intern("cudaStreamSynchronize");
  uint32_t step_range = w.Intern("train_step");
  uint32_t marker_name = w.Intern("checkpoint");
  uint32_t kernel_ids[4];
  for (int i = 0; i < 4; ++i) kernel_ids[i] = w.Intern(kKernelNames[i]);
  if (!o.kernel_name.empty()) kernel_ids[0] = w.Intern(o.kernel_name);

  uint64_t t = o.start_ns;
  uint32_t correlation = 1;
  uint64_t gpu_free = t;
  for (uint32_t step = 0; step < o.steps; ++step) {
    uint64_t step_start = t;
    t += o.host_work_ns;
    // HtoD copy of the batch.
    ApiEvent copy_api;
    copy_api.start_ns = t;
    copy_api.end_ns = t + 6'000;
    copy_api.domain = ApiDomain::kRuntime;
    copy_api.name_id = memcpy_name;
    copy_api.correlation_id = correlation;
    copy_api.thread_id = kMainThread;
    w.Add(copy_api);
    MemcpyEvent copy;
    copy.start_ns = std::max(gpu_free, t + 3'000);
    copy.end_ns = copy.start_ns + o.copy_bytes / (o.pageable_copy ? 10 : 50);  // 10 / 50 GB/s
    copy.stream_id = kStream;
    copy.correlation_id = correlation++;
    copy.bytes = o.copy_bytes;
    copy.copy_kind = CopyKind::kHtoD;
    copy.src_kind = o.pageable_copy ? MemoryKind::kPageable : MemoryKind::kPinned;
    copy.dst_kind = MemoryKind::kDevice;
    copy.async = true;
    w.Add(copy);
    gpu_free = copy.end_ns;
    t = copy_api.end_ns + o.launch_gap_ns;
    for (uint32_t k = 0; k < o.kernels_per_step; ++k) {
      ApiEvent launch;
      launch.start_ns = t;
      launch.end_ns = t + o.launch_ns;
      launch.domain = ApiDomain::kRuntime;
      launch.name_id = launch_name;
      launch.correlation_id = correlation;
      launch.thread_id = kMainThread;
      w.Add(launch);
      KernelEvent kern;
      kern.start_ns = std::max(gpu_free, launch.end_ns + 2'000);
      kern.end_ns = kern.start_ns + o.kernel_ns;
      kern.stream_id = kStream;
      kern.correlation_id = correlation++;
      kern.name_id = kernel_ids[k % 4];
      kern.grid_x = 264;
      kern.block_x = 256;
      kern.registers_per_thread = 64;
      kern.static_shared_bytes = 16384;
      w.Add(kern);
      gpu_free = kern.end_ns;
      t = launch.end_ns + o.launch_gap_ns;
    }
    ApiEvent sync_api;
    sync_api.start_ns = t;
    sync_api.end_ns = std::max(t, gpu_free) + 2'000;
    sync_api.domain = ApiDomain::kRuntime;
    sync_api.name_id = sync_name;
    sync_api.correlation_id = correlation++;
    sync_api.thread_id = kMainThread;
    w.Add(sync_api);
    SyncEvent sync;
    sync.start_ns = t + 500;
    sync.end_ns = sync_api.end_ns - 500;
    sync.stream_id = kStream;
    sync.correlation_id = sync_api.correlation_id;
    sync.sync_kind = SyncKind::kStreamSynchronize;
    w.Add(sync);
    t = sync_api.end_ns + 1'000;
    NvtxRangeEvent range;
    range.start_ns = step_start;
    range.end_ns = t;
    range.name_id = step_range;
    range.thread_id = kMainThread;
    range.end_thread_id = kMainThread;
    range.push_pop = true;
    range.payload_kind = PayloadKind::kInt64;
    range.payload_int = step;
    w.Add(range);
    NvtxMarkerEvent marker;
    marker.timestamp_ns = t - 500;
    marker.name_id = marker_name;
    marker.thread_id = kMainThread;
    w.Add(marker);
    StepEvent s;
    s.timestamp_ns = t;
    s.step = step;
    s.thread_id = kMainThread;
    w.Add(s);
    t += 1'000;
    if (o.after_step) o.after_step(step);
  }
  if (o.outlier_kernel_ns != 0) {
    KernelEvent kern;
    kern.start_ns = o.outlier_kernel_ns;
    kern.end_ns = o.outlier_kernel_ns + o.kernel_ns;
    kern.stream_id = kStream;
    kern.correlation_id = correlation++;
    kern.name_id = kernel_ids[1];
    kern.grid_x = 264;
    kern.block_x = 256;
    w.Add(kern);
  }
  CaptureWindowEvent window;
  window.start_ns = o.start_ns;
  window.end_ns = t;
  w.Add(window);
  LossReport loss;
  loss.timestamp_ns = t;
  w.Add(loss);
  if (!finish) {
    w.Flush();
    return w.ok();
  }
  if (!w.Finish("synthetic end")) {
    *error = w.error();
    return false;
  }
  return true;
}

bool WriteSyntheticTraceTo(const std::string& spec, const SyntheticOptions& options,
                           std::string* error) {
  trace::FileSinkOptions fo;
  fo.overwrite = true;
  std::unique_ptr<trace::Sink> sink = trace::OpenSink(spec, fo, error);
  if (!sink) return false;
  return WriteSyntheticTrace(std::move(sink), options, error);
}

namespace {

// A writer on `path` (replaced) that has written its header; null on error.
std::unique_ptr<trace::TraceWriter> BeginTestTrace(const std::string& path,
                                                   const std::string& metric_set,
                                                   std::string* error) {
  trace::FileSinkOptions so;
  so.overwrite = true;
  auto sink = trace::OpenFileSink(path, so, error);
  if (!sink) return nullptr;
  auto w = std::make_unique<trace::TraceWriter>(std::move(sink));
  TraceHeaderData h;
  h.tool_version = "test";
  h.metric_set = metric_set;
  if (!w->Begin(h)) {
    *error = "trace header write failed";
    return nullptr;
  }
  return w;
}

bool FinishTestTrace(trace::TraceWriter& w, std::string* error) {
  if (w.Finish("exit")) return true;
  *error = "trace write failed";
  return false;
}

}  // namespace

bool WritePmSamplesTraceTo(const std::string& path, std::string* error) {
  std::unique_ptr<trace::TraceWriter> w = BeginTestTrace(path, "", error);
  if (!w) return false;
  GpuMetricSamplesEvent e;
  e.device_id = 0;
  e.interval_ns = 100000;
  e.metric_name_ids = {w->Intern("sm__cycles_active.avg.pct_of_peak_sustained_elapsed"),
                       w->Intern("dram__bytes_read.sum.per_second"),
                       w->Intern("gpc__cycles_elapsed.avg.per_second")};
  e.sample_start_ns = {1000000, 1100000, 1200000};
  e.sample_end_ns = {1100000, 1200000, 1300000};
  e.values = {50.0f, 2e12f, 1.5e9f, std::nanf(""), 1e12f, 1.98e9f, 75.0f, 0.0f, 1.98e9f};
  e.start_ns = 1000000;
  e.end_ns = 1300000;
  w->Add(e);
  return FinishTestTrace(*w, error);
}

bool WriteReplayTraceTo(const std::string& path, std::string* error) {
  std::unique_ptr<trace::TraceWriter> writer = BeginTestTrace(path, "full", error);
  if (!writer) return false;
  trace::TraceWriter& w = *writer;
  auto kernel = [&](uint32_t corr) {
    KernelEvent k;
    k.correlation_id = corr;
    k.stream_id = kStream;
    k.name_id = w.Intern("replayed_gemm");
    k.replayed = true;  // start = end = 0, as CUPTI reports it
    w.Add(k);
  };
  auto launch = [&](uint32_t corr, uint64_t start) {
    ApiEvent a;
    a.start_ns = start;
    a.end_ns = start + 200000000;
    a.correlation_id = corr;
    a.thread_id = kMainThread;
    a.name_id = w.Intern("cudaLaunchKernel_v7000");
    w.Add(a);
  };
  auto range = [&](uint32_t corr, double ns) {
    MetricRangeEvent m;
    m.correlation_id = corr;
    m.values.push_back({w.Intern("gpu__time_duration.sum"), ns});
    w.Add(m);
  };
  kernel(1);  // the kernel first, then its launch and range
  launch(1, 5000000);
  range(1, 12345);
  launch(2, 9000000);  // the launch first
  range(2, 2000);
  kernel(2);
  kernel(3);  // no range: not drawn
  launch(3, 12000000);
  return FinishTestTrace(w, error);
}

bool WriteStacksTraceTo(const std::string& path, std::string* error) {
  std::unique_ptr<trace::TraceWriter> writer = BeginTestTrace(path, "", error);
  if (!writer) return false;
  trace::TraceWriter& w = *writer;
  CallStack py;
  py.kind = StackKind::kPython;
  StackFrame leaf;
  leaf.function_id = w.Intern("Model.\"forward\"");  // escaped in the JSON
  leaf.module_id = w.Intern("/work/train.py");
  leaf.line = 42;
  StackFrame outer;
  outer.function_id = w.Intern("<module>");
  outer.module_id = leaf.module_id;
  outer.line = 7;
  py.frames = {leaf, outer};
  CallStack native;
  StackFrame nf;
  nf.function_id = w.Intern("main");
  nf.module_id = w.Intern("/usr/bin/app");
  nf.offset = 0x40;
  native.frames = {nf};
  for (uint64_t start : {1000, 3000}) {
    ApiEvent api;
    api.start_ns = start;
    api.end_ns = start + 1000;
    api.domain = ApiDomain::kRuntime;
    api.name_id = w.Intern("cudaStreamSynchronize");
    api.thread_id = 5;
    api.python_stack_id = w.InternStack(py);
    api.stack_id = w.InternStack(native);
    w.Add(api);
  }
  return FinishTestTrace(w, error);
}

}  // namespace sightline::testing
