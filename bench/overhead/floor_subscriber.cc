// bench/overhead/floor_subscriber.cc — see floor_subscriber.h.
#include "floor_subscriber.h"

#include "lib/collect/config.h"

#include <cupti.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
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

// SIGHTLINE_FLOOR_EXTRA (with any kinds mode): a comma list of what sightline
// does beyond the kinds, added one at a time to find which costs (run W of
// bench/overhead/README.md: sightline with the floor's records ran 1.2-2.6
// ms a step above it on the eager LM with no callback on the application's
// threads):
//   attributes  the device buffer size (8 MiB) and zeroed-buffer attributes
//   subscriber  a subscriber with the callbacks sightline enables without
//               stacks (-t cuda,cuda-memory,nvtx,nccl, collector.cc): the
//               resource domain, cudaDeviceReset, and NCCL's NVTX
//               nvtxDomainCreateA / nvtxDomainRangePushEx
//   flush       a thread calling cuptiActivityFlushAll(0) every 500 ms
//               (sightline's writer period, SIGHTLINE_FLUSH_MS)
//   writer      completed buffers go to a thread that reads every record and
//               clears the whole buffer before it is handed out again (what
//               sightline's writer does with them), not read in the callback
bool Extra(const char* what) {
  // Never destroyed: CUPTI may complete a buffer during the process's exit.
  static const std::string* extra = [] {
    const char* e = std::getenv("SIGHTLINE_FLOOR_EXTRA");
    return new std::string(std::string(",") + (e != nullptr ? e : "") + ",");
  }();
  return extra->find(std::string(",") + what + ",") != std::string::npos;
}

// The extra threads (writer, flush) are joined by StopExtraThreads before the
// record count is read. Their state is never destroyed: a program that exits
// without stopping them must not run a condition variable's destructor with
// a thread still waiting on it (that hangs in glibc 2.36) nor a joinable
// std::thread's (std::terminate).
struct ExtraThreads {
  std::mutex writer_mu;
  std::condition_variable writer_cv;
  std::deque<std::pair<uint8_t*, size_t>> queue;  // writer_mu
  bool writer_running = false;                    // writer_mu
  bool writer_stop = false;                       // writer_mu: drain the queue and return
  std::thread writer;
  std::mutex flush_mu;
  std::condition_variable flush_cv;
  bool flush_stop = false;  // flush_mu
  std::thread flush;
};
ExtraThreads& X() {
  static ExtraThreads* x = new ExtraThreads;
  return *x;
}

void CountAndFree(uint8_t* buffer, size_t valid, bool clear) {
  CUpti_Activity* record = nullptr;
  size_t n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  if (clear) std::memset(buffer, 0, kBufferBytes);
  std::lock_guard<std::mutex> lock(g_mu);
  g_records += n;
  g_free.push_back(buffer);
}

void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  ExtraThreads& x = X();
  {
    std::lock_guard<std::mutex> lock(x.writer_mu);
    if (x.writer_running && !x.writer_stop) {
      x.queue.emplace_back(buffer, valid);
      x.writer_cv.notify_one();
      return;
    }
  }
  CountAndFree(buffer, valid, false);  // no writer thread (any more): here
}

void StartExtraThreads() {
  ExtraThreads& x = X();
  if (Extra("writer")) {
    std::lock_guard<std::mutex> lock(x.writer_mu);
    x.writer_running = true;
    x.writer = std::thread([&x] {
      for (;;) {
        std::pair<uint8_t*, size_t> b;
        {
          std::unique_lock<std::mutex> lock(x.writer_mu);
          x.writer_cv.wait(lock, [&x] { return !x.queue.empty() || x.writer_stop; });
          if (x.queue.empty()) return;  // stopping, queue drained
          b = x.queue.front();
          x.queue.pop_front();
        }
        CountAndFree(b.first, b.second, true);
      }
    });
  }
  if (Extra("flush")) {
    x.flush = std::thread([&x] {
      std::unique_lock<std::mutex> lock(x.flush_mu);
      while (!x.flush_cv.wait_for(lock, std::chrono::milliseconds(500),
                                  [&x] { return x.flush_stop; })) {
        lock.unlock();
        cuptiActivityFlushAll(0);
        lock.lock();
      }
    });
  }
}

// The flush thread first (no CUPTI call from it once this returns), then the
// writer once it drained what CUPTI completed so far. Called from the thread
// that started them (the program's exit or stop path), at most once.
void StopExtraThreads() {
  ExtraThreads& x = X();
  if (x.flush.joinable()) {
    {
      std::lock_guard<std::mutex> lock(x.flush_mu);
      x.flush_stop = true;
    }
    x.flush_cv.notify_all();
    x.flush.join();
  }
  if (x.writer.joinable()) {
    {
      std::lock_guard<std::mutex> lock(x.writer_mu);
      x.writer_stop = true;
    }
    x.writer_cv.notify_all();
    x.writer.join();
  }
}

}  // namespace

namespace {
// SIGHTLINE_FLOOR_KINDS: unset = the kinds of sightline's first releases
// with the whole RUNTIME kind (the launch-loop comparisons so far); "kernel"
// = kernel records only, what any tracer that times every kernel pays at
// least; "same" = exactly the records sightline's default records for a
// Python command: the same kinds (memory records included) and runtime API
// records enabled API by API, all but sightline's skip list; "callbacks" = no
// activity kind, a subscriber with one runtime callback (part of the monitor
// mode's CUPTI state between captures, which also has NVTX and resource
// callbacks: a lower bound of it); "callbacks-nvtx" = the rest of the
// monitor's CUPTI state between captures, without that runtime callback: its
// NVTX callbacks (step ranges and markers; NVTX reaches CUPTI only with
// NVTX_INJECTION64_PATH pointing at libcupti), the resource domain and the
// activity attributes it sets; "sub-none", "sub-resource", "sub-attributes"
// and "sub-nvtx" = a subscriber (activity callbacks registered, as in every
// mode) with none or only one of those three (which of them costs a launch).
std::string FloorMode() {
  const char* k = std::getenv("SIGHTLINE_FLOOR_KINDS");
  return k != nullptr ? k : "";
}

// A mode this file does not know (a typo) would silently measure another
// one ("sub-nvtz" = a subscriber with nothing): said once on stderr.
bool KnownFloorMode(const std::string& mode) {
  for (const char* m : {"", "kernel", "same", "callbacks", "callbacks-nvtx", "sub-none",
                        "sub-resource", "sub-attributes", "sub-nvtx"}) {
    if (mode == m) return true;
  }
  return false;
}

const std::vector<CUpti_ActivityKind>& Kinds() {
  static const std::vector<CUpti_ActivityKind> kinds = []() -> std::vector<CUpti_ActivityKind> {
    std::string mode = FloorMode();
    if (mode == "kernel") return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
    if (mode == "callbacks" || mode == "callbacks-nvtx" || mode.rfind("sub-", 0) == 0) return {};
    if (mode == "same") {
      return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
              CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
              CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_OVERHEAD,
              CUPTI_ACTIVITY_KIND_MEMORY2,           CUPTI_ACTIVITY_KIND_MEMORY_POOL,
              CUPTI_ACTIVITY_KIND_MARKER,            CUPTI_ACTIVITY_KIND_MARKER_DATA};
    }
    return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
            CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
            CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_RUNTIME,
            CUPTI_ACTIVITY_KIND_OVERHEAD,          CUPTI_ACTIVITY_KIND_MARKER,
            CUPTI_ACTIVITY_KIND_MARKER_DATA};
  }();
  return kinds;
}

void CUPTIAPI NoOpCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// "same": runtime records of every API but sightline's skip list.
void EnableRuntimeApis(bool enable) {
  if (FloorMode() != "same") return;
  const std::vector<std::string>& skip = sightline::collect::DefaultApiSkipList();
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS ||
        name == nullptr) {
      continue;
    }
    if (!sightline::collect::InApiSkipList(skip, name)) {
      cuptiActivityEnableRuntimeApi(cbid, enable ? 1 : 0);
    }
  }
}
}  // namespace

void StopFloorSubscriber(bool finalize) {
  for (CUpti_ActivityKind k : Kinds()) cuptiActivityDisable(k);
  EnableRuntimeApis(false);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  StopExtraThreads();
  if (finalize && cuptiFinalize() != CUPTI_SUCCESS) std::fprintf(stderr, "cuptiFinalize failed\n");
}

void StartFloorSubscriber() {
  if (!KnownFloorMode(FloorMode())) {
    std::fprintf(stderr,
                 "floor subscriber: unknown SIGHTLINE_FLOOR_KINDS='%s' (kernel, same, callbacks, "
                 "callbacks-nvtx, sub-none, sub-resource, sub-attributes, sub-nvtx): not "
                 "subscribed\n",
                 FloorMode().c_str());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (int i = 0; i < 4; ++i) {
      g_free.push_back(static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes)));
    }
  }
  for (const char* e : {"attributes", "subscriber", "flush", "writer"}) {
    if (Extra(e)) std::fprintf(stderr, "floor subscriber: with %s\n", e);
  }
  if (FloorMode() == "callbacks-nvtx" || FloorMode() == "sub-attributes" || Extra("attributes")) {
    size_t device_buffer = 8u << 20, size = sizeof(device_buffer);
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &device_buffer);
    uint8_t zeroed = 1;
    size = sizeof(zeroed);
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
  }
  cuptiActivityRegisterCallbacks(&Requested, &Completed);
  for (CUpti_ActivityKind k : Kinds()) {
    if (cuptiActivityEnable(k) != CUPTI_SUCCESS) std::fprintf(stderr, "enable %d failed\n", k);
  }
  EnableRuntimeApis(true);
  StartExtraThreads();
  const std::string mode = FloorMode();
  const bool own_subscriber =
      mode == "callbacks" || mode == "callbacks-nvtx" || mode.rfind("sub-", 0) == 0;
  if (Extra("subscriber") && own_subscriber) {
    // CUPTI allows one subscriber: the mode's own would fail unseen.
    std::fprintf(stderr, "floor subscriber: SIGHTLINE_FLOOR_EXTRA=subscriber ignored with "
                         "SIGHTLINE_FLOOR_KINDS=%s (it has its own subscriber)\n", mode.c_str());
  } else if (Extra("subscriber")) {
    static CUpti_SubscriberHandle subscriber;
    if (cuptiSubscribe(&subscriber, &NoOpCallback, nullptr) == CUPTI_SUCCESS) {
      cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                          CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
      for (CUpti_CallbackId cbid :
           {CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRangePushEx}) {
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_NVTX, cbid);
      }
    } else {
      std::fprintf(stderr, "floor subscriber: cuptiSubscribe failed (extra subscriber)\n");
    }
  }
  if (own_subscriber) {
    // What the monitor mode holds between captures (see above).
    static CUpti_SubscriberHandle subscriber;
    if (cuptiSubscribe(&subscriber, &NoOpCallback, nullptr) == CUPTI_SUCCESS) {
      if (mode == "callbacks") {
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                            CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
      }
      if (mode == "callbacks-nvtx" || mode == "sub-resource") {
        cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
      }
      if (mode == "callbacks-nvtx" || mode == "sub-nvtx") {
        for (CUpti_CallbackId cbid :
             {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
              CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangeStartA,
              CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
              CUPTI_CBID_NVTX_nvtxMarkA, CUPTI_CBID_NVTX_nvtxMarkEx,
              CUPTI_CBID_NVTX_nvtxDomainMarkEx}) {
          cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_NVTX, cbid);
        }
      }
    }
  }
}

void ReportFloorSubscriber(FILE* out) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  StopExtraThreads();  // the writer counts what the flush completed first
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(out, "floor subscriber: %zu records, %zu dropped\n", g_records, dropped);
}

}  // namespace sightline_bench
