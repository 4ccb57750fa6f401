// tests/gpu/fault_app.cu — the GPU rows of the collector's fault matrix
// (docs/reliability.md), one mode per row. Every mode prints
// "SIGHTLINE_EXPECT kernel=N" (what the trace must hold, for
// sightline_trace_check --keys kernel) and "FAULT_APP result=R" (the
// program's own result, compared with an unprofiled run: profiling must not
// change it).
//
//   fault_app threads [N=16] [LAUNCHES=20000]   N threads launch concurrently,
//                                                each on its own stream
//   fault_app graph-capture [K=50] [G=200]       K launches captured into a
//                                                graph on a stream, launched G
//                                                times; plus K eager launches
//                                                while another stream captures
//   fault_app device-reset [K=1000]              K launches, cudaDeviceReset,
//                                                K more on the fresh context
//   fault_app two-contexts [K=1000]              two driver contexts on device
//                                                0 (and device 1 when present)
//   fault_app graph-steps [S=300] [E=8] [G=3] [C=0]
//                                                S steps of E eager launches
//                                                (one grid size each), a CUDA
//                                                graph of G kernels and, C=1,
//                                                a cooperative launch: under
//                                                sequence metrics the graph's
//                                                and the cooperative kernels
//                                                run inside metric passes
//   fault_app long SECONDS [RATE=100000]         empty kernels at RATE/s for
//                                                SECONDS; prints its wall span
//                                                and peak RSS at 10 % and 100 %
#include <cuda.h>
#include <cuda_runtime.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

__global__ void AddOne(int* counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1);
}

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,        \
                   cudaGetErrorString(e_));                                    \
      std::exit(3);                                                            \
    }                                                                          \
  } while (0)
#define CHECK_CU(call)                                                         \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d %s: error %d\n", __FILE__, __LINE__, #call,  \
                   static_cast<int>(r_));                                      \
      std::exit(3);                                                            \
    }                                                                          \
  } while (0)

long PeakRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

double NowS() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int ReadCounter(int* d) {
  int h = 0;
  CHECK(cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost));
  return h;
}

int Threads(int n, int launches) {
  int* counter;
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemset(counter, 0, sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([=] {
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      for (int i = 0; i < launches; ++i) AddOne<<<1, 32, 0, s>>>(counter);
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& t : threads) t.join();
  int result = ReadCounter(counter);
  std::printf("SIGHTLINE_EXPECT kernel=%d\n", n * launches);
  std::printf("FAULT_APP result=%d\n", result);
  return 0;
}

int GraphCapture(int k, int g) {
  int* counter;
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemset(counter, 0, sizeof(int)));
  cudaStream_t capture, eager;
  CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&eager, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < k; ++i) {
    AddOne<<<1, 32, 0, capture>>>(counter);
    AddOne<<<1, 32, 0, eager>>>(counter);  // another stream, not captured
  }
  CHECK(cudaStreamEndCapture(capture, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < g; ++i) CHECK(cudaGraphLaunch(exec, capture));
  CHECK(cudaDeviceSynchronize());
  int result = ReadCounter(counter);
  // Captured launches run only as graph nodes: k eager + k * g from graphs.
  std::printf("SIGHTLINE_EXPECT kernel=%d\n", k + k * g);
  std::printf("FAULT_APP result=%d\n", result);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}

// A training-step shape under sequence metrics: the eager launches are the
// step the collector learns; the graph launch (and the cooperative launch)
// are launches its metrics hook does not see one by one, so they fall
// inside the metric passes (issue 14's review mends: every kernel is in the
// trace, none lost).
int GraphSteps(int steps, int eager, int graph_kernels, bool cooperative) {
  int* counter;
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemset(counter, 0, sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < graph_kernels; ++i) AddOne<<<1 + i, 64, 0, s>>>(counter);
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  int coop_supported = 0;
  CHECK(cudaDeviceGetAttribute(&coop_supported, cudaDevAttrCooperativeLaunch, 0));
  cooperative = cooperative && coop_supported != 0;
  long launched = 0;
  for (int step = 0; step < steps; ++step) {
    for (int i = 0; i < eager; ++i) AddOne<<<1 + i, 32, 0, s>>>(counter);
    CHECK(cudaGraphLaunch(exec, s));
    launched += eager + graph_kernels;
    if (cooperative) {
      void* args[] = {&counter};
      CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(AddOne), dim3(2), dim3(32),
                                        args, 0, s));
      ++launched;
    }
    CHECK(cudaStreamSynchronize(s));  // the step's end, as a training loop's loss read
  }
  int result = ReadCounter(counter);
  std::printf("SIGHTLINE_EXPECT kernel=%ld\n", launched);
  std::printf("FAULT_APP result=%d\n", result);
  std::printf("FAULT_APP cooperative=%d\n", cooperative ? 1 : 0);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  return 0;
}

int DeviceReset(int k) {
  int total = 0;
  for (int round = 0; round < 2; ++round) {
    int* counter;
    CHECK(cudaMalloc(&counter, sizeof(int)));
    CHECK(cudaMemset(counter, 0, sizeof(int)));
    for (int i = 0; i < k; ++i) AddOne<<<1, 32>>>(counter);
    total += ReadCounter(counter);
    CHECK(cudaFree(counter));
    if (round == 0) CHECK(cudaDeviceReset());
  }
  std::printf("SIGHTLINE_EXPECT kernel=%d\n", 2 * k);
  std::printf("FAULT_APP result=%d\n", total);
  return 0;
}

int TwoContexts(int k) {
  CHECK_CU(cuInit(0));
  int devices = 0;
  CHECK_CU(cuDeviceGetCount(&devices));
  int total = 0, expected = 0;
  for (int d = 0; d < std::min(devices, 2); ++d) {
    CUdevice dev;
    CHECK_CU(cuDeviceGet(&dev, d));
    for (int c = 0; c < (d == 0 ? 2 : 1); ++c) {
      CUcontext ctx;
#if CUDA_VERSION >= 13000
      CHECK_CU(cuCtxCreate(&ctx, nullptr, 0, dev));
#else
      CHECK_CU(cuCtxCreate(&ctx, 0, dev));
#endif
      int* counter;
      CHECK(cudaMalloc(&counter, sizeof(int)));
      CHECK(cudaMemset(counter, 0, sizeof(int)));
      for (int i = 0; i < k; ++i) AddOne<<<1, 32>>>(counter);
      total += ReadCounter(counter);
      expected += k;
      CHECK(cudaFree(counter));
      CHECK_CU(cuCtxDestroy(ctx));
    }
  }
  std::printf("devices used: %d\n", std::min(devices, 2));
  std::printf("SIGHTLINE_EXPECT kernel=%d\n", expected);
  std::printf("FAULT_APP result=%d\n", total);
  return 0;
}

int Long(double seconds, double rate) {
  int* counter;
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemset(counter, 0, sizeof(int)));
  CHECK(cudaDeviceSynchronize());
  const double start = NowS();
  long launched = 0;
  long rss_10 = -1;
  double first = -1, last = 0;
  while (true) {
    double now = NowS();
    if (now - start >= seconds) break;
    long want = static_cast<long>((now - start) * rate);
    if (launched >= want) continue;
    if (first < 0) first = now;
    for (; launched < want; ++launched) AddOne<<<1, 32>>>(counter);
    last = NowS();
    if (rss_10 < 0 && now - start >= seconds / 10) rss_10 = PeakRssKb();
  }
  CHECK(cudaDeviceSynchronize());
  int result = ReadCounter(counter);
  std::printf("SIGHTLINE_EXPECT kernel=%ld\n", launched);
  std::printf("FAULT_APP result=%d\n", result);
  std::printf("FAULT_APP launches=%ld span_s=%.6f rss_kb_10pct=%ld rss_kb_end=%ld\n", launched,
              last - first, rss_10, PeakRssKb());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fault_app threads|graph-capture|graph-steps|device-reset|two-contexts|long ...\n");
    return 2;
  }
  std::string mode = argv[1];
  auto arg = [&](int i, double fallback) { return argc > i ? std::atof(argv[i]) : fallback; };
  if (mode == "threads") return Threads(static_cast<int>(arg(2, 16)), static_cast<int>(arg(3, 20000)));
  if (mode == "graph-capture") return GraphCapture(static_cast<int>(arg(2, 50)), static_cast<int>(arg(3, 200)));
  if (mode == "graph-steps") {
    return GraphSteps(static_cast<int>(arg(2, 300)), static_cast<int>(arg(3, 8)),
                      static_cast<int>(arg(4, 3)), arg(5, 0) != 0);
  }
  if (mode == "device-reset") return DeviceReset(static_cast<int>(arg(2, 1000)));
  if (mode == "two-contexts") return TwoContexts(static_cast<int>(arg(2, 1000)));
  if (mode == "long") return Long(arg(2, 60), arg(3, 100000));
  std::fprintf(stderr, "fault_app: unknown mode %s\n", mode.c_str());
  return 2;
}
