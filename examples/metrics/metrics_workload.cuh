// examples/metrics/metrics_workload.cuh — runs every kernel of
// metrics_kernels.cuh once per repetition, in a fixed order, so that ncu,
// `sightline profile --metrics` and the in-process harness see the same
// launches (same names, grids, blocks, order).
#ifndef SIGHTLINE_EXAMPLES_METRICS_METRICS_WORKLOAD_CUH_
#define SIGHTLINE_EXAMPLES_METRICS_METRICS_WORKLOAD_CUH_

#include <cstdio>
#include <vector>

#include "metrics_kernels.cuh"

namespace sightline_examples {

struct WorkloadBuffers {
  int n = 1024;            // matrix side
  int vec = 1 << 22;       // vector length
  float *a = nullptr, *b = nullptr, *c = nullptr, *x = nullptr, *y = nullptr;
};

inline bool CudaOk(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "metrics_workload: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

inline bool AllocWorkload(WorkloadBuffers* w) {
  const size_t mat = size_t(w->n) * w->n * sizeof(float);
  const size_t vec = size_t(w->vec) * sizeof(float);
  if (!CudaOk(cudaMalloc(&w->a, mat), "cudaMalloc") || !CudaOk(cudaMalloc(&w->b, mat), "cudaMalloc") ||
      !CudaOk(cudaMalloc(&w->c, mat), "cudaMalloc") || !CudaOk(cudaMalloc(&w->x, vec), "cudaMalloc") ||
      !CudaOk(cudaMalloc(&w->y, vec), "cudaMalloc")) {
    return false;
  }
  std::vector<float> host(size_t(w->n) * w->n);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float((i * 2654435761u) % 1000) / 1000.f;
  cudaMemcpy(w->a, host.data(), mat, cudaMemcpyHostToDevice);
  cudaMemcpy(w->b, host.data(), mat, cudaMemcpyHostToDevice);
  std::vector<float> hv(w->vec, 1.f);
  cudaMemcpy(w->x, hv.data(), vec, cudaMemcpyHostToDevice);
  cudaMemcpy(w->y, hv.data(), vec, cudaMemcpyHostToDevice);
  return CudaOk(cudaDeviceSynchronize(), "init");
}

inline void FreeWorkload(WorkloadBuffers* w) {
  cudaFree(w->a); cudaFree(w->b); cudaFree(w->c); cudaFree(w->x); cudaFree(w->y);
}

constexpr int kSharedHeavyBytes = 100 * 1024;

// The launches, in order. Names as ncu shows them (demangled, no args).
inline const char* const* WorkloadKernelNames(int* count) {
  static const char* const names[] = {
      "matmul_naive", "matmul_tiled", "transpose_shared<0>", "transpose_shared<1>",
      "register_heavy<96>", "shared_heavy", "divergent_branch", "saxpy_loop", "saxpy_loop"};
  *count = sizeof(names) / sizeof(names[0]);
  return names;
}

inline bool RunWorkloadOnce(const WorkloadBuffers& w) {
  const int n = w.n;
  matmul_naive<<<dim3(n / 32, n / 8), dim3(32, 8)>>>(w.a, w.b, w.c, n);
  matmul_tiled<<<dim3(n / kTile, n / kTile), dim3(kTile, kTile)>>>(w.a, w.b, w.c, n);
  transpose_shared<0><<<dim3(n / kTile, n / kTile), dim3(kTile, kTile)>>>(w.a, w.c, n, 64);
  transpose_shared<1><<<dim3(n / kTile, n / kTile), dim3(kTile, kTile)>>>(w.a, w.c, n, 64);
  register_heavy<96><<<(w.vec + 255) / 256, 256>>>(w.x, w.y, w.vec, 4);
  shared_heavy<<<264, 256, kSharedHeavyBytes>>>(w.x, w.y, w.vec, kSharedHeavyBytes / 4);
  divergent_branch<<<(w.vec + 255) / 256, 256>>>(w.x, w.y, w.vec, 1024);
  saxpy_loop<<<16, 256>>>(w.x, w.y, w.vec, 2);            // small grid
  saxpy_loop<<<(w.vec + 99) / 100, 100>>>(w.x, w.y, w.vec, 8);  // odd block
  return CudaOk(cudaGetLastError(), "launch") && CudaOk(cudaDeviceSynchronize(), "run");
}

inline bool PrepareWorkload() {
  return CudaOk(cudaFuncSetAttribute(shared_heavy, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     kSharedHeavyBytes),
                "cudaFuncSetAttribute");
}

}  // namespace sightline_examples

#endif  // SIGHTLINE_EXAMPLES_METRICS_METRICS_WORKLOAD_CUH_
