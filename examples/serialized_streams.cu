// examples/serialized_streams.cu — independent work serialised on one stream.
//
// slow:  4 independent chains of kernels, each kernel a quarter of the GPU
//        (33 blocks on the H200's 132 SMs), all issued into the same stream:
//        they run one after another and three quarters of the SMs idle.
// fixed (--fixed): one stream per chain: the 4 chains run side by side and
//        together fill every SM, so the same work takes about a quarter of
//        the time.
// The host issues every launch up front (it is far ahead of the GPU), so in
// the slow variant each kernel waits in the stream's queue while SMs idle.
// Usage: serialized_streams [--fixed] [--rounds=N] [--iters=N] [--blocks=N]
#include <vector>

#include "example_util.h"

constexpr int kChains = 4;

// Long-running, latency-bound (a dependent chain per thread): each kernel
// keeps `blocks` SMs busy for its whole duration.
__global__ void Spin(float* x, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
  x[i] = v;
}

int main(int argc, char** argv) {
  bool fixed = example::Variant(argc, argv, "fixed");
  int rounds = static_cast<int>(example::IntFlag(argc, argv, "--rounds", 20));
  int iters = static_cast<int>(example::IntFlag(argc, argv, "--iters", 40000));
  int sms = 0;
  EX_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // A quarter of the GPU per chain: the 4 chains together fill it.
  int blocks = static_cast<int>(example::IntFlag(argc, argv, "--blocks", (sms + kChains - 1) / kChains));
  const int threads = 128;
  const size_t per_chain = size_t(blocks) * threads;
  example::Counts c;
  // Load the kernel now (lazy module loading would otherwise stall the
  // first launch inside the measured loop).
  cudaFuncAttributes attr;
  EX_CHECK(cudaFuncGetAttributes(&attr, Spin));
  cudaStream_t streams[kChains];
  for (int k = 0; k < kChains; ++k) {
    EX_CHECK(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking));
  }
  float* d = nullptr;  // the chains' data, one slice each
  EX_CHECK(cudaMalloc(&d, kChains * per_chain * sizeof(float)));
  EX_CHECK(cudaMemset(d, 0, kChains * per_chain * sizeof(float)));
  ++c.memset;
  EX_CHECK(cudaDeviceSynchronize());
  double t0 = example::NowMs();
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < kChains; ++k) {
      cudaStream_t s = fixed ? streams[k] : streams[0];
      Spin<<<blocks, threads, 0, s>>>(d + k * per_chain, iters);
      ++c.kernel;
    }
  }
  EX_CHECK(cudaDeviceSynchronize());
  double wall = example::NowMs() - t0;
  std::vector<float> host(kChains * per_chain);
  EX_CHECK(cudaMemcpy(host.data(), d, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  ++c.memcpy;
  float sum = 0;
  for (int k = 0; k < kChains; ++k) sum += host[k * per_chain];
  for (int k = 0; k < kChains; ++k) EX_CHECK(cudaStreamDestroy(streams[k]));
  EX_CHECK(cudaFree(d));
  std::printf("serialized_streams %s: %d rounds x %d chains of %d blocks (%d SMs), sum %g, %.3f ms\n",
              fixed ? "fixed" : "slow", rounds, kChains, blocks, sms, sum, wall);
  example::PrintExpect("serialized_streams", fixed ? "fixed" : "slow", c, wall);
  return 0;
}
