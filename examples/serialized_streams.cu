// examples/serialized_streams.cu — independent work serialised on one stream.
//
// slow:  4 independent chains of kernels (each chain fills only a few SMs)
//        issued into the same stream: they run one after another.
// fixed (--fixed): one stream per chain: the chains run concurrently.
// Usage: serialized_streams [--fixed] [--rounds=N]
#include "example_util.h"

constexpr int kChains = 4;

// Few blocks, long-running: leaves most of the GPU idle when alone.
__global__ void Spin(float* x, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
  x[i] = v;
}

int main(int argc, char** argv) {
  bool fixed = example::Variant(argc, argv, "fixed");
  int rounds = static_cast<int>(example::IntFlag(argc, argv, "--rounds", 20));
  int iters = static_cast<int>(example::IntFlag(argc, argv, "--iters", 20000));
  example::Counts c;
  const int blocks = 8, threads = 128;
  float* d[kChains];
  cudaStream_t streams[kChains];
  for (int k = 0; k < kChains; ++k) {
    EX_CHECK(cudaMalloc(&d[k], blocks * threads * sizeof(float)));
    EX_CHECK(cudaMemset(d[k], 0, blocks * threads * sizeof(float)));
    ++c.memset;
    EX_CHECK(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking));
  }
  EX_CHECK(cudaDeviceSynchronize());
  double t0 = example::NowMs();
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < kChains; ++k) {
      cudaStream_t s = fixed ? streams[k] : streams[0];
      Spin<<<blocks, threads, 0, s>>>(d[k], iters);
      ++c.kernel;
    }
  }
  EX_CHECK(cudaDeviceSynchronize());
  double wall = example::NowMs() - t0;
  float sum = 0;
  for (int k = 0; k < kChains; ++k) {
    float v = 0;
    EX_CHECK(cudaMemcpy(&v, d[k], sizeof(float), cudaMemcpyDeviceToHost));
    ++c.memcpy;
    sum += v;
    EX_CHECK(cudaStreamDestroy(streams[k]));
    EX_CHECK(cudaFree(d[k]));
  }
  std::printf("serialized_streams %s: %d rounds x %d chains, sum %g, %.3f ms\n",
              fixed ? "fixed" : "slow", rounds, kChains, sum, wall);
  example::PrintExpect("serialized_streams", fixed ? "fixed" : "slow", c, wall);
  return 0;
}
