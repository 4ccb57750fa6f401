// examples/fragmented_kernels.cu — many tiny kernels and a sync per step.
//
// slow:  each step runs 8 tiny element-wise kernels (~µs each) and then
//        cudaStreamSynchronize: launch overhead and the sync dominate.
// fixed (--fixed): the 8 operations fused into one kernel, no per-step sync.
// graph (--graph): the 8 kernels captured once into a CUDA graph, replayed
//        per step with cudaGraphLaunch, no per-step sync.
// Usage: fragmented_kernels [--fixed|--graph] [--steps=N] [--elements=N]
#include "example_util.h"

constexpr int kOpsPerStep = 8;

__global__ void Axpb(float* x, int n, float a, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + b;
}

__global__ void FusedAxpb(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
#pragma unroll
    for (int k = 0; k < kOpsPerStep; ++k) v = (1.0f + 0.001f * k) * v + 0.5f;
    x[i] = v;
  }
}

int main(int argc, char** argv) {
  bool fused = example::Variant(argc, argv, "fixed");
  bool graph = example::Variant(argc, argv, "graph");
  int steps = static_cast<int>(example::IntFlag(argc, argv, "--steps", 400));
  int n = static_cast<int>(example::IntFlag(argc, argv, "--elements", 4096));
  example::Counts c;
  float* d;
  EX_CHECK(cudaMalloc(&d, n * sizeof(float)));
  EX_CHECK(cudaMemset(d, 0, n * sizeof(float)));
  ++c.memset;
  cudaStream_t stream;
  EX_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  dim3 grid((n + 255) / 256), block(256);
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g;
    EX_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < kOpsPerStep; ++k) {
      Axpb<<<grid, block, 0, stream>>>(d, n, 1.0f + 0.001f * k, 0.5f);
    }
    EX_CHECK(cudaStreamEndCapture(stream, &g));
    EX_CHECK(cudaGraphInstantiate(&exec, g, 0));
    EX_CHECK(cudaGraphDestroy(g));
  }
  double t0 = example::NowMs();
  for (int s = 0; s < steps; ++s) {
    if (graph) {
      EX_CHECK(cudaGraphLaunch(exec, stream));
      c.kernel += kOpsPerStep;
    } else if (fused) {
      FusedAxpb<<<grid, block, 0, stream>>>(d, n);
      ++c.kernel;
    } else {
      for (int k = 0; k < kOpsPerStep; ++k) {
        Axpb<<<grid, block, 0, stream>>>(d, n, 1.0f + 0.001f * k, 0.5f);
        ++c.kernel;
      }
      EX_CHECK(cudaStreamSynchronize(stream));
    }
  }
  EX_CHECK(cudaStreamSynchronize(stream));
  double wall = example::NowMs() - t0;
  float first = 0;
  EX_CHECK(cudaMemcpy(&first, d, sizeof(float), cudaMemcpyDeviceToHost));
  ++c.memcpy;
  if (exec != nullptr) EX_CHECK(cudaGraphExecDestroy(exec));
  EX_CHECK(cudaStreamDestroy(stream));
  EX_CHECK(cudaFree(d));
  const char* variant = graph ? "graph" : (fused ? "fixed" : "slow");
  std::printf("fragmented_kernels %s: %d steps x %d ops, x[0]=%g, %.3f ms\n", variant, steps,
              kOpsPerStep, first, wall);
  example::PrintExpect("fragmented_kernels", variant, c, wall);
  return 0;
}
