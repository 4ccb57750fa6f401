// examples/metrics/metrics_workload.cu — the kernel-view example program:
// runs each kernel of metrics_kernels.cuh `--repeat N` times (default 1).
//
//   sightline profile --metrics full -- ./metrics_workload
//   ncu --clock-control none --metrics <same list> ./metrics_workload
//
// The kernels reproduce what the kernel rules report: uncoalesced loads
// (matmul_naive), bank conflicts (transpose_shared<0>), occupancy limited by
// registers (register_heavy) and by shared memory (shared_heavy), branch
// divergence, a grid smaller than the SM count, a block size of 100 threads.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "metrics_workload.cuh"

int main(int argc, char** argv) {
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::atoi(argv[++i]);
  }
  sightline_examples::WorkloadBuffers w;
  if (!sightline_examples::PrepareWorkload() || !sightline_examples::AllocWorkload(&w)) return 1;
  for (int r = 0; r < repeat; ++r) {
    if (!sightline_examples::RunWorkloadOnce(w)) return 1;
  }
  sightline_examples::FreeWorkload(&w);
  std::printf("metrics_workload: %d repetition(s) done\n", repeat);
  return 0;
}
