// Buffer pool: bounded, counted, recycled; and the buffer drain + loss report.
#include "lib/collect/buffer_pool.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "gtest/gtest.h"
#include "lib/collect/activity_drain.h"
#include "tests/collect/fake_event_sink.h"
#include "tests/collect/synthetic_records.h"

namespace sightline::collect {
namespace {

int g_notified = 0;
void CountNotify(void*) { ++g_notified; }

TEST(BufferPoolTest, HandsOutCompletesAndRecycles) {
  g_notified = 0;
  ActivityBufferPool pool(1000, 2, 4, &CountNotify, nullptr);
  EXPECT_EQ(pool.buffer_bytes(), 1000u);
  uint8_t* a = pool.Acquire();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  EXPECT_EQ(pool.stats().outstanding, 1u);
  EXPECT_TRUE(pool.Complete(a, 640, 3));
  EXPECT_EQ(g_notified, 1);
  std::vector<CompletedBuffer> done;
  EXPECT_EQ(pool.TakeCompleted(&done), 1u);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].data, a);
  EXPECT_EQ(done[0].valid_bytes, 640u);
  EXPECT_EQ(done[0].stream_id, 3u);
  std::memset(a, 0xab, 640);  // what CUPTI wrote
  pool.Release(a, 640);
  EXPECT_EQ(pool.Acquire(), a);  // reused, not reallocated
  // Handed out all zeroes again (CUPTI is told the buffers come zeroed).
  EXPECT_TRUE(std::all_of(a, a + pool.buffer_bytes(), [](uint8_t v) { return v == 0; }));
  BufferPoolStats s = pool.stats();
  EXPECT_EQ(s.allocated, 2u);
  EXPECT_EQ(s.completed_bytes, 640u);
  EXPECT_EQ(s.grown_in_callback, 0u);
}

TEST(BufferPoolTest, ExhaustionReturnsNullAndCounts) {
  ActivityBufferPool pool(64, 1, 2);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();  // grows to the maximum
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.Acquire(), nullptr);
  BufferPoolStats s = pool.stats();
  EXPECT_EQ(s.dropped_requests, 2u);
  EXPECT_EQ(s.grown_in_callback, 1u);
  EXPECT_EQ(s.outstanding, 2u);
}

// CUPTI keeps a buffer per kernel-replayed launch out until a forced flush
// (H200 2026-12-06: 256 of 256 out, then records refused): the writer forces
// its flush once three quarters of the pool are out, before Acquire fails.
TEST(BufferPoolTest, ForcedFlushOnceThreeQuartersAreOut) {
  ActivityBufferPool pool(1024, 0, 8);
  EXPECT_EQ(pool.max_buffers(), 8u);
  std::vector<uint8_t*> out;
  for (int i = 0; i < 5; ++i) out.push_back(pool.Acquire());
  EXPECT_FALSE(PoolNeedsForcedFlush(pool.stats(), pool.max_buffers()));  // 5 of 8
  out.push_back(pool.Acquire());
  EXPECT_TRUE(PoolNeedsForcedFlush(pool.stats(), pool.max_buffers()));  // 6 of 8
  // Returned (what the forced flush does): below the mark again.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.Complete(out[i], 0));
  EXPECT_FALSE(PoolNeedsForcedFlush(pool.stats(), pool.max_buffers()));
  std::vector<CompletedBuffer> done;
  pool.TakeCompleted(&done);
  for (const CompletedBuffer& b : done) pool.Release(b.data, b.valid_bytes);
  // The default replay pool (256): forced from 192 out.
  BufferPoolStats s;
  s.outstanding = 191;
  EXPECT_FALSE(PoolNeedsForcedFlush(s, 256));
  s.outstanding = 192;
  EXPECT_TRUE(PoolNeedsForcedFlush(s, 256));
  EXPECT_FALSE(PoolNeedsForcedFlush(s, 0));
}

TEST(BufferPoolTest, ForeignBuffersAreRefused) {
  ActivityBufferPool pool(64, 1, 2);
  uint8_t other[64];
  EXPECT_FALSE(pool.Complete(other, 10));
  EXPECT_EQ(pool.stats().foreign_completions, 1u);
  std::vector<CompletedBuffer> done;
  EXPECT_EQ(pool.TakeCompleted(&done), 0u);
}

TEST(BufferPoolTest, ReplenishKeepsSparesWithinTheBound) {
  ActivityBufferPool pool(64, 0, 3);
  EXPECT_EQ(pool.Replenish(2), 2u);
  EXPECT_EQ(pool.Replenish(5), 1u);  // capped by max_buffers
  EXPECT_EQ(pool.stats().allocated, 3u);
}

TEST(BufferPoolTest, ConcurrentProducersAndOneConsumer) {
  ActivityBufferPool pool(128, 4, 8);
  std::atomic<int> completed{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        uint8_t* b = pool.Acquire();
        if (b != nullptr && pool.Complete(b, 8)) ++completed;
      }
    });
  }
  int consumed = 0;
  std::vector<CompletedBuffer> done;
  while (consumed < 8000) {
    done.clear();
    pool.TakeCompleted(&done);
    for (const auto& d : done) pool.Release(d.data, d.valid_bytes);
    consumed += static_cast<int>(done.size());
    BufferPoolStats s = pool.stats();
    if (consumed + static_cast<int>(s.dropped_requests) >= 8000 && s.outstanding == 0 &&
        s.queued == 0) {
      break;
    }
  }
  for (auto& p : producers) p.join();
  done.clear();
  pool.TakeCompleted(&done);
  consumed += static_cast<int>(done.size());
  BufferPoolStats s = pool.stats();
  EXPECT_EQ(static_cast<uint64_t>(consumed) + s.dropped_requests, 8000u);
  EXPECT_EQ(completed.load(), consumed);
  EXPECT_LE(s.allocated, 8u);
}

TEST(ActivityDrainTest, WalksEveryRecordOfABuffer) {
  testing::PackedBuffer buffer;
  buffer.Append(testing::Kernel(10, 20, "a", 1));
  buffer.Append(testing::Memcpy(30, 40, 1, 1, 3, false, 8));
  buffer.Append(testing::Kernel(50, 60, "b", 2));
  FakeEventSink sink;
  RecordConverter converter(&sink, {}, nullptr);
  CompletedBuffer c{buffer.data(), buffer.size(), 0};
  DrainResult r = DrainActivityBuffer(c, &testing::PackedBuffer::Next, &converter);
  EXPECT_EQ(r.records, 3u);
  EXPECT_FALSE(r.broken);
  EXPECT_EQ(sink.kernels.size(), 2u);
  EXPECT_EQ(sink.memcpys.size(), 1u);
}

TEST(ActivityDrainTest, ATruncatedBufferStopsAndIsReported) {
  testing::PackedBuffer buffer;
  buffer.Append(testing::Kernel(10, 20, "a", 1));
  buffer.Append(testing::Kernel(50, 60, "b", 2));
  FakeEventSink sink;
  RecordConverter converter(&sink, {}, nullptr);
  CompletedBuffer c{buffer.data(), buffer.size() - 16, 0};
  DrainResult r = DrainActivityBuffer(c, &testing::PackedBuffer::Next, &converter);
  EXPECT_EQ(r.records, 1u);
  EXPECT_TRUE(r.broken);
}

TEST(ActivityDrainTest, EmptyBufferIsFine) {
  FakeEventSink sink;
  RecordConverter converter(&sink, {}, nullptr);
  CompletedBuffer c{nullptr, 0, 0};
  DrainResult r = DrainActivityBuffer(c, &testing::PackedBuffer::Next, &converter);
  EXPECT_EQ(r.records, 0u);
  EXPECT_FALSE(r.broken);
}

TEST(LossAccountingTest, EveryLossEndsUpInTheReport) {
  LossInputs in;
  in.cupti_dropped_records = 5;
  in.pool_dropped_requests = 2;
  in.buffers_not_returned = 1;
  in.broken_buffers = 1;
  in.invalid_timestamps = 7;
  in.unsupported_records = 3;
  in.metric_ranges_dropped = 4;
  in.stacks_dropped = 6;
  in.host_events_dropped = 8;
  LossReport r = MakeLossReport(in, 99);
  EXPECT_EQ(r.timestamp_ns, 99u);
  EXPECT_EQ(r.cupti_dropped_records, 5u);
  EXPECT_EQ(r.queue_dropped_buffers, 4u);
  EXPECT_EQ(r.queue_dropped_records, 8u);
  EXPECT_EQ(r.invalid_timestamps, 7u);
  EXPECT_EQ(r.unsupported_records, 3u);
  EXPECT_EQ(r.metric_ranges_dropped, 4u);
  EXPECT_EQ(r.stacks_dropped, 6u);
  EXPECT_EQ(r.total(), 5u + 8u + 7u + 4u + 6u);
  EXPECT_EQ(MakeLossReport(LossInputs{}, 1).total(), 0u);
}

// A fake cuptiActivityGetNumDroppedRecords: 3 for each context, 40 for the
// process-wide (null context) count that collector.cc's old copy of the
// query left out at teardown.
std::vector<CUcontext> g_asked;
CUptiResult FakeDropped(CUcontext ctx, uint32_t stream_id, size_t* dropped) {
  g_asked.push_back(ctx);
  *dropped = ctx == nullptr ? 40 : 3;
  return CUPTI_SUCCESS;
}
CUptiResult FailingDropped(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 1000;
  return CUPTI_ERROR_INVALID_CONTEXT;
}

TEST(DroppedRecordsTest, TheProcessWideCountIsIncluded) {
  auto a = reinterpret_cast<CUcontext>(uintptr_t{0x10});
  auto b = reinterpret_cast<CUcontext>(uintptr_t{0x20});
  g_asked.clear();
  EXPECT_EQ(ReadDroppedRecords({a, b}, &FakeDropped), 3u + 3u + 40u);
  EXPECT_EQ(g_asked, (std::vector<CUcontext>{a, b, nullptr}));
  g_asked.clear();
  EXPECT_EQ(ReadDroppedRecords({}, &FakeDropped), 40u);  // before any context
  EXPECT_EQ(ReadDroppedRecords({a}, &FailingDropped), 0u);  // errors count nothing
}

}  // namespace
}  // namespace sightline::collect
