// bench/overhead/launch_overhead.cu — cost per kernel launch, three ways, for
// the issue's overhead targets (run side by side by run_overhead.sh):
//
//   --mode plain     no profiler (run it without sightline)
//   --mode floor     a minimal CUPTI subscriber built into this program that
//                    enables the same activity kinds sightline enables by
//                    default and discards the buffers (the floor any
//                    CUPTI-based tracer pays)
//   --mode plain under `sightline profile` → sightline's cost
//
// Launches `--launches` (default 200000) empty kernels per repetition, syncs,
// and prints the median over `--reps` repetitions, wall and the launching
// thread's CPU time:
//   OVERHEAD mode=floor launches=200000 reps=5 median_us_per_launch=5.91 ...
//            median_cpu_us_per_launch=5.80
//
// --capture-first-rep: repetition 0 runs between cudaProfilerStart/Stop, the
// others after it; run under `sightline profile --capture-range
// cudaProfilerApi --capture-range-end stop` this measures what the app pays
// once the capture is over (AFTER_CAPTURE after_median_us_per_launch=...).
// With --mode floor, --after=disable|finalize switches the floor subscriber's
// kinds off (and cuptiFinalize) after repetition 0: CUPTI's own after-cost;
// --floor-late enables them only after the warm-up launch.
// --floor-arm=pre|ctx (issue 12 item 5's hypothesis: can a capture's late
// enable be made to cost afterwards what an early one does?) enables the
// kinds before the context exists too, and switches them off again: `pre`
// at once, before the context is made; `ctx` after the context and the
// warm-up launch's module (lazy loading: its first launch) exist. Then they
// are enabled late, after the warm-up, as with --floor-late.
#include <cuda_profiler_api.h>
#include <cupti.h>

#include "floor_subscriber.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

__global__ void Empty() {}

// CPU time of the launching thread: unlike wall time it leaves out time the
// VM's host took the core away (steal). On the H200 VM it equalled wall time
// within 0.2 % (bench/overhead/README.md run F): the run-to-run noise is
// the core's speed, not steal.
double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  std::string mode = "plain";
  long launches = 200000;
  int reps = 5;
  bool capture_first = false;
  std::string after;  // floor + --capture-first-rep: "disable" | "finalize" after rep 0
  // --floor-late: the floor's kinds are enabled after the context exists and
  // the module is loaded (as sightline does at a capture start), not before.
  bool late = false;
  std::string arm;  // --floor-arm=pre|ctx
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mode" && i + 1 < argc) mode = argv[++i];
    else if (a.rfind("--launches=", 0) == 0) launches = std::atol(a.c_str() + 11);
    else if (a.rfind("--reps=", 0) == 0) reps = std::atoi(a.c_str() + 7);
    else if (a == "--capture-first-rep") capture_first = true;
    else if (a.rfind("--after=", 0) == 0) after = a.substr(8);
    else if (a == "--floor-late") late = true;
    else if (a.rfind("--floor-arm=", 0) == 0) arm = a.substr(12);
  }
  if (!arm.empty() && arm != "pre" && arm != "ctx") {
    std::fprintf(stderr, "--floor-arm=%s: not pre or ctx\n", arm.c_str());
    return 2;
  }
  const bool floor = mode == "floor";
  if (floor && (!late || !arm.empty())) sightline_bench::StartFloorSubscriber();
  if (floor && arm == "pre") sightline_bench::SetFloorKinds(false);
  cudaFree(nullptr);
  Empty<<<1, 1>>>();  // warm-up: module load, first-launch costs
  cudaDeviceSynchronize();
  if (floor && arm == "ctx") sightline_bench::SetFloorKinds(false);
  if (floor && !arm.empty()) sightline_bench::SetFloorKinds(true);  // the late enable
  if (floor && late && arm.empty()) sightline_bench::StartFloorSubscriber();
  std::vector<double> per_launch, cpu_per_launch;
  for (int r = 0; r < reps; ++r) {
    if (capture_first && r == 0) cudaProfilerStart();
    auto t0 = std::chrono::steady_clock::now();
    double c0 = ThreadCpuUs();
    for (long i = 0; i < launches; ++i) Empty<<<1, 1>>>();
    cudaDeviceSynchronize();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    per_launch.push_back(us / launches);
    cpu_per_launch.push_back((ThreadCpuUs() - c0) / launches);
    if (capture_first && r == 0) cudaProfilerStop();
    if (capture_first && r == 0 && mode == "floor" && !after.empty()) {
      sightline_bench::StopFloorSubscriber(after == "finalize");
    }
  }
  if (capture_first && reps > 1) {
    std::vector<double> after(per_launch.begin() + 1, per_launch.end());
    std::sort(after.begin(), after.end());
    std::printf("AFTER_CAPTURE mode=%s captured_us_per_launch=%.4f after_median_us_per_launch=%.4f\n",
                mode.c_str(), per_launch[0], after[after.size() / 2]);
  }
  if (cudaGetLastError() != cudaSuccess) {
    std::fprintf(stderr, "CUDA error\n");
    return 1;
  }
  std::vector<double> sorted = per_launch;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  if (mode == "floor" && after.empty()) {
    sightline_bench::ReportFloorSubscriber(stdout);
  }
  std::vector<double> cpu_sorted = cpu_per_launch;
  std::sort(cpu_sorted.begin(), cpu_sorted.end());
  std::printf("OVERHEAD mode=%s launches=%ld reps=%d median_us_per_launch=%.4f min=%.4f max=%.4f "
              "median_cpu_us_per_launch=%.4f\n",
              mode.c_str(), launches, reps, median, sorted.front(), sorted.back(),
              cpu_sorted[cpu_sorted.size() / 2]);
  std::printf("SIGHTLINE_EXPECT example=launch_overhead kernel=%ld memcpy=0 memset=0\n",
              launches * reps + 1);
  if (capture_first) {
    std::printf("SIGHTLINE_EXPECT_CAPTURED windows=1 kernel=%ld\n", launches);
  }
  return 0;
}
