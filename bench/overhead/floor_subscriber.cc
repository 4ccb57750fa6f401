// bench/overhead/floor_subscriber.cc — see floor_subscriber.h.
#include "floor_subscriber.h"

#include <cupti.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace sightline_bench {
namespace {

constexpr size_t kBufferBytes = 8u << 20;
std::mutex g_mu;
std::vector<uint8_t*> g_free;
size_t g_records = 0;

void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_free.empty()) {
    g_free.push_back(static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes)));
  }
  *buffer = g_free.back();
  g_free.pop_back();
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  size_t n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  std::lock_guard<std::mutex> lock(g_mu);
  g_records += n;
  g_free.push_back(buffer);
}

}  // namespace

namespace {
const std::vector<CUpti_ActivityKind>& Kinds() {
  // SIGHTLINE_FLOOR_KINDS=kernel: kernel records only — what any tracer that
  // times every kernel pays at least (the PyTorch comparison's lower bound).
  static const std::vector<CUpti_ActivityKind> kinds = [] {
    const char* k = std::getenv("SIGHTLINE_FLOOR_KINDS");
    if (k != nullptr && std::strcmp(k, "kernel") == 0) {
      return std::vector<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
    }
    return std::vector<CUpti_ActivityKind>{
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_RUNTIME,
        CUPTI_ACTIVITY_KIND_OVERHEAD,          CUPTI_ACTIVITY_KIND_MARKER,
        CUPTI_ACTIVITY_KIND_MARKER_DATA};
  }();
  return kinds;
}
}  // namespace

void StopFloorSubscriber(bool finalize) {
  for (CUpti_ActivityKind k : Kinds()) cuptiActivityDisable(k);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (finalize && cuptiFinalize() != CUPTI_SUCCESS) std::fprintf(stderr, "cuptiFinalize failed\n");
}

void StartFloorSubscriber() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (int i = 0; i < 4; ++i) {
      g_free.push_back(static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes)));
    }
  }
  cuptiActivityRegisterCallbacks(&Requested, &Completed);
  for (CUpti_ActivityKind k : Kinds()) {
    if (cuptiActivityEnable(k) != CUPTI_SUCCESS) std::fprintf(stderr, "enable %d failed\n", k);
  }
}

void ReportFloorSubscriber(FILE* out) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(out, "floor subscriber: %zu records, %zu dropped\n", g_records, dropped);
}

}  // namespace sightline_bench
