// lib/analysis/model_builder_impl.h — internal state of ModelBuilder, shared by
// model_builder.cc (the streaming pass) and model_finish.cc (sort, link,
// aggregate). Not part of the analyzer's API.
#ifndef SIGHTLINE_LIB_ANALYSIS_MODEL_BUILDER_IMPL_H_
#define SIGHTLINE_LIB_ANALYSIS_MODEL_BUILDER_IMPL_H_

#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "lib/analysis/chunked_buffer.h"
#include "lib/analysis/model.h"

namespace sightline::analysis {

// Cheap multiply-xor hash of a launch configuration (hashed once per kernel
// whose configuration differs from its previous launch).
struct LaunchConfigHash {
  size_t operator()(const LaunchConfig& c) const {
    const uint32_t fields[] = {c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z,
                               c.registers_per_thread, c.static_shared_bytes,
                               c.dynamic_shared_bytes, c.local_bytes_per_thread,
                               c.shared_memory_config_bytes, c.launch_type, c.cluster_x,
                               c.cluster_y, c.cluster_z, c.device};
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint32_t f : fields) h = (h ^ f) * 0xff51afd7ed558ccdull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct ModelBuilder::Impl : public trace::EventVisitor {
  static constexpr uint8_t kFlagsComputed = 1;
  static constexpr uint8_t kFlagComm = 2;

  struct ReplayedKernel {
    uint16_t trace;
    uint32_t correlation_id;
    uint32_t name;
    uint32_t config;
    uint32_t stream = 0;  // index into model.streams
    bool untraced = false;  // measured in place, not traced (KernelEvent::untraced)
  };

  TimelineModel model;
  TraceSource* source = nullptr;  // current trace
  uint16_t trace_index = 0;
  uint64_t offset = 0;            // clock offset of the current trace (two's complement)
  std::function<std::string_view(uint32_t)> resolve_string;
  std::function<const CallStack*(uint32_t)> resolve_stack;

  absl::flat_hash_map<std::string, uint32_t> string_ids;
  std::vector<uint8_t> name_flags{0};      // per model string: kFlags*
  std::vector<uint8_t> api_flags_cache{0};  // per model string: ApiFlag bits
  std::vector<uint32_t> remap{0};  // current trace's string id → model id
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> device_ids;
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> stream_ids;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> thread_ids;
  absl::flat_hash_map<LaunchConfig, uint32_t, LaunchConfigHash> config_ids;
  std::vector<ReplayedKernel> replayed;
  std::vector<bool> has_comm_kernel;         // per trace
  std::vector<uint32_t> nccl_streams;        // parallel to model.collectives
  std::vector<uint32_t> nccl_correlation;    // parallel to model.collectives

  // Streaming storage: GPU activities per stream, API calls per thread, in
  // arrival order; Finish sorts and moves them into the model's tables.
  std::vector<internal::ChunkedBuffer<GpuActivity>> stream_activities;
  std::vector<internal::ChunkedBuffer<ApiCall>> thread_calls;
  // Lookup caches of the hot path (per current trace).
  std::vector<uint32_t> device_by_id;                 // device_id → index + 1
  std::vector<std::vector<uint32_t>> stream_by_id;    // per model device: stream_id → index + 1
  uint32_t last_thread_id = 0, last_thread = kNone;
  std::vector<uint32_t> last_config_by_name;          // model name → last config index + 1

  void BeginTrace(std::string name, const TraceHeaderData& header);
  uint32_t InternModel(std::string_view s);
  uint32_t Str(uint32_t trace_string_id);
  uint8_t NameFlags(uint32_t model_name);
  uint8_t ApiFlags(uint32_t model_name);
  uint32_t Device(uint32_t device_id);
  uint32_t Stream(uint32_t device, uint32_t stream_id);
  uint32_t Thread(uint32_t thread_id);
  uint32_t Config(const KernelEvent& e, uint32_t device);
  void CopyStack(uint32_t stack_id);
  void Count(EventKind k) { source->events_by_kind[static_cast<size_t>(k)]++; }
  void Invalid(EventKind k) { source->invalid_by_kind[static_cast<size_t>(k)]++; }

  void OnKernel(const KernelEvent& e) override;
  void OnMemcpy(const MemcpyEvent& e) override;
  void OnMemset(const MemsetEvent& e) override;
  void OnSync(const SyncEvent& e) override;
  void OnMemory(const MemoryEvent& e) override;
  void OnApi(const ApiEvent& e) override;
  void OnNvtxRange(const NvtxRangeEvent& e) override;
  void OnNvtxMarker(const NvtxMarkerEvent& e) override;
  void OnNccl(const NcclEvent& e) override;
  void OnMetricRange(const MetricRangeEvent& e) override;
  void OnGpuMetrics(const GpuMetricSamplesEvent& e) override;
  void OnCaptureWindow(const CaptureWindowEvent& e) override;
  void OnOverhead(const OverheadEvent& e) override;
  void OnStep(const StepEvent& e) override;
  void OnLoss(const LossReport& e) override;

  // model_finish.cc
  void AddNcclGpuActivities();
  void FillCommunicatorRanks();
  void MergeActivities();
  void MergeApiCalls();
  void SortAndIndex();
  // Replayed kernels (zero timestamps) on the timeline at their launch call's
  // start for the duration the replay measured (GpuActivity::replayed).
  void PlaceReplayedKernels();
  void LinkCorrelations();
  void NestNvtx();
  void ClipRangesOpenAtWindowEnd();
  void AggregateKernels();
  void ComputeBounds();
};

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_MODEL_BUILDER_IMPL_H_
