// lib/collect/self_cost.h — sightline's own time on the threads that call
// CUDA (SIGHTLINE_SELF_COST=1, off by default).
//
// Profiler overhead measured from outside (a plain run against a profiled
// one) moves by ±15 % between processes on a shared GPU host, more than the
// costs it is meant to decide (≤ 1 µs a launch for Python stacks, ≤ 1.15×
// CUPTI's own cost on a real step). Measured from inside it does not: each
// part below times itself with the monotonic clock, on the thread that pays
// for it, and the totals are printed at exit. What a part counts:
//   api       every CUPTI runtime/driver API callback of sightline, whole
//             (includes python, native-caller and native-stack below)
//   nvtx      every CUPTI NVTX callback of sightline, whole
//   python    the Python frame walk and interning of one call
//   caller    the short backtrace that finds a call's native caller
//             (NativeStackOnce)
//   native    one full native backtrace
//   writer    CPU time of the writer thread's passes (CLOCK_THREAD_CPUTIME_ID):
//             off the application's threads, it competes for their cores
//   observer  monitor mode: sightline's own NVTX handlers (nvtx_observer.h),
//             what they do before handing the call to CUPTI's
//   monitor   monitor mode: the agent thread's CPU time (NVML polls,
//             detectors, endpoint), one entry at exit
//   flush     the writer's cuptiActivityFlushAll calls (periodic, requested
//             and signalled), wall time, including sightline's buffer
//             completion callback when CUPTI runs it inside the call; off the
//             application's threads
//   capture   opening or closing a capture window (activity kinds switched
//             on or off, the window's events, the metrics hand-over), wall
//             time, on the thread whose call or tick did it (an NVTX or
//             cudaProfilerStart/Stop callback: inside nvtx or api)
// Not counted: CUPTI's own work (its activity records, its dispatch into our
// callbacks). The writer and flush parts are off the application's threads. The
// difference between a profiled step and the floor subscriber's step, minus
// these parts, is what is left to CUPTI and to contention
// (bench/overhead/README.md).
//
// Off, a part costs one relaxed load of a flag. On, two clock reads and four
// relaxed atomic adds: ~50 ns, inside the measured time.
#ifndef SIGHTLINE_LIB_COLLECT_SELF_COST_H_
#define SIGHTLINE_LIB_COLLECT_SELF_COST_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace sightline::collect {

enum class CostPart : int {
  kApi,
  kNvtx,
  kPython,
  kCaller,
  kNative,
  kWriter,
  kObserver,
  kMonitor,
  kFlush,
  kCapture,
  kCount
};

struct CostTotals {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
  double p50_ns = 0;  // from a histogram with 8 buckets per octave (±4.5 %)
  double p99_ns = 0;
};

class SelfCost {
 public:
  static bool Enabled() { return enabled_.load(std::memory_order_relaxed); }
  static void SetEnabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  static uint64_t NowNs();
  static uint64_t ThreadCpuNs();
  static void Add(CostPart part, uint64_t ns);
  static CostTotals Totals(CostPart part);
  static const char* Name(CostPart part);
  // One line per part with calls, e.g. "sightline: self-cost api: 1234 calls,
  // mean 0.412 us, p50 0.35 us, p99 1.9 us, max 41 us, total 0.51 ms".
  static std::string Report();
  static void ResetForTest();

  static constexpr int kBuckets = 8 * 40;  // 8 per octave up to 2^40 ns

 private:
  static std::atomic<bool> enabled_;
};

// Times its scope into `part` when self-cost is on: wall time, or with
// kThreadCpu the calling thread's CPU time.
class CostScope {
 public:
  enum Clock { kWall, kThreadCpu };
  explicit CostScope(CostPart part, Clock clock = kWall)
      : part_(part), clock_(clock), start_(SelfCost::Enabled() ? Read() : 0) {}
  ~CostScope() {
    if (start_ != 0) SelfCost::Add(part_, Read() - start_);
  }
  CostScope(const CostScope&) = delete;
  CostScope& operator=(const CostScope&) = delete;

 private:
  uint64_t Read() const {
    return clock_ == kWall ? SelfCost::NowNs() : SelfCost::ThreadCpuNs();
  }
  CostPart part_;
  Clock clock_;
  uint64_t start_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_SELF_COST_H_
