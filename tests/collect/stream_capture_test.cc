// stream_capture.h: the captures in progress the collector tracks from the
// driver's begin/end callbacks (while any is, no launch reaches the metrics
// hook), and which capture a call names. The GPU rows are
// gpu_fault_matrix's graph_in_pass, coop_in_pass and graph_capture_metrics.
#include "lib/collect/stream_capture.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace sightline::collect {
namespace {

CUstream Stream(uintptr_t v) { return reinterpret_cast<CUstream>(v); }
constexpr uint64_t kA = 0x1000, kB = 0x2000;

TEST(StreamCaptureTracker, ActiveFromTheBeginsEnterToTheEndsExit) {
  StreamCaptureTracker t;
  EXPECT_FALSE(t.active());
  t.BeginEnter();
  EXPECT_TRUE(t.active());  // before the driver has begun it: no launch may reach the hook
  t.BeginExit(kA, CUDA_SUCCESS);
  EXPECT_TRUE(t.active());
  EXPECT_EQ(t.open(), 1u);
  t.EndExit(kA, CUDA_SUCCESS);
  EXPECT_FALSE(t.active());
  EXPECT_EQ(t.open(), 0u);
}

TEST(StreamCaptureTracker, AFailedBeginLeavesNothingInProgress) {
  StreamCaptureTracker t;
  t.BeginEnter();
  t.BeginExit(kA, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_FALSE(t.active());
  EXPECT_EQ(t.open(), 0u);
}

TEST(StreamCaptureTracker, AnInvalidatedOrUnjoinedCaptureEndsToo) {
  StreamCaptureTracker t;
  for (CUresult r : {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, CUDA_ERROR_STREAM_CAPTURE_UNJOINED}) {
    t.BeginEnter();
    t.BeginExit(kA, CUDA_SUCCESS);
    t.EndExit(kA, r);
    EXPECT_FALSE(t.active()) << r;
  }
}

// An end call that did not end a capture — a stream that was not capturing
// (ILLEGAL_STATE), another thread's capture (WRONG_THREAD), another stream
// (its key) — must not end the one in progress, or the hook would run
// during it and invalidate it.
TEST(StreamCaptureTracker, EndsThatEndedNothingLeaveTheCaptureInProgress) {
  StreamCaptureTracker t;
  t.BeginEnter();
  t.BeginExit(kA, CUDA_SUCCESS);
  t.EndExit(kA, CUDA_ERROR_ILLEGAL_STATE);
  t.EndExit(kA, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  t.EndExit(kA, CUDA_ERROR_INVALID_VALUE);
  t.EndExit(kB, CUDA_SUCCESS);
  t.EndExit(kB, CUDA_SUCCESS);  // twice: still not A's
  EXPECT_TRUE(t.active());
  EXPECT_EQ(t.open(), 1u);
  t.EndExit(kA, CUDA_SUCCESS);
  EXPECT_FALSE(t.active());
}

TEST(StreamCaptureTracker, TwoCapturesAtOnce) {
  StreamCaptureTracker t;
  t.BeginEnter();
  t.BeginExit(kA, CUDA_SUCCESS);
  t.BeginEnter();
  t.BeginExit(kB, CUDA_SUCCESS);
  t.EndExit(kA, CUDA_SUCCESS);
  EXPECT_TRUE(t.active());
  t.EndExit(kB, CUDA_SUCCESS);
  EXPECT_FALSE(t.active());
}

TEST(StreamCaptureTracker, WithheldLaunchesAreCounted) {
  StreamCaptureTracker t;
  t.CountWithheld();
  t.CountWithheld();
  EXPECT_EQ(t.withheld(), 2u);
}

TEST(StreamCaptureTracker, ThreadsBeginAndEndTheirOwnCaptures) {
  StreamCaptureTracker t;
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&t, i] {
      for (int k = 0; k < 1000; ++k) {
        const uint64_t key = 0x10000 * (i + 1);
        t.BeginEnter();
        t.BeginExit(key, CUDA_SUCCESS);
        EXPECT_TRUE(t.active());
        t.EndExit(key, CUDA_SUCCESS);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(t.active());
  EXPECT_EQ(t.open(), 0u);
}

TEST(CaptureKey, ThePerThreadDefaultStreamIsTheThreads) {
  // A _ptsz call onto 0 and CU_STREAM_PER_THREAD name the calling thread's
  // stream: one key per thread, apart from every stream handle.
  const uint64_t t1 = 7, t2 = 8;
  EXPECT_EQ(CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz, nullptr, t1),
            CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, nullptr, t1));
  EXPECT_EQ(CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, CU_STREAM_PER_THREAD, t1),
            CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, nullptr, t1));
  EXPECT_NE(CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, nullptr, t1),
            CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, nullptr, t2));
  EXPECT_EQ(CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, Stream(kA), t1), kA);
  EXPECT_EQ(CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, Stream(kA), t2), kA);
  EXPECT_NE(CaptureKey(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, nullptr, kA >> 1), kA);
}

TEST(CaptureKey, CaptureCallsAreRecognised) {
  EXPECT_TRUE(IsStreamCaptureBeginCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2));
  EXPECT_TRUE(IsStreamCaptureBeginCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz));
  EXPECT_FALSE(IsStreamCaptureBeginCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture));
  EXPECT_TRUE(IsStreamCaptureEndCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz));
  EXPECT_FALSE(IsStreamCaptureEndCbid(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
}

}  // namespace
}  // namespace sightline::collect
