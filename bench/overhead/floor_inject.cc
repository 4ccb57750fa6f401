// bench/overhead/floor_inject.cc — libfloor_inject.so: the floor subscriber
// (floor_subscriber.h) loaded into any CUDA process through
// CUDA_INJECTION64_PATH, e.g. `python3 torch_overhead.py` in run_overhead.sh.
// Prints its record count at exit.
#include <cstdlib>

#include "floor_subscriber.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  static bool started = false;
  if (started) return 1;
  started = true;
  sightline_bench::StartFloorSubscriber();
  std::atexit([] { sightline_bench::ReportFloorSubscriber(stderr); });
  return 1;
}
