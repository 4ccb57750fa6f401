// multirank_bench — the analyzer on many ranks at once (issue 16 item 5):
// synthetic traces of 64 and 256 ranks, about 1 M events per set in total
// (SIGHTLINE_BENCH_EVENTS=N for N per set),
// analysed together (read every trace, merged model, cross-rank matching,
// summary, every rule). Targets: <= 60 s wall and <= 2 GB peak RSS on the
// 2-core development machine.
//
// Each rank's trace (TraceWriter, one file per rank in a temporary
// directory) is a data-parallel training loop; per step:
//   - 20 compute kernels, each with its cudaLaunchKernel (40 events);
//   - 2 all-reduces on the world communicator and 1 all-gather on the rank's
//     node communicator (8 ranks per node): NCCL's host call with its payload
//     (communicator hash, size) and the NCCL kernel, linked by correlation id
//     only, as NCCL's driver-API launches are (6 events);
//   - 1 NVTX "step" range.
// 47 events per step; steps per rank = 1,000,000 / (47 × ranks), so 332
// steps × 64 ranks = 998,656 events and 83 × 256 = 998,656 events. Each
// rank's recorded clock is off by up to ±40 µs (deterministic), collectives
// complete at one instant on all ranks with ±2 µs jitter, and rank 5 spends
// an extra 300 µs of CPU time before every all-reduce (a host-bound
// straggler the analysis should name).
//   BM_MultiRank/R    — Analyze(all R paths), wall time of read + analysis;
//                       counters: events, ranks, collectives_matched,
//                       straggler_rank (-1: none), build_s (read + model),
//                       analyze_s (the rest), cross_rank_s (matching +
//                       alignment + attribution alone, timed apart; the wall
//                       time does not include it).
//   BM_MultiRankRss/R — the same in a forked child: peak_rss_bytes, and
//                       baseline_rss_bytes of a child that only exits (the
//                       parent's resident pages the child starts with).
// SIGHTLINE_BENCH_KEEP=1 keeps the traces in /tmp/sightline_multirank_bench_*.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/analysis/child_rss.h"
#include "benchmark/benchmark.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/cross_rank.h"
#include "lib/analysis/model.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/support/h200_device.h"

namespace sightline::analysis {
namespace {

// SIGHTLINE_BENCH_EVENTS overrides the events per set.
uint64_t TargetEvents() {
  const char* env = std::getenv("SIGHTLINE_BENCH_EVENTS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 1'000'000;
}
constexpr uint64_t kEventsPerStep = 47;
constexpr int kStragglerRank = 5;
constexpr uint64_t kWorldComm = 0x9e3779b97f4a7c15ull;

struct RankSet {
  std::string dir;
  std::vector<std::string> paths;
  uint64_t events = 0;
  uint64_t bytes = 0;
};

// Deterministic jitter in [-range, range].
int64_t Jitter(uint64_t a, uint64_t b, int64_t range) {
  uint64_t h = (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);
  h ^= h >> 29;
  return int64_t(h % uint64_t(2 * range + 1)) - range;
}

RankSet Generate(int ranks) {
  RankSet set;
  set.dir = "/tmp/sightline_multirank_bench_" + std::to_string(getpid()) + "_" +
            std::to_string(ranks);
  std::filesystem::create_directories(set.dir);
  const uint64_t steps = std::max<uint64_t>(1, TargetEvents() / (kEventsPerStep * uint64_t(ranks)));
  const uint64_t t0 = 1'000'000'000;
  const uint64_t realtime0 = 1'800'000'000'000'000'000ull;
  for (int r = 0; r < ranks; ++r) {
    std::string path = set.dir + "/rank" + std::to_string(r) + ".sltrace";
    std::string error;
    trace::FileSinkOptions fo;
    fo.overwrite = true;
    trace::TraceWriter writer(trace::OpenFileSink(path, fo, &error));
    TraceHeaderData h;
    h.process.pid = 10000 + r;
    h.process.host = "node" + std::to_string(r / 8);
    h.process.rank = r;
    h.devices.push_back(test_fixtures::H200Device(r % 8));
    h.clock.trace_ns = t0;
    h.clock.realtime_ns = uint64_t(int64_t(realtime0) + Jitter(r, 7, 40'000));  // clock error
    writer.Begin(h);
    const uint32_t launch = writer.Intern("cudaLaunchKernel");
    const uint32_t sync = writer.Intern("cudaStreamSynchronize");
    const uint32_t step_name = writer.Intern("step");
    const uint32_t ar_kernel = writer.Intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
    const uint32_t ag_kernel = writer.Intern("ncclDevKernel_AllGather_RING_LL");
    const uint32_t ar_range = writer.Intern("ncclAllReduce");
    const uint32_t ag_range = writer.Intern("ncclAllGather");
    uint32_t names[20];
    for (int i = 0; i < 20; ++i) {
      names[i] = writer.Intern("void gemm_kernel_" + std::to_string(i) + "<128, 128>(float*)");
    }
    const uint64_t node_comm = 0x1234567800000000ull + uint64_t(r / 8);
    const uint32_t thread = 4000 + r;
    uint32_t corr = 1;
    uint64_t events = 0;
    for (uint64_t s = 0; s < steps; ++s) {
      const uint64_t base = t0 + s * 3'000'000;  // 3 ms steps
      uint64_t cpu = base, gpu = base + 20'000;
      // 20 compute kernels, 60 µs each; the host launches ahead.
      for (int k = 0; k < 20; ++k) {
        ApiEvent api;
        api.start_ns = cpu;
        api.end_ns = cpu + 4'000;
        api.domain = ApiDomain::kRuntime;
        api.name_id = k == 19 ? sync : launch;
        api.thread_id = thread;
        api.correlation_id = corr;
        writer.Add(api);
        KernelEvent ke;
        ke.start_ns = std::max(gpu, api.end_ns + 3'000);
        ke.end_ns = ke.start_ns + 60'000;
        ke.stream_id = 7;
        ke.correlation_id = corr++;
        ke.name_id = names[k];
        ke.grid_x = 264;
        ke.block_x = 256;
        ke.registers_per_thread = 64;
        writer.Add(ke);
        gpu = ke.end_ns;
        cpu = api.end_ns + 2'000;
        events += 2;
      }
      // Three collectives after the compute: world all-reduces completing at
      // 1.6 and 2.0 ms, the node all-gather at 2.5 ms (instants common to all
      // ranks of the communicator; after the straggler's late arrivals at
      // 1.56 and 1.925 ms).
      struct Op {
        uint64_t comm, bytes, end;
        uint32_t kernel, range;
        NcclOp op;
      } ops[3] = {{kWorldComm, 25u << 20, base + 1'600'000, ar_kernel, ar_range, NcclOp::kAllReduce},
                  {kWorldComm, 25u << 20, base + 2'000'000, ar_kernel, ar_range, NcclOp::kAllReduce},
                  {node_comm, 8u << 20, base + 2'500'000, ag_kernel, ag_range, NcclOp::kAllGather}};
      uint64_t host = std::max(cpu, base + 1'250'000);
      for (int o = 0; o < 3; ++o) {
        if (o < 2 && r == kStragglerRank) host += 300'000;  // extra CPU work
        NcclEvent call;
        call.start_ns = host;
        call.end_ns = host + 15'000;
        call.op = ops[o].op;
        call.bytes = ops[o].bytes;
        call.comm_id = ops[o].comm;
        call.rank = -1;
        call.name_id = ops[o].range;
        call.source = NcclSource::kHostNvtx;
        call.thread_id = thread;
        call.stream_id = kNoStream;
        writer.Add(call);
        KernelEvent ke;  // launched by the driver API inside the call: no API record
        ke.start_ns = std::max(gpu, host + 10'000);
        uint64_t end = ops[o].end + uint64_t(Jitter(s * 3 + o, r + 1, 2'000) + 2'000);
        ke.end_ns = std::max(end, ke.start_ns + 5'000);
        ke.stream_id = 13;
        ke.correlation_id = corr++;
        ke.name_id = ops[o].kernel;
        ke.grid_x = 24;
        ke.block_x = 544;
        writer.Add(ke);
        host = call.end_ns + 50'000;
        events += 2;
      }
      NvtxRangeEvent range;
      range.thread_id = thread;
      range.push_pop = true;
      range.start_ns = base;
      range.end_ns = base + 2'900'000;
      range.name_id = step_name;
      writer.Add(range);
      events += 1;
    }
    writer.Finish("bench");
    set.events += events;
    set.bytes += writer.bytes_written();
    set.paths.push_back(path);
  }
  return set;
}

const RankSet& Set(int ranks) {
  static std::map<int, RankSet>* sets = new std::map<int, RankSet>;
  auto it = sets->find(ranks);
  if (it == sets->end()) {
    it = sets->emplace(ranks, Generate(ranks)).first;
    // SIGHTLINE_BENCH_KEEP=1 keeps the generated traces (for the CLI).
    if (sets->size() == 1 && std::getenv("SIGHTLINE_BENCH_KEEP") == nullptr) {
      std::atexit([] {
        for (auto& [n, s] : *sets) std::filesystem::remove_all(s.dir);
      });
    }
  }
  return it->second;
}

void BM_MultiRank(benchmark::State& state) {
  const RankSet& set = Set(int(state.range(0)));
  double build_s = 0, analyze_s = 0, cross_s = 0;
  uint64_t matched = 0;
  int straggler = -1;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<TimelineModel> model = BuildModel(set.paths);
    auto t1 = std::chrono::steady_clock::now();
    if (!model.ok()) {
      state.SkipWithError(std::string(model.status().message()).c_str());
      return;
    }
    Report r = AnalyzeModel(*model, {});
    auto t2 = std::chrono::steady_clock::now();
    // The cross-rank part alone (matching, alignment, attribution) on the
    // whole model, for the breakdown.
    CrossRankAnalysis x = AnalyzeCrossRank(*model, {});
    auto t3 = std::chrono::steady_clock::now();
    build_s = std::chrono::duration<double>(t1 - t0).count();
    analyze_s = std::chrono::duration<double>(t2 - t1).count();
    cross_s = std::chrono::duration<double>(t3 - t2).count();
    benchmark::DoNotOptimize(x.ops.size());
    state.SetIterationTime(build_s + analyze_s);

    matched = r.cross_rank.collectives_matched;
    straggler = -1;
    for (const Finding& f : r.findings) {
      if (f.rule == "nccl_straggler") straggler = int(f.EvidenceNumber("straggler_rank"));
    }
  }
  state.counters["ranks"] = double(set.paths.size());
  state.counters["events"] = double(set.events);
  state.counters["file_bytes"] = double(set.bytes);
  state.counters["collectives_matched"] = double(matched);
  state.counters["straggler_rank"] = straggler;
  state.counters["build_s"] = build_s;
  state.counters["analyze_s"] = analyze_s;
  state.counters["cross_rank_s"] = cross_s;
}
BENCHMARK(BM_MultiRank)->Arg(64)->Arg(256)->Unit(benchmark::kSecond)->Iterations(1)->UseManualTime();

void BM_MultiRankRss(benchmark::State& state) {
  const RankSet& set = Set(int(state.range(0)));
  if (!bench::BenchChildRss(state, [&] { return Analyze(set.paths, {}).ok(); }).ok) return;
  state.counters["events"] = double(set.events);
}
BENCHMARK(BM_MultiRankRss)->Arg(64)->Arg(256)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace sightline::analysis

BENCHMARK_MAIN();
