// bench/metrics/kernel_metrics_bench.cc — CPU costs of the kernel view:
//  * KernelSelector::Decide: runs inside every kernel launch callback while
//    per-kernel metrics are on (most launches are then skipped, so this is
//    the steady-state cost of having metrics enabled);
//  * ComputeOccupancy / NextOccupancyStep: run for every launch
//    configuration of an analysed trace.
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "lib/analysis/occupancy.h"
#include "lib/collect/range_profiler.h"

namespace {

using namespace sightline;

void BM_SelectorSkipQuota(benchmark::State& state) {
  collect::KernelSelector selector;
  collect::KernelSelectorOptions o;
  o.launches_per_kernel = 1;  // after the first launch every decision is a skip
  std::string error;
  selector.Init(o, &error);
  const char* names[] = {"_ZN7cutlass6KernelINS_4gemm6kernel4GemmE", "_Z12matmul_naivePKfS0_Pfi",
                         "ampere_sgemm_128x64_nn", "_Z10saxpy_loopPKfPfii"};
  uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(selector.Decide(names[i++ & 3], 1024, 1, 1, 256, 1, 1));
  }
}
BENCHMARK(BM_SelectorSkipQuota);

void BM_SelectorRegex(benchmark::State& state) {
  collect::KernelSelector selector;
  collect::KernelSelectorOptions o;
  o.name_regex = "gemm|matmul";
  o.every_nth = 100;
  std::string error;
  selector.Init(o, &error);
  const char* names[] = {"_ZN7cutlass6KernelINS_4gemm6kernel4GemmE", "_Z12matmul_naivePKfS0_Pfi",
                         "ampere_sgemm_128x64_nn", "_Z10saxpy_loopPKfPfii"};
  uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(selector.Decide(names[i++ & 3], 1024, 1, 1, 256, 1, 1));
  }
}
BENCHMARK(BM_SelectorRegex);

void BM_ComputeOccupancy(benchmark::State& state) {
  analysis::ArchitectureLimits arch = *analysis::LimitsForComputeCapability(9, 0);
  analysis::LaunchResources launch{256, 72, 0, 20000, 0, false};
  for (auto _ : state) {
    launch.registers_per_thread = 32 + (launch.registers_per_thread + 8) % 200;
    benchmark::DoNotOptimize(analysis::ComputeOccupancy(arch, launch));
  }
}
BENCHMARK(BM_ComputeOccupancy);

void BM_NextOccupancyStep(benchmark::State& state) {
  analysis::ArchitectureLimits arch = *analysis::LimitsForComputeCapability(9, 0);
  analysis::LaunchResources launch{256, 128, 0, 20000, 0, false};
  const analysis::OccupancyResult current = *analysis::ComputeOccupancy(arch, launch);
  for (auto _ : state) benchmark::DoNotOptimize(analysis::NextOccupancyStep(arch, launch, current));
}
BENCHMARK(BM_NextOccupancyStep);

}  // namespace

BENCHMARK_MAIN();
