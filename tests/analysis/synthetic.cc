#include "tests/analysis/synthetic.h"

#include <memory>

#include "gtest/gtest.h"
#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/support/h200_device.h"

namespace sightline::analysis::testing {

DeviceInfo H200(uint32_t id) {
  DeviceInfo d = test_fixtures::H200Device(id);
  d.chip_name = "GH100";
  return d;
}

TraceBuilder::TraceBuilder(int32_t rank, std::string name) {
  trace_.name = std::move(name);
  trace_.header.process.pid = 1000 + (rank < 0 ? 0 : rank);
  trace_.header.process.host = "testhost";
  trace_.header.process.rank = rank;
  trace_.header.devices.push_back(H200(0));
}

uint32_t TraceBuilder::Kernel(const std::string& kernel, uint64_t start, uint64_t end,
                              uint32_t stream, uint64_t api_start, uint64_t api_ns,
                              uint32_t thread) {
  uint32_t corr = next_correlation_++;
  if (api_ns == 0) api_ns = us(3);
  if (api_start == 0) api_start = start > us(10) + api_ns ? start - us(10) - api_ns : 1;
  ApiEvent api;
  api.start_ns = api_start;
  api.end_ns = api_start + api_ns;
  api.domain = ApiDomain::kRuntime;
  api.name_id = trace_.Intern("cudaLaunchKernel");
  api.correlation_id = corr;
  api.thread_id = thread;
  trace_.apis.push_back(api);
  KernelEvent k;
  k.start_ns = start;
  k.end_ns = end;
  k.stream_id = stream;
  k.correlation_id = corr;
  k.name_id = trace_.Intern(kernel);
  k.grid_x = 264;
  k.block_x = 256;
  k.registers_per_thread = 32;
  trace_.kernels.push_back(k);
  return corr;
}

uint32_t TraceBuilder::KernelWithConfig(const std::string& kernel, uint64_t start, uint64_t end,
                                        const KernelEvent& config, uint32_t stream) {
  uint32_t corr = Kernel(kernel, start, end, stream);
  KernelEvent& k = trace_.kernels.back();
  uint32_t name = k.name_id;
  k = config;
  k.start_ns = start;
  k.end_ns = end;
  k.stream_id = stream;
  k.correlation_id = corr;
  k.name_id = name;
  return corr;
}

void TraceBuilder::BareKernel(const std::string& kernel, uint64_t start, uint64_t end,
                              uint32_t stream) {
  KernelEvent k;
  k.start_ns = start;
  k.end_ns = end;
  k.stream_id = stream;
  k.name_id = trace_.Intern(kernel);
  k.grid_x = 1;
  k.block_x = 32;
  trace_.kernels.push_back(k);
}

uint32_t TraceBuilder::Memcpy(CopyKind kind, MemoryKind host_kind, uint64_t bytes,
                              uint64_t start, uint64_t end, uint32_t stream,
                              const std::string& api, uint64_t api_start, uint64_t api_end,
                              bool async, uint32_t thread) {
  uint32_t corr = next_correlation_++;
  ApiEvent a;
  a.start_ns = api_start;
  a.end_ns = api_end;
  a.domain = ApiDomain::kRuntime;
  a.name_id = trace_.Intern(api);
  a.correlation_id = corr;
  a.thread_id = thread;
  trace_.apis.push_back(a);
  MemcpyEvent m;
  m.start_ns = start;
  m.end_ns = end;
  m.stream_id = stream;
  m.correlation_id = corr;
  m.bytes = bytes;
  m.copy_kind = kind;
  bool host_src = kind == CopyKind::kHtoD || kind == CopyKind::kHtoA;
  m.src_kind = host_src ? host_kind : MemoryKind::kDevice;
  m.dst_kind = host_src ? MemoryKind::kDevice : host_kind;
  m.async = async;
  trace_.memcpys.push_back(m);
  return corr;
}

uint32_t TraceBuilder::Api(const std::string& name, uint64_t start, uint64_t end,
                           uint32_t thread, uint32_t stack_id) {
  uint32_t corr = next_correlation_++;
  ApiEvent a;
  a.start_ns = start;
  a.end_ns = end;
  a.domain = ApiDomain::kRuntime;
  a.name_id = trace_.Intern(name);
  a.correlation_id = corr;
  a.thread_id = thread;
  a.stack_id = stack_id;
  trace_.apis.push_back(a);
  return corr;
}

uint32_t TraceBuilder::Allocate(uint64_t address, uint64_t bytes, uint64_t start, uint64_t end,
                                const std::string& api, MemoryKind kind, uint32_t stack_id) {
  uint32_t corr = Api(api, start, end, 1, stack_id);
  MemoryEvent m;
  m.timestamp_ns = start;
  m.correlation_id = corr;
  m.operation = MemoryOperation::kAllocation;
  m.memory_kind = kind;
  m.address = address;
  m.bytes = bytes;
  trace_.memory.push_back(m);
  return corr;
}

uint32_t TraceBuilder::Release(uint64_t address, uint64_t bytes, uint64_t start, uint64_t end,
                               const std::string& api, MemoryKind kind) {
  uint32_t corr = Api(api, start, end);
  MemoryEvent m;
  m.timestamp_ns = start;
  m.correlation_id = corr;
  m.operation = MemoryOperation::kRelease;
  m.memory_kind = kind;
  m.address = address;
  m.bytes = bytes;
  trace_.memory.push_back(m);
  return corr;
}

void TraceBuilder::Nvtx(const std::string& name, uint64_t start, uint64_t end, uint32_t thread) {
  NvtxRangeEvent r;
  r.start_ns = start;
  r.end_ns = end;
  r.name_id = trace_.Intern(name);
  r.thread_id = thread;
  r.end_thread_id = thread;
  r.push_pop = true;
  trace_.nvtx_ranges.push_back(r);
}

void TraceBuilder::Overhead(uint64_t start, uint64_t end, uint32_t thread, uint32_t device) {
  OverheadEvent o;
  o.start_ns = start;
  o.end_ns = end;
  o.overhead_kind = 2u << 16;  // CUPTI instrumentation (a profiler cost)
  o.thread_id = thread;
  o.device_id = device;
  trace_.overheads.push_back(o);
}

void TraceBuilder::Step(uint64_t step, uint64_t timestamp, uint32_t thread) {
  StepEvent s;
  s.step = step;
  s.timestamp_ns = timestamp;
  s.thread_id = thread;
  s.name_id = trace_.Intern("step");
  trace_.steps.push_back(s);
}

void TraceBuilder::Capture(uint64_t start, uint64_t end, CaptureTrigger trigger,
                           uint32_t index) {
  CaptureWindowEvent c;
  c.start_ns = start;
  c.end_ns = end;
  c.trigger = trigger;
  c.index = index;
  trace_.capture_windows.push_back(c);
}

uint32_t TraceBuilder::NcclKernel(uint64_t start, uint64_t end, uint32_t stream,
                                  uint64_t api_start) {
  return Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", start, end, stream, api_start);
}

uint32_t TraceBuilder::NcclCall(NcclOp op, uint64_t comm, uint64_t bytes, uint64_t call_start,
                                uint64_t call_end, uint64_t start, uint64_t end, int32_t peer,
                                uint32_t stream, uint32_t thread, int32_t comm_rank) {
  std::string kernel = op == NcclOp::kSend || op == NcclOp::kRecv
                           ? "ncclDevKernel_SendRecv"
                           : std::string("ncclDevKernel_") + NcclOpName(op) + "_Sum_f32_RING_LL";
  uint64_t launch = call_start + (call_end - call_start) / 4;
  uint32_t corr = Kernel(kernel, start, end, stream, launch, (call_end - call_start) / 4, thread);
  NcclEvent e;
  e.start_ns = call_start;
  e.end_ns = call_end;
  e.op = op;
  e.bytes = bytes;
  e.comm_id = comm;
  e.rank = comm_rank;
  e.peer = peer;
  e.name_id = trace_.Intern(std::string("nccl") + NcclOpName(op));
  e.source = NcclSource::kHostNvtx;
  e.thread_id = thread;
  e.stream_id = kNoStream;
  trace_.nccls.push_back(e);
  return corr;
}

void TraceBuilder::Metric(uint32_t correlation_id, const std::string& metric, double value) {
  MetricRangeEvent m;
  m.correlation_id = correlation_id;
  m.values.push_back({trace_.Intern(metric), value});
  m.num_passes = 1;
  trace_.metric_ranges.push_back(m);
}

uint32_t TraceBuilder::Stack(const std::vector<std::string>& functions) {
  CallStack s;
  s.id = static_cast<uint32_t>(trace_.stacks.size() + 1);
  for (const std::string& f : functions) {
    StackFrame frame;
    frame.function_id = trace_.Intern(f);
    frame.module_id = trace_.Intern("/usr/lib/libapp.so");
    frame.offset = 0x40 * (s.frames.size() + 1);
    s.frames.push_back(frame);
  }
  trace_.stacks.push_back(s);
  return s.id;
}

void TraceBuilder::SetClock(uint64_t trace_ns, uint64_t realtime_ns) {
  trace_.header.clock.trace_ns = trace_ns;
  trace_.header.clock.realtime_ns = realtime_ns;
}

std::string EncodeTrace(const SyntheticTrace& t, size_t chunk_bytes) {
  std::string bytes;
  trace::WriterOptions options;
  options.chunk_bytes = chunk_bytes;
  trace::TraceWriter writer(trace::OpenMemorySink(&bytes), options);
  writer.Begin(t.header);
  std::vector<uint32_t> id(t.strings.size(), 0);
  for (size_t i = 1; i < t.strings.size(); ++i) id[i] = writer.Intern(t.strings[i]);
  auto s = [&](uint32_t v) { return v < id.size() ? id[v] : v; };
  std::vector<uint32_t> stack_id(t.stacks.size() + 2, 0);
  for (const CallStack& cs : t.stacks) {
    CallStack c = cs;
    for (StackFrame& f : c.frames) {
      f.function_id = s(f.function_id);
      f.module_id = s(f.module_id);
    }
    if (cs.id < stack_id.size()) stack_id[cs.id] = writer.InternStack(c);
  }
  auto st = [&](uint32_t v) { return v < stack_id.size() ? stack_id[v] : 0; };
  for (KernelEvent e : t.kernels) { e.name_id = s(e.name_id); writer.Add(e); }
  for (const MemcpyEvent& e : t.memcpys) writer.Add(e);
  for (const MemsetEvent& e : t.memsets) writer.Add(e);
  for (const SyncEvent& e : t.syncs) writer.Add(e);
  for (const MemoryEvent& e : t.memory) writer.Add(e);
  for (ApiEvent e : t.apis) {
    e.name_id = s(e.name_id);
    e.stack_id = st(e.stack_id);
    writer.Add(e);
  }
  for (NvtxRangeEvent e : t.nvtx_ranges) {
    e.name_id = s(e.name_id);
    e.domain_id = s(e.domain_id);
    writer.Add(e);
  }
  for (NvtxMarkerEvent e : t.nvtx_markers) {
    e.name_id = s(e.name_id);
    e.domain_id = s(e.domain_id);
    writer.Add(e);
  }
  for (NcclEvent e : t.nccls) {
    e.name_id = s(e.name_id);
    e.datatype_id = s(e.datatype_id);
    writer.Add(e);
  }
  for (MetricRangeEvent e : t.metric_ranges) {
    e.range_name_id = s(e.range_name_id);
    for (MetricValue& v : e.values) v.name_id = s(v.name_id);
    writer.Add(e);
  }
  for (GpuMetricSamplesEvent e : t.gpu_metrics) {
    for (uint32_t& id : e.metric_name_ids) id = s(id);
    writer.Add(e);
  }
  for (CaptureWindowEvent e : t.capture_windows) { e.label_id = s(e.label_id); writer.Add(e); }
  for (const OverheadEvent& e : t.overheads) writer.Add(e);
  for (StepEvent e : t.steps) { e.name_id = s(e.name_id); writer.Add(e); }
  for (const LossReport& e : t.losses) writer.Add(e);
  writer.Finish("test");
  return bytes;
}

absl::StatusOr<TimelineModel> Build(const std::vector<SyntheticTrace>& traces, BuildPath path) {
  ModelBuilder builder;
  if (path == BuildPath::kDirect) {
    for (const SyntheticTrace& t : traces) builder.AddSynthetic(t);
    return builder.Finish();
  }
  std::vector<std::string> buffers;
  buffers.reserve(traces.size());
  for (const SyntheticTrace& t : traces) buffers.push_back(EncodeTrace(t));
  for (size_t i = 0; i < traces.size(); ++i) {
    auto reader = trace::TraceReader::FromBuffer(traces[i].name, buffers[i]);
    if (!reader.ok()) return reader.status();
    absl::Status s = builder.AddTrace(**reader);
    if (!s.ok()) return s;
  }
  return builder.Finish();
}

Report AnalyzeTraces(const std::vector<SyntheticTrace>& traces, BuildPath path,
                     const AnalysisOptions& options) {
  absl::StatusOr<TimelineModel> model = Build(traces, path);
  if (!model.ok()) {
    ADD_FAILURE() << "building the model failed: " << model.status();
    return Report();
  }
  // Rule-level tests look at each rule alone, on the whole synthetic trace:
  // no steady-state scope, no root-cause folding (steady_state_test.cc and
  // the real-trace tests use AnalyzeTracesAsShipped for those).
  AnalysisOptions isolated = options;
  if (isolated.window == "steady") isolated.window = "all";
  if (isolated.params.find("root_causes") == isolated.params.end()) {
    isolated.params["root_causes"] = 0;
  }
  return AnalyzeModel(*model, isolated);
}

Report AnalyzeTracesAsShipped(const std::vector<SyntheticTrace>& traces, BuildPath path,
                              const AnalysisOptions& options) {
  absl::StatusOr<TimelineModel> model = Build(traces, path);
  if (!model.ok()) {
    ADD_FAILURE() << "building the model failed: " << model.status();
    return Report();
  }
  return AnalyzeModel(*model, options);
}

const Finding* FindFinding(const Report& report, const std::string& rule) {
  for (const Finding& f : report.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

int FindingRank(const Report& report, const std::string& rule) {
  for (size_t i = 0; i < report.findings.size(); ++i) {
    if (report.findings[i].rule == rule) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace sightline::analysis::testing
