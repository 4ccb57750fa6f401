// Synthetic CUPTI buffer → converter → TraceWriter → bytes → TraceReader: what
// the collector writes is what the analyzer reads.
#include "gtest/gtest.h"
#include "lib/collect/activity_drain.h"
#include "lib/collect/event_sink.h"
#include "lib/collect/record_converter.h"
#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/collect/synthetic_records.h"

namespace sightline::collect {
namespace {

struct Collect : trace::EventVisitor {
  std::vector<KernelEvent> kernels;
  std::vector<NvtxRangeEvent> ranges;
  std::vector<NcclEvent> nccl;
  std::vector<ApiEvent> apis;
  std::vector<LossReport> losses;
  void OnKernel(const KernelEvent& e) override { kernels.push_back(e); }
  void OnNvtxRange(const NvtxRangeEvent& e) override { ranges.push_back(e); }
  void OnNccl(const NcclEvent& e) override { nccl.push_back(e); }
  void OnApi(const ApiEvent& e) override { apis.push_back(e); }
  void OnLoss(const LossReport& e) override { losses.push_back(e); }
};

TEST(TraceRoundTripTest, ConvertedRecordsReadBack) {
  std::string bytes;
  {
    trace::TraceWriter writer(trace::OpenMemorySink(&bytes));
    TraceHeaderData header;
    header.capture_range = "whole";
    ASSERT_TRUE(writer.Begin(header));
    TraceWriterEventSink sink(&writer);
    RecordConverter converter(&sink, {}, [](ApiDomain, uint32_t) { return "cudaLaunchKernel"; });
    testing::PackedBuffer buffer;
    for (int i = 0; i < 100; ++i) {
      buffer.Append(testing::Kernel(1000 + i * 100, 1050 + i * 100, "_Z4stepv", i + 1));
      buffer.Append(testing::Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 990 + i * 100,
                                 995 + i * 100, i + 1));
    }
    buffer.Append(testing::Kernel(50000, 60000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 500));
    buffer.Append(testing::Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 900, "train", nullptr, 5));
    buffer.Append(testing::Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 70000, nullptr, nullptr, 5));
    CompletedBuffer c{buffer.data(), buffer.size(), 0};
    DrainActivityBuffer(c, &testing::PackedBuffer::Next, &converter);
    LossInputs losses;
    losses.cupti_dropped_records = 3;
    sink.Add(MakeLossReport(losses, 80000));
    ASSERT_TRUE(writer.Finish("exit"));
  }
  auto reader = trace::TraceReader::FromBuffer("roundtrip", bytes);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Collect seen;
  ASSERT_TRUE((*reader)->ReadAll(seen).ok());
  const trace::Integrity& in = (*reader)->integrity();
  EXPECT_TRUE(in.complete) << in.reason;
  EXPECT_EQ(seen.kernels.size(), 101u);
  EXPECT_EQ(seen.apis.size(), 100u);
  ASSERT_EQ(seen.ranges.size(), 1u);
  EXPECT_EQ((*reader)->strings().Get(seen.ranges[0].name_id), "train");
  ASSERT_EQ(seen.nccl.size(), 1u);
  EXPECT_EQ(seen.nccl[0].op, NcclOp::kAllReduce);
  EXPECT_EQ((*reader)->strings().Get(seen.kernels[0].name_id), "_Z4stepv");
  EXPECT_EQ(seen.kernels[0].grid_x, 132u);
  EXPECT_EQ(seen.kernels[0].registers_per_thread, 40u);
  EXPECT_EQ(in.counts[static_cast<int>(EventKind::kKernel)], 101u);
  EXPECT_EQ(in.losses.cupti_dropped_records, 3u);
  EXPECT_EQ((*reader)->header().capture_range, "whole");
}

}  // namespace
}  // namespace sightline::collect
