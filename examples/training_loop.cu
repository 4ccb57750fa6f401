// examples/training_loop.cu — a training-style loop annotated with NVTX and
// with sightline's C API (linked in: -lsightline_inject).
//
// Per step: NVTX ranges "step" > "forward" / "backward" / "optimizer" (default
// domain), a payload-carrying range in domain "trainer", a marker every 10
// steps, sightline_step(i) and a sightline range "sl_step"; a second thread
// emits "data_loader" ranges. Steps are grouped in NVTX ranges "epoch".
// slow:  each step copies its batch from pageable memory synchronously and
//        reads the loss back with a device-wide sync.
// fixed (--fixed): pinned batch, async copy on the compute stream, loss read
//        back every 10 steps.
// --profiler-range: cudaProfilerStart/Stop around steps [2,5) and [8,10) of
//        each run, for `--capture-range cudaProfilerApi` (two windows).
// Usage: training_loop [--fixed] [--steps=N] [--epochs=N] [--profiler-range]
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <thread>
#include <vector>

#include "example_util.h"
#include "sightline/sightline.h"

__global__ void Forward(const float* x, float* h, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) h[i] = tanhf(x[i] * 0.5f + 0.1f);
}
__global__ void Backward(const float* h, float* g, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g[i] = (1.0f - h[i] * h[i]) * 0.01f;
}
__global__ void Optimizer(float* w, const float* g, float* loss, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= g[i];
  if (i == 0) *loss = w[0];
}

int main(int argc, char** argv) {
  bool fixed = example::Variant(argc, argv, "fixed");
  bool profiler_range = example::HasFlag(argc, argv, "--profiler-range");
  int steps = static_cast<int>(example::IntFlag(argc, argv, "--steps", 30));
  int epochs = static_cast<int>(example::IntFlag(argc, argv, "--epochs", 2));
  int n = 1 << 20;
  size_t bytes = n * sizeof(float);
  example::Counts c, captured;
  EX_CHECK(cudaFree(nullptr));  // initialise CUDA (and the injected collector)
  float *x, *h, *g, *w, *loss;
  EX_CHECK(cudaMalloc(&x, bytes));
  EX_CHECK(cudaMalloc(&h, bytes));
  EX_CHECK(cudaMalloc(&g, bytes));
  EX_CHECK(cudaMalloc(&w, bytes));
  EX_CHECK(cudaMalloc(&loss, sizeof(float)));
  EX_CHECK(cudaMemset(w, 0, bytes));
  ++c.memset;
  cudaStream_t stream;
  EX_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* batch = nullptr;
  std::vector<float> pageable(n, 0.25f);
  if (fixed) {
    EX_CHECK(cudaMallocHost(&batch, bytes));
    for (int i = 0; i < n; ++i) batch[i] = 0.25f;
  }
  nvtxDomainHandle_t domain = nvtxDomainCreateA("trainer");
  std::atomic<bool> stop_loader{false};
  std::atomic<long> loader_ranges{0};
  std::thread loader([&] {
    // Ranges pushed from another thread.
    while (!stop_loader.load()) {
      nvtxRangePushA("data_loader");
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      nvtxRangePop();
      ++loader_ranges;
    }
  });
  bool in_window = false;
  float host_loss = 0;
  dim3 grid((n + 255) / 256), block(256);
  double t0 = example::NowMs();
  long global_step = 0;
  for (int e = 0; e < epochs; ++e) {
    nvtxRangePushA("epoch");
    ++c.nvtx_range;
    for (int s = 0; s < steps; ++s, ++global_step) {
      if (profiler_range && (s == 2 || s == 8)) {
        EX_CHECK(cudaProfilerStart());
        in_window = true;
      }
      if (profiler_range && (s == 5 || s == 10) && in_window) {
        EX_CHECK(cudaProfilerStop());
        in_window = false;
      }
      example::Counts before = c;
      sightline_step(static_cast<uint64_t>(global_step));
      sightline_range_push("sl_step");
      nvtxRangePushA("step");
      nvtxEventAttributes_t attr = {};
      attr.version = NVTX_VERSION;
      attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
      attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
      attr.message.ascii = "batch";
      attr.colorType = NVTX_COLOR_ARGB;
      attr.color = 0xff00aa00;
      attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
      attr.payload.ullValue = static_cast<uint64_t>(global_step);
      nvtxDomainRangePushEx(domain, &attr);
      if (fixed) {
        EX_CHECK(cudaMemcpyAsync(x, batch, bytes, cudaMemcpyHostToDevice, stream));
      } else {
        EX_CHECK(cudaMemcpy(x, pageable.data(), bytes, cudaMemcpyHostToDevice));
      }
      ++c.memcpy;
      nvtxDomainRangePop(domain);
      nvtxRangePushA("forward");
      Forward<<<grid, block, 0, stream>>>(x, h, n);
      nvtxRangePop();
      nvtxRangePushA("backward");
      Backward<<<grid, block, 0, stream>>>(h, g, n);
      nvtxRangePop();
      nvtxRangePushA("optimizer");
      Optimizer<<<grid, block, 0, stream>>>(w, g, loss, n);
      nvtxRangePop();
      c.kernel += 3;
      if (!fixed || s % 10 == 9) {
        EX_CHECK(cudaMemcpyAsync(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost, stream));
        ++c.memcpy;
        if (!fixed) {
          EX_CHECK(cudaDeviceSynchronize());
        } else {
          EX_CHECK(cudaStreamSynchronize(stream));
        }
      }
      if (s % 10 == 0) {
        nvtxMarkA("checkpoint");
        ++c.nvtx_marker;
      }
      nvtxRangePop();  // step
      sightline_range_pop();
      c.nvtx_range += 6;  // step, trainer batch, forward, backward, optimizer, sl_step
      if (in_window) {
        captured.kernel += c.kernel - before.kernel;
        captured.memcpy += c.memcpy - before.memcpy;
      }
    }
    nvtxRangePop();  // epoch
  }
  if (in_window) EX_CHECK(cudaProfilerStop());
  EX_CHECK(cudaDeviceSynchronize());
  double wall = example::NowMs() - t0;
  stop_loader = true;
  loader.join();
  c.nvtx_range += loader_ranges.load();
  std::printf("training_loop %s: %d epochs x %d steps, loss %g, loader ranges %ld\n",
              fixed ? "fixed" : "slow", epochs, steps, host_loss, loader_ranges.load());
  if (fixed) EX_CHECK(cudaFreeHost(batch));
  EX_CHECK(cudaStreamDestroy(stream));
  for (float* p : {x, h, g, w, loss}) EX_CHECK(cudaFree(p));
  example::PrintExpect("training_loop", fixed ? "fixed" : "slow", c, wall);
  if (profiler_range) {
    std::printf("SIGHTLINE_EXPECT_CAPTURED windows=%d kernel=%ld memcpy=%ld\n", 2 * epochs,
                captured.kernel, captured.memcpy);
  }
  return 0;
}
