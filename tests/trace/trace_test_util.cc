#include "tests/trace/trace_test_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "lib/trace/crc32c.h"
#include "lib/trace/format.h"
#include "tests/support/h200_device.h"

namespace sightline::trace::testing {

bool operator==(const AnyEvent& a, const AnyEvent& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case EventKind::kKernel: return Tie(a.kernel) == Tie(b.kernel);
    case EventKind::kMemcpy: return Tie(a.memcpy) == Tie(b.memcpy);
    case EventKind::kMemset: return Tie(a.memset) == Tie(b.memset);
    case EventKind::kSync: return Tie(a.sync) == Tie(b.sync);
    case EventKind::kApi: return Tie(a.api) == Tie(b.api);
    case EventKind::kNvtxRange: return Tie(a.nvtx_range) == Tie(b.nvtx_range);
    case EventKind::kNvtxMarker: return Tie(a.nvtx_marker) == Tie(b.nvtx_marker);
    case EventKind::kNccl: return Tie(a.nccl) == Tie(b.nccl);
    case EventKind::kMetricRange: return Tie(a.metric_range) == Tie(b.metric_range);
    case EventKind::kCaptureWindow: return Tie(a.capture_window) == Tie(b.capture_window);
    case EventKind::kOverhead: return Tie(a.overhead) == Tie(b.overhead);
    case EventKind::kStep: return Tie(a.step) == Tie(b.step);
    case EventKind::kLoss: return Tie(a.loss) == Tie(b.loss);
    case EventKind::kMemory: return Tie(a.memory) == Tie(b.memory);
    case EventKind::kGpuMetrics: return Tie(a.gpu_metrics) == Tie(b.gpu_metrics);
    case EventKind::kUnspecified: return true;
  }
  return false;
}

std::string Describe(const AnyEvent& e) {
  std::ostringstream s;
  s << EventKindName(e.kind);
  switch (e.kind) {
    case EventKind::kKernel:
      s << " start=" << e.kernel.start_ns << " end=" << e.kernel.end_ns
        << " name=" << e.kernel.name_id << " corr=" << e.kernel.correlation_id;
      break;
    case EventKind::kMemcpy:
      s << " start=" << e.memcpy.start_ns << " bytes=" << e.memcpy.bytes;
      break;
    case EventKind::kApi:
      s << " start=" << e.api.start_ns << " cbid=" << e.api.cbid;
      break;
    default:
      break;
  }
  return s.str();
}

void AddTo(TraceWriter& w, const AnyEvent& e) {
  switch (e.kind) {
    case EventKind::kKernel: w.Add(e.kernel); break;
    case EventKind::kMemcpy: w.Add(e.memcpy); break;
    case EventKind::kMemset: w.Add(e.memset); break;
    case EventKind::kSync: w.Add(e.sync); break;
    case EventKind::kApi: w.Add(e.api); break;
    case EventKind::kNvtxRange: w.Add(e.nvtx_range); break;
    case EventKind::kNvtxMarker: w.Add(e.nvtx_marker); break;
    case EventKind::kNccl: w.Add(e.nccl); break;
    case EventKind::kMetricRange: w.Add(e.metric_range); break;
    case EventKind::kCaptureWindow: w.Add(e.capture_window); break;
    case EventKind::kOverhead: w.Add(e.overhead); break;
    case EventKind::kStep: w.Add(e.step); break;
    case EventKind::kLoss: w.Add(e.loss); break;
    case EventKind::kMemory: w.Add(e.memory); break;
    case EventKind::kGpuMetrics: w.Add(e.gpu_metrics); break;
    case EventKind::kUnspecified: break;
  }
}

std::vector<AnyEvent> EveryKindFullySet(TraceWriter* w, uint64_t t0) {
  auto id = [w](const char* s, uint32_t fallback) { return w ? w->Intern(s) : fallback; };
  std::vector<AnyEvent> out;
  AnyEvent a;

  a = AnyEvent();
  a.kind = EventKind::kKernel;
  KernelEvent& k = a.kernel;
  k.start_ns = t0 + 1000;
  k.end_ns = t0 + 251000;
  k.device_id = 7;
  k.context_id = 3;
  k.stream_id = 13;
  k.correlation_id = 0xfffffff0u;
  k.name_id = id("void gemm_kernel<float, 128>(float const*, float*)", 1);
  k.grid_x = 2147483647u;
  k.grid_y = 65535;
  k.grid_z = 0;  // explicitly zero: `optional` must keep it distinct from 1
  k.block_x = 1024;
  k.block_y = 2;
  k.block_z = 3;
  k.registers_per_thread = 255;
  k.static_shared_bytes = 49152;
  k.dynamic_shared_bytes = 232448;
  k.local_bytes_per_thread = 64;
  k.shared_memory_config_bytes = 233472;
  k.graph_id = 0x123456789abcull;
  k.graph_node_id = UINT64_MAX;
  k.launch_type = 3;
  k.cluster_x = 2;
  k.cluster_y = 4;
  k.cluster_z = 8;
  k.replayed = true;
  k.cache_config_requested = 1;
  k.cache_config_executed = 2;
  k.untraced = true;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kMemcpy;
  MemcpyEvent& m = a.memcpy;
  m.start_ns = t0 + 500;  // earlier than the previous event: negative delta
  m.end_ns = t0 + 90500;
  m.device_id = 1;
  m.context_id = 2;
  m.stream_id = 14;
  m.correlation_id = 77;
  m.bytes = 1ull << 40;
  m.copy_kind = CopyKind::kPtoP;
  m.src_kind = MemoryKind::kPageable;
  m.dst_kind = MemoryKind::kManagedStatic;
  m.async = true;
  m.src_device_id = 5;
  m.dst_device_id = 6;
  m.graph_node_id = 99;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kMemset;
  MemsetEvent& s = a.memset;
  s.start_ns = t0 + 300000;
  s.end_ns = t0 + 300001;
  s.device_id = 2;
  s.context_id = 4;
  s.stream_id = 15;
  s.correlation_id = 78;
  s.bytes = 4096;
  s.value = 0xdeadbeef;
  s.memory_kind = MemoryKind::kDevice;
  s.async = true;
  s.graph_node_id = 12;
  s.untraced = true;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kSync;
  SyncEvent& y = a.sync;
  y.start_ns = t0 + 400000;
  y.end_ns = t0 + 900000;
  y.context_id = 5;
  y.stream_id = kNoStream;
  y.correlation_id = 79;
  y.sync_kind = SyncKind::kContextSynchronize;
  y.cuda_event_id = 0xabcdef;
  y.device_id = 3;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kApi;
  ApiEvent& p = a.api;
  p.start_ns = t0 + 100;
  p.end_ns = t0 + 5100;
  p.domain = ApiDomain::kDriver;
  p.cbid = 307;
  p.name_id = id("cuLaunchKernel", 2);
  p.correlation_id = 0xfffffff0u;
  p.thread_id = 4242;
  p.return_value = 700;
  p.stack_id = 9;
  p.python_stack_id = 11;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kNvtxRange;
  NvtxRangeEvent& r = a.nvtx_range;
  r.start_ns = t0;
  r.end_ns = t0 + 10000000;
  r.domain_id = id("my_domain", 3);
  r.name_id = id("train_step \xE2\x9C\x93 \"quoted\"", 4);
  r.thread_id = 4242;
  r.end_thread_id = 4343;
  r.color = 0xff00ff00u;
  r.category = 17;
  r.payload_kind = PayloadKind::kInt64;
  r.payload_int = -1234567890123ll;
  r.payload_double = -2.5e-300;
  r.push_pop = true;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kNvtxMarker;
  NvtxMarkerEvent& n = a.nvtx_marker;
  n.timestamp_ns = t0 + 123;
  n.domain_id = id("my_domain", 3);
  n.name_id = id("checkpoint", 5);
  n.thread_id = 4242;
  n.color = 0x12345678;
  n.category = 2;
  n.payload_kind = PayloadKind::kDouble;
  n.payload_int = INT64_MIN;
  n.payload_double = 3.141592653589793;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kNccl;
  NcclEvent& c = a.nccl;
  c.start_ns = t0 + 2000000;
  c.end_ns = t0 + 2500000;
  c.device_id = 1;
  c.stream_id = 20;
  c.correlation_id = 80;
  c.op = NcclOp::kReduceScatter;
  c.bytes = 1ull << 30;
  c.count = 1ull << 28;
  c.datatype_id = id("ncclBfloat16", 6);
  c.comm_id = 0xfeedfacecafebeefull;
  c.rank = -1;
  c.nranks = 64;
  c.name_id = id("ncclDevKernel_ReduceScatter_RING_LL", 7);
  c.source = NcclSource::kHostNvtx;
  c.thread_id = 4343;
  c.peer = 0;  // optional field: rank 0 must survive (absent = -1)
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kMetricRange;
  MetricRangeEvent& mr = a.metric_range;
  mr.start_ns = t0 + 1000;
  mr.end_ns = t0 + 251000;
  mr.device_id = 7;
  mr.correlation_id = 0xfffffff0u;
  mr.range_name_id = id("void gemm_kernel<float, 128>(float const*, float*)", 1);
  mr.values = {{id("sm__throughput.avg.pct_of_peak_sustained_elapsed", 8), 87.5},
               {id("dram__throughput.avg.pct_of_peak_sustained_elapsed", 9), 0.0},
               {id("smsp__thread_inst_executed_per_inst_executed.ratio", 10), -0.0},
               {0, 1e308}};
  mr.num_passes = 11;
  mr.range_index = 12;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kCaptureWindow;
  CaptureWindowEvent& w2 = a.capture_window;
  w2.start_ns = t0;
  w2.end_ns = t0 + 99999999;
  w2.index = 3;
  w2.label_id = id("warmup", 11);
  w2.trigger = CaptureTrigger::kNvtx;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kOverhead;
  OverheadEvent& o = a.overhead;
  o.start_ns = t0 + 50;
  o.end_ns = t0 + 60;
  o.overhead_kind = 4;
  o.thread_id = 4242;
  o.device_id = 1;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kStep;
  StepEvent& st = a.step;
  st.timestamp_ns = t0 + 5;
  st.step = 1ull << 50;
  st.thread_id = 4242;
  st.name_id = id("ProfilerStep#", 12);
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kLoss;
  LossReport& l = a.loss;
  l.timestamp_ns = t0 + 7;
  l.cupti_dropped_records = 1;
  l.queue_dropped_buffers = 2;
  l.queue_dropped_records = 3;
  l.invalid_timestamps = 4;
  l.metric_ranges_dropped = 5;
  l.unsupported_records = 6;
  l.write_errors = 7;
  l.stacks_dropped = 8;
  l.gpu_metric_samples_dropped = 9;
  l.untraced_kernels_lost = 10;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kMemory;
  MemoryEvent& mem = a.memory;
  mem.timestamp_ns = t0 + 9;
  mem.device_id = 1;
  mem.context_id = 3;
  mem.stream_id = kNoStream;
  mem.correlation_id = 0xfffffff1u;
  mem.operation = MemoryOperation::kRelease;
  mem.memory_kind = MemoryKind::kDevice;
  mem.address = 0x7f0000000000ull;
  mem.bytes = 3ull << 33;
  mem.async = true;
  mem.pool_address = 0x7e0000000000ull;
  mem.pool_type = 1;
  mem.pool_size = 1ull << 34;
  mem.pool_used = 1ull << 30;
  mem.pool_release_threshold = UINT64_MAX;
  mem.source_id = id("libtorch_cuda.so", 16);
  mem.pc = 0x1234;
  out.push_back(a);

  a = AnyEvent();
  a.kind = EventKind::kGpuMetrics;
  GpuMetricSamplesEvent& g = a.gpu_metrics;
  g.device_id = 3;
  g.interval_ns = 100000;
  g.metric_name_ids = {id("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", 17),
                       id("dram__read_throughput.avg.pct_of_peak_sustained_elapsed", 18)};
  // The first sample spans Enable→Start (long), the others the interval;
  // one value NaN (not evaluated), one huge.
  g.sample_start_ns = {t0 + 11, t0 + 500000, t0 + 600000};
  g.sample_end_ns = {t0 + 500000, t0 + 600000, t0 + 700000};
  g.values = {0.0f, 1.5f, 99.75f, std::numeric_limits<float>::infinity(), 3.4e38f, 42.0f};
  g.start_ns = g.sample_start_ns.front();
  g.end_ns = g.sample_end_ns.back();
  out.push_back(a);
  return out;
}

std::vector<AnyEvent> EveryKindDefault() {
  std::vector<AnyEvent> out;
  for (int k = 1; k < kNumEventKinds; ++k) {
    AnyEvent a;
    a.kind = static_cast<EventKind>(k);
    out.push_back(a);
  }
  return out;
}

TraceHeaderData SampleHeader() {
  TraceHeaderData h;
  h.tool_version = "0.1.0-test";
  h.process.pid = 31337;
  h.process.host = "gpu-node-17";
  h.process.command_line = {"python", "train.py", "--batch", "", "ünïcode"};
  h.process.rank = 3;
  h.process.world_size = 8;
  h.process.local_rank = 3;
  DeviceInfo d = test_fixtures::H200Device(0);
  d.uuid = "GPU-12345678-1234-1234-1234-123456789abc";
  d.warp_size = 32;
  d.core_clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_width_bits = 6144;
  d.global_memory_bytes = 150ull << 30;
  d.l2_cache_bytes = 60ull << 20;
  d.memory_bandwidth_gbps = 4800.5;
  d.chip_name = "GH100";
  d.pci_bus_id = 0x19;
  d.async_engine_count = 3;
  h.devices.push_back(d);
  d.id = 1;
  d.uuid = "GPU-87654321-4321-4321-4321-cba987654321";
  d.pci_bus_id = 0x3b;
  h.devices.push_back(d);
  h.cupti_api_version = 26;
  h.cuda_driver_version = 13000;
  h.cuda_runtime_version = 13000;
  h.clock.trace_ns = 1700000000000000000ull;
  h.clock.realtime_ns = 1764480000000000000ull;
  h.start_realtime_ns = 1764480000000000123ull;
  h.enabled = {"kernel", "memcpy", "runtime", "nvtx"};
  h.metric_set = "speed-of-light";
  h.capture_range = "nvtx:train";
  return h;
}

std::string WriteTrace(const std::vector<AnyEvent>& events, size_t chunk_bytes,
                       const TraceHeaderData& header) {
  std::string out;
  WriterOptions options;
  options.chunk_bytes = chunk_bytes;
  TraceWriter writer(OpenMemorySink(&out), options);
  EXPECT_TRUE(writer.Begin(header));
  for (const AnyEvent& e : events) AddTo(writer, e);
  EXPECT_TRUE(writer.Finish("exit"));
  return out;
}

std::vector<AnyEvent> RealisticMix(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<AnyEvent> out;
  out.reserve(count);
  uint64_t t = 1700000000000000000ull;
  uint32_t correlation = 1000;
  for (size_t i = 0; i < count; ++i) {
    AnyEvent a;
    uint32_t r = rng() % 100;
    t += 2000 + rng() % 20000;
    if (r < 70) {
      a.kind = EventKind::kKernel;
      KernelEvent& k = a.kernel;
      k.start_ns = t;
      k.end_ns = t + 5000 + rng() % 200000;
      k.device_id = 0;
      k.context_id = 1;
      k.stream_id = 7 + rng() % 4;
      k.correlation_id = correlation++;
      k.name_id = 1 + rng() % 40;
      k.grid_x = 1 + rng() % 4096;
      k.block_x = 128 << (rng() % 3);
      k.registers_per_thread = 16 + rng() % 200;
      k.static_shared_bytes = (rng() % 4) * 4096;
      k.dynamic_shared_bytes = (rng() % 2) * 16384;
      k.shared_memory_config_bytes = 233472;
    } else if (r < 80) {
      a.kind = EventKind::kMemcpy;
      MemcpyEvent& m = a.memcpy;
      m.start_ns = t;
      m.end_ns = t + 1000 + rng() % 100000;
      m.context_id = 1;
      m.stream_id = 7;
      m.correlation_id = correlation++;
      m.bytes = 4096 + rng() % (64 << 20);
      m.copy_kind = CopyKind::kHtoD;
      m.src_kind = MemoryKind::kPinned;
      m.dst_kind = MemoryKind::kDevice;
      m.async = true;
    } else if (r < 95) {
      a.kind = EventKind::kApi;
      ApiEvent& p = a.api;
      p.start_ns = t - 1500;
      p.end_ns = t - 1500 + 2000 + rng() % 3000;
      p.domain = ApiDomain::kRuntime;
      p.cbid = 211;
      p.name_id = 41;
      p.correlation_id = correlation - 1;
      p.thread_id = 12345;
    } else {
      a.kind = EventKind::kNvtxRange;
      NvtxRangeEvent& n = a.nvtx_range;
      n.start_ns = t - 50000;
      n.end_ns = t + 1000000;
      n.name_id = 42 + rng() % 4;
      n.thread_id = 12345;
      n.push_pop = true;
    }
    out.push_back(a);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<TraceReader>> ReadAllFromBuffer(std::string_view data,
                                                               RecordingVisitor* visitor,
                                                               ReaderOptions options) {
  auto reader = TraceReader::FromBuffer("mem.sltrace", data, options);
  if (!reader.ok()) return reader.status();
  absl::Status status = (*reader)->ReadAll(*visitor);
  if (!status.ok()) return status;
  return reader;
}

std::string Preamble(uint32_t version) {
  std::string out(kFileMagic, sizeof(kFileMagic));
  out.append(reinterpret_cast<const char*>(&version), 4);
  return out;
}

std::string Frame(uint8_t type, std::string_view payload) {
  uint8_t header[kFrameHeaderSize];
  EncodeFrameHeader(type, static_cast<uint32_t>(payload.size()),
                    Crc32c(payload.data(), payload.size()), header);
  std::string out(reinterpret_cast<const char*>(header), kFrameHeaderSize);
  out.append(payload);
  return out;
}

std::vector<RawFrame> SplitFrames(std::string_view file) {
  std::vector<RawFrame> frames;
  size_t pos = kFilePreambleSize;
  while (pos + kFrameHeaderSize <= file.size()) {
    RawFrame f;
    f.offset = pos;
    f.type = static_cast<uint8_t>(file[pos + 4]);
    uint32_t length;
    std::memcpy(&length, file.data() + pos + 8, 4);
    f.payload = std::string(file.substr(pos + kFrameHeaderSize, length));
    frames.push_back(f);
    pos += kFrameHeaderSize + length;
  }
  EXPECT_EQ(pos, file.size()) << "SplitFrames: trailing bytes";
  return frames;
}

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/sltrace_test_XXXXXX";
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return pattern;
}

void RemoveTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (DIR* dir = opendir(path.c_str())) {
      while (dirent* entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") RemoveTree(path + "/" + name);
      }
      closedir(dir);
    }
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

ChunkedTrace MakeChunkedTrace(size_t count, size_t chunk_bytes, uint32_t seed) {
  ChunkedTrace t;
  t.events = RealisticMix(count, seed);
  t.bytes = WriteTrace(t.events, chunk_bytes);
  auto reader = TraceReader::FromBuffer("chunked", t.bytes);
  EXPECT_TRUE(reader.ok());
  t.header_end = (*reader)->position();
  RecordingVisitor visitor;
  while (true) {
    auto more = (*reader)->NextChunk(visitor);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    t.events_after[(*reader)->position()] = visitor.events.size();
  }
  EXPECT_TRUE((*reader)->integrity().complete);
  return t;
}

bool IsSubsequence(const std::vector<AnyEvent>& got, const std::vector<AnyEvent>& want) {
  size_t j = 0;
  for (const AnyEvent& e : got) {
    while (j < want.size() && !(want[j] == e)) ++j;
    if (j == want.size()) return false;
    ++j;
  }
  return true;
}

}  // namespace sightline::trace::testing
