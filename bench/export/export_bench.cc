// export_bench — speed of the exporters and renderers, in events per second.
//
//   BM_ChromeExport/N, BM_PerfettoExport/N: a synthetic training-loop trace
//   of ~N events (tests/export/synthetic_trace.h) held in memory, exported to
//   a temporary file; items/s = trace events per second, plus bytes/event of
//   the output.
//   BM_FlowMatcher: launch/kernel pairing throughput.
// Peers to beat (shared/ANCHORS.md): Kineto post-processing ~17k events/s;
// Kineto JSON ~460 B/event.
#include <unistd.h>

#include <string>

#include "benchmark/benchmark.h"
#include "lib/export/chrome_trace.h"
#include "lib/export/flow_matcher.h"
#include "lib/export/output_file.h"
#include "lib/export/perfetto_trace.h"
#include "lib/trace/reader.h"
#include "tests/export/synthetic_trace.h"

namespace sightline::exporter {
namespace {

const std::string& TraceBytes(int64_t events) {
  static std::string cached;
  static int64_t cached_events = -1;
  if (cached_events != events) {
    cached.clear();
    testing::SyntheticOptions o;
    o.kernels_per_step = 100;
    o.steps = static_cast<uint32_t>(events / (2 * 100 + 7));
    o.chunk_bytes = 1 << 20;
    std::string error;
    testing::WriteSyntheticTrace(trace::OpenMemorySink(&cached), o, &error);
    cached_events = events;
  }
  return cached;
}

template <typename ExportFn>
void RunExport(benchmark::State& state, ExportFn fn) {
  const std::string& bytes = TraceBytes(state.range(0));
  std::string path = "/tmp/sightline-export-bench-" + std::to_string(getpid());
  uint64_t events = 0, out_bytes = 0;
  for (auto _ : state) {
    auto reader = trace::TraceReader::FromBuffer("bench", bytes);
    auto out = OutputFile::Open(path);
    if (!reader.ok() || !out.ok()) {
      state.SkipWithError("open failed");
      return;
    }
    auto stats = fn(**reader, **out);
    if (!stats.ok() || !(*out)->Close().ok()) {
      state.SkipWithError("export failed");
      return;
    }
    events += stats->events_read;
    out_bytes += stats->bytes_written;
  }
  unlink(path.c_str());
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["out_bytes_per_event"] =
      events ? static_cast<double>(out_bytes) / static_cast<double>(events) : 0;
}

void BM_ChromeExport(benchmark::State& state) {
  RunExport(state, [](trace::TraceReader& r, OutputFile& o) { return ExportChromeTrace(r, o); });
}
BENCHMARK(BM_ChromeExport)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_PerfettoExport(benchmark::State& state) {
  RunExport(state, [](trace::TraceReader& r, OutputFile& o) { return ExportPerfettoTrace(r, o); });
}
BENCHMARK(BM_PerfettoExport)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_FlowMatcher(benchmark::State& state) {
  std::vector<std::pair<FlowEndpoint, FlowEndpoint>> flows;
  FlowMatcher m(1 << 18);
  uint32_t id = 0;
  for (auto _ : state) {
    ++id;
    m.AddLaunch(id, {1, id}, &flows);
    m.AddGpuWork(id, {2, id}, &flows);
    if (flows.size() > 4096) flows.clear();
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_FlowMatcher);

}  // namespace
}  // namespace sightline::exporter

BENCHMARK_MAIN();
