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

// A native stack once per (Python stack, API, native caller); calls without
// a Python stack or without a known caller always capture; past the key
// bound every call captures again.
TEST(CallStacksTest, NativeStackOncePerPythonStackApiAndCaller) {
  NativeStackOnce once(3);
  bool remember = false;
  EXPECT_EQ(once.Decide(7, 1, 0x1000, 100, &remember), 0u);
  EXPECT_TRUE(remember);
  EXPECT_EQ(once.Decide(7, 1, 0x1000, 101, &remember), 100u);  // shares call 100's
  EXPECT_FALSE(remember);
  EXPECT_EQ(once.Decide(7, 1, 0x1000, 102, &remember), 100u);
  // The same line and API from another library (cuBLAS's own cudaMalloc
  // under a line whose first cudaMalloc came from PyTorch's allocator).
  EXPECT_EQ(once.Decide(7, 1, 0x2000, 103, &remember), 0u);
  EXPECT_TRUE(remember);
  EXPECT_EQ(once.Decide(7, 1, 0x2000, 104, &remember), 103u);
  EXPECT_EQ(once.Decide(7, 2, 0x1000, 105, &remember), 0u);  // another API
  EXPECT_EQ(once.Decide(0, 1, 0x1000, 106, &remember), 0u);  // no Python stack: every call
  EXPECT_FALSE(remember);
  EXPECT_EQ(once.Decide(0, 1, 0x1000, 107, &remember), 0u);
  EXPECT_EQ(once.Decide(8, 1, 0, 108, &remember), 0u);  // caller not found: every call
  EXPECT_EQ(once.Decide(8, 1, 0, 109, &remember), 0u);
  EXPECT_FALSE(remember);
  EXPECT_EQ(once.shared(), 3u);
  EXPECT_EQ(once.Decide(9, 1, 0x1000, 110, &remember), 0u);  // bound (3 keys) full
  EXPECT_FALSE(remember);
  EXPECT_EQ(once.Decide(9, 1, 0x1000, 111, &remember), 0u);
  EXPECT_EQ(once.Decide(7, 1, 0x1000, 112, &remember), 100u);
}

TEST(CallStacksTest, NativeStackOnceFromManyThreads) {
  NativeStackOnce once;
  std::atomic<int> captured{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      bool remember = false;
      for (uint32_t i = 0; i < 1000; ++i) {
        const uint32_t corr = 1 + t * 1000 + i;
        captured += once.Decide(1 + i % 10, 5, 0x4000, corr, &remember) == 0 ? 1 : 0;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(captured.load(), 10);
  EXPECT_EQ(once.shared(), 8000u - 10u);
}

// The caller is the first frame outside the CUDA side of the call, counted
// from libcupti's first frame (our own frames come before it: in the
// application's binary when sightline is linked in).
TEST(CallStacksTest, CallerIsTheFirstFrameOutsideTheCudaSide) {
  // 0x1..: our callback in the app's binary; 0x2..: libcupti; 0x3..:
  // libcuda / libcudart; 0x9..: the caller.
  auto side = [](uintptr_t a) {
    switch (a >> 8) {
      case 0x2: return FrameSide::kCupti;
      case 0x3: return FrameSide::kCuda;
      default: return FrameSide::kCaller;
    }
  };
  auto f = [](uintptr_t a) { return reinterpret_cast<void*>(a); };
  void* linked_in[] = {f(0x110), f(0x120), f(0x210), f(0x310), f(0x320), f(0x910), f(0x920)};
  EXPECT_EQ(FirstCallerAddress(linked_in, 7, side), 0x910u);
  void* injected[] = {f(0x310), f(0x210), f(0x310), f(0x930)};  // ours in a CUDA-side library
  EXPECT_EQ(FirstCallerAddress(injected, 4, side), 0x930u);
  void* no_cupti[] = {f(0x310), f(0x940)};
  EXPECT_EQ(FirstCallerAddress(no_cupti, 2, side), 0x940u);
  EXPECT_EQ(FirstCallerAddress(injected, 3, side), 0u);  // all on the CUDA side
  EXPECT_EQ(FirstCallerAddress(injected, 0, side), 0u);
  EXPECT_EQ(ClassifyModule("/usr/local/cuda/lib64/libcudart.so.13"), FrameSide::kCuda);
  EXPECT_EQ(ClassifyModule("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), FrameSide::kCuda);
  EXPECT_EQ(ClassifyModule("libcupti.so.2025.3.1"), FrameSide::kCupti);
  EXPECT_EQ(ClassifyModule("/opt/sightline/lib/libsightline_inject.so"), FrameSide::kCuda);
  EXPECT_EQ(ClassifyModule("/usr/lib/python3/torch/lib/libc10_cuda.so"), FrameSide::kCaller);
  EXPECT_EQ(ClassifyModule("/usr/lib/python3/nvidia/cublas/lib/libcublas.so.13"),
            FrameSide::kCaller);
  EXPECT_EQ(ClassifyModule("/work/libcudaops.so"), FrameSide::kCaller);
  EXPECT_EQ(ClassifyModule(nullptr), FrameSide::kCaller);
}

// A captured stack and one shared with it (the same correlation's id) end up
// as one interned stack; a share whose first stack is unknown gets none.
TEST(CallStacksTest, SharedStackGetsTheFirstOnesId) {
  StackCollector::WarmUp();
  StackCollector collector;
  NativeStackOnce once;
  // Python stack 7, API 1, from this test binary (not on the CUDA side).
  once.CaptureOrShare(&collector, 7, 1, 500);
  for (uint32_t c = 501; c < 504; ++c) once.CaptureOrShare(&collector, 7, 1, c);
  collector.Share(600, 999);  // names a stack never captured
  std::vector<RawStack> raw;
  collector.Take(&raw);
  ASSERT_EQ(raw.size(), 5u);
  EXPECT_TRUE(raw[0].shareable);
  EXPECT_GT(raw[0].depth, 2u);
  EXPECT_EQ(raw[1].same_as, 500u);
  EXPECT_EQ(raw[1].depth, 0u);
  FakeEventSink sink;
  StackSymbolizer symbolizer({});
  const uint32_t first = symbolizer.Symbolize(raw[0], &sink);
  ASSERT_NE(first, 0u);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(symbolizer.Symbolize(raw[i], &sink), first) << i;
  EXPECT_EQ(symbolizer.Symbolize(raw[4], &sink), 0u);
  EXPECT_EQ(sink.stacks.size(), 1u);
  EXPECT_EQ(once.shared(), 3u);
}

TEST(CallStacksTest, Demangle) {
  EXPECT_EQ(Demangle("_ZN3foo3barEi"), "foo::bar(int)");
  EXPECT_EQ(Demangle("main"), "main");
  EXPECT_EQ(Demangle("_Znot_valid"), "_Znot_valid");
  EXPECT_EQ(Demangle(nullptr), "");
}

}  // namespace
}  // namespace sightline::collect
