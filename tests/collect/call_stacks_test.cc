// Call-stack capture and symbolisation.
#include "lib/collect/call_stacks.h"

#include <atomic>
#include <thread>
#include <vector>

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

// A native stack once per (Python stack, API); calls without a Python stack
// always capture; past the key bound every call captures again.
TEST(CallStacksTest, NativeStackOncePerPythonStackAndApi) {
  NativeStackOnce once(3);
  EXPECT_TRUE(once.First(7, 1));
  EXPECT_FALSE(once.First(7, 1));
  EXPECT_FALSE(once.First(7, 1));
  EXPECT_TRUE(once.First(7, 2));  // another API under the same Python stack
  EXPECT_TRUE(once.First(8, 1));  // another Python stack
  EXPECT_TRUE(once.First(0, 1));  // no Python stack: every call
  EXPECT_TRUE(once.First(0, 1));
  EXPECT_EQ(once.shared(), 2u);
  EXPECT_TRUE(once.First(9, 1));  // the bound (3 keys) is full: not remembered
  EXPECT_TRUE(once.First(9, 1));
  EXPECT_FALSE(once.First(8, 1));
}

TEST(CallStacksTest, NativeStackOnceFromManyThreads) {
  NativeStackOnce once;
  std::atomic<int> captured{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (uint32_t i = 0; i < 1000; ++i) captured += once.First(1 + i % 10, 5) ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(captured.load(), 10);
  EXPECT_EQ(once.shared(), 8000u - 10u);
}

TEST(CallStacksTest, Demangle) {
  EXPECT_EQ(Demangle("_ZN3foo3barEi"), "foo::bar(int)");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Znot_valid"), "_Znot_valid");
  EXPECT_EQ(Demangle(nullptr), "");
}

}  // namespace
}  // namespace sightline::collect
