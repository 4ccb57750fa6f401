// tests/analysis/synthetic.h — builds synthetic traces for golden tests.
//
// TraceBuilder fills a SyntheticTrace (one process / rank) with the events a
// real CUPTI trace has: an API call per launch on a host thread, the GPU
// activity with the same correlation id, NVTX ranges, ... Times are plain
// nanoseconds (use the us()/ms() helpers). Build() turns traces into a model
// either directly (ModelBuilder::AddSynthetic) or through the real trace
// format (TraceWriter → memory → TraceReader::FromBuffer), so every golden
// test also proves the wire round trip.
#ifndef SIGHTLINE_TESTS_ANALYSIS_SYNTHETIC_H_
#define SIGHTLINE_TESTS_ANALYSIS_SYNTHETIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/model.h"
#include "lib/analysis/report.h"

namespace sightline::analysis::testing {

constexpr uint64_t us(double v) { return static_cast<uint64_t>(v * 1e3); }
constexpr uint64_t ms(double v) { return static_cast<uint64_t>(v * 1e6); }

// An H200-like device 0 (cc 9.0, 132 SMs).
DeviceInfo H200(uint32_t id = 0);

class TraceBuilder {
 public:
  explicit TraceBuilder(int32_t rank = -1, std::string name = "synthetic");

  // Launches `kernel` on `stream`: cudaLaunchKernel on `thread` over
  // [api_start, api_start + api_ns], kernel over [start, end]. Returns the
  // correlation id.
  uint32_t Kernel(const std::string& kernel, uint64_t start, uint64_t end, uint32_t stream = 7,
                  uint64_t api_start = 0, uint64_t api_ns = 0, uint32_t thread = 1);
  // Kernel with an explicit launch configuration.
  uint32_t KernelWithConfig(const std::string& kernel, uint64_t start, uint64_t end,
                            const KernelEvent& config, uint32_t stream = 7);
  // A kernel without an API call (correlation id 0).
  void BareKernel(const std::string& kernel, uint64_t start, uint64_t end, uint32_t stream = 7);
  // A copy issued by `api` (e.g. "cudaMemcpyAsync") over [api_start, api_end].
  uint32_t Memcpy(CopyKind kind, MemoryKind host_kind, uint64_t bytes, uint64_t start,
                  uint64_t end, uint32_t stream, const std::string& api, uint64_t api_start,
                  uint64_t api_end, bool async, uint32_t thread = 1);
  // An API call with no GPU work (cudaStreamSynchronize, cudaMalloc...).
  uint32_t Api(const std::string& name, uint64_t start, uint64_t end, uint32_t thread = 1,
               uint32_t stack_id = 0);
  // An allocation call over [start, end] and its memory record (device 0)
  // at `start`; Release likewise. Returns the correlation id.
  uint32_t Allocate(uint64_t address, uint64_t bytes, uint64_t start, uint64_t end,
                    const std::string& api = "cudaMalloc_v3020",
                    MemoryKind kind = MemoryKind::kDevice, uint32_t stack_id = 0);
  uint32_t Release(uint64_t address, uint64_t bytes, uint64_t start, uint64_t end,
                   const std::string& api = "cudaFree_v3020",
                   MemoryKind kind = MemoryKind::kDevice);
  void Nvtx(const std::string& name, uint64_t start, uint64_t end, uint32_t thread = 1);
  void Step(uint64_t step, uint64_t timestamp, uint32_t thread = 1);
  void Capture(uint64_t start, uint64_t end, CaptureTrigger trigger, uint32_t index);
  // An NCCL kernel ("ncclDevKernel_AllReduce_Sum_f32_RING_LL") on `stream`.
  uint32_t NcclKernel(uint64_t start, uint64_t end, uint32_t stream = 13,
                      uint64_t api_start = 0);
  // An NCCL call as NCCL records it: its NVTX range with the payload
  // (communicator hash `comm`, message size, Send/Recv peer) on `thread`
  // over [call_start, call_end], the kernel's launch inside it and the kernel
  // on `stream` over [start, end]. comm_rank: the rank in the communicator
  // (-1: unknown, the trace's rank is used). Returns the correlation id.
  uint32_t NcclCall(NcclOp op, uint64_t comm, uint64_t bytes, uint64_t call_start,
                    uint64_t call_end, uint64_t start, uint64_t end, int32_t peer = -1,
                    uint32_t stream = 13, uint32_t thread = 1, int32_t comm_rank = -1);
  void Metric(uint32_t correlation_id, const std::string& metric, double value);
  // A CUPTI overhead record: host-side on `thread`, or on `device` (thread 0).
  void Overhead(uint64_t start, uint64_t end, uint32_t thread, uint32_t device);
  uint32_t Stack(const std::vector<std::string>& functions);
  void SetClock(uint64_t trace_ns, uint64_t realtime_ns);

  SyntheticTrace& trace() { return trace_; }
  const SyntheticTrace& trace() const { return trace_; }

 private:
  SyntheticTrace trace_;
  uint32_t next_correlation_ = 1;
};

// Encodes a synthetic trace with TraceWriter into bytes (the .sltrace format).
std::string EncodeTrace(const SyntheticTrace& trace, size_t chunk_bytes = 1 << 20);

enum class BuildPath { kDirect, kWireFormat };
absl::StatusOr<TimelineModel> Build(const std::vector<SyntheticTrace>& traces, BuildPath path);
// Build + AnalyzeModel; fails the test (ADD_FAILURE) on a build error.
// Rules in isolation: the whole trace (--window all) and no root-cause
// folding (root_causes=0) unless `options` say otherwise.
Report AnalyzeTraces(const std::vector<SyntheticTrace>& traces, BuildPath path,
                     const AnalysisOptions& options = {});
// With the analyzer's defaults (steady-state scope, one finding per cause).
Report AnalyzeTracesAsShipped(const std::vector<SyntheticTrace>& traces, BuildPath path,
                              const AnalysisOptions& options = {});

const Finding* FindFinding(const Report& report, const std::string& rule);
int FindingRank(const Report& report, const std::string& rule);  // -1 when absent

}  // namespace sightline::analysis::testing

#endif  // SIGHTLINE_TESTS_ANALYSIS_SYNTHETIC_H_
