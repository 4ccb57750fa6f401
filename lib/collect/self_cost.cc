// lib/collect/self_cost.cc — see self_cost.h.
#include "lib/collect/self_cost.h"

#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace sightline::collect {
namespace {

struct PartState {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> total_ns{0};
  std::atomic<uint64_t> max_ns{0};
  std::atomic<uint64_t> buckets[SelfCost::kBuckets] = {};
};

PartState g_parts[static_cast<int>(CostPart::kCount)];

// Bucket b holds durations in [2^(b/8), 2^((b+1)/8)) ns; bucket 0 also holds 0.
int BucketOf(uint64_t ns) {
  if (ns <= 1) return 0;
  int b = static_cast<int>(std::floor(std::log2(static_cast<double>(ns)) * 8));
  return b < SelfCost::kBuckets ? b : SelfCost::kBuckets - 1;
}

double BucketMid(int b) { return std::exp2((b + 0.5) / 8.0); }

}  // namespace

std::atomic<bool> SelfCost::enabled_{false};

uint64_t SelfCost::NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t SelfCost::ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  // Never 0: a scope that starts at 0 reads as "off".
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec) + 1;
}

void SelfCost::Add(CostPart part, uint64_t ns) {
  PartState& p = g_parts[static_cast<int>(part)];
  p.count.fetch_add(1, std::memory_order_relaxed);
  p.total_ns.fetch_add(ns, std::memory_order_relaxed);
  p.buckets[BucketOf(ns)].fetch_add(1, std::memory_order_relaxed);
  uint64_t m = p.max_ns.load(std::memory_order_relaxed);
  while (ns > m && !p.max_ns.compare_exchange_weak(m, ns, std::memory_order_relaxed)) {
  }
}

CostTotals SelfCost::Totals(CostPart part) {
  const PartState& p = g_parts[static_cast<int>(part)];
  CostTotals t;
  t.count = p.count.load(std::memory_order_relaxed);
  t.total_ns = p.total_ns.load(std::memory_order_relaxed);
  t.max_ns = p.max_ns.load(std::memory_order_relaxed);
  uint64_t in_buckets = 0;
  for (const auto& b : p.buckets) in_buckets += b.load(std::memory_order_relaxed);
  auto quantile = [&](double q) {
    const double want = q * static_cast<double>(in_buckets);
    uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += p.buckets[b].load(std::memory_order_relaxed);
      if (static_cast<double>(seen) >= want && seen > 0) return BucketMid(b);
    }
    return 0.0;
  };
  if (in_buckets > 0) {
    t.p50_ns = quantile(0.5);
    t.p99_ns = quantile(0.99);
  }
  return t;
}

const char* SelfCost::Name(CostPart part) {
  switch (part) {
    case CostPart::kApi: return "api callbacks";
    case CostPart::kNvtx: return "nvtx callbacks";
    case CostPart::kPython: return "python stacks";
    case CostPart::kCaller: return "native caller";
    case CostPart::kNative: return "native stacks";
    case CostPart::kWriter: return "writer thread cpu";
    case CostPart::kObserver: return "nvtx handlers";
    case CostPart::kMonitor: return "monitor thread cpu";
    case CostPart::kFlush: return "writer flush";
    case CostPart::kCapture: return "capture windows";
    case CostPart::kCount: break;
  }
  return "?";
}

std::string SelfCost::Report() {
  std::string out;
  for (int i = 0; i < static_cast<int>(CostPart::kCount); ++i) {
    const CostTotals t = Totals(static_cast<CostPart>(i));
    if (t.count == 0) continue;
    char line[256];
    std::snprintf(line, sizeof(line),
                  "sightline: self-cost [pid %d] %s: %llu calls, mean %.3f us, p50 %.3f us, "
                  "p99 %.3f us, max %.1f us, total %.3f ms\n",
                  static_cast<int>(getpid()), Name(static_cast<CostPart>(i)),
                  static_cast<unsigned long long>(t.count),
                  static_cast<double>(t.total_ns) / static_cast<double>(t.count) / 1e3,
                  t.p50_ns / 1e3, t.p99_ns / 1e3, static_cast<double>(t.max_ns) / 1e3,
                  static_cast<double>(t.total_ns) / 1e6);
    out += line;
  }
  return out;
}

void SelfCost::ResetForTest() {
  for (PartState& p : g_parts) {
    p.count = 0;
    p.total_ns = 0;
    p.max_ns = 0;
    for (auto& b : p.buckets) b = 0;
  }
}

}  // namespace sightline::collect
