// trace_bench: speed and size of the trace format on a realistic,
// kernel-heavy event mix (what a training step looks like to CUPTI: kernel
// launches dominate, each with its runtime API call; some memcpys; NVTX
// ranges around steps).
//
// Counters (Google Benchmark):
//   events_per_second  events written (or read) per second of CPU, one core
//   bytes_per_event    trace bytes per event, framing and footer included
// Targets (issue 2): <= 40 bytes per kernel event, >= 10 M events/s written.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "lib/trace/reader.h"
#include "lib/trace/writer.h"

namespace sightline::trace {
namespace {

enum class Kind : uint8_t { kKernel, kApi, kMemcpy, kNvtx };

struct Mix {
  std::vector<Kind> order;
  std::vector<KernelEvent> kernels;
  std::vector<ApiEvent> apis;
  std::vector<MemcpyEvent> memcpys;
  std::vector<NvtxRangeEvent> ranges;
  std::vector<std::string> kernel_names;  // per kernel (for the interning variant)
};

// `kernel_share` percent kernels; the rest split between their launch API
// calls, memcpys and NVTX ranges. Values follow what CUPTI reports on an
// H100/H200 training run: correlation ids increase, a few streams, launch
// configs from a small set, durations 3 us - 2 ms.
Mix MakeMix(size_t count, int kernel_share) {
  std::mt19937_64 rng(12345);
  Mix mix;
  static const char* kNames[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
      "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute",
      "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>",
      "void at::native::(anonymous namespace)::layer_norm_kernel<c10::BFloat16, float>",
      "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>",
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps>>",
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
      "void at::native::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false>",
  };
  uint64_t t = 1'700'000'000'000'000'000ull;
  uint32_t correlation = 100000;
  uint32_t name_ids[8];
  for (int i = 0; i < 8; ++i) name_ids[i] = static_cast<uint32_t>(i + 1);
  for (size_t i = 0; i < count; ++i) {
    int r = static_cast<int>(rng() % 100);
    t += 1500 + rng() % 6000;
    if (r < kernel_share) {
      KernelEvent k;
      int which = static_cast<int>(rng() % 8);
      k.start_ns = t;
      k.end_ns = t + 3000 + rng() % (rng() % 8 == 0 ? 2000000 : 60000);
      k.device_id = 0;
      k.context_id = 1;
      k.stream_id = 7 + static_cast<uint32_t>(rng() % 3);
      k.correlation_id = correlation++;
      k.name_id = name_ids[which];
      static const uint32_t kGrids[] = {132, 264, 1024, 4096, 65536, 8, 1, 528};
      static const uint32_t kBlocks[] = {128, 256, 512, 384, 1024, 64};
      k.grid_x = kGrids[rng() % 8];
      if (which == 1 || which == 4) k.grid_y = 4 + rng() % 12;
      k.block_x = kBlocks[rng() % 6];
      k.registers_per_thread = 16 + static_cast<uint32_t>(rng() % 16) * 8;
      k.static_shared_bytes = (which == 1 || which == 4) ? 0 : (rng() % 2) * 4096;
      k.dynamic_shared_bytes = (which == 1 || which == 4) ? 98304 + 8192 * (rng() % 8) : 0;
      k.shared_memory_config_bytes = 233472;
      mix.kernels.push_back(k);
      mix.kernel_names.push_back(kNames[which]);
      mix.order.push_back(Kind::kKernel);
    } else if (r < kernel_share + (100 - kernel_share) * 7 / 10) {
      ApiEvent a;
      a.start_ns = t - 4000;
      a.end_ns = a.start_ns + 2500 + rng() % 4000;
      a.domain = ApiDomain::kRuntime;
      a.cbid = 211;  // cudaLaunchKernel_v7000
      a.name_id = 20;
      a.correlation_id = correlation - 1;
      a.thread_id = 48211;
      mix.apis.push_back(a);
      mix.order.push_back(Kind::kApi);
    } else if (r < kernel_share + (100 - kernel_share) * 9 / 10) {
      MemcpyEvent m;
      m.start_ns = t;
      m.end_ns = t + 2000 + rng() % 200000;
      m.context_id = 1;
      m.stream_id = 7;
      m.correlation_id = correlation++;
      m.bytes = 4096ull << (rng() % 14);
      m.copy_kind = rng() % 2 ? CopyKind::kHtoD : CopyKind::kDtoH;
      m.src_kind = MemoryKind::kPinned;
      m.dst_kind = MemoryKind::kDevice;
      m.async = true;
      mix.memcpys.push_back(m);
      mix.order.push_back(Kind::kMemcpy);
    } else {
      NvtxRangeEvent n;
      n.start_ns = t - 100000;
      n.end_ns = t + 3000000;
      n.name_id = 21 + static_cast<uint32_t>(rng() % 4);
      n.thread_id = 48211;
      n.push_pop = true;
      mix.ranges.push_back(n);
      mix.order.push_back(Kind::kNvtx);
    }
  }
  return mix;
}

// Counts bytes and discards them, so the benchmark measures encoding, not
// memory growth or disk speed.
class CountingSink : public Sink {
 public:
  explicit CountingSink(uint64_t* bytes) : bytes_(bytes) {}
  bool Write(const void* data, size_t size) override {
    benchmark::DoNotOptimize(data);
    *bytes_ += size;
    return true;
  }
  bool Close() override { return true; }
  std::string Describe() const override { return "counting"; }
  std::string last_error() const override { return ""; }

 private:
  uint64_t* bytes_;
};

// Writes the whole mix once; returns the bytes written.
template <bool kIntern>
uint64_t WriteMix(const Mix& mix, std::unique_ptr<Sink> sink) {
  TraceWriter writer(std::move(sink));
  TraceHeaderData header;
  header.tool_version = "bench";
  writer.Begin(header);
  size_t k = 0, a = 0, m = 0, n = 0;
  for (Kind kind : mix.order) {
    switch (kind) {
      case Kind::kKernel:
        if constexpr (kIntern) {
          // The collector's path: one lookup of the kernel's name per record.
          KernelEvent e = mix.kernels[k];
          e.name_id = writer.Intern(mix.kernel_names[k]);
          writer.Add(e);
        } else {
          writer.Add(mix.kernels[k]);
        }
        ++k;
        break;
      case Kind::kApi: writer.Add(mix.apis[a++]); break;
      case Kind::kMemcpy: writer.Add(mix.memcpys[m++]); break;
      case Kind::kNvtx: writer.Add(mix.ranges[n++]); break;
    }
  }
  writer.Finish("exit");
  return writer.bytes_written();
}

constexpr size_t kEvents = 1 << 20;

template <bool kIntern>
void BM_Write(benchmark::State& state) {
  const int kernel_share = static_cast<int>(state.range(0));
  static const Mix* mixes[101] = {};
  if (!mixes[kernel_share]) mixes[kernel_share] = new Mix(MakeMix(kEvents, kernel_share));
  const Mix& mix = *mixes[kernel_share];
  uint64_t bytes = 0, total_bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    WriteMix<kIntern>(mix, std::make_unique<CountingSink>(&bytes));
    total_bytes += bytes;
  }
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(mix.order.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_event"] = static_cast<double>(bytes) / mix.order.size();
  state.counters["kernel_share_pct"] = 100.0 * mix.kernels.size() / mix.order.size();
  state.SetBytesProcessed(static_cast<int64_t>(total_bytes));
}
// 100 = kernels only (the per-kernel-event size); 60 = a realistic mix.
BENCHMARK_TEMPLATE(BM_Write, false)->Arg(100)->Arg(60)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Write, true)->Arg(100)->Arg(60)->Unit(benchmark::kMillisecond);

class CountingVisitor : public EventVisitor {
 public:
  void OnKernel(const KernelEvent& e) override { sum += e.end_ns - e.start_ns + e.name_id; }
  void OnMemcpy(const MemcpyEvent& e) override { sum += e.bytes; }
  void OnApi(const ApiEvent& e) override { sum += e.correlation_id; }
  void OnNvtxRange(const NvtxRangeEvent& e) override { sum += e.name_id; }
  uint64_t sum = 0;
};

void BM_Read(benchmark::State& state) {
  const int kernel_share = static_cast<int>(state.range(0));
  Mix mix = MakeMix(kEvents, kernel_share);
  std::string bytes;
  WriteMix<true>(mix, OpenMemorySink(&bytes));
  for (auto _ : state) {
    auto reader = TraceReader::FromBuffer("bench", bytes);
    CountingVisitor visitor;
    if (!reader.ok() || !(*reader)->ReadAll(visitor).ok() ||
        (*reader)->integrity().events_read != mix.order.size()) {
      state.SkipWithError("read failed");
      return;
    }
    benchmark::DoNotOptimize(visitor.sum);
  }
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(mix.order.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_event"] = static_cast<double>(bytes.size()) / mix.order.size();
  state.SetBytesProcessed(static_cast<int64_t>(bytes.size()) * state.iterations());
}
BENCHMARK(BM_Read)->Arg(100)->Arg(60)->Unit(benchmark::kMillisecond);

// The same mix read back from a file through TraceReader::Open (the path the
// CLI and the analyzer take): measures the file access on top of decoding.
// The file sits in the page cache after the first iteration, as a trace just
// written or read twice does. Second argument: ReaderOptions::read_block_bytes
// in KiB (0: the default).
void BM_ReadFile(benchmark::State& state) {
  const int kernel_share = static_cast<int>(state.range(0));
  Mix mix = MakeMix(kEvents, kernel_share);
  std::string bytes;
  WriteMix<true>(mix, OpenMemorySink(&bytes));
  char path[] = "/tmp/trace_bench_XXXXXX";
  int fd = ::mkstemp(path);
  bool written = fd >= 0 && ::write(fd, bytes.data(), bytes.size()) ==
                                static_cast<ssize_t>(bytes.size());
  if (fd >= 0) ::close(fd);
  if (!written) {
    if (fd >= 0) ::unlink(path);
    state.SkipWithError("cannot write the temporary trace");
    return;
  }
  ReaderOptions options;
  if (state.range(1) > 0) options.read_block_bytes = static_cast<size_t>(state.range(1)) << 10;
  for (auto _ : state) {
    auto reader = TraceReader::Open(path, options);
    CountingVisitor visitor;
    if (!reader.ok() || !(*reader)->ReadAll(visitor).ok() ||
        (*reader)->integrity().events_read != mix.order.size()) {
      state.SkipWithError("read failed");
      break;
    }
    benchmark::DoNotOptimize(visitor.sum);
  }
  ::unlink(path);
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(mix.order.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<int64_t>(bytes.size()) * state.iterations());
}
BENCHMARK(BM_ReadFile)
    ->ArgsProduct({{100, 60}, {0, 64}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sightline::trace

BENCHMARK_MAIN();
