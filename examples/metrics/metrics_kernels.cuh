// examples/metrics/metrics_kernels.cuh — kernels that each show one kernel-level
// problem the kernel rules name, with a fixed variant where one exists:
//
//   matmul_naive        thread x walks rows: loads of A and stores of C are
//                       strided by N (uncoalesced: ~32 sectors per request)
//   matmul_tiled        32×32 shared-memory tiles, coalesced (the fix)
//   transpose_conflict  shared tile [32][32] read by column: 32-way bank conflicts
//   transpose_padded    tile [32][33]: conflict-free (the fix)
//   register_heavy      ~200 live registers per thread: occupancy limited by registers
//   shared_heavy        100 KiB dynamic shared memory per block: limited by shared memory
//   divergent_branch    odd/even lanes take different heavy paths: divergence
//   small_grid          fewer blocks than SMs
//   odd_block           100 threads per block (not a multiple of 32)
//
// Header-only so the example program, the GPU tests and the benchmark share
// the same code. Sizes are chosen so each kernel runs 50 µs–2 ms on an H200.
#ifndef SIGHTLINE_EXAMPLES_METRICS_METRICS_KERNELS_CUH_
#define SIGHTLINE_EXAMPLES_METRICS_METRICS_KERNELS_CUH_

#include <cuda_runtime.h>

namespace sightline_examples {

// C = A × B, n × n, row-major. Thread x indexes the ROW, so neighbouring lanes
// read A[row*n + k] n floats apart and write C n floats apart.
__global__ void matmul_naive(const float* a, const float* b, float* c, int n) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= n || col >= n) return;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
  c[row * n + col] = acc;
}

constexpr int kTile = 32;

// Classic shared-memory tiling: every global access is coalesced.
__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile + 1];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < n; t += kTile) {
    ta[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? a[row * n + t + threadIdx.x] : 0.f;
    tb[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? b[(t + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}

// Transpose through shared memory; Pad = 0 → column reads hit one bank 32 times.
template <int Pad>
__global__ void transpose_shared(const float* in, float* out, int n, int repeats) {
  __shared__ float tile[kTile][kTile + Pad];
  const int x = blockIdx.x * kTile + threadIdx.x;
  const int y = blockIdx.y * kTile + threadIdx.y;
  float sum = 0.f;
  for (int r = 0; r < repeats; ++r) {
    tile[threadIdx.y][threadIdx.x] = in[y * n + x] + r;
    __syncthreads();
    sum += tile[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  const int tx = blockIdx.y * kTile + threadIdx.x;
  const int ty = blockIdx.x * kTile + threadIdx.y;
  out[ty * n + tx] = sum;
}

// Many independent accumulators kept live across a loop: the compiler needs
// ~200 registers per thread (checked at run time with cudaFuncGetAttributes).
template <int Live>
__global__ void register_heavy(const float* in, float* out, int n, int iters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v[Live];
#pragma unroll
  for (int j = 0; j < Live; ++j) v[j] = in[(i + j * 131) % n];
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < Live; ++j) v[j] = v[j] * v[(j + 1) % Live] + 0.5f * v[(j + 7) % Live];
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < Live; ++j) s += v[j];
  out[i] = s;
}

// Uses `extern` dynamic shared memory sized by the launch.
__global__ void shared_heavy(const float* in, float* out, int n, int words) {
  extern __shared__ float buf[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int w = threadIdx.x; w < words; w += blockDim.x) buf[w] = in[(blockIdx.x * 7 + w) % n];
  __syncthreads();
  float s = 0.f;
  for (int w = threadIdx.x; w < words; w += blockDim.x) s += buf[(w * 3) % words];
  if (i < n) out[i] = s;
}

// Even and odd lanes run different loops: half of each warp idles.
__global__ void divergent_branch(const float* in, float* out, int n, int iters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  if (threadIdx.x & 1) {
    for (int k = 0; k < iters; ++k) x = x * 1.0001f + 0.5f;
  } else {
    for (int k = 0; k < iters; ++k) x = x * 0.9999f - 0.25f;
  }
  out[i] = x;
}

// Plain streaming work, used with a grid too small for the GPU and with a
// block size that is not a multiple of 32.
__global__ void saxpy_loop(const float* x, float* y, int n, int iters) {
  const int stride = gridDim.x * blockDim.x;
  for (int it = 0; it < iters; ++it) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = 2.f * x[i] + y[i];
  }
}

}  // namespace sightline_examples

#endif  // SIGHTLINE_EXAMPLES_METRICS_METRICS_KERNELS_CUH_
