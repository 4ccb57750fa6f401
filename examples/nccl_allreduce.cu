// examples/nccl_allreduce.cu — NCCL all-reduce across two GPUs, one process
// per rank (like torchrun/mpirun), so each rank writes its own trace
// (`sightline profile -o trace-%r.sltrace`).
//
// The launcher forks one child per GPU before touching CUDA; rank 0 creates
// the NCCL unique id and passes it to the others through a pipe. Each child
// sets RANK/WORLD_SIZE/LOCAL_RANK (what sightline's %r reads) and runs
// `iters` all-reduces of `count` floats, overlapping with a compute kernel on
// a second stream in --fixed mode (slow: compute, sync, then communicate).
// Usage: nccl_allreduce [--fixed] [--iters=N] [--count=N] [--ranks=N]
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

__global__ void Compute(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    for (int k = 0; k < 200; ++k) v = v * 0.999f + 0.001f;
    x[i] = v;
  }
}

static int RunRank(int rank, int ranks, ncclUniqueId id, bool fixed, int iters, size_t count) {
  EX_CHECK(cudaSetDevice(rank));
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, ranks, id, rank));
  float *buf, *work;
  EX_CHECK(cudaMalloc(&buf, count * sizeof(float)));
  EX_CHECK(cudaMalloc(&work, count * sizeof(float)));
  example::Counts c;
  EX_CHECK(cudaMemset(buf, 0, count * sizeof(float)));
  EX_CHECK(cudaMemset(work, 0, count * sizeof(float)));
  c.memset += 2;
  cudaStream_t comm_stream, compute_stream;
  EX_CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
  EX_CHECK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
  int n = static_cast<int>(count);
  double t0 = example::NowMs();
  for (int i = 0; i < iters; ++i) {
    Compute<<<(n + 255) / 256, 256, 0, fixed ? compute_stream : comm_stream>>>(work, n);
    ++c.kernel;
    if (!fixed) EX_CHECK(cudaStreamSynchronize(comm_stream));
    NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, comm_stream));
    ++c.kernel;  // one NCCL kernel per collective
  }
  EX_CHECK(cudaStreamSynchronize(comm_stream));
  EX_CHECK(cudaStreamSynchronize(compute_stream));
  double wall = example::NowMs() - t0;
  float first = 0;
  EX_CHECK(cudaMemcpy(&first, buf, sizeof(float), cudaMemcpyDeviceToHost));
  ++c.memcpy;
  std::printf("nccl_allreduce rank %d/%d %s: %d all-reduces of %zu floats, %.3f ms\n", rank,
              ranks, fixed ? "fixed" : "slow", iters, count, wall);
  // One write per rank so the two processes' lines do not interleave.
  std::printf("SIGHTLINE_EXPECT_NCCL rank=%d allreduce=%d bytes=%zu\n"
              // NCCL's own set-up copies/memsets are recorded too, so only
              // kernels are counted exactly (NCCL launches none at init).
              "SIGHTLINE_EXPECT example=nccl_allreduce rank=%d variant=%s kernel=%ld "
              "own_memcpy=%ld own_memset=%ld wall_ms=%.3f\n",
              rank, iters, count * sizeof(float), rank, fixed ? "fixed" : "slow", c.kernel,
              c.memcpy, c.memset, wall);
  std::fflush(stdout);
  NCCL_CHECK(ncclCommDestroy(comm));
  EX_CHECK(cudaFree(buf));
  EX_CHECK(cudaFree(work));
  return 0;
}

int main(int argc, char** argv) {
  bool fixed = example::Variant(argc, argv, "fixed");
  int iters = static_cast<int>(example::IntFlag(argc, argv, "--iters", 50));
  size_t count = static_cast<size_t>(example::IntFlag(argc, argv, "--count", 1 << 22));
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
      int rc = RunRank(r, ranks, id, fixed, iters, count);
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
