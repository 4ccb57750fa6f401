// The flight recorder's ring (lib/collect/flight_recorder.h): what waits,
// what is discarded, what a capture writes out.
#include "lib/collect/flight_recorder.h"

#include "gtest/gtest.h"
#include "tests/collect/fake_event_sink.h"

namespace sightline::collect {
namespace {

KernelEvent Kernel(uint64_t start, uint32_t correlation = 0) {
  KernelEvent k;
  k.start_ns = start;
  k.end_ns = start + 10;
  k.correlation_id = correlation;
  return k;
}

TEST(FlightRecorderTest, KeepsTheLastSecondsUntilACaptureOpens) {
  FakeEventSink out;
  FlightRecorderSink fr(&out, /*keep_ns=*/1000, /*max_bytes=*/1 << 20);
  for (uint64_t t = 100; t <= 3000; t += 100) fr.Add(Kernel(t));
  EXPECT_TRUE(out.kernels.empty());  // nothing written before a capture
  EXPECT_EQ(fr.stats().held, 11u);   // 2000..3000
  EXPECT_EQ(fr.stats().discarded_by_age, 19u);
  EXPECT_EQ(fr.Open(3050), 2050u);  // the window: the lead-up asked for, not more
  ASSERT_EQ(out.kernels.size(), 11u);
  EXPECT_EQ(out.kernels.front().start_ns, 2000u);
  EXPECT_EQ(out.kernels.back().start_ns, 3000u);
  EXPECT_TRUE(fr.open());
  fr.Add(Kernel(3100));
  EXPECT_EQ(out.kernels.size(), 12u);  // open: straight through
  EXPECT_EQ(fr.stats().written_from_ring, 11u);
}

TEST(FlightRecorderTest, LateRecordsOfAClosedCaptureAreStillWritten) {
  FakeEventSink out;
  FlightRecorderSink fr(&out, 1000, 1 << 20);
  fr.Open(100);
  fr.Close(5000);
  EXPECT_FALSE(fr.open());
  fr.Add(Kernel(4900));  // delivered after the close, ran before it
  fr.Add(Kernel(5000));
  fr.Add(Kernel(5100));  // after it: ring
  ApiEvent api;
  api.start_ns = 4950;
  api.end_ns = 4960;
  fr.Add(api);
  EXPECT_EQ(out.kernels.size(), 2u);
  EXPECT_EQ(out.apis.size(), 1u);
  EXPECT_EQ(fr.stats().held, 1u);
  // The next capture starts with what came after the last one.
  EXPECT_EQ(fr.Open(5200), 5100u);
  EXPECT_EQ(out.kernels.size(), 3u);
}

TEST(FlightRecorderTest, MemoryBoundDiscardsTheOldest) {
  FakeEventSink out;
  // Room for about four events whatever their size.
  FlightRecorderSink fr(&out, 1'000'000'000, 4 * 400);
  for (uint64_t t = 1; t <= 100; ++t) fr.Add(Kernel(t, static_cast<uint32_t>(t)));
  EXPECT_GT(fr.stats().discarded_by_size, 0u);
  EXPECT_LE(fr.stats().held_bytes, 4u * 400u);
  EXPECT_EQ(fr.stats().discarded_by_size + fr.stats().held, 100u);
  fr.Open(101);
  ASSERT_FALSE(out.kernels.empty());
  EXPECT_EQ(out.kernels.back().correlation_id, 100u);  // the newest survive
}

TEST(FlightRecorderTest, StringsLossesAndWindowsGoThroughAtOnce) {
  FakeEventSink out;
  FlightRecorderSink fr(&out, 1000, 1 << 20);
  uint32_t id = fr.Intern("gemm");
  EXPECT_EQ(out.Str(id), "gemm");
  LossReport loss;
  loss.timestamp_ns = 10;
  fr.Add(loss);
  CaptureWindowEvent w;
  w.start_ns = 1;
  w.end_ns = 2;
  fr.Add(w);
  StepEvent s;
  s.timestamp_ns = 50;
  fr.Add(s);
  EXPECT_EQ(out.losses.size(), 1u);
  EXPECT_EQ(out.windows.size(), 1u);
  EXPECT_TRUE(out.steps.empty());  // a step marker is an event of the ring
  fr.Open(60);
  EXPECT_EQ(out.steps.size(), 1u);
}

TEST(FlightRecorderTest, ALongRangeDoesNotStretchTheWindow) {
  FakeEventSink out;
  FlightRecorderSink fr(&out, 5000, 1 << 20);
  NvtxRangeEvent epoch;  // started an hour before, ended just before the trigger
  epoch.start_ns = 100;
  epoch.end_ns = 3'600'000'000;
  fr.Add(epoch);
  fr.Add(Kernel(3'599'999'000));
  EXPECT_EQ(fr.Open(3'600'000'100), 3'599'995'100u);
  EXPECT_EQ(out.ranges.size(), 1u);  // still written: it ends inside the window
}

}  // namespace
}  // namespace sightline::collect
