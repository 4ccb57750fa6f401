// examples/starved_gpu.cu — a GPU starved by CPU preprocessing.
//
// slow:  each batch is prepared on the CPU (a deliberately costly transform),
//        copied from pageable memory with a synchronous cudaMemcpy, processed,
//        and copied back synchronously: the GPU idles while the CPU works.
// fixed (--fixed): the preparation is split over worker threads, buffers are
//        pinned, copies are cudaMemcpyAsync, and two streams form a
//        double-buffered pipeline: batch i+1 is prepared on the CPU while
//        batch i is copied and processed on the GPU.
// Both variants mark each batch ("batch", one iteration) and the CPU work
// ("preprocess") with NVTX, so the analyzer can name the CPU span that makes
// the GPU wait.
// Usage: starved_gpu [--fixed] [--batches=N] [--elements=N]
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <thread>
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

static void PrepareRange(float* batch, int begin, int end, int seed) {
  // Stand-in for decoding/augmentation: ~a few ms of CPU per batch.
  for (int i = begin; i < end; ++i) {
    float x = static_cast<float>((i * 2654435761u + seed) % 1000) / 1000.0f;
    for (int k = 0; k < 6; ++k) x = std::sqrt(x * x + 0.5f) * 0.7f;
    batch[i] = x;
  }
}

// Prepares one batch on `threads` CPU threads, inside an NVTX range.
static void PrepareOnCpu(float* batch, int n, int seed, int threads, example::Counts* c) {
  nvtxRangePushA("preprocess");
  if (threads <= 1) {
    PrepareRange(batch, 0, n, seed);
  } else {
    std::vector<std::thread> pool;
    int per = (n + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
      int b = t * per, e = std::min(n, b + per);
      if (b < e) pool.emplace_back(PrepareRange, batch, b, e, seed);
    }
    for (std::thread& th : pool) th.join();
  }
  nvtxRangePop();
  ++c->nvtx_range;
}

int main(int argc, char** argv) {
  bool fixed = example::Variant(argc, argv, "fixed");
  int batches = static_cast<int>(example::IntFlag(argc, argv, "--batches", 24));
  int n = static_cast<int>(example::IntFlag(argc, argv, "--elements", 1 << 20));
  size_t bytes = size_t(n) * sizeof(float);
  example::Counts c;
  float *d_in[2], *d_out[2];
  for (int s = 0; s < 2; ++s) {
    EX_CHECK(cudaMalloc(&d_in[s], bytes));
    EX_CHECK(cudaMalloc(&d_out[s], bytes));
  }
  double checksum = 0;
  double t0 = example::NowMs();
  if (!fixed) {
    std::vector<float> host(n), result(n);
    for (int b = 0; b < batches; ++b) {
      nvtxRangePushA("batch");
      PrepareOnCpu(host.data(), n, b, 1, &c);
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
    float *h_in[2], *h_out[2];
    cudaStream_t stream[2];
    for (int s = 0; s < 2; ++s) {
      EX_CHECK(cudaMallocHost(&h_in[s], bytes));
      EX_CHECK(cudaMallocHost(&h_out[s], bytes));
      EX_CHECK(cudaStreamCreateWithFlags(&stream[s], cudaStreamNonBlocking));
    }
    unsigned hw = std::thread::hardware_concurrency();
    int threads = static_cast<int>(std::max(2u, std::min(8u, hw)));
    for (int b = 0; b < batches; ++b) {
      nvtxRangePushA("batch");
      int s = b % 2;
      // Buffer s was last used by batch b-2: wait for it before reusing.
      EX_CHECK(cudaStreamSynchronize(stream[s]));
      if (b >= 2) checksum += h_out[s][(b - 2) % n];
      PrepareOnCpu(h_in[s], n, b, threads, &c);
      EX_CHECK(cudaMemcpyAsync(d_in[s], h_in[s], bytes, cudaMemcpyHostToDevice, stream[s]));
      ++c.memcpy;
      Normalize<<<(n + 255) / 256, 256, 0, stream[s]>>>(d_in[s], d_out[s], n, 0.01f);
      ++c.kernel;
      EX_CHECK(cudaMemcpyAsync(h_out[s], d_out[s], bytes, cudaMemcpyDeviceToHost, stream[s]));
      ++c.memcpy;
      nvtxRangePop();
      ++c.nvtx_range;
    }
    for (int s = 0; s < 2; ++s) EX_CHECK(cudaStreamSynchronize(stream[s]));
    for (int b = batches - 2; b < batches; ++b) {
      if (b >= 0) checksum += h_out[b % 2][b % n];
    }
    for (int s = 0; s < 2; ++s) {
      EX_CHECK(cudaFreeHost(h_in[s]));
      EX_CHECK(cudaFreeHost(h_out[s]));
      EX_CHECK(cudaStreamDestroy(stream[s]));
    }
  }
  EX_CHECK(cudaDeviceSynchronize());
  double wall = example::NowMs() - t0;
  for (int s = 0; s < 2; ++s) {
    EX_CHECK(cudaFree(d_in[s]));
    EX_CHECK(cudaFree(d_out[s]));
  }
  std::printf("starved_gpu %s: %d batches of %d floats, checksum %.6f\n",
              fixed ? "fixed" : "slow", batches, n, checksum);
  example::PrintExpect("starved_gpu", fixed ? "fixed" : "slow", c, wall);
  return 0;
}
