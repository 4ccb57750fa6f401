// injection/injection.cc — the ways into libsightline_inject.so.
//
//  * CUDA_INJECTION64_PATH=libsightline_inject.so: the driver calls
//    InitializeInjection() once per process inside cuInit.
//  * NVTX_INJECTION64_PATH=libsightline_inject.so: NVTX calls
//    InitializeInjectionNvtx2() at its first use; we forward to CUPTI's, so
//    NVTX ranges become CUPTI MARKER records and NVTX callbacks (capture
//    range nvtx:NAME). In monitor mode our handlers of the message-bearing
//    calls sit in front of CUPTI's (lib/collect/nvtx_observer.h).
//  * LD_PRELOAD=libsightline_inject.so: the constructor below does no CUDA or
//    CUPTI work (that crashed when libcupti was not loadable yet, pytorch
//    #120276); it only points CUDA_INJECTION64_PATH at this library, so the
//    driver initialises us at the first CUDA call like in the first case.
//  * link-in: sightline_start() (injection/sightline_api.cc).
// Nothing may throw or abort out of these functions.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lib/collect/collector.h"
#include "lib/collect/config.h"
#include "lib/collect/nvtx_observer.h"

namespace {

// Absolute path of this shared object.
std::string SelfPath() {
  Dl_info info = {};
  if (dladdr(reinterpret_cast<void*>(&SelfPath), &info) != 0 && info.dli_fname != nullptr) {
    char resolved[4096];
    if (realpath(info.dli_fname, resolved) != nullptr) return resolved;
    return info.dli_fname;
  }
  return "";
}

bool Quiet() { return sightline::collect::ConfigFromEnvironment(nullptr, nullptr).quiet; }

void PointNvtxAtUs() {
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  if (nvtx != nullptr && *nvtx != '\0') return;
  std::string self = SelfPath();
  if (self.empty()) return;
  setenv("NVTX_INJECTION64_PATH", self.c_str(), 0);
  if (!Quiet()) {
    std::fprintf(stderr,
                 "sightline: NVTX_INJECTION64_PATH was not set; set it now. NVTX ranges a "
                 "library emitted before this point are not recorded (use `sightline "
                 "profile`, which sets it at start-up)\n");
  }
}

using NvtxGetExportTable = const void* (*)(uint32_t);
using NvtxInit2Fn = int (*)(NvtxGetExportTable);

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjection(void) {
  // Idempotent; returns 1 (success) even when tracing degraded, so the
  // driver never fails cuInit because of us.
  static bool done = false;
  if (done) return 1;
  done = true;
  PointNvtxAtUs();
  sightline::collect::Collector::Get().Initialize(sightline::collect::InitSource::kInjection);
  return 1;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTable get) {
  void* cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (cupti == nullptr) cupti = dlopen("libcupti.so", RTLD_NOW | RTLD_NOLOAD);
  auto init = cupti != nullptr
                  ? reinterpret_cast<NvtxInit2Fn>(dlsym(cupti, "InitializeInjectionNvtx2"))
                  : nullptr;
  if (sightline::collect::MonitorDefersCupti()) {
    // Monitor mode: our handlers see the step ranges and markers without a
    // CUPTI subscriber, CUPTI's behind them (lib/collect/nvtx_observer.h).
    return sightline::collect::InstallNvtxObserver(
        get, init, [](const char* message) {
          sightline::collect::Collector::Get().OnNvtxMessage(message);
        });
  }
  if (init == nullptr) return 0;
  return init(get);
}

}  // extern "C"

namespace {

__attribute__((constructor)) void SightlinePreloadConstructor() {
  // Only when preloaded (not when injected by the driver or linked in).
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload == nullptr || std::strstr(preload, "sightline") == nullptr) return;
  const char* inject = std::getenv("CUDA_INJECTION64_PATH");
  if (inject != nullptr && *inject != '\0') return;
  std::string self = SelfPath();
  if (self.empty()) return;
  setenv("CUDA_INJECTION64_PATH", self.c_str(), 0);
  if (std::getenv("NVTX_INJECTION64_PATH") == nullptr) {
    setenv("NVTX_INJECTION64_PATH", self.c_str(), 0);
  }
}

}  // namespace
