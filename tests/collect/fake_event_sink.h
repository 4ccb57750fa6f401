// tests/collect/fake_event_sink.h — an EventSink that keeps everything, for
// checking conversions without a trace file.
#ifndef SIGHTLINE_TESTS_COLLECT_FAKE_EVENT_SINK_H_
#define SIGHTLINE_TESTS_COLLECT_FAKE_EVENT_SINK_H_

#include <map>
#include <string>
#include <vector>

#include "lib/collect/event_sink.h"

namespace sightline::collect {

class FakeEventSink : public EventSink {
 public:
  uint32_t Intern(std::string_view s) override {
    if (s.empty()) return 0;
    auto it = ids.find(std::string(s));
    if (it != ids.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(strings.size());
    strings.emplace_back(s);
    ids.emplace(std::string(s), id);
    return id;
  }
  uint32_t InternStack(const CallStack& stack) override {
    stacks.push_back(stack);
    return static_cast<uint32_t>(stacks.size());
  }
  const std::string& Str(uint32_t id) const { return strings.at(id); }

  void Add(const KernelEvent& e) override { kernels.push_back(e); }
  void Add(const MemcpyEvent& e) override { memcpys.push_back(e); }
  void Add(const MemsetEvent& e) override { memsets.push_back(e); }
  void Add(const MemoryEvent& e) override { memory.push_back(e); }
  void Add(const SyncEvent& e) override { syncs.push_back(e); }
  void Add(const ApiEvent& e) override { apis.push_back(e); }
  void Add(const NvtxRangeEvent& e) override { ranges.push_back(e); }
  void Add(const NvtxMarkerEvent& e) override { markers.push_back(e); }
  void Add(const NcclEvent& e) override { nccls.push_back(e); }
  void Add(const MetricRangeEvent& e) override { metrics.push_back(e); }
  void Add(const GpuMetricSamplesEvent& e) override { gpu_metrics.push_back(e); }
  void Add(const CaptureWindowEvent& e) override { windows.push_back(e); }
  void Add(const OverheadEvent& e) override { overheads.push_back(e); }
  void Add(const StepEvent& e) override { steps.push_back(e); }
  void Add(const LossReport& e) override { losses.push_back(e); }

  std::vector<std::string> strings{""};
  std::map<std::string, uint32_t> ids;
  std::vector<CallStack> stacks;
  std::vector<KernelEvent> kernels;
  std::vector<MemcpyEvent> memcpys;
  std::vector<MemsetEvent> memsets;
  std::vector<MemoryEvent> memory;
  std::vector<SyncEvent> syncs;
  std::vector<ApiEvent> apis;
  std::vector<NvtxRangeEvent> ranges;
  std::vector<NvtxMarkerEvent> markers;
  std::vector<NcclEvent> nccls;
  std::vector<MetricRangeEvent> metrics;
  std::vector<GpuMetricSamplesEvent> gpu_metrics;
  std::vector<CaptureWindowEvent> windows;
  std::vector<OverheadEvent> overheads;
  std::vector<StepEvent> steps;
  std::vector<LossReport> losses;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_TESTS_COLLECT_FAKE_EVENT_SINK_H_
