// The link-in C API and the RAII header, on a machine where CUPTI cannot
// attach (no GPU/driver here; on a GPU machine the same calls succeed): every
// call is safe, reports through its return value and last_error, and the
// inactive range push/pop path does nothing.
#include <cstring>
#include <thread>

#include "gtest/gtest.h"
#include "sightline/sightline.hpp"

namespace {

bool HaveGpuDriver() {
  // Built for the CPU CI: the assertions below hold where CUPTI cannot start.
  return std::getenv("SIGHTLINE_TEST_HAS_GPU") != nullptr;
}

TEST(CApiTest, VersionIsTheProjectVersion) {
  EXPECT_STREQ(sightline_version(), SIGHTLINE_EXPECTED_VERSION);
}

TEST(CApiTest, InactiveRangesAndStepsAreNoOps) {
  // No capture window open: push/pop/step return at once, from any thread.
  std::thread t([] {
    for (int i = 0; i < 100000; ++i) {
      sightline_range_push("r");
      sightline_range_pop();
      sightline_step(i);
    }
  });
  t.join();
  sightline_range_pop();  // unbalanced pop: ignored
  SUCCEED();
}

TEST(CApiTest, StartWithoutCuptiFailsCleanly) {
  if (HaveGpuDriver()) GTEST_SKIP() << "GPU machine";
  EXPECT_EQ(sightline_start(), -1);
  EXPECT_NE(std::strlen(sightline_last_error()), 0u);
  EXPECT_NE(std::strstr(sightline_last_error(), "CUPTI"), nullptr) << sightline_last_error();
  EXPECT_EQ(sightline_stop(), -1);
  EXPECT_EQ(sightline_flush(), -1);
  {
    sightline::Session session;
    EXPECT_FALSE(session.ok());
    sightline::Step step(1);
    sightline::ScopedRange range("inside");
  }
}

}  // namespace
