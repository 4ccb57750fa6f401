// ModelBuilder: the streaming pass (EventVisitor) that fills a TimelineModel.
// Finish() (model_finish.cc) sorts, links and aggregates.
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/analysis/api_names.h"
#include "lib/analysis/model_builder_impl.h"
#include "lib/trace/torch_memory_marker.h"

namespace sightline::analysis {

namespace {

bool ValidSpan(uint64_t start, uint64_t end) { return start != 0 && end != 0 && end >= start; }

// "[CUDA memcpy HtoD]" (nsys's name), from CopyKindName (lib/trace/events.h).
std::string CopyName(CopyKind kind) {
  const absl::string_view name = CopyKindName(kind);
  if (name == "unknown") return "[CUDA memcpy]";
  return absl::StrCat("[CUDA memcpy ", name, "]");
}

}  // namespace

uint32_t ModelBuilder::Impl::InternModel(std::string_view s) {
  if (s.empty()) return 0;
  auto it = string_ids.find(absl::string_view(s.data(), s.size()));
  if (it != string_ids.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(model.strings.size());
  model.strings.emplace_back(s);
  string_ids.emplace(std::string(s), id);
  name_flags.push_back(0);
  api_flags_cache.push_back(0);
  return id;
}

uint32_t ModelBuilder::Impl::Str(uint32_t trace_string_id) {
  if (trace_string_id == 0) return 0;
  if (trace_string_id < remap.size() && remap[trace_string_id] != 0) {
    return remap[trace_string_id];
  }
  // Bound the remap table by the ids the trace can actually define.
  if (trace_string_id >= remap.size() && trace_string_id < (1u << 26)) {
    remap.resize(trace_string_id + 1, 0);
  }
  uint32_t id = InternModel(resolve_string(trace_string_id));
  if (trace_string_id < remap.size()) remap[trace_string_id] = id;
  return id;
}

uint8_t ModelBuilder::Impl::NameFlags(uint32_t model_name) {
  uint8_t& f = name_flags[model_name];
  if ((f & kFlagsComputed) == 0) {
    std::string_view name = model.strings[model_name];
    f = kFlagsComputed;
    if (IsCommunicationKernelName(name)) f |= kFlagComm;
    api_flags_cache[model_name] = ApiFlagsForName(name);
  }
  return f;
}

uint8_t ModelBuilder::Impl::ApiFlags(uint32_t model_name) {
  NameFlags(model_name);
  return api_flags_cache[model_name];
}

uint32_t ModelBuilder::Impl::Device(uint32_t device_id) {
  if (device_id < device_by_id.size() && device_by_id[device_id] != 0) {
    return device_by_id[device_id] - 1;
  }
  auto key = std::make_pair(uint32_t{trace_index}, device_id);
  auto it = device_ids.find(key);
  if (it != device_ids.end()) return it->second;
  uint32_t idx = static_cast<uint32_t>(model.devices.size());
  DeviceTimelineInfo d;
  d.trace = trace_index;
  d.device_id = device_id;
  d.info.id = device_id;
  for (const DeviceInfo& info : model.traces[trace_index].header.devices) {
    if (info.id == device_id) {
      d.info = info;
      d.has_info = true;
      break;
    }
  }
  model.devices.push_back(std::move(d));
  stream_by_id.emplace_back();
  device_ids.emplace(key, idx);
  if (device_id < 4096) {
    if (device_by_id.size() <= device_id) device_by_id.resize(device_id + 1, 0);
    device_by_id[device_id] = idx + 1;
  }
  return idx;
}

uint32_t ModelBuilder::Impl::Stream(uint32_t device, uint32_t stream_id) {
  std::vector<uint32_t>& cache = stream_by_id[device];
  if (stream_id < cache.size() && cache[stream_id] != 0) return cache[stream_id] - 1;
  auto key = std::make_tuple(uint32_t{trace_index}, device, stream_id);
  auto it = stream_ids.find(key);
  if (it != stream_ids.end()) return it->second;
  uint32_t idx = static_cast<uint32_t>(model.streams.size());
  StreamInfo s;
  s.trace = trace_index;
  s.device = device;
  s.stream_id = stream_id;
  model.streams.push_back(std::move(s));
  stream_activities.emplace_back();
  stream_ids.emplace(key, idx);
  if (stream_id < 65536) {
    if (cache.size() <= stream_id) cache.resize(stream_id + 1, 0);
    cache[stream_id] = idx + 1;
  }
  return idx;
}

uint32_t ModelBuilder::Impl::Thread(uint32_t thread_id) {
  if (last_thread != kNone && last_thread_id == thread_id) return last_thread;
  auto key = std::make_pair(uint32_t{trace_index}, thread_id);
  auto it = thread_ids.find(key);
  uint32_t idx;
  if (it != thread_ids.end()) {
    idx = it->second;
  } else {
    idx = static_cast<uint32_t>(model.threads.size());
    ThreadInfo t;
    t.trace = trace_index;
    t.thread_id = thread_id;
    model.threads.push_back(t);
    thread_calls.emplace_back();
    thread_ids.emplace(key, idx);
  }
  last_thread_id = thread_id;
  last_thread = idx;
  return idx;
}

uint32_t ModelBuilder::Impl::Config(const KernelEvent& e, uint32_t device) {
  LaunchConfig c;
  c.grid_x = e.grid_x;
  c.grid_y = e.grid_y;
  c.grid_z = e.grid_z;
  c.block_x = e.block_x;
  c.block_y = e.block_y;
  c.block_z = e.block_z;
  c.registers_per_thread = e.registers_per_thread;
  c.static_shared_bytes = e.static_shared_bytes;
  c.dynamic_shared_bytes = e.dynamic_shared_bytes;
  c.local_bytes_per_thread = e.local_bytes_per_thread;
  c.shared_memory_config_bytes = e.shared_memory_config_bytes;
  c.launch_type = e.launch_type;
  c.cluster_x = e.cluster_x;
  c.cluster_y = e.cluster_y;
  c.cluster_z = e.cluster_z;
  c.device = device;
  // Most launches of a kernel reuse its previous configuration.
  uint32_t name = Str(e.name_id);
  if (name < last_config_by_name.size() && last_config_by_name[name] != 0 &&
      model.launch_configs[last_config_by_name[name] - 1] == c) {
    return last_config_by_name[name] - 1;
  }
  if (last_config_by_name.size() <= name) last_config_by_name.resize(name + 1, 0);
  auto it = config_ids.find(c);
  if (it != config_ids.end()) {
    last_config_by_name[name] = it->second + 1;
    return it->second;
  }
  uint32_t idx = static_cast<uint32_t>(model.launch_configs.size());
  model.launch_configs.push_back(c);
  config_ids.emplace(c, idx);
  last_config_by_name[name] = idx + 1;
  return idx;
}

void ModelBuilder::Impl::CopyStack(uint32_t stack_id) {
  if (stack_id == 0 || !resolve_stack) return;
  auto& table = model.stacks[trace_index];
  if (table.contains(stack_id)) return;
  const CallStack* s = resolve_stack(stack_id);
  if (s == nullptr) return;
  CallStack copy;
  copy.id = stack_id;
  copy.kind = s->kind;
  copy.frames.reserve(s->frames.size());
  for (const StackFrame& f : s->frames) {
    StackFrame g = f;
    g.function_id = Str(f.function_id);
    g.module_id = Str(f.module_id);
    copy.frames.push_back(g);
  }
  table.emplace(stack_id, std::move(copy));
}

void ModelBuilder::Impl::BeginTrace(std::string name, const TraceHeaderData& header) {
  trace_index = static_cast<uint16_t>(model.traces.size());
  TraceSource src;
  src.name = std::move(name);
  src.header = header;
  src.has_clock_mapping = header.clock.trace_ns != 0 || header.clock.realtime_ns != 0;
  src.clock_offset_ns = src.has_clock_mapping ? header.clock.offset_ns() : 0;
  src.rank = header.process.rank >= 0 ? header.process.rank : static_cast<int32_t>(trace_index);
  model.traces.push_back(std::move(src));
  model.stacks.emplace_back();
  offset = static_cast<uint64_t>(model.traces.back().clock_offset_ns);
  remap.assign(1, 0);
  device_by_id.clear();
  last_thread = kNone;
  has_comm_kernel.push_back(false);
  source = &model.traces.back();
}

// ---- EventVisitor --------------------------------------------------------

void ModelBuilder::Impl::OnKernel(const KernelEvent& e) {
  Count(EventKind::kKernel);
  // Replayed kernels carry zero timestamps (CUPTI kernel replay), and so do
  // kernels measured in place while kernels were not traced: they reach the
  // launch configuration and metrics tables, and the timeline only where
  // PlaceReplayedKernels places them.
  if (!e.untimed() && !ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kKernel);
    return;
  }
  uint32_t device = Device(e.device_id);
  GpuActivity a;
  a.start_ns = e.start_ns + offset;
  a.end_ns = e.end_ns + offset;
  a.correlation_id = e.correlation_id;
  a.name = Str(e.name_id);
  a.detail = Config(e, device);
  a.kind = ActivityKind::kKernel;
  a.trace = trace_index;
  a.klass = (NameFlags(a.name) & kFlagComm) ? ActivityClass::kCommunication
                                             : ActivityClass::kCompute;
  if (e.untimed()) {
    (e.replayed ? source->replayed_kernels : source->untraced_kernels)++;
    replayed.push_back({a.trace, a.correlation_id, a.name, a.detail, Stream(device, e.stream_id),
                        !e.replayed});
    return;
  }
  // CUPTI's own one-thread kernel after each range of an application-replay
  // pass (spread / sequence metrics; H200, CUDA 13.0): not the app's work.
  if (!source->header.metric_set.empty() && model.strings[a.name] == "WaitNs") {
    source->profiler_kernels++;
    return;
  }
  if (a.klass == ActivityClass::kCommunication) has_comm_kernel[trace_index] = true;
  a.stream = Stream(device, e.stream_id);
  stream_activities[a.stream].push_back(a);
}

void ModelBuilder::Impl::OnMemcpy(const MemcpyEvent& e) {
  Count(EventKind::kMemcpy);
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kMemcpy);
    return;
  }
  GpuActivity a;
  a.start_ns = e.start_ns + offset;
  a.end_ns = e.end_ns + offset;
  a.stream = Stream(Device(e.device_id), e.stream_id);
  a.correlation_id = e.correlation_id;
  a.name = InternModel(CopyName(e.copy_kind));
  a.detail = static_cast<uint32_t>(model.copies.size());
  model.copies.push_back({e.bytes, e.copy_kind, e.src_kind, e.dst_kind, e.async});
  a.kind = ActivityKind::kMemcpy;
  a.klass = ActivityClass::kMemory;
  a.trace = trace_index;
  stream_activities[a.stream].push_back(a);
}

void ModelBuilder::Impl::OnMemset(const MemsetEvent& e) {
  Count(EventKind::kMemset);
  if (e.untraced) {
    source->untraced_memsets++;
    return;
  }
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kMemset);
    return;
  }
  GpuActivity a;
  a.start_ns = e.start_ns + offset;
  a.end_ns = e.end_ns + offset;
  a.stream = Stream(Device(e.device_id), e.stream_id);
  a.correlation_id = e.correlation_id;
  a.name = InternModel("[CUDA memset]");
  a.detail = static_cast<uint32_t>(model.copies.size());
  model.copies.push_back(
      {e.bytes, CopyKind::kUnknown, MemoryKind::kUnknown, e.memory_kind, e.async});
  a.kind = ActivityKind::kMemset;
  a.klass = ActivityClass::kMemory;
  a.trace = trace_index;
  stream_activities[a.stream].push_back(a);
}

void ModelBuilder::Impl::OnSync(const SyncEvent& e) {
  Count(EventKind::kSync);
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kSync);
    return;
  }
  HostSync s;
  s.start_ns = e.start_ns + offset;
  s.end_ns = e.end_ns + offset;
  s.device = Device(e.device_id);
  s.stream_id = e.stream_id;
  s.correlation_id = e.correlation_id;
  s.kind = e.sync_kind;
  s.trace = trace_index;
  model.host_syncs.push_back(s);
}

void ModelBuilder::Impl::OnMemory(const MemoryEvent& e) {
  Count(EventKind::kMemory);
  if (e.timestamp_ns == 0) {
    Invalid(EventKind::kMemory);
    return;
  }
  MemoryOp m;
  m.timestamp_ns = e.timestamp_ns + offset;
  m.address = e.address;
  m.bytes = e.bytes;
  m.pool_address = e.pool_address;
  m.pool_size = e.pool_size;
  m.device = Device(e.device_id);
  m.correlation_id = e.correlation_id;
  m.source = e.source_id ? Str(e.source_id) : 0;
  m.trace = trace_index;
  m.op = e.operation;
  m.kind = e.memory_kind;
  m.async = e.async;
  model.memory_ops.push_back(m);
}

void ModelBuilder::Impl::OnApi(const ApiEvent& e) {
  Count(EventKind::kApi);
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kApi);
    return;
  }
  ApiCall c;
  c.start_ns = e.start_ns + offset;
  c.end_ns = e.end_ns + offset;
  c.name = Str(e.name_id);
  c.correlation_id = e.correlation_id;
  c.thread = Thread(e.thread_id);
  c.stack_id = e.stack_id;
  c.python_stack_id = e.python_stack_id;
  c.trace = trace_index;
  c.flags = ApiFlags(c.name);
  c.domain = e.domain;
  CopyStack(e.stack_id);
  CopyStack(e.python_stack_id);
  thread_calls[c.thread].push_back(c);
}

void ModelBuilder::Impl::OnNvtxRange(const NvtxRangeEvent& e) {
  Count(EventKind::kNvtxRange);
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kNvtxRange);
    return;
  }
  NvtxRange r;
  r.start_ns = e.start_ns + offset;
  r.end_ns = e.end_ns + offset;
  r.name = Str(e.name_id);
  r.domain = Str(e.domain_id);
  r.thread = Thread(e.thread_id);
  r.trace = trace_index;
  model.nvtx_ranges.push_back(r);
}

void ModelBuilder::Impl::OnNvtxMarker(const NvtxMarkerEvent& e) {
  Count(EventKind::kNvtxMarker);
  // Only the Python hook's allocator samples are kept (TorchMemorySample).
  if (!resolve_string) return;
  trace::TorchMemoryMarker m;
  if (!trace::ParseTorchMemoryMarker(resolve_string(e.name_id), &m) || e.timestamp_ns == 0 ||
      !m.has_memory) {
    return;  // a step boundary without byte counts (the monitor's hook between reads)
  }
  TorchMemorySample s;
  s.allocated = m.allocated;
  s.max_allocated = m.max_allocated;
  s.reserved = m.reserved;
  s.timestamp_ns = e.timestamp_ns + offset;
  s.device = Device(m.device);
  s.trace = trace_index;
  model.torch_memory.push_back(s);
}

void ModelBuilder::Impl::OnNccl(const NcclEvent& e) {
  Count(EventKind::kNccl);
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kNccl);
    return;
  }
  Collective c;
  c.start_ns = e.start_ns + offset;
  c.end_ns = e.end_ns + offset;
  c.bytes = e.bytes;
  c.comm_id = e.comm_id;
  c.op = e.op;
  c.rank = e.rank;
  c.nranks = e.nranks;
  c.peer = e.peer;
  c.name = Str(e.name_id);
  c.source = e.source;
  c.trace = trace_index;
  if (e.source == NcclSource::kCommunicatorInfo) {  // not an operation
    model.communicators.push_back(c);
    return;
  }
  if (e.source == NcclSource::kGpuKernel) {
    c.device = Device(e.device_id);
    nccl_streams.push_back(Stream(c.device, e.stream_id));
    nccl_correlation.push_back(e.correlation_id);
  } else {
    if (e.source == NcclSource::kHostNvtx) c.thread = Thread(e.thread_id);
    nccl_streams.push_back(kNone);
    nccl_correlation.push_back(0);
  }
  model.collectives.push_back(c);
}

void ModelBuilder::Impl::OnGpuMetrics(const GpuMetricSamplesEvent& e) {
  Count(EventKind::kGpuMetrics);
  const uint32_t device = Device(e.device_id);
  std::vector<uint32_t> names;
  names.reserve(e.metric_name_ids.size());
  for (uint32_t id : e.metric_name_ids) names.push_back(Str(id));
  // Batches of one device with the same metrics join one series.
  GpuMetricSeries* series = nullptr;
  for (GpuMetricSeries& s : model.gpu_metrics) {
    if (s.trace == trace_index && s.device == device && s.metric_names == names) series = &s;
  }
  if (series == nullptr) {
    model.gpu_metrics.emplace_back();
    series = &model.gpu_metrics.back();
    series->trace = static_cast<uint16_t>(trace_index);
    series->device = device;
    series->metric_names = std::move(names);
  }
  series->interval_ns = e.interval_ns;
  const size_t metrics = e.metric_name_ids.size();
  for (size_t i = 0; i < e.num_samples(); ++i) {
    if (!ValidSpan(e.sample_start_ns[i], e.sample_end_ns[i])) {
      Invalid(EventKind::kGpuMetrics);
      continue;
    }
    series->start_ns.push_back(e.sample_start_ns[i] + offset);
    series->end_ns.push_back(e.sample_end_ns[i] + offset);
    series->values.insert(series->values.end(), e.values.begin() + i * metrics,
                          e.values.begin() + (i + 1) * metrics);
  }
}

void ModelBuilder::Impl::OnMetricRange(const MetricRangeEvent& e) {
  Count(EventKind::kMetricRange);
  if (e.user_range) {
    if (!ValidSpan(e.start_ns, e.end_ns)) {
      Invalid(EventKind::kMetricRange);
      return;
    }
    RangeMetricSet s;
    s.trace = trace_index;
    s.device = Device(e.device_id);
    s.name = Str(e.range_name_id);
    s.start_ns = e.start_ns + offset;
    s.end_ns = e.end_ns + offset;
    s.instances = e.launches_spanned;
    s.passes_needed = e.num_passes;
    s.passes_collected = e.passes_collected;
    s.values.reserve(e.values.size());
    for (const MetricValue& v : e.values) s.values.emplace_back(Str(v.name_id), v.value);
    model.range_metric_sets.push_back(std::move(s));
    return;
  }
  MetricSample m;
  m.trace = trace_index;
  m.device = Device(e.device_id);
  m.correlation_id = e.correlation_id;
  m.range_name = Str(e.range_name_id);
  m.values.reserve(e.values.size());
  for (const MetricValue& v : e.values) m.values.emplace_back(Str(v.name_id), v.value);
  model.metric_samples.push_back(std::move(m));
}

void ModelBuilder::Impl::OnCaptureWindow(const CaptureWindowEvent& e) {
  Count(EventKind::kCaptureWindow);
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kCaptureWindow);
    return;
  }
  model.capture_windows.push_back(
      {e.start_ns + offset, e.end_ns + offset, e.index, Str(e.label_id), e.trigger, trace_index});
}

void ModelBuilder::Impl::OnOverhead(const OverheadEvent& e) {
  Count(EventKind::kOverhead);
  if (!ValidSpan(e.start_ns, e.end_ns)) {
    Invalid(EventKind::kOverhead);
    return;
  }
  // Device-side overhead only when the trace recorded a device for it and
  // the record is not a thread's (older traces wrote device 0 for those:
  // CUPTI's buffer request inside a launch call is host time, not GPU busy
  // time).
  uint32_t device = kNone;
  if (e.device_id != kHostOverheadDevice && e.thread_id == 0) {
    for (const DeviceInfo& d : source->header.devices) {
      if (d.id == e.device_id) device = Device(e.device_id);
    }
  }
  uint32_t thread = device == kNone && e.thread_id != 0 ? Thread(e.thread_id) : kNone;
  model.overheads.push_back(
      {e.start_ns + offset, e.end_ns + offset, e.overhead_kind, device, thread, trace_index});
}

void ModelBuilder::Impl::OnStep(const StepEvent& e) {
  Count(EventKind::kStep);
  if (e.timestamp_ns == 0) {
    Invalid(EventKind::kStep);
    return;
  }
  model.step_markers.push_back(
      {e.timestamp_ns + offset, e.step, Str(e.name_id), Thread(e.thread_id), trace_index});
}

void ModelBuilder::Impl::OnLoss(const LossReport& e) {
  Count(EventKind::kLoss);
  source->losses = e;  // cumulative: the last one wins
}

// ---- ModelBuilder --------------------------------------------------------

ModelBuilder::ModelBuilder() : impl_(std::make_unique<Impl>()) {}
ModelBuilder::~ModelBuilder() = default;

absl::Status ModelBuilder::AddTrace(trace::TraceReader& reader, const ProgressCallback& progress) {
  if (impl_->model.traces.size() >= 0xffff) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.name(), ": too many traces in one analysis (max 65535)"));
  }
  impl_->BeginTrace(reader.name(), reader.header());
  impl_->resolve_string = [&reader](uint32_t id) { return reader.strings().Get(id); };
  impl_->resolve_stack = [&reader](uint32_t id) { return reader.stack(id); };
  ReadProgress p;
  p.trace_count = 1;
  p.trace_name = reader.name();
  while (true) {
    absl::StatusOr<bool> more = reader.NextChunk(*impl_);
    if (!more.ok()) {
      impl_->resolve_string = nullptr;
      impl_->resolve_stack = nullptr;
      return more.status();
    }
    if (progress) {
      p.bytes_done = reader.position();
      p.bytes_total = reader.integrity().file_bytes;
      progress(p);
    }
    if (!*more) break;
  }
  TraceSource& src = impl_->model.traces[impl_->trace_index];
  src.integrity = reader.integrity();
  // The reader's accounting (footer, or last LossReport) is authoritative.
  src.losses = src.integrity.losses;
  impl_->resolve_string = nullptr;
  impl_->resolve_stack = nullptr;
  return absl::OkStatus();
}

void ModelBuilder::AddSynthetic(const SyntheticTrace& t) {
  Impl& m = *impl_;
  m.BeginTrace(t.name, t.header);
  m.resolve_string = [&t](uint32_t id) {
    return id < t.strings.size() ? std::string_view(t.strings[id]) : std::string_view();
  };
  m.resolve_stack = [&t](uint32_t id) -> const CallStack* {
    for (const CallStack& s : t.stacks) {
      if (s.id == id) return &s;
    }
    return nullptr;
  };
  for (const auto& e : t.kernels) m.OnKernel(e);
  for (const auto& e : t.memcpys) m.OnMemcpy(e);
  for (const auto& e : t.memsets) m.OnMemset(e);
  for (const auto& e : t.syncs) m.OnSync(e);
  for (const auto& e : t.memory) m.OnMemory(e);
  for (const auto& e : t.apis) m.OnApi(e);
  for (const auto& e : t.nvtx_ranges) m.OnNvtxRange(e);
  for (const auto& e : t.nvtx_markers) m.OnNvtxMarker(e);
  for (const auto& e : t.nccls) m.OnNccl(e);
  for (const auto& e : t.metric_ranges) m.OnMetricRange(e);
  for (const auto& e : t.gpu_metrics) m.OnGpuMetrics(e);
  for (const auto& e : t.capture_windows) m.OnCaptureWindow(e);
  for (const auto& e : t.overheads) m.OnOverhead(e);
  for (const auto& e : t.steps) m.OnStep(e);
  for (const auto& e : t.losses) m.OnLoss(e);
  TraceSource& src = m.model.traces[m.trace_index];
  src.integrity.complete = true;
  src.integrity.events_read = 0;
  for (uint64_t n : src.events_by_kind) src.integrity.events_read += n;
  src.integrity.counts = src.events_by_kind;
  m.resolve_string = nullptr;
  m.resolve_stack = nullptr;
}

}  // namespace sightline::analysis
