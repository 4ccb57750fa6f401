// analyzer_bench — throughput and peak memory of the analyzer on a generated
// trace of >= 5 M events (env SIGHTLINE_BENCH_EVENTS overrides the count).
//
// The trace looks like a training loop: two host threads launch kernels (one
// cudaLaunchKernel API event + one kernel event each; a launch blocks while
// its stream has 1024 operations queued, as the driver does) onto four streams with
// 64 kernel names (16 of them with a varying grid); every 100th launch is a
// cudaMemcpyAsync with its copy; each 1000 launches form an NVTX "step" with
// nested "forward"/"backward" ranges. It is written once with TraceWriter to
// a temporary file (kept at $SIGHTLINE_BENCH_TRACE when set), then:
//   BM_Analyze   — Analyze(path): read + model + summary + all rules, one
//                  thread. Counter events_per_second (target >= 5 M/s) is per
//                  second of CPU time of that thread ("on one core"), so other
//                  load on the machine does not distort it; the wall time is
//                  printed as usual.
//   BM_PeakRss   — the same in a forked child; counters peak_rss_bytes (the
//                  child's ru_maxrss), file_bytes and rss_per_file_byte
//                  (target <= 2).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <cstdlib>
#include <string>

#include "bench/analysis/child_rss.h"
#include "benchmark/benchmark.h"
#include "lib/analysis/analyze.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/support/h200_device.h"

namespace sightline::analysis {
namespace {

struct BenchTrace {
  std::string path;
  uint64_t events = 0;
  uint64_t bytes = 0;
};

BenchTrace Generate(uint64_t target_events, std::string path) {
  BenchTrace out;
  out.path = std::move(path);
  std::string error;
  trace::FileSinkOptions fo;
  fo.overwrite = true;
  trace::TraceWriter writer(trace::OpenFileSink(out.path, fo, &error));
  TraceHeaderData h;
  h.process.pid = getpid();
  h.process.host = "bench";
  h.devices.push_back(test_fixtures::H200Device(0));
  h.clock.trace_ns = 1'000'000'000;
  h.clock.realtime_ns = 1'700'000'000'000'000'000ull;
  writer.Begin(h);
  uint32_t launch = writer.Intern("cudaLaunchKernel");
  uint32_t memcpy_api = writer.Intern("cudaMemcpyAsync");
  uint32_t step = writer.Intern("step");
  uint32_t fwd = writer.Intern("forward");
  uint32_t bwd = writer.Intern("backward");
  uint32_t names[64];
  for (int i = 0; i < 64; ++i) {
    names[i] = writer.Intern("void at::native::vectorized_elementwise_kernel<4, op" +
                             std::to_string(i) + ">(int, float*, float const*)");
  }
  uint64_t cpu = 2'000'000'000, gpu_free[4] = {0, 0, 0, 0};
  std::deque<uint64_t> pending[4];  // ends of queued ops per stream
  uint32_t corr = 1;
  uint64_t step_start = cpu;
  uint64_t i = 0;
  while (out.events < target_events) {
    uint32_t thread = 100 + (i % 2);
    uint32_t stream = 7 + (i % 4);
    // Like the driver, block the launching thread while the stream already
    // has 1024 operations pending.
    auto& queue = pending[i % 4];
    while (!queue.empty() && queue.front() <= cpu) queue.pop_front();
    if (queue.size() >= 1024) {
      cpu = queue.front();
      queue.pop_front();
    }
    ApiEvent api;
    api.start_ns = cpu;
    api.end_ns = cpu + 2500 + (i * 7919) % 3000;
    api.domain = ApiDomain::kRuntime;
    api.thread_id = thread;
    api.correlation_id = corr;
    uint64_t ready = api.end_ns + 3000;
    uint64_t start = std::max(ready, gpu_free[i % 4]);
    uint64_t dur = 4000 + (i * 104729) % 60000;
    if (i % 100 == 99) {
      api.name_id = memcpy_api;
      writer.Add(api);
      MemcpyEvent m;
      m.start_ns = start;
      m.end_ns = start + dur;
      m.stream_id = stream;
      m.correlation_id = corr;
      m.bytes = 1 << 20;
      m.copy_kind = CopyKind::kHtoD;
      m.src_kind = MemoryKind::kPinned;
      m.dst_kind = MemoryKind::kDevice;
      m.async = true;
      writer.Add(m);
    } else {
      api.name_id = launch;
      writer.Add(api);
      KernelEvent k;
      k.start_ns = start;
      k.end_ns = start + dur;
      k.stream_id = stream;
      k.correlation_id = corr;
      // Each kernel name has its own launch configuration; a quarter of the
      // names see a varying grid (dynamic shapes).
      uint32_t n = static_cast<uint32_t>((i * 31) % 64);
      k.name_id = names[n];
      k.grid_x = 132 * (1 + n % 8) * (n % 4 == 0 ? 1 + (i / 64) % 16 : 1);
      k.block_x = 128 << (n % 3);
      k.registers_per_thread = 32 + 8 * (n % 4);
      writer.Add(k);
    }
    out.events += 2;
    gpu_free[i % 4] = start + dur;
    queue.push_back(start + dur);
    cpu = api.end_ns + 1000 + (i % 13) * 500;
    ++corr;
    ++i;
    if (i % 1000 == 0) {
      NvtxRangeEvent r;
      r.thread_id = 100;
      r.push_pop = true;
      r.start_ns = step_start;
      r.end_ns = cpu;
      r.name_id = step;
      writer.Add(r);
      r.end_ns = step_start + (cpu - step_start) / 2;
      r.name_id = fwd;
      writer.Add(r);
      r.start_ns = r.end_ns;
      r.end_ns = cpu;
      r.name_id = bwd;
      writer.Add(r);
      out.events += 3;
      step_start = cpu;
    }
  }
  writer.Finish("bench");
  out.bytes = writer.bytes_written();
  return out;
}

const BenchTrace& Trace() {
  static const BenchTrace* trace = [] {
    uint64_t n = 5'000'000;
    if (const char* env = std::getenv("SIGHTLINE_BENCH_EVENTS")) n = std::strtoull(env, nullptr, 10);
    // SIGHTLINE_BENCH_TRACE=PATH keeps the generated file (for other tools).
    const char* keep = std::getenv("SIGHTLINE_BENCH_TRACE");
    std::string path = keep ? keep
                            : "/tmp/sightline_analyzer_bench_" + std::to_string(getpid()) +
                                  ".sltrace";
    auto* t = new BenchTrace(Generate(n, path));
    if (!keep) std::atexit([] { std::remove(Trace().path.c_str()); });
    return t;
  }();
  return *trace;
}

void BM_Analyze(benchmark::State& state) {
  const BenchTrace& t = Trace();
  size_t findings = 0;
  for (auto _ : state) {
    absl::StatusOr<Report> r = Analyze(std::vector<std::string>{t.path}, {});
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    findings = r->findings.size();
    benchmark::DoNotOptimize(r->summary.window_ns);
  }
  state.counters["events"] = double(t.events);
  state.counters["file_bytes"] = double(t.bytes);
  state.counters["findings"] = double(findings);
  state.counters["events_per_second"] =
      benchmark::Counter(double(t.events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Analyze)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_PeakRss(benchmark::State& state) {
  const BenchTrace& t = Trace();
  const bench::ChildRss rss = bench::BenchChildRss(
      state, [&] { return Analyze(std::vector<std::string>{t.path}, {}).ok(); });
  if (!rss.ok) return;
  const long peak_kb = rss.peak_kb, baseline_kb = rss.baseline_kb;
  state.counters["file_bytes"] = double(t.bytes);
  state.counters["rss_per_file_byte"] = double(peak_kb) * 1024 / double(t.bytes);
  state.counters["rss_above_baseline_per_file_byte"] =
      double(peak_kb - baseline_kb) * 1024 / double(t.bytes);
}
BENCHMARK(BM_PeakRss)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace sightline::analysis

BENCHMARK_MAIN();
