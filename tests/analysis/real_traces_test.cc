// Golden tests on real traces recorded on the H200 (tests/data/examples/).
//
// Each example has a slow and a fixed variant: `<name>.slow.sltrace` must
// yield its expected finding ranked first, `<name>.fixed.sltrace` must not
// raise it at all. The expected rule of each example is listed below; an
// example whose traces are absent is skipped (they are recorded on the GPU
// machine by the collector).
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"

namespace sightline::analysis {
namespace {

struct Example {
  const char* name;  // file stem under tests/data/examples/
  const char* rule;  // finding expected first on the slow variant
};

constexpr Example kExamples[] = {
    {"cpu_bound", "cpu_bound"},
    {"kernel_fragmentation", "kernel_fragmentation"},
    {"sync_api", "sync_api"},
    {"sync_memcpy", "sync_memcpy"},
    {"pageable_memcpy", "pageable_memcpy"},
    {"stream_serialization", "stream_serialization"},
    {"copy_compute_overlap", "copy_compute_overlap"},
};

std::string DataDir() {
  const char* src = std::getenv("SIGHTLINE_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/data/examples/";
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

class RealTraceTest : public ::testing::TestWithParam<Example> {};

TEST_P(RealTraceTest, SlowVariantRanksItsFindingFirstFixedDoesNotRaiseIt) {
  const Example& e = GetParam();
  std::string slow = DataDir() + e.name + ".slow.sltrace";
  std::string fixed = DataDir() + e.name + ".fixed.sltrace";
  if (!Exists(slow) || !Exists(fixed)) GTEST_SKIP() << "no recorded traces for " << e.name;
  auto slow_report = Analyze(std::vector<std::string>{slow}, {});
  ASSERT_TRUE(slow_report.ok()) << slow_report.status();
  ASSERT_FALSE(slow_report->findings.empty()) << slow;
  EXPECT_EQ(slow_report->findings.front().rule, e.rule) << slow;
  auto fixed_report = Analyze(std::vector<std::string>{fixed}, {});
  ASSERT_TRUE(fixed_report.ok()) << fixed_report.status();
  for (const Finding& f : fixed_report->findings) EXPECT_NE(f.rule, e.rule) << fixed;
}

INSTANTIATE_TEST_SUITE_P(Examples, RealTraceTest, ::testing::ValuesIn(kExamples),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sightline::analysis
