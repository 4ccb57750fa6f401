// PM sampling's recording spans (lib/collect/pm_spans.h): which samples a
// capture window keeps, and which gaps count as missing samples.
#include "lib/collect/pm_spans.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace sightline::collect {
namespace {

// Samples of `interval` ns back to back from `first` (two metrics each: the
// sample's index and its index times ten), skipping the indices in `holes`.
PmSampleBatch Samples(uint64_t first, uint64_t interval, size_t n,
                      std::vector<size_t> holes = {}) {
  PmSampleBatch b;
  b.event.interval_ns = static_cast<uint32_t>(interval);
  for (size_t i = 0; i < n; ++i) {
    if (std::find(holes.begin(), holes.end(), i) != holes.end()) continue;
    b.event.sample_start_ns.push_back(first + i * interval);
    b.event.sample_end_ns.push_back(first + (i + 1) * interval);
    b.event.values.push_back(static_cast<float>(i));
    b.event.values.push_back(static_cast<float>(i * 10));
  }
  return b;
}

TEST(PmSpansTest, NoSpanKeepsNothing) {
  RecordingSpans spans;
  RecordingSpans::GapState gaps;
  PmSampleBatch b = Samples(1000, 100, 10);
  EXPECT_EQ(spans.Filter(&b, &gaps), 0u);
  EXPECT_TRUE(b.event.sample_start_ns.empty());
  EXPECT_TRUE(b.event.values.empty());
}

TEST(PmSpansTest, AnOpenSpanKeepsEverythingFromItsStart) {
  RecordingSpans spans;
  spans.Open(1250);  // mid-sample: the sample 1200..1300 overlaps it
  RecordingSpans::GapState gaps;
  PmSampleBatch b = Samples(1000, 100, 10);
  EXPECT_EQ(spans.Filter(&b, &gaps), 0u);
  ASSERT_EQ(b.event.sample_start_ns.size(), 8u);
  EXPECT_EQ(b.event.sample_start_ns.front(), 1200u);
  EXPECT_EQ(b.event.sample_end_ns.back(), 2000u);
  ASSERT_EQ(b.event.values.size(), 16u);
  EXPECT_EQ(b.event.values[0], 2.0f);  // rows moved with their timestamps
  EXPECT_EQ(b.event.values[1], 20.0f);
}

TEST(PmSpansTest, ShortWindowsKeepTheirSamplesFromALaterHarvest) {
  // Two capture windows of 300 ns each, closed long before the poll thread
  // harvests the samples: each keeps exactly the samples overlapping it.
  RecordingSpans spans;
  spans.Open(1300);
  spans.Close(1600);
  spans.Close(1700);  // no-op: closed already
  spans.Open(2500);
  spans.Open(2550);  // no-op: open already
  spans.Close(2800);
  RecordingSpans::GapState gaps;
  PmSampleBatch b = Samples(1000, 100, 30);
  EXPECT_FALSE(spans.Overlaps(1000, 1200));
  EXPECT_TRUE(spans.Overlaps(1200, 1300));
  EXPECT_FALSE(spans.Overlaps(1700, 2400));
  EXPECT_TRUE(spans.Overlaps(2800, 2900));
  EXPECT_EQ(spans.Filter(&b, &gaps), 0u);  // the gap between windows is not a loss
  std::vector<uint64_t> starts(b.event.sample_start_ns.begin(), b.event.sample_start_ns.end());
  EXPECT_EQ(starts, (std::vector<uint64_t>{1200, 1300, 1400, 1500, 1600, 2400, 2500, 2600, 2700,
                                            2800}));
}

TEST(PmSpansTest, GapsInsideASpanCountTheSamplesTheyWouldHaveHeld) {
  RecordingSpans spans;
  spans.Open(0);
  RecordingSpans::GapState gaps;
  PmSampleBatch b = Samples(1000, 100, 20, {5, 6, 7, 12});
  EXPECT_EQ(spans.Filter(&b, &gaps), 4u);
  EXPECT_EQ(b.event.sample_start_ns.size(), 16u);
  // Across batches: the device's last sample carries over.
  PmSampleBatch next = Samples(1000, 100, 25, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                                               15, 16, 17, 18, 19, 20, 21});
  EXPECT_EQ(spans.Filter(&next, &gaps), 2u);  // 20 and 21
  EXPECT_EQ(next.event.sample_start_ns.size(), 3u);
}

TEST(PmSpansTest, JitterShorterThanHalfAnIntervalIsNoLoss) {
  RecordingSpans spans;
  spans.Open(0);
  RecordingSpans::GapState gaps;
  PmSampleBatch b;
  b.event.interval_ns = 100;
  for (uint64_t t : {1000, 1140, 1260, 1400}) {
    b.event.sample_start_ns.push_back(t);
    b.event.sample_end_ns.push_back(t + 100);
  }
  b.event.values.assign(4, 1.0f);
  EXPECT_EQ(spans.Filter(&b, &gaps), 0u);
  EXPECT_EQ(b.event.sample_start_ns.size(), 4u);
}

}  // namespace
}  // namespace sightline::collect
