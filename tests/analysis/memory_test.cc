// GPU memory analysis (lib/analysis/memory.h) and its rules memory_growth,
// allocation_churn and memory_peak on synthetic traces, through the wire
// format too.
#include <cstdint>

#include "gtest/gtest.h"
#include "lib/analysis/memory.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x7f0000000000ull;

class MemoryTest : public ::testing::TestWithParam<BuildPath> {};

// A training loop of `steps` steps of 10 ms (step markers), one kernel each,
// after a start-up that allocates 1 GiB of weights.
TraceBuilder Loop(int steps, uint64_t capacity = 0) {
  TraceBuilder b;
  if (capacity) b.trace().header.devices[0].global_memory_bytes = capacity;
  b.Allocate(kBase, 1024 * kMiB, ms(1), ms(1.2));
  for (int i = 0; i < steps; ++i) {
    uint64_t t = ms(10) + uint64_t(i) * ms(10);
    b.Step(uint64_t(i), t);
    b.Kernel("train_kernel", t + ms(1), t + ms(9), 7, t + us(10), us(5));
  }
  return b;
}

TEST_P(MemoryTest, PeakTimelineAndEndOfRun) {
  TraceBuilder b = Loop(10);
  // Activations: 256 MiB allocated and released inside step 3; a 64 MiB
  // buffer allocated in step 5 and never released; a release of memory
  // allocated before recording began.
  b.Allocate(kBase + (2ull << 30), 256 * kMiB, ms(42), ms(42.1));
  b.Release(kBase + (2ull << 30), 256 * kMiB, ms(46), ms(46.2));
  b.Allocate(kBase + (3ull << 30), 64 * kMiB, ms(62), ms(62.1));
  b.Release(0x1000, 0, ms(70), ms(70.1));
  // Pinned host memory is tracked apart.
  b.Allocate(0x5000000, 32 * kMiB, ms(5), ms(5.5), "cudaHostAlloc_v3020", MemoryKind::kPinned);
  AnalysisOptions o;
  o.window = "all";
  Report r = AnalyzeTraces({b.trace()}, GetParam(), o);
  ASSERT_TRUE(r.memory.recorded);
  ASSERT_EQ(r.memory.devices.size(), 1u);
  const MemoryDevice& m = r.memory.devices[0];
  EXPECT_EQ(m.peak_bytes, (1024 + 256) * kMiB);
  EXPECT_EQ(m.peak_ns, ms(42));
  EXPECT_EQ(m.end_bytes, (1024 + 64) * kMiB);
  EXPECT_EQ(m.end_allocations, 2u);
  EXPECT_EQ(m.pinned_peak_bytes, 32 * kMiB);
  EXPECT_EQ(m.allocations, 4u);
  EXPECT_EQ(m.releases, 2u);
  EXPECT_EQ(m.unmatched_releases, 1u);
  ASSERT_FALSE(m.peak_sites.empty());
  EXPECT_EQ(m.peak_sites[0].bytes, 1280 * kMiB);  // one site: the API name
  EXPECT_EQ(m.peak_sites[0].site, "cudaMalloc");
  EXPECT_EQ(m.peak_sites[0].allocations, 2u);
  // The timeline is the step function of device memory.
  ASSERT_GE(m.timeline.size(), 4u);
  EXPECT_EQ(m.timeline.front().bytes, 1024 * kMiB);
  EXPECT_EQ(m.timeline.back().bytes, (1024 + 64) * kMiB);
  ASSERT_FALSE(r.summary.devices.empty());
  EXPECT_EQ(r.summary.devices[0].memory_peak_bytes, m.peak_bytes);
  EXPECT_EQ(FindFinding(r, "memory_growth"), nullptr);
  EXPECT_EQ(FindFinding(r, "memory_peak"), nullptr);  // capacity unknown
}

TEST_P(MemoryTest, GrowthAcrossStepsIsALeak) {
  TraceBuilder b = Loop(30, 141ull << 30);
  // 8 MiB kept from every step (every step but a few: a caching allocator
  // grows in segments), by one call stack.
  uint32_t stack = b.Stack({"append_logits", "train_step"});
  for (int i = 0; i < 30; ++i) {
    if (i % 5 == 4) continue;
    uint64_t t = ms(10) + uint64_t(i) * ms(10) + ms(5);
    b.Allocate(kBase + (8ull << 30) + uint64_t(i) * 8 * kMiB, 8 * kMiB, t, t + us(50),
               "cudaMalloc_v3020", MemoryKind::kDevice, stack);
  }
  Report r = AnalyzeTracesAsShipped({b.trace()}, GetParam());
  const MemoryDevice& m = r.memory.devices.at(0);
  EXPECT_GT(m.growth_bytes_per_step, 5.0 * kMiB);
  EXPECT_LT(m.growth_bytes_per_step, 9.0 * kMiB);
  EXPECT_EQ(m.steps_decreasing, 0u);
  const Finding* f = FindFinding(r, "memory_growth");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->EvidenceNumber("growth_bytes"), 100.0 * kMiB);
  EXPECT_GT(f->EvidenceNumber("steps_until_full"), 1000);
  ASSERT_FALSE(f->offenders.empty());
  EXPECT_NE(f->offenders[0].name.find("append_logits"), std::string::npos) << f->offenders[0].name;
  EXPECT_EQ(f->est_saving_ns, 0u);
}

TEST_P(MemoryTest, StableMemoryIsNoLeak) {
  TraceBuilder b = Loop(30, 141ull << 30);
  // Every step allocates and releases the same 8 MiB, and once in a while a
  // bigger block comes and goes: in use at step ends does not grow.
  for (int i = 0; i < 30; ++i) {
    uint64_t t = ms(10) + uint64_t(i) * ms(10);
    b.Allocate(kBase + (8ull << 30), 8 * kMiB, t + ms(2), t + ms(2.05));
    b.Release(kBase + (8ull << 30), 8 * kMiB, t + ms(8), t + ms(8.05));
  }
  Report r = AnalyzeTracesAsShipped({b.trace()}, GetParam());
  EXPECT_EQ(FindFinding(r, "memory_growth"), nullptr);
  EXPECT_EQ(r.memory.devices.at(0).steps_increasing, 0u);
  // ... but that is churn: two synchronous calls per step (the rule's own
  // saving: their host time; the shipped replay finds this GPU-bound loop
  // would not get faster).
  AnalysisOptions o;
  o.window = "steady";
  Report own = AnalyzeTraces({b.trace()}, GetParam(), o);
  const Finding* churn = FindFinding(own, "allocation_churn");
  ASSERT_NE(churn, nullptr);
  EXPECT_GE(churn->EvidenceNumber("calls_per_step"), 1.9);
  EXPECT_LE(churn->EvidenceNumber("calls_per_step"), 2.2);
  EXPECT_GT(churn->est_saving_ns, 0u);
  ASSERT_FALSE(churn->offenders.empty());
  EXPECT_EQ(churn->offenders.size(), 2u);  // cudaMalloc and cudaFree
}

TEST_P(MemoryTest, StreamOrderedPoolsCountTheirReservedSize) {
  TraceBuilder b = Loop(4);
  // cudaMallocAsync from a pool that reserves 512 MiB for two 100 MiB
  // allocations, then trims to 200 MiB.
  for (int i = 0; i < 2; ++i) {
    MemoryEvent e;
    e.timestamp_ns = ms(20) + uint64_t(i) * ms(1);
    e.operation = MemoryOperation::kAllocation;
    e.memory_kind = MemoryKind::kDevice;
    e.address = kBase + (4ull << 30) + uint64_t(i) * 100 * kMiB;
    e.bytes = 100 * kMiB;
    e.async = true;
    e.pool_address = kBase + (4ull << 30);
    e.pool_type = 1;
    e.pool_size = 512 * kMiB;
    b.trace().memory.push_back(e);
  }
  MemoryEvent trim;
  trim.timestamp_ns = ms(30);
  trim.operation = MemoryOperation::kPoolTrimmed;
  trim.address = kBase + (4ull << 30);
  trim.bytes = 200 * kMiB;
  b.trace().memory.push_back(trim);
  AnalysisOptions o;
  o.window = "all";
  Report r = AnalyzeTraces({b.trace()}, GetParam(), o);
  const MemoryDevice& m = r.memory.devices.at(0);
  EXPECT_EQ(m.peak_bytes, (1024 + 512) * kMiB);
  EXPECT_EQ(m.pool_bytes, 512 * kMiB);
  EXPECT_EQ(m.end_bytes, (1024 + 200) * kMiB);
  EXPECT_EQ(m.scope_allocations, 1u);  // the weights; stream-ordered ones are not churn
  // Per pool: what it held over time, its peak, its allocations' peak.
  ASSERT_EQ(m.pools.size(), 1u);
  const MemoryPoolSummary& pool = m.pools[0];
  EXPECT_EQ(pool.address, kBase + (4ull << 30));
  EXPECT_EQ(pool.peak_bytes, 512 * kMiB);
  EXPECT_EQ(pool.peak_used_bytes, 200 * kMiB);
  EXPECT_EQ(pool.end_bytes, 200 * kMiB);
  EXPECT_EQ(pool.allocations, 2u);
  EXPECT_FALSE(pool.destroyed);
  ASSERT_EQ(pool.timeline.size(), 2u);  // 512 MiB from the first allocation, 200 MiB after the trim
  EXPECT_EQ(pool.timeline[0].t_ns, ms(20));
  EXPECT_EQ(pool.timeline[0].bytes, 512 * kMiB);
  EXPECT_EQ(pool.timeline[1].t_ns, ms(30));
  EXPECT_EQ(pool.timeline[1].bytes, 200 * kMiB);
  // Destroyed: nothing held at the end.
  MemoryEvent destroy;
  destroy.timestamp_ns = ms(40);
  destroy.operation = MemoryOperation::kPoolDestroyed;
  destroy.address = kBase + (4ull << 30);
  b.trace().memory.push_back(destroy);
  // A free after the destroy (allowed while allocations are live) does not
  // bring the pool back.
  MemoryEvent late_free;
  late_free.timestamp_ns = ms(41);
  late_free.operation = MemoryOperation::kRelease;
  late_free.memory_kind = MemoryKind::kDevice;
  late_free.address = kBase + (4ull << 30);
  late_free.async = true;
  late_free.pool_address = kBase + (4ull << 30);
  b.trace().memory.push_back(late_free);
  r = AnalyzeTraces({b.trace()}, GetParam(), o);
  ASSERT_EQ(r.memory.devices.at(0).pools.size(), 1u);
  EXPECT_TRUE(r.memory.devices[0].pools[0].destroyed);
  EXPECT_EQ(r.memory.devices[0].pools[0].end_bytes, 0u);
}

TEST_P(MemoryTest, PeakNearCapacity) {
  TraceBuilder b = Loop(4, 2048 * kMiB);
  b.Allocate(kBase + (2ull << 30), 900 * kMiB, ms(15), ms(15.5));
  AnalysisOptions o;
  o.window = "all";
  Report r = AnalyzeTraces({b.trace()}, GetParam(), o);
  const Finding* f = FindFinding(r, "memory_peak");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->EvidenceNumber("peak_pct"), 100.0 * 1924 / 2048, 0.01);
  EXPECT_EQ(f->offenders.size(), 1u);
}

// The --pytorch hook's samples after each optimizer step: the tensors' peak
// and the allocator's reserved bytes; other markers and malformed ones are
// ignored.
TEST_P(MemoryTest, PytorchSamplesGiveTheTensorsPeak) {
  TraceBuilder b = Loop(4);
  auto mark = [&](uint64_t t, const std::string& text) {
    NvtxMarkerEvent m;
    m.timestamp_ns = t;
    m.name_id = b.trace().Intern(text);
    m.thread_id = 1;
    b.trace().nvtx_markers.push_back(m);
  };
  mark(ms(15), "sightline.torch_memory device=0 allocated=600 max_allocated=900 reserved=1024");
  mark(ms(25), "sightline.torch_memory device=0 allocated=650 max_allocated=950 reserved=2048");
  mark(ms(26), "sightline.torch_memory device=0 allocated=x max_allocated=1 reserved=1");
  mark(ms(27), "epoch 3");
  AnalysisOptions o;
  o.window = "all";
  Report r = AnalyzeTraces({b.trace()}, GetParam(), o);
  const MemoryDevice& m = r.memory.devices.at(0);
  EXPECT_EQ(m.torch_samples, 2u);
  EXPECT_EQ(m.torch_allocated_peak_bytes, 950u);
  EXPECT_EQ(m.torch_reserved_peak_bytes, 2048u);
  EXPECT_EQ(m.torch_allocated_end_bytes, 650u);
  EXPECT_EQ(m.torch_reserved_end_bytes, 2048u);
}

TEST_P(MemoryTest, NoMemoryRecordsNoMemorySection) {
  TraceBuilder b = Loop(4);
  b.trace().memory.clear();
  Report r = AnalyzeTraces({b.trace()}, GetParam());
  EXPECT_FALSE(r.memory.recorded);
  EXPECT_TRUE(r.memory.devices.empty());
}

INSTANTIATE_TEST_SUITE_P(BothPaths, MemoryTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat));

TEST(TheilSen, SlopeIgnoresOutliers) {
  EXPECT_EQ(TheilSenSlope({}), 0);
  EXPECT_EQ(TheilSenSlope({5}), 0);
  EXPECT_DOUBLE_EQ(TheilSenSlope({0, 2, 4, 6, 8}), 2);
  EXPECT_DOUBLE_EQ(TheilSenSlope({0, 2, 400, 6, 8, 10}), 2);
  EXPECT_DOUBLE_EQ(TheilSenSlope({7, 7, 7, 7}), 0);
}

}  // namespace
}  // namespace sightline::analysis::testing
