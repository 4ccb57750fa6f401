// examples/starved_gpu.cu — a GPU starved by CPU preprocessing.
//
// The data set is `batches` batches of raw 16-bit codes in host memory (think
// decoded samples). Each batch is prepared — codes → floats through a costly
// transform — then normalised on the GPU and copied back.
// slow:  each batch is prepared on the CPU, on one thread, copied from
//        pageable memory with a synchronous cudaMemcpy, processed, and copied
//        back synchronously: the GPU idles while the CPU works.
// fixed (--fixed): the preparation moves to the GPU (PrepareOnGpu computes
//        exactly what the CPU code computes, bit for bit): the raw codes (half
//        the bytes of the floats) are uploaded from pinned memory with
//        cudaMemcpyAsync, and two streams form a double-buffered pipeline
//        (batch i+1 is uploaded and prepared while batch i is processed and
//        copied back). The CPU only enqueues work; the GPU no longer waits.
// Both variants print the same checksum, and mark each batch ("batch", one
// iteration) and the preparation ("preprocess": the CPU work in slow, the
// upload and GPU-preparation launch in fixed) with NVTX.
// Usage: starved_gpu [--fixed] [--batches=N] [--elements=N]
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "example_util.h"

__global__ void Normalize(const float* in, float* out, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    for (int k = 0; k < 64; ++k) v = v * 0.999f + scale * __sinf(v);
    out[i] = v;
  }
}

constexpr int kPrepRounds = 6;

// The raw code of element i of batch `batch` (the data set's content).
__host__ __device__ inline uint16_t RawCode(unsigned i, unsigned batch) {
  return static_cast<uint16_t>((i * 2654435761u + batch) % 1000u);
}

// Stand-in for decoding/augmentation: ~16 ms of one CPU core per batch of
// 1 Mi elements. Plain IEEE float operations (the host compiler targets
// x86-64 without FMA, so nothing is contracted).
static void PrepareOnCpu(const uint16_t* raw, float* batch, int n) {
  for (int i = 0; i < n; ++i) {
    float x = static_cast<float>(raw[i]) / 1000.0f;
    for (int k = 0; k < kPrepRounds; ++k) x = std::sqrt(x * x + 0.5f) * 0.7f;
    batch[i] = x;
  }
}

// The same transform on the GPU, operation for operation with explicit
// round-to-nearest intrinsics (no FMA contraction, IEEE division and square
// root whatever the compiler flags): bit-identical to PrepareOnCpu.
__global__ void PrepareOnGpu(const uint16_t* raw, float* batch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float x = __fdiv_rn(static_cast<float>(raw[i]), 1000.0f);
    for (int k = 0; k < kPrepRounds; ++k) {
      x = __fmul_rn(__fsqrt_rn(__fadd_rn(__fmul_rn(x, x), 0.5f)), 0.7f);
    }
    batch[i] = x;
  }
}

int main(int argc, char** argv) {
  bool fixed = example::Variant(argc, argv, "fixed");
  int batches = static_cast<int>(example::IntFlag(argc, argv, "--batches", 24));
  int n = static_cast<int>(example::IntFlag(argc, argv, "--elements", 1 << 20));
  size_t bytes = size_t(n) * sizeof(float);
  size_t raw_bytes = size_t(n) * sizeof(uint16_t);
  example::Counts c;
  // Load the kernels now: lazy module loading would otherwise stall the
  // first launch of each inside the measured loop.
  cudaFuncAttributes attr;
  EX_CHECK(cudaFuncGetAttributes(&attr, Normalize));
  EX_CHECK(cudaFuncGetAttributes(&attr, PrepareOnGpu));
  float *d_in[2], *d_out[2];
  uint16_t* d_raw[2];
  for (int s = 0; s < 2; ++s) {
    EX_CHECK(cudaMalloc(&d_in[s], bytes));
    EX_CHECK(cudaMalloc(&d_out[s], bytes));
    EX_CHECK(cudaMalloc(&d_raw[s], raw_bytes));
  }
  // The data set, in host memory before the loop starts (pinned in fixed,
  // like a DataLoader with pin_memory=True).
  size_t total = size_t(batches) * size_t(n);
  uint16_t* raw = nullptr;
  std::vector<uint16_t> pageable_raw;
  if (fixed) {
    EX_CHECK(cudaMallocHost(&raw, total * sizeof(uint16_t)));
  } else {
    pageable_raw.resize(total);
    raw = pageable_raw.data();
  }
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < n; ++i) raw[size_t(b) * n + i] = RawCode(unsigned(i), unsigned(b));
  }
  double checksum = 0;
  double t0 = 0;
  if (!fixed) {
    std::vector<float> host(n), result(n);
    t0 = example::NowMs();
    for (int b = 0; b < batches; ++b) {
      nvtxRangePushA("batch");
      nvtxRangePushA("preprocess");
      PrepareOnCpu(raw + size_t(b) * n, host.data(), n);
      nvtxRangePop();
      ++c.nvtx_range;
      EX_CHECK(cudaMemcpy(d_in[0], host.data(), bytes, cudaMemcpyHostToDevice));
      ++c.memcpy;
      Normalize<<<(n + 255) / 256, 256>>>(d_in[0], d_out[0], n, 0.01f);
      ++c.kernel;
      EX_CHECK(cudaMemcpy(result.data(), d_out[0], bytes, cudaMemcpyDeviceToHost));
      ++c.memcpy;
      checksum += result[b % n];
      nvtxRangePop();
      ++c.nvtx_range;
    }
  } else {
    float* h_out[2];
    cudaStream_t stream[2];
    for (int s = 0; s < 2; ++s) {
      EX_CHECK(cudaMallocHost(&h_out[s], bytes));
      EX_CHECK(cudaStreamCreateWithFlags(&stream[s], cudaStreamNonBlocking));
    }
    const int grid = (n + 255) / 256;
    t0 = example::NowMs();
    for (int b = 0; b < batches; ++b) {
      nvtxRangePushA("batch");
      int s = b % 2;
      // Buffer s was last used by batch b-2: wait for it before reusing
      // (batch b-1 keeps the GPU busy meanwhile).
      EX_CHECK(cudaStreamSynchronize(stream[s]));
      if (b >= 2) checksum += h_out[s][(b - 2) % n];
      nvtxRangePushA("preprocess");
      EX_CHECK(cudaMemcpyAsync(d_raw[s], raw + size_t(b) * n, raw_bytes, cudaMemcpyHostToDevice,
                               stream[s]));
      ++c.memcpy;
      PrepareOnGpu<<<grid, 256, 0, stream[s]>>>(d_raw[s], d_in[s], n);
      ++c.kernel;
      nvtxRangePop();
      ++c.nvtx_range;
      Normalize<<<grid, 256, 0, stream[s]>>>(d_in[s], d_out[s], n, 0.01f);
      ++c.kernel;
      EX_CHECK(cudaMemcpyAsync(h_out[s], d_out[s], bytes, cudaMemcpyDeviceToHost, stream[s]));
      ++c.memcpy;
      nvtxRangePop();
      ++c.nvtx_range;
    }
    for (int s = 0; s < 2; ++s) EX_CHECK(cudaStreamSynchronize(stream[s]));
    for (int b = std::max(0, batches - 2); b < batches; ++b) checksum += h_out[b % 2][b % n];
    for (int s = 0; s < 2; ++s) {
      EX_CHECK(cudaFreeHost(h_out[s]));
      EX_CHECK(cudaStreamDestroy(stream[s]));
    }
  }
  EX_CHECK(cudaDeviceSynchronize());
  double wall = example::NowMs() - t0;
  if (fixed) EX_CHECK(cudaFreeHost(raw));
  for (int s = 0; s < 2; ++s) {
    EX_CHECK(cudaFree(d_in[s]));
    EX_CHECK(cudaFree(d_out[s]));
    EX_CHECK(cudaFree(d_raw[s]));
  }
  std::printf("starved_gpu %s: %d batches of %d floats, checksum %.6f\n",
              fixed ? "fixed" : "slow", batches, n, checksum);
  example::PrintExpect("starved_gpu", fixed ? "fixed" : "slow", c, wall);
  return 0;
}
