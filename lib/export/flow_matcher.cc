// lib/export/flow_matcher.cc — see flow_matcher.h.
#include "lib/export/flow_matcher.h"

namespace sightline::exporter {

void FlowMatcher::AddLaunch(uint32_t correlation, const FlowEndpoint& launch,
                            std::vector<std::pair<FlowEndpoint, FlowEndpoint>>* flows) {
  auto w = waiting_.find(correlation);
  if (w != waiting_.end()) {
    for (const FlowEndpoint& gpu : w->second.endpoints) flows->emplace_back(launch, gpu);
    waiting_count_ -= w->second.endpoints.size();
    waiting_.erase(w);
  }
  uint64_t seq = ++seq_;
  launches_[correlation] = LaunchEntry{launch, seq};
  launch_order_.emplace_back(correlation, seq);
  TrimLaunches();
}

void FlowMatcher::AddGpuWork(uint32_t correlation, const FlowEndpoint& gpu,
                             std::vector<std::pair<FlowEndpoint, FlowEndpoint>>* flows) {
  auto l = launches_.find(correlation);
  if (l != launches_.end()) {
    flows->emplace_back(l->second.endpoint, gpu);
    return;
  }
  auto [it, inserted] = waiting_.try_emplace(correlation);
  if (inserted) {
    it->second.seq = ++seq_;
    waiting_order_.emplace_back(correlation, it->second.seq);
  }
  // One launch rarely causes more than a graph's worth of records; cap the
  // list so a pathological id cannot grow without bound.
  if (it->second.endpoints.size() < 4096) {
    it->second.endpoints.push_back(gpu);
    ++waiting_count_;
  } else {
    ++evicted_waiting_;
  }
  TrimWaiting();
}

void FlowMatcher::TrimLaunches() {
  // Entries replaced or still valid are both in the order queue; a queue entry
  // whose seq no longer matches the map is stale and only dropped.
  while (launches_.size() > capacity_ || launch_order_.size() > 2 * capacity_) {
    auto [id, seq] = launch_order_.front();
    launch_order_.pop_front();
    auto it = launches_.find(id);
    if (it != launches_.end() && it->second.seq == seq) launches_.erase(it);
  }
}

void FlowMatcher::TrimWaiting() {
  while (waiting_count_ > capacity_ || waiting_order_.size() > 2 * capacity_) {
    auto [id, seq] = waiting_order_.front();
    waiting_order_.pop_front();
    auto it = waiting_.find(id);
    if (it != waiting_.end() && it->second.seq == seq) {
      evicted_waiting_ += it->second.endpoints.size();
      waiting_count_ -= it->second.endpoints.size();
      waiting_.erase(it);
    }
  }
}

}  // namespace sightline::exporter
