// The Python hook's allocator marker (lib/trace/torch_memory_marker.h), shared
// by the analyzer and the monitor.
#include "lib/trace/torch_memory_marker.h"

#include <gtest/gtest.h>

namespace sightline::trace {
namespace {

TEST(TorchMemoryMarker, ParsesTheHooksMarker) {
  TorchMemoryMarker m;
  ASSERT_TRUE(ParseTorchMemoryMarker(
      "sightline.torch_memory device=3 allocated=1024 max_allocated=4096 reserved=8589934592", &m));
  EXPECT_EQ(m.device, 3u);
  EXPECT_EQ(m.allocated, 1024u);
  EXPECT_EQ(m.max_allocated, 4096u);
  EXPECT_EQ(m.reserved, 8589934592u);
  EXPECT_EQ(m.optimizer, 0u) << "opt= absent (earlier hooks): the first optimizer";
  ASSERT_TRUE(ParseTorchMemoryMarker("sightline.torch_memory device=0 allocated=1 opt=2", &m));
  EXPECT_EQ(m.optimizer, 2u);
  // Unknown keys and fields without '=' are skipped; missing values stay 0.
  ASSERT_TRUE(ParseTorchMemoryMarker("sightline.torch_memory future=7 junk device=0 allocated=9", &m));
  EXPECT_EQ(m.device, 0u);
  EXPECT_EQ(m.allocated, 9u);
  EXPECT_EQ(m.reserved, 0u);
  EXPECT_TRUE(m.has_memory);
}

TEST(TorchMemoryMarker, AStepMarkWithoutByteCountsHasNoMemory) {
  // The monitor's hook between allocator reads: a step boundary only.
  TorchMemoryMarker m;
  ASSERT_TRUE(ParseTorchMemoryMarker("sightline.torch_memory device=1 opt=0", &m));
  EXPECT_EQ(m.device, 1u);
  EXPECT_FALSE(m.has_memory);
  ASSERT_TRUE(ParseTorchMemoryMarker("sightline.torch_memory device=1 reserved=0 opt=0", &m));
  EXPECT_TRUE(m.has_memory) << "a zero count is still a count";
}

TEST(TorchMemoryMarker, RejectsWhatIsNotOurs) {
  TorchMemoryMarker m;
  m.allocated = 77;
  EXPECT_FALSE(ParseTorchMemoryMarker("train_step", &m));
  EXPECT_FALSE(ParseTorchMemoryMarker("sightline.torch_memory", &m)) << "prefix needs its space";
  EXPECT_FALSE(ParseTorchMemoryMarker("sightline.torch_memory allocated=5", &m)) << "no device";
  EXPECT_FALSE(ParseTorchMemoryMarker("sightline.torch_memory device=70000", &m)) << "> 65535";
  EXPECT_FALSE(ParseTorchMemoryMarker("sightline.torch_memory device=0 allocated=-1", &m));
  EXPECT_FALSE(ParseTorchMemoryMarker("sightline.torch_memory device=0 allocated=", &m));
  EXPECT_FALSE(ParseTorchMemoryMarker("sightline.torch_memory device=0 allocated=12345678901234567890",
                                      &m)) << "20 digits could overflow";
  EXPECT_EQ(m.allocated, 77u) << "untouched on failure";
}

}  // namespace
}  // namespace sightline::trace
