// examples/nccl_allreduce.cu — NCCL all-reduce across two GPUs, one process
// per rank (like torchrun/mpirun), so each rank writes its own trace
// (`sightline profile -o trace-%r.sltrace`).
//
// The launcher forks one child per GPU before touching CUDA; rank 0 creates
// the NCCL unique id and passes it to the others through a pipe. Each child
// sets RANK/WORLD_SIZE/LOCAL_RANK (what sightline's %r reads) and runs
// `iters` iterations of a compute kernel (on `work`) and an all-reduce of
// `count` floats (on `buf`, independent of the compute):
// slow:  compute, cudaStreamSynchronize, then the all-reduce, all on one
//        stream: communication and compute never overlap.
// fixed (--fixed): the all-reduce on its own stream, the compute on another,
//        no sync in the loop: the all-reduce of one iteration runs beside the
//        compute of the next.
// One warm-up iteration comes first: NCCL connects its channels at the first
// collective, which costs far more than a steady-state iteration.
// --profiler-range: cudaProfilerStart/Stop around the timed loop, for
//        `sightline profile --capture-range cudaProfilerApi` (as nsys users
//        record the steady state); prints SIGHTLINE_EXPECT_CAPTURED.
// Usage: nccl_allreduce [--fixed] [--iters=N] [--count=N] [--ranks=N]
//        [--compute-iters=N] [--profiler-range]
#include <cuda_profiler_api.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "example_util.h"

#define NCCL_CHECK(call)                                                           \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                   ncclGetErrorString(r_));                                        \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

// ~100 µs on an H200 for 4 Mi floats and 600 iterations: about as long as
// the 16 MiB all-reduce, so there is as much compute as communication to
// overlap.
__global__ void Compute(float* x, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    for (int k = 0; k < iters; ++k) v = v * 0.999f + 0.001f;
    x[i] = v;
  }
}

struct Options {
  bool fixed = false;
  bool profiler_range = false;
  int iters = 50;
  int compute_iters = 600;
  size_t count = 0;
};

static int RunRank(int rank, int ranks, ncclUniqueId id, const Options& o) {
  EX_CHECK(cudaSetDevice(rank));
  cudaFuncAttributes attr;
  EX_CHECK(cudaFuncGetAttributes(&attr, Compute));  // load it before the loop
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, ranks, id, rank));
  float *buf, *work;
  EX_CHECK(cudaMalloc(&buf, o.count * sizeof(float)));
  EX_CHECK(cudaMalloc(&work, o.count * sizeof(float)));
  example::Counts c;
  EX_CHECK(cudaMemset(buf, 0, o.count * sizeof(float)));
  EX_CHECK(cudaMemset(work, 0, o.count * sizeof(float)));
  c.memset += 2;
  cudaStream_t comm_stream, compute_stream;
  EX_CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
  EX_CHECK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
  int n = static_cast<int>(o.count);
  int grid = (n + 255) / 256;
  auto iteration = [&]() {
    cudaStream_t compute_on = o.fixed ? compute_stream : comm_stream;
    Compute<<<grid, 256, 0, compute_on>>>(work, n, o.compute_iters);
    ++c.kernel;
    if (!o.fixed) EX_CHECK(cudaStreamSynchronize(comm_stream));
    NCCL_CHECK(ncclAllReduce(buf, buf, o.count, ncclFloat, ncclSum, comm, comm_stream));
    ++c.kernel;  // one NCCL kernel per collective
  };
  iteration();  // warm-up: NCCL connects at its first collective
  EX_CHECK(cudaDeviceSynchronize());
  long kernels_before = c.kernel;
  if (o.profiler_range) EX_CHECK(cudaProfilerStart());
  double t0 = example::NowMs();
  for (int i = 0; i < o.iters; ++i) iteration();
  EX_CHECK(cudaStreamSynchronize(comm_stream));
  EX_CHECK(cudaStreamSynchronize(compute_stream));
  double wall = example::NowMs() - t0;
  if (o.profiler_range) EX_CHECK(cudaProfilerStop());
  float first = 0;
  EX_CHECK(cudaMemcpy(&first, buf, sizeof(float), cudaMemcpyDeviceToHost));
  ++c.memcpy;
  std::printf("nccl_allreduce rank %d/%d %s: %d all-reduces of %zu floats (+1 warm-up), %.3f ms\n",
              rank, ranks, o.fixed ? "fixed" : "slow", o.iters, o.count, wall);
  // One write per rank so the processes' lines do not interleave. NCCL's own
  // set-up copies/memsets are recorded too, so only kernels are counted
  // exactly (NCCL launches none at init). With --profiler-range only the
  // timed loop is captured: its kernels and all-reduces.
  std::string captured;
  if (o.profiler_range) {
    captured = "SIGHTLINE_EXPECT_CAPTURED rank=" + std::to_string(rank) +
               " windows=1 kernel=" + std::to_string(c.kernel - kernels_before) + "\n";
  }
  int allreduces = o.profiler_range ? o.iters : o.iters + 1;
  std::printf("SIGHTLINE_EXPECT_NCCL rank=%d allreduce=%d bytes=%zu\n"
              "%s"
              "SIGHTLINE_EXPECT example=nccl_allreduce rank=%d variant=%s kernel=%ld "
              "own_memcpy=%ld own_memset=%ld wall_ms=%.3f\n",
              rank, allreduces, o.count * sizeof(float), captured.c_str(), rank,
              o.fixed ? "fixed" : "slow", c.kernel, c.memcpy, c.memset, wall);
  std::fflush(stdout);
  NCCL_CHECK(ncclCommDestroy(comm));
  EX_CHECK(cudaFree(buf));
  EX_CHECK(cudaFree(work));
  return 0;
}

int main(int argc, char** argv) {
  Options o;
  o.fixed = example::Variant(argc, argv, "fixed");
  o.profiler_range = example::HasFlag(argc, argv, "--profiler-range");
  o.iters = static_cast<int>(example::IntFlag(argc, argv, "--iters", 50));
  o.compute_iters = static_cast<int>(example::IntFlag(argc, argv, "--compute-iters", 600));
  o.count = static_cast<size_t>(example::IntFlag(argc, argv, "--count", 1 << 22));
  int ranks = static_cast<int>(example::IntFlag(argc, argv, "--ranks", 2));
  std::vector<int> pipes(2 * ranks);
  for (int r = 0; r < ranks; ++r) {
    if (pipe(&pipes[2 * r]) != 0) return 1;
  }
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      ncclUniqueId id;
      if (r == 0) {
        NCCL_CHECK(ncclGetUniqueId(&id));
        for (int o = 1; o < ranks; ++o) {
          if (write(pipes[2 * o + 1], &id, sizeof(id)) != sizeof(id)) _exit(1);
        }
      } else if (read(pipes[2 * r], &id, sizeof(id)) != sizeof(id)) {
        _exit(1);
      }
      std::fflush(stdout);
      int rc = RunRank(r, ranks, id, o);
      std::fflush(stdout);
      std::exit(rc);  // normal exit: atexit handlers (the profiler's flush) run
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
