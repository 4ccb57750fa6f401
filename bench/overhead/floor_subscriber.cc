// bench/overhead/floor_subscriber.cc — see floor_subscriber.h.
#include "floor_subscriber.h"

#include "lib/collect/api_classes.h"
#include "lib/collect/config.h"
#include "lib/collect/launch_callbacks.h"

#include <cupti.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

// Set with CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER: CUPTI then expects
// every buffer it is handed to be zeroed, so buffers are allocated zeroed and
// cleared after use wherever they are read.
std::atomic<bool> g_zeroed{false};

uint8_t* NewBuffer() {
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (b != nullptr) std::memset(b, 0, kBufferBytes);
  return b;
}

void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_free.empty()) g_free.push_back(NewBuffer());
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
//   subnone     a subscriber with no callback enabled (what its existence
//               costs; with `subscriber` or `stackcb` it is theirs)
//   stackcb     no-op callbacks on exactly the calls sightline's Python
//               stacks and driver-launch records enable (collector.cc:
//               runtime calls that get a Python stack, memory calls included,
//               and runtime launches; the four driver launch calls): CUPTI's
//               dispatch into them without sightline's code
// SIGHTLINE_FLOOR_AB=subscriber|stackcb|flush|writer switches that part off
// and on every SIGHTLINE_FLOOR_AB_MS (default 250) in the running process, so
// that steps with and without it alternate within one process
// (bench/overhead/ab.sh): `subscriber` unsubscribes and subscribes again the
// extra subscriber (with its callbacks), `stackcb` disables and enables the
// stack callbacks only, `flush` (with the flush extra) skips or makes the
// periodic cuptiActivityFlushAll (each flush made is logged as "flush T0 T1",
// so that the stretches it fell in are known: with a flush period that is a
// multiple of the switch period the flushes fall in the same phase of every
// stretch), `writer` (with the writer extra) hands completed buffers to the
// writer thread (read, then cleared whole) or reads them where CUPTI
// completes them (the floor without the extra; cleared there too when the
// zeroed-buffer attribute is set).
// Each switch is written to SIGHTLINE_FLOOR_AB_LOG at exit as "ab T0 T1 S":
// CLOCK_MONOTONIC ns before and after it, S the state after it (1 = on).
// SIGHTLINE_FLOOR_AB_START=off: the part is not there until the first switch
// (never enabled before it), and with SIGHTLINE_FLOOR_AB_GO=PATH the first
// switch waits until PATH exists (the workload creates it part-way through
// its measured steps): the steps before it show whether a part switched off
// costs what one never switched on costs (CUPTI keeps state once enabled).
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
// One switch of SIGHTLINE_FLOOR_AB's part.
struct AbSwitch {
  uint64_t t0, t1;
  int on;
};

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
  // The periodic flushes made (count, total and longest wall time): read
  // after the flush thread is joined.
  uint64_t flush_calls = 0, flush_ns = 0, flush_max_ns = 0;
  std::vector<std::pair<uint64_t, uint64_t>> flush_log;  // CLOCK_MONOTONIC ns, bounded
  bool ab_stop = false;  // flush_mu
  std::vector<AbSwitch> ab_log;  // the A/B thread's; read after it is joined
  std::thread ab;
};
ExtraThreads& X() {
  static ExtraThreads* x = new ExtraThreads;
  return *x;
}


void CUPTIAPI NoOpCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

bool WantsExtraSubscriber() {
  return Extra("subscriber") || Extra("subnone") || Extra("stackcb");
}

// The calls sightline's launch callbacks cover with Python stacks on.
void EnableStackCallbacks(CUpti_SubscriberHandle s, uint32_t on) {
  using namespace sightline::collect;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS) {
      name = nullptr;
    }
    if (IsLaunchCbid(CUPTI_CB_DOMAIN_RUNTIME_API, cbid) ||
        IsPythonStackApi(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name, /*memory=*/true)) {
      cuptiEnableCallback(on, s, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
    }
  }
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    if (IsLaunchCbid(CUPTI_CB_DOMAIN_DRIVER_API, cbid)) {
      cuptiEnableCallback(on, s, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    }
  }
}

CUpti_SubscriberHandle g_extra_subscriber = nullptr;

std::string AbPart() {
  const char* v = std::getenv("SIGHTLINE_FLOOR_AB");
  return v != nullptr ? v : "";
}

// The A/B part `part` is off from the start (SIGHTLINE_FLOOR_AB_START=off)
// and not switched on yet.
std::atomic<bool> g_ab_switched{false};
bool AbStartsOff(const char* part) {
  const char* v = std::getenv("SIGHTLINE_FLOOR_AB_START");
  return AbPart() == part && v != nullptr && std::strcmp(v, "off") == 0 &&
         !g_ab_switched.load();
}

// Subscribes the extra subscriber with the callbacks of the extras asked for.
bool SubscribeExtra() {
  if (cuptiSubscribe(&g_extra_subscriber, &NoOpCallback, nullptr) != CUPTI_SUCCESS) {
    g_extra_subscriber = nullptr;
    return false;
  }
  if (Extra("subscriber")) {
    cuptiEnableDomain(1, g_extra_subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    cuptiEnableCallback(1, g_extra_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRangePushEx}) {
      cuptiEnableCallback(1, g_extra_subscriber, CUPTI_CB_DOMAIN_NVTX, cbid);
    }
  }
  if (Extra("stackcb") && !AbStartsOff("stackcb")) EnableStackCallbacks(g_extra_subscriber, 1);
  return true;
}


uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// SIGHTLINE_FLOOR_AB=flush|writer: whether that part is on now.
std::atomic<bool> g_ab_flush_on{true};
std::atomic<bool> g_ab_writer_on{true};

// One switch of the A/B part; returns the state after it.
int AbSwitchTo(bool on) {
  if (AbPart() == "flush") {
    g_ab_flush_on.store(on);
    return on ? 1 : 0;
  }
  if (AbPart() == "writer") {
    g_ab_writer_on.store(on);
    return on ? 1 : 0;
  }
  if (AbPart() == "subscriber") {
    if (on) return SubscribeExtra() ? 1 : 0;
    if (g_extra_subscriber != nullptr) cuptiUnsubscribe(g_extra_subscriber);
    g_extra_subscriber = nullptr;
    return 0;
  }
  if (g_extra_subscriber == nullptr) return 0;  // stackcb without a subscriber
  EnableStackCallbacks(g_extra_subscriber, on ? 1 : 0);
  return on ? 1 : 0;
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
    if (x.writer_running && !x.writer_stop && g_ab_writer_on.load()) {
      x.queue.emplace_back(buffer, valid);
      x.writer_cv.notify_one();
      return;
    }
  }
  CountAndFree(buffer, valid, g_zeroed.load());  // no writer thread (any more, or now): here
}

void StartExtraThreads() {
  ExtraThreads& x = X();
  const std::string part = AbPart();
  const bool needs_missing = (part == "flush" && !Extra("flush")) ||
                             (part == "writer" && !Extra("writer"));
  // Off from the start only when the A/B thread below will switch it.
  if (!needs_missing && AbStartsOff("flush")) g_ab_flush_on.store(false);
  if (!needs_missing && AbStartsOff("writer")) g_ab_writer_on.store(false);
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
        if (g_ab_flush_on.load()) {
          const uint64_t t0 = MonotonicNs();
          cuptiActivityFlushAll(0);
          const uint64_t ns = MonotonicNs() - t0;
          ++x.flush_calls;
          x.flush_ns += ns;
          x.flush_max_ns = std::max(x.flush_max_ns, ns);
          if (x.flush_log.size() < (1u << 16)) x.flush_log.emplace_back(t0, t0 + ns);
        }
        lock.lock();
      }
    });
  }
  if (needs_missing) {
    std::fprintf(stderr,
                 "floor subscriber: SIGHTLINE_FLOOR_AB=%s needs that SIGHTLINE_FLOOR_EXTRA: "
                 "nothing switched\n", part.c_str());
  } else if (part == "subscriber" && AbStartsOff("subscriber")) {
    // A first cuptiSubscribe from this thread in the running process crashed
    // 3 of 4 processes on the H200 (SIGSEGV, 2026-12-04); switching off and
    // on a subscriber made at the start did not (7 of 7).
    std::fprintf(stderr, "floor subscriber: SIGHTLINE_FLOOR_AB=subscriber with "
                         "SIGHTLINE_FLOOR_AB_START=off refused: nothing switched or subscribed\n");
  } else if (part == "subscriber" || part == "stackcb" || part == "flush" || part == "writer") {
    const char* ms_env = std::getenv("SIGHTLINE_FLOOR_AB_MS");
    const int ms = ms_env != nullptr && std::atoi(ms_env) > 0 ? std::atoi(ms_env) : 250;
    x.ab_log.reserve(1u << 16);
    const bool starts_off = AbStartsOff(part.c_str());
    const char* go_env = std::getenv("SIGHTLINE_FLOOR_AB_GO");
    const std::string go = go_env != nullptr ? go_env : "";
    x.ab = std::thread([&x, ms, starts_off, go] {
      std::unique_lock<std::mutex> lock(x.flush_mu);
      // Until the workload says go: no switch (polled every 10 ms).
      while (!go.empty() && access(go.c_str(), F_OK) != 0) {
        if (x.flush_cv.wait_for(lock, std::chrono::milliseconds(10),
                                [&x] { return x.ab_stop; })) {
          return;
        }
      }
      bool on = !starts_off;
      bool now = !go.empty();  // the first switch as soon as the file exists
      for (;;) {
        if (!now && x.flush_cv.wait_for(lock, std::chrono::milliseconds(ms),
                                        [&x] { return x.ab_stop; })) {
          break;
        }
        now = false;
        lock.unlock();
        on = !on;
        g_ab_switched.store(true);
        const uint64_t t0 = MonotonicNs();
        const int state = AbSwitchTo(on);
        const uint64_t t1 = MonotonicNs();
        if (x.ab_log.size() < x.ab_log.capacity()) x.ab_log.push_back({t0, t1, state});
        lock.lock();
      }
    });
  } else if (!part.empty()) {
    std::fprintf(stderr, "floor subscriber: unknown SIGHTLINE_FLOOR_AB='%s' (subscriber, "
                         "stackcb, flush, writer): nothing switched\n", part.c_str());
  }
}

// The A/B thread's switches, to SIGHTLINE_FLOOR_AB_LOG (created 0600, not
// through a symlink, never replacing what is not a regular file).
void WriteAbLog(const std::vector<AbSwitch>& log,
                const std::vector<std::pair<uint64_t, uint64_t>>& flushes) {
  const char* path = std::getenv("SIGHTLINE_FLOOR_AB_LOG");
  if (path == nullptr || *path == '\0') return;
  const int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fprintf(stderr, "floor subscriber: cannot write %s (not a regular file?)\n", path);
    if (fd >= 0) close(fd);
    return;
  }
  if (ftruncate(fd, 0) != 0) {
    close(fd);
    return;
  }
  FILE* f = fdopen(fd, "w");
  if (f == nullptr) {
    close(fd);
    return;
  }
  for (const AbSwitch& a : log) {
    std::fprintf(f, "ab %llu %llu %d\n", static_cast<unsigned long long>(a.t0),
                 static_cast<unsigned long long>(a.t1), a.on);
  }
  for (const auto& [t0, t1] : flushes) {
    std::fprintf(f, "flush %llu %llu\n", static_cast<unsigned long long>(t0),
                 static_cast<unsigned long long>(t1));
  }
  std::fclose(f);
}

// The flush thread first (no CUPTI call from it once this returns), then the
// writer once it drained what CUPTI completed so far. Called from the thread
// that started them (the program's exit or stop path), at most once.
void StopExtraThreads() {
  ExtraThreads& x = X();
  {
    std::lock_guard<std::mutex> lock(x.flush_mu);
    x.flush_stop = true;
    x.ab_stop = true;
  }
  x.flush_cv.notify_all();
  if (x.flush.joinable()) x.flush.join();
  if (x.ab.joinable()) {
    x.ab.join();
    WriteAbLog(x.ab_log, x.flush_log);  // the flush thread was joined above
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

void SetFloorKinds(bool enable) {
  for (CUpti_ActivityKind k : Kinds()) {
    if ((enable ? cuptiActivityEnable(k) : cuptiActivityDisable(k)) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "floor subscriber: %s %d failed\n", enable ? "enable" : "disable", k);
    }
  }
  EnableRuntimeApis(enable);
}

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
      g_free.push_back(NewBuffer());
    }
  }
  for (const char* e : {"attributes", "subscriber", "subnone", "stackcb", "flush", "writer"}) {
    if (Extra(e)) std::fprintf(stderr, "floor subscriber: with %s\n", e);
  }
  if (FloorMode() == "callbacks-nvtx" || FloorMode() == "sub-attributes" || Extra("attributes")) {
    size_t device_buffer = 8u << 20, size = sizeof(device_buffer);
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &device_buffer);
    uint8_t zeroed = 1;
    size = sizeof(zeroed);
    if (cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed) ==
        CUPTI_SUCCESS) {
      g_zeroed.store(true);
    }
  }
  cuptiActivityRegisterCallbacks(&Requested, &Completed);
  for (CUpti_ActivityKind k : Kinds()) {
    if (cuptiActivityEnable(k) != CUPTI_SUCCESS) std::fprintf(stderr, "enable %d failed\n", k);
  }
  EnableRuntimeApis(true);
  const std::string mode = FloorMode();
  const bool own_subscriber =
      mode == "callbacks" || mode == "callbacks-nvtx" || mode.rfind("sub-", 0) == 0;
  if (WantsExtraSubscriber() && own_subscriber) {
    // CUPTI allows one subscriber: the mode's own would fail unseen.
    std::fprintf(stderr,
                 "floor subscriber: SIGHTLINE_FLOOR_EXTRA subscriber, subnone and stackcb "
                 "ignored with SIGHTLINE_FLOOR_KINDS=%s (it has its own subscriber)\n",
                 mode.c_str());
  } else if (WantsExtraSubscriber() && !AbStartsOff("subscriber") && !SubscribeExtra()) {
    std::fprintf(stderr, "floor subscriber: cuptiSubscribe failed (extra subscriber)\n");
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
  StartExtraThreads();  // after the subscribers: the A/B thread switches them
}

void ReportFloorSubscriber(FILE* out) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  StopExtraThreads();  // the writer counts what the flush completed first
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(out, "floor subscriber: %zu records, %zu dropped\n", g_records, dropped);
  const ExtraThreads& x = X();
  if (x.flush_calls > 0) {
    std::fprintf(out, "floor subscriber: %llu periodic flushes, %.3f ms in them (max %.3f ms)\n",
                 static_cast<unsigned long long>(x.flush_calls), x.flush_ns / 1e6,
                 x.flush_max_ns / 1e6);
  }
}

}  // namespace sightline_bench
