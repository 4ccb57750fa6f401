// l2_idle_probe: does the DRAM traffic a kernel is charged depend on how long
// the GPU sat idle before it? (issue 14: per-kernel dram__bytes and warps
// active of PyTorch's elementwise kernels differ between sightline's sequence
// passes and ncu's application replay, beyond ncu's own spread.)
//
// Each round: `dirty` writes a buffer of DIRTY_MB (leaving dirty lines in L2),
// or `clean` only reads it; then, after a gap, `victim` computes C = A + B over
// three 4 MiB float arrays (the shape of at::native's vectorized add). The gap
// is given by the victim's grid, 2048 + gap index, so a profiler's per-launch
// or per-configuration rows say which gap each victim followed:
//   index 0: no gap (victim queued right behind dirty)
//   index 1: cudaDeviceSynchronize, no sleep
//   index 2..: cudaDeviceSynchronize, then sleep GAPS_US[i] microseconds
// Plain CUDA runtime, no CUPTI: run it under ncu or `sightline profile`.
//
//   l2_idle_probe [--rounds N] [--dirty-mb MB] [--gaps-us 10,100,1000,...]
//                 [--clean]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

__global__ void dirty(float* w, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    w[i] = float(i) * 0.5f;
}

__global__ void clean(const float* w, size_t n, float* sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    acc += w[i];
  if (acc == 12345.678f) *sink = acc;  // keeps the loads; never true for this data
}

__global__ void victim(const float* a, const float* b, float* c, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    c[i] = a[i] + b[i];
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "l2_idle_probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  size_t dirty_mb = 40;
  bool use_clean = false;
  std::vector<long> gaps_us = {10, 100, 1000, 10000, 100000};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--dirty-mb" && i + 1 < argc) {
      dirty_mb = std::strtoul(argv[++i], nullptr, 10);
    } else if (a == "--gaps-us" && i + 1 < argc) {
      gaps_us.clear();
      std::string s = argv[++i];
      size_t p = 0;
      while (p <= s.size()) {
        size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        if (q > p) gaps_us.push_back(std::atol(s.substr(p, q - p).c_str()));
        p = q + 1;
      }
    } else if (a == "--clean") {
      use_clean = true;
    } else {
      std::fprintf(stderr,
                   "usage: l2_idle_probe [--rounds N] [--dirty-mb MB] [--gaps-us US,US,...] [--clean]\n");
      return 2;
    }
  }
  if (rounds < 1 || dirty_mb < 1) {
    std::fprintf(stderr, "l2_idle_probe: --rounds and --dirty-mb must be positive\n");
    return 2;
  }
  const size_t n_dirty = dirty_mb * 1024 * 1024 / sizeof(float);
  const size_t n = 1 << 20;  // 4 MiB a float array
  float *w = nullptr, *a = nullptr, *b = nullptr, *c = nullptr, *sink = nullptr;
  if (!check(cudaMalloc(&w, n_dirty * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&a, n * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&b, n * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&c, n * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&sink, sizeof(float)), "cudaMalloc"))
    return 1;
  cudaMemset(a, 0, n * sizeof(float));
  cudaMemset(b, 0, n * sizeof(float));
  cudaMemset(w, 0, n_dirty * sizeof(float));
  if (!check(cudaDeviceSynchronize(), "setup")) return 1;

  const int n_gaps = 2 + int(gaps_us.size());
  std::printf("l2_idle_probe: %d rounds, %s %zu MiB before each victim; victim grid = 2048 + gap index\n",
              rounds, use_clean ? "clean (read)" : "dirty (write)", dirty_mb);
  std::printf("gap index 0: none; 1: sync only");
  for (size_t g = 0; g < gaps_us.size(); ++g) std::printf("; %zu: sync + %ld us", g + 2, gaps_us[g]);
  std::printf("\n");
  for (int r = 0; r < rounds; ++r) {
    for (int g = 0; g < n_gaps; ++g) {
      if (use_clean)
        clean<<<1024, 256>>>(w, n_dirty, sink);
      else
        dirty<<<1024, 256>>>(w, n_dirty);
      if (g >= 1 && !check(cudaDeviceSynchronize(), "sync")) return 1;
      if (g >= 2) std::this_thread::sleep_for(std::chrono::microseconds(gaps_us[g - 2]));
      victim<<<2048 + g, 128>>>(a, b, c, n);
    }
    if (!check(cudaDeviceSynchronize(), "round")) return 1;
  }
  std::printf("l2_idle_probe: done\n");
  return 0;
}
