// examples/fragmented_kernels.cu — many tiny kernels and a sync per step.
//
// A time-stepping loop over a small state (4096 floats): each step applies
// 8 element-wise operations in turn, each a short per-element computation
// (`--work` dependent multiply-adds).
// slow:  each step launches the 8 operations as 8 tiny kernels (~1.5 µs
//        each, shorter than a launch call) and then cudaStreamSynchronize:
//        launch overhead and the sync dominate.
// fixed (--fixed): the 8 operations fused into one kernel that also advances
//        `--steps-per-launch` steps (default 20) per launch, keeping the state
//        in registers; no per-step sync: 20 launches of ~95 µs instead of
//        3200 of ~1.5 µs (a multiply-add chain costs ~2.3 ns on the H200).
// graph (--graph): the 8 kernels captured once into a CUDA graph, replayed
//        per step with cudaGraphLaunch, no per-step sync.
// All three compute the same values (x[0] is printed).
// Usage: fragmented_kernels [--fixed|--graph] [--steps=N] [--elements=N]
//        [--work=N] [--steps-per-launch=N]
#include <algorithm>

#include "example_util.h"

constexpr int kOpsPerStep = 8;

struct Coefficients {
  float a[kOpsPerStep];
};

// One operation: `work` dependent multiply-adds x = a*x + b per element.
__device__ __forceinline__ float Op(float v, float a, float b, int work) {
  for (int w = 0; w < work; ++w) v = __fmaf_rn(a, v, b);
  return v;
}

__global__ void Axpb(float* x, int n, float a, float b, int work) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = Op(x[i], a, b, work);
}

// `steps` steps of the 8 operations, fused: one load, one store.
__global__ void FusedSteps(float* x, int n, Coefficients c, float b, int work, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    for (int s = 0; s < steps; ++s) {
#pragma unroll
      for (int k = 0; k < kOpsPerStep; ++k) v = Op(v, c.a[k], b, work);
    }
    x[i] = v;
  }
}

int main(int argc, char** argv) {
  bool fused = example::Variant(argc, argv, "fixed");
  bool graph = example::Variant(argc, argv, "graph");
  int steps = static_cast<int>(example::IntFlag(argc, argv, "--steps", 400));
  int n = static_cast<int>(example::IntFlag(argc, argv, "--elements", 4096));
  int work = static_cast<int>(example::IntFlag(argc, argv, "--work", 256));
  int per_launch = static_cast<int>(
      std::max(1L, example::IntFlag(argc, argv, "--steps-per-launch", 20)));
  Coefficients coef;
  // Contractions (|a| < 1): the state converges, it never overflows.
  for (int k = 0; k < kOpsPerStep; ++k) coef.a[k] = 0.999f - 0.0001f * static_cast<float>(k);
  const float b = 0.5f;
  example::Counts c;
  // Load the kernels now (lazy module loading would otherwise stall the
  // first launch inside the measured loop).
  cudaFuncAttributes attr;
  EX_CHECK(cudaFuncGetAttributes(&attr, Axpb));
  EX_CHECK(cudaFuncGetAttributes(&attr, FusedSteps));
  cudaStream_t stream;
  EX_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* d;
  EX_CHECK(cudaMalloc(&d, n * sizeof(float)));
  EX_CHECK(cudaMemset(d, 0, n * sizeof(float)));
  ++c.memset;
  dim3 grid((n + 255) / 256), block(256);
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g;
    EX_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < kOpsPerStep; ++k) Axpb<<<grid, block, 0, stream>>>(d, n, coef.a[k], b, work);
    EX_CHECK(cudaStreamEndCapture(stream, &g));
    EX_CHECK(cudaGraphInstantiate(&exec, g, 0));
    EX_CHECK(cudaGraphDestroy(g));
  }
  double t0 = example::NowMs();
  if (fused) {
    for (int s = 0; s < steps; s += per_launch) {
      FusedSteps<<<grid, block, 0, stream>>>(d, n, coef, b, work, std::min(per_launch, steps - s));
      ++c.kernel;
    }
  } else {
    for (int s = 0; s < steps; ++s) {
      if (graph) {
        EX_CHECK(cudaGraphLaunch(exec, stream));
        c.kernel += kOpsPerStep;
      } else {
        for (int k = 0; k < kOpsPerStep; ++k) {
          Axpb<<<grid, block, 0, stream>>>(d, n, coef.a[k], b, work);
          ++c.kernel;
        }
        EX_CHECK(cudaStreamSynchronize(stream));
      }
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
  std::printf("fragmented_kernels %s: %d steps x %d ops (%d multiply-adds each), %d kernels, "
              "x[0]=%.9g, %.3f ms\n",
              variant, steps, kOpsPerStep, work, static_cast<int>(c.kernel), first, wall);
  example::PrintExpect("fragmented_kernels", variant, c, wall);
  return 0;
}
