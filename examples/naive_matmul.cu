// examples/naive_matmul.cu — a naive matrix multiply and a tiled one.
//
// slow:  one thread per output element reading A and B straight from global
//        memory (B column-wise: uncoalesced), 16x16 blocks.
// fixed (--fixed): 64x64 output tiles staged through shared memory, each
//        thread computing 4x4 outputs with float4 loads.
// Each launch is also timed with CUDA events and printed as
//   SIGHTLINE_TIMING index=I event_ms=T
// so tests compare the profiler's kernel durations with CUDA-event timing.
// The first launch is a warm-up, reported with event_ms=0 (not compared).
// Usage: naive_matmul [--fixed] [--n=N (4096)] [--reps=R]
#include <cmath>
#include <vector>

#include "example_util.h"

__global__ void MatmulNaive(const float* A, const float* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    float acc = 0;
    for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
  }
}

constexpr int kTile = 64;   // output tile edge
constexpr int kK = 16;      // k-slice per shared-memory stage
// 256 threads; each computes a 4x4 patch of the 64x64 tile.
__global__ void MatmulTiled(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int n) {
  __shared__ float As[kK][kTile];  // transposed A slice
  __shared__ float Bs[kK][kTile];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < n; k0 += kK) {
    // Load A tile (64 rows x 16 k) and B tile (16 k x 64 cols) with float4.
    {
      int r = threadIdx.x / 4, kq = (threadIdx.x % 4) * 4;
      float4 a = *reinterpret_cast<const float4*>(&A[(row0 + r) * n + k0 + kq]);
      As[kq + 0][r] = a.x; As[kq + 1][r] = a.y; As[kq + 2][r] = a.z; As[kq + 3][r] = a.w;
      int kr = threadIdx.x / 16, cq = (threadIdx.x % 16) * 4;
      float4 b = *reinterpret_cast<const float4*>(&B[(k0 + kr) * n + col0 + cq]);
      *reinterpret_cast<float4*>(&Bs[kr][cq]) = b;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kK; ++k) {
      float4 a = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
      float4 b = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    float4 out = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(&C[(row0 + ty * 4 + i) * n + col0 + tx * 4]) = out;
  }
}

int main(int argc, char** argv) {
  bool fixed = example::Variant(argc, argv, "fixed");
  int n = static_cast<int>(example::IntFlag(argc, argv, "--n", 4096));
  int reps = static_cast<int>(example::IntFlag(argc, argv, "--reps", 5));
  n = (n + kTile - 1) / kTile * kTile;
  example::Counts c;
  size_t bytes = size_t(n) * n * sizeof(float);
  std::vector<float> hA(size_t(n) * n), hB(size_t(n) * n), hC(size_t(n) * n);
  for (size_t i = 0; i < hA.size(); ++i) {
    hA[i] = static_cast<float>((i * 7) % 13) / 13.0f;
    hB[i] = static_cast<float>((i * 11) % 17) / 17.0f;
  }
  float *A, *B, *C;
  EX_CHECK(cudaMalloc(&A, bytes));
  EX_CHECK(cudaMalloc(&B, bytes));
  EX_CHECK(cudaMalloc(&C, bytes));
  EX_CHECK(cudaMemcpy(A, hA.data(), bytes, cudaMemcpyHostToDevice));
  EX_CHECK(cudaMemcpy(B, hB.data(), bytes, cudaMemcpyHostToDevice));
  c.memcpy += 2;
  cudaEvent_t start, stop;
  EX_CHECK(cudaEventCreate(&start));
  EX_CHECK(cudaEventCreate(&stop));
  // Warm-up launch (module load, clocks): not timed.
  if (fixed) {
    MatmulTiled<<<dim3(n / kTile, n / kTile), 256>>>(A, B, C, n);
  } else {
    MatmulNaive<<<dim3((n + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(A, B, C, n);
  }
  ++c.kernel;
  EX_CHECK(cudaDeviceSynchronize());
  std::printf("SIGHTLINE_TIMING index=0 event_ms=0 (warm-up, not timed)\n");
  double t0 = example::NowMs();
  for (int r = 0; r < reps; ++r) {
    EX_CHECK(cudaEventRecord(start));
    if (fixed) {
      MatmulTiled<<<dim3(n / kTile, n / kTile), 256>>>(A, B, C, n);
    } else {
      MatmulNaive<<<dim3((n + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(A, B, C, n);
    }
    ++c.kernel;
    EX_CHECK(cudaEventRecord(stop));
    EX_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    EX_CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("SIGHTLINE_TIMING index=%d event_ms=%.6f\n", r + 1, ms);
  }
  double wall = example::NowMs() - t0;
  EX_CHECK(cudaMemcpy(hC.data(), C, bytes, cudaMemcpyDeviceToHost));
  ++c.memcpy;
  // Spot-check one element against the CPU.
  int i = n / 3, j = n / 5;
  double ref = 0;
  for (int k = 0; k < n; ++k) ref += double(hA[size_t(i) * n + k]) * hB[size_t(k) * n + j];
  double got = hC[size_t(i) * n + j];
  bool ok = std::abs(got - ref) <= 1e-3 * std::abs(ref) + 1e-3;
  std::printf("naive_matmul %s: n=%d reps=%d C[%d][%d]=%.4f ref=%.4f %s\n",
              fixed ? "fixed" : "slow", n, reps, i, j, got, ref, ok ? "OK" : "MISMATCH");
  EX_CHECK(cudaFree(A));
  EX_CHECK(cudaFree(B));
  EX_CHECK(cudaFree(C));
  example::PrintExpect("naive_matmul", fixed ? "fixed" : "slow", c, wall);
  return ok ? 0 : 1;
}
