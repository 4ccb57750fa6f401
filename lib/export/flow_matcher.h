// lib/export/flow_matcher.h — pairs launching API calls with the GPU work they
// caused (CUPTI correlation ids) while streaming, in bounded memory.
//
// A launch and its kernel may be decoded in different chunks, in either
// order, and one launch may cause several GPU records (graph launches). The
// matcher keeps two FIFO-bounded maps keyed by correlation id:
//   launches: id -> launch endpoint (kept after a match, for graph launches)
//   waiting:  id -> GPU endpoints seen before their launch
// Each map holds at most `capacity` entries; beyond that the oldest entry is
// evicted (an evicted waiting GPU record counts as unmatched). Memory is
// O(capacity), independent of the trace length.
#ifndef SIGHTLINE_LIB_EXPORT_FLOW_MATCHER_H_
#define SIGHTLINE_LIB_EXPORT_FLOW_MATCHER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sightline::exporter {

struct FlowEndpoint {
  uint64_t track = 0;   // tid of the track holding the slice
  int64_t time_ns = 0;  // start of the slice the arrow binds to
};

class FlowMatcher {
 public:
  explicit FlowMatcher(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // A launching API call. Returns the GPU endpoints that were waiting for it
  // (each one is a completed flow launch -> gpu).
  void AddLaunch(uint32_t correlation, const FlowEndpoint& launch,
                 std::vector<std::pair<FlowEndpoint, FlowEndpoint>>* flows);
  bool HasLaunch(uint32_t correlation) const { return launches_.count(correlation) != 0; }
  // A GPU record. Completes a flow at once when its launch is known.
  void AddGpuWork(uint32_t correlation, const FlowEndpoint& gpu,
                  std::vector<std::pair<FlowEndpoint, FlowEndpoint>>* flows);

  // GPU records evicted before their launch arrived, plus those still waiting.
  uint64_t unmatched() const { return evicted_waiting_ + waiting_count_; }
  size_t launches_held() const { return launches_.size(); }
  size_t waiting_held() const { return waiting_count_; }

 private:
  struct LaunchEntry {
    FlowEndpoint endpoint;
    uint64_t seq;
  };
  struct WaitingEntry {
    std::vector<FlowEndpoint> endpoints;
    uint64_t seq;
  };
  void TrimLaunches();
  void TrimWaiting();

  size_t capacity_;
  uint64_t seq_ = 0;
  std::unordered_map<uint32_t, LaunchEntry> launches_;
  std::deque<std::pair<uint32_t, uint64_t>> launch_order_;
  std::unordered_map<uint32_t, WaitingEntry> waiting_;
  std::deque<std::pair<uint32_t, uint64_t>> waiting_order_;
  size_t waiting_count_ = 0;  // endpoints, not keys
  uint64_t evicted_waiting_ = 0;
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_FLOW_MATCHER_H_
