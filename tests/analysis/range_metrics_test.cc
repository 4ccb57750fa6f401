// lib/analysis/range_metrics.h on synthetic traces: metric sets of an NVTX
// range measured as a whole (--metrics-range nvtx:NAME) read back from the
// trace (both build paths: the wire format carries the set's kind and span),
// the mean over the complete sets in the analysed window, and the outputs.
#include "lib/analysis/range_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lib/export/report_render.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::ms;
using testing::TraceBuilder;
using testing::us;

constexpr char kSm[] = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr char kTime[] = "gpu__time_duration.sum";

void RangeSet(TraceBuilder* b, uint64_t start, uint64_t end, uint32_t instances, uint32_t passes,
              uint32_t collected, const std::vector<std::pair<std::string, double>>& values) {
  MetricRangeEvent m;
  m.user_range = true;
  m.start_ns = start;
  m.end_ns = end;
  m.range_name_id = b->trace().Intern("train_step");
  m.launches_spanned = instances;
  m.num_passes = passes;
  m.passes_collected = collected;
  for (const auto& [name, value] : values) m.values.push_back({b->trace().Intern(name), value});
  b->trace().metric_ranges.push_back(m);
}

// 12 steps of 1 ms (a 2 ms warm-up step first), each an NVTX range with a
// kernel; three complete sets of 3 passes and one incomplete at the end.
std::vector<SyntheticTrace> Trace() {
  TraceBuilder b;
  b.trace().header.devices.push_back(testing::H200());
  uint64_t t = ms(10);
  std::vector<uint64_t> starts;
  for (int i = 0; i < 12; ++i) {
    const uint64_t len = i == 0 ? ms(2) : ms(1);
    starts.push_back(t);
    b.Nvtx("train_step", t, t + len - us(50));
    b.Kernel("gemm", t + us(20), t + len - us(100));
    t += len;
  }
  auto end_of = [&](int i) { return starts[i] + (i == 0 ? ms(2) : ms(1)) - us(50); };
  RangeSet(&b, starts[0], end_of(2), 3, 3, 3, {{kSm, 10}, {kTime, 1.9e6}});
  RangeSet(&b, starts[3], end_of(5), 3, 3, 3, {{kSm, 40}, {kTime, 0.9e6}});
  RangeSet(&b, starts[6], end_of(8), 3, 3, 3, {{kSm, 60}, {kTime, 0.9e6}});
  RangeSet(&b, starts[9], end_of(10), 2, 3, 2, {});
  return {b.trace()};
}

class RangeMetricsTest : public ::testing::TestWithParam<testing::BuildPath> {};

TEST_P(RangeMetricsTest, SetsAndTheirMeanOverTheWholeTrace) {
  Report r = testing::AnalyzeTraces(Trace(), GetParam());
  ASSERT_EQ(r.range_metrics.size(), 1u);
  const RangeMetricsRow& row = r.range_metrics[0];
  EXPECT_EQ(row.range, "train_step");
  EXPECT_EQ(row.sets, 4u);
  EXPECT_EQ(row.complete, 3u);
  EXPECT_EQ(row.instances, 11u);
  EXPECT_TRUE(row.from_window);
  ASSERT_EQ(row.set_rows.size(), 4u);
  EXPECT_EQ(row.set_rows[0].start_ns, ms(10));
  EXPECT_EQ(row.set_rows[3].passes_collected, 2u);
  EXPECT_FALSE(row.set_rows[3].complete);
  ASSERT_EQ(row.metrics.size(), 2u);
  EXPECT_EQ(row.metrics[1].name, kSm);
  EXPECT_DOUBLE_EQ(row.metrics[1].value, (10 + 40 + 60) / 3.0);
  EXPECT_EQ(row.metrics[1].samples, 3u);
  // Not kernel metrics: the kernel table and its coverage have none.
  EXPECT_FALSE(r.metrics_coverage.present);
  for (const KernelRow& k : r.kernels) EXPECT_TRUE(k.metrics.empty());
}

// The analyzer's default scope starts after the warm-up step: the set that
// holds it is outside the window and out of the mean.
TEST_P(RangeMetricsTest, TheSteadyStateMeanLeavesTheWarmUpSetOut) {
  Report r = testing::AnalyzeTracesAsShipped(Trace(), GetParam());
  ASSERT_EQ(r.range_metrics.size(), 1u);
  const RangeMetricsRow& row = r.range_metrics[0];
  EXPECT_FALSE(row.set_rows[0].in_window) << r.summary.window_start_ns;
  EXPECT_TRUE(row.set_rows[1].in_window);
  EXPECT_TRUE(row.set_rows[2].in_window);
  EXPECT_EQ(row.complete_in_window, 2u);
  ASSERT_EQ(row.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(row.metrics[1].value, 50);
  EXPECT_DOUBLE_EQ(row.metrics[0].value, 0.9e6);
}

TEST_P(RangeMetricsTest, JsonAndText) {
  Report r = testing::AnalyzeTraces(Trace(), GetParam());
  const std::string json = exporter::RenderReportJson(r);
  const size_t at = json.find("\"range_metrics\": [");
  ASSERT_NE(at, std::string::npos);
  const std::string part = json.substr(at, 2000);
  EXPECT_TRUE(absl::StrContains(part, "\"range\": \"train_step\"")) << part;
  EXPECT_TRUE(absl::StrContains(part, "\"sets\": 4,")) << part;
  EXPECT_TRUE(absl::StrContains(part, "\"passes_collected\": 2,")) << part;
  EXPECT_TRUE(absl::StrContains(part, "\"complete\": false")) << part;
  const std::string text = exporter::RenderReportText(r);
  EXPECT_TRUE(absl::StrContains(text, "Metrics of NVTX range 'train_step' as a whole: 3 complete "
                                      "sets of 4"))
      << text;
  EXPECT_TRUE(absl::StrContains(text, "36.7%")) << text;
  // A report without range metrics has an empty table.
  Report none;
  EXPECT_TRUE(absl::StrContains(exporter::RenderReportJson(none), "\"range_metrics\": []"));
}

INSTANTIATE_TEST_SUITE_P(BothPaths, RangeMetricsTest,
                         ::testing::Values(testing::BuildPath::kDirect,
                                           testing::BuildPath::kWireFormat));

}  // namespace
}  // namespace sightline::analysis
