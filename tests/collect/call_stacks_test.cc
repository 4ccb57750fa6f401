// Call-stack capture and symbolisation.
#include "lib/collect/call_stacks.h"

#include "gtest/gtest.h"
#include "tests/collect/fake_event_sink.h"

extern "C" __attribute__((noinline, visibility("default"))) void sightline_test_capture_here(
    sightline::collect::StackCollector* c) {
  c->Capture(1234);
  asm volatile("" ::: "memory");
}

namespace sightline::collect {
namespace {

TEST(CallStacksTest, CapturesAndNamesTheCallingFunction) {
  StackCollector::WarmUp();
  StackCollector collector;
  sightline_test_capture_here(&collector);
  std::vector<RawStack> raw;
  collector.Take(&raw);
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_EQ(raw[0].correlation_id, 1234u);
  EXPECT_GT(raw[0].depth, 2u);
  FakeEventSink sink;
  StackSymbolizer symbolizer({});
  uint32_t id = symbolizer.Symbolize(raw[0], &sink);
  ASSERT_EQ(id, 1u);
  const CallStack& stack = sink.stacks[0];
  bool found = false;
  for (const StackFrame& f : stack.frames) {
    if (f.function_id != 0 && sink.Str(f.function_id) == "sightline_test_capture_here") {
      found = true;
      EXPECT_NE(f.module_id, 0u);
      EXPECT_NE(f.address, 0u);
    }
  }
  EXPECT_TRUE(found);
}

TEST(CallStacksTest, SkippedModulesAreCutFromTheTop) {
  StackCollector collector;
  collector.Capture(1);
  std::vector<RawStack> raw;
  collector.Take(&raw);
  ASSERT_EQ(raw.size(), 1u);
  FakeEventSink all_sink, cut_sink;
  StackSymbolizer all({});
  // The test binary's own name starts with "collect_": cut it.
  StackSymbolizer cut({"collect_"});
  all.Symbolize(raw[0], &all_sink);
  cut.Symbolize(raw[0], &cut_sink);
  ASSERT_EQ(all_sink.stacks.size(), 1u);
  if (!cut_sink.stacks.empty()) {
    EXPECT_LT(cut_sink.stacks[0].frames.size(), all_sink.stacks[0].frames.size());
  }
}

TEST(CallStacksTest, BoundedQueueCountsDrops) {
  StackCollector collector(2);
  RawStack raw;
  raw.depth = 0;
  collector.Push(raw);
  collector.Push(raw);
  collector.Push(raw);
  EXPECT_EQ(collector.dropped(), 1u);
  std::vector<RawStack> out;
  collector.Take(&out);
  EXPECT_EQ(out.size(), 2u);
}

TEST(CallStacksTest, Demangle) {
  EXPECT_EQ(Demangle("_ZN3foo3barEi"), "foo::bar(int)");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Znot_valid"), "_Znot_valid");
  EXPECT_EQ(Demangle(nullptr), "");
}

}  // namespace
}  // namespace sightline::collect
