// main() for tests labelled `gpu`. Looks for a CUDA device through the driver
// API loaded with dlopen (so the test binary builds and starts on machines
// without a driver) and exits 77 — reported by ctest as "Skipped" — if none.
#include <dlfcn.h>

#include <cstdio>

#include "gtest/gtest.h"

namespace {
int CudaDeviceCount() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 0;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&n) != 0) n = 0;
  // Keep the library loaded: the test itself will use CUDA.
  return n;
}
}  // namespace

int main(int argc, char** argv) {
  if (CudaDeviceCount() <= 0) {
    std::printf("SKIPPED: no CUDA device on this machine\n");
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
