// stream_capture.h: the capture calls the collector counts, whether a
// stream is still capturing after cuStreamEndCapture, and the per-thread
// default stream a _ptsz call onto 0 means. Against a fake driver entry
// point (the GPU rows are gpu_fault_matrix's graph_in_pass, coop_in_pass
// and graph_capture_metrics).
#include "lib/collect/stream_capture.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace sightline::collect {
namespace {

std::map<CUstream, CUstreamCaptureStatus> g_status;
CUresult g_query_result = CUDA_SUCCESS;
std::vector<CUstream> g_queried;

CUresult FakeIsCapturing(CUstream s, CUstreamCaptureStatus* status) {
  g_queried.push_back(s);
  if (g_query_result != CUDA_SUCCESS) return g_query_result;
  auto it = g_status.find(s);
  *status = it == g_status.end() ? CU_STREAM_CAPTURE_STATUS_NONE : it->second;
  return CUDA_SUCCESS;
}

class StreamCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_status.clear();
    g_query_result = CUDA_SUCCESS;
    g_queried.clear();
    api_.is_capturing = FakeIsCapturing;
  }
  StreamCaptureApi api_;
};

CUstream Stream(uintptr_t v) { return reinterpret_cast<CUstream>(v); }

TEST_F(StreamCaptureTest, OnlyStreamsUnderCaptureAreSkipped) {
  g_status[Stream(0x1000)] = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  g_status[Stream(0x2000)] = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  EXPECT_TRUE(LaunchIsCaptured(api_, Stream(0x1000)));
  EXPECT_TRUE(LaunchIsCaptured(api_, Stream(0x2000)));  // its launch does not run either
  EXPECT_FALSE(LaunchIsCaptured(api_, Stream(0x3000)));
  EXPECT_FALSE(LaunchIsCaptured(api_, nullptr));
}

TEST_F(StreamCaptureTest, AFailedQueryCountsAsCaptured) {
  // The legacy stream while another thread captures in global mode: the
  // query says CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, and so will the launch.
  g_query_result = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  EXPECT_TRUE(LaunchIsCaptured(api_, nullptr));
}

TEST_F(StreamCaptureTest, WithoutTheDriverEntryPointNothingIsSkipped) {
  StreamCaptureApi none;
  EXPECT_FALSE(LaunchIsCaptured(none, Stream(0x1000)));
}

TEST_F(StreamCaptureTest, PerThreadLaunchesOntoStreamZeroQueryThePerThreadStream) {
  EXPECT_EQ(LaunchQueryStream(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, nullptr),
            CU_STREAM_PER_THREAD);
  EXPECT_EQ(LaunchQueryStream(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, nullptr),
            CU_STREAM_PER_THREAD);
  EXPECT_EQ(LaunchQueryStream(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nullptr), nullptr);
  EXPECT_EQ(LaunchQueryStream(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, Stream(0x1000)),
            Stream(0x1000));
  g_status[CU_STREAM_PER_THREAD] = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  EXPECT_TRUE(LaunchIsCaptured(
      api_, LaunchQueryStream(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, nullptr)));
  EXPECT_FALSE(LaunchIsCaptured(
      api_, LaunchQueryStream(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nullptr)));
}

TEST_F(StreamCaptureTest, CaptureCallsAreRecognised) {
  EXPECT_TRUE(IsStreamCaptureBeginCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2));
  EXPECT_TRUE(IsStreamCaptureBeginCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz));
  EXPECT_FALSE(IsStreamCaptureBeginCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture));
  EXPECT_TRUE(IsStreamCaptureEndCbid(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz));
  EXPECT_FALSE(IsStreamCaptureEndCbid(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_EQ(LaunchQueryStream(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, nullptr),
            CU_STREAM_PER_THREAD);
}

}  // namespace
}  // namespace sightline::collect
