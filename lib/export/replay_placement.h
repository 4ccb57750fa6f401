// lib/export/replay_placement.h — kernels replayed for hardware metrics on
// the streaming exports' timeline.
//
// CUPTI kernel replay reports a replayed kernel without timestamps
// (KernelEvent::replayed, start = end = 0). The exporters place it as the
// analyzer does (analysis::TimelineModel::replayed_activities): at its launch
// call's start, for the duration the replay measured (the
// gpu__time_duration.sum of its metric range), marked as replayed. A
// launch, its kernel and its metric range may come in any order and in
// different chunks: the kernels are kept until the end (at most `capacity`;
// the rest is counted), launch times and measured durations in FIFO-bounded
// maps keyed by correlation id. Kernels whose launch or duration never came
// are counted (unplaced()), not drawn at time zero.
#ifndef SIGHTLINE_LIB_EXPORT_REPLAY_PLACEMENT_H_
#define SIGHTLINE_LIB_EXPORT_REPLAY_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/trace/events.h"

namespace sightline::exporter {

class ReplayPlacement {
 public:
  explicit ReplayPlacement(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // True (and kept for the end) when `e` is a replayed kernel.
  bool OnKernel(const KernelEvent& e) {
    if (!e.replayed) return false;
    if (kernels_.size() < capacity_) {
      kernels_.push_back(e);
    } else {
      ++unplaced_;
    }
    return true;
  }
  // Every API call with a correlation id: the earliest call of an id is the
  // launch (a runtime call around its driver call).
  void OnApi(const ApiEvent& e) {
    if (e.correlation_id == 0) return;
    auto [it, fresh] = launches_.try_emplace(e.correlation_id, e.start_ns);
    if (!fresh) {
      it->second = std::min(it->second, e.start_ns);
      return;
    }
    launch_order_.push_back(e.correlation_id);
    if (launch_order_.size() > capacity_) {
      launches_.erase(launch_order_.front());
      launch_order_.pop_front();
    }
  }
  // A metric range's measured duration (its gpu__time_duration.sum), ns.
  void OnMeasuredDuration(uint32_t correlation_id, double duration_ns) {
    if (correlation_id == 0 || !(duration_ns > 0)) return;
    if (durations_.emplace(correlation_id, static_cast<uint64_t>(duration_ns)).second) {
      duration_order_.push_back(correlation_id);
      if (duration_order_.size() > capacity_) {
        durations_.erase(duration_order_.front());
        duration_order_.pop_front();
      }
    }
  }

  struct Placed {
    KernelEvent kernel;  // start_ns / end_ns set
  };
  // At the end: the kept kernels whose launch and duration are known.
  std::vector<Placed> Take() {
    std::vector<Placed> out;
    for (const KernelEvent& k : kernels_) {
      auto l = launches_.find(k.correlation_id);
      auto d = durations_.find(k.correlation_id);
      if (l == launches_.end() || d == durations_.end()) {
        ++unplaced_;
        continue;
      }
      Placed p;
      p.kernel = k;
      p.kernel.start_ns = l->second;
      p.kernel.end_ns = l->second + d->second;
      out.push_back(p);
    }
    kernels_.clear();
    return out;
  }
  uint64_t unplaced() const { return unplaced_; }

 private:
  size_t capacity_;
  std::vector<KernelEvent> kernels_;
  std::unordered_map<uint32_t, uint64_t> launches_;  // correlation id → launch start
  std::deque<uint32_t> launch_order_;
  std::unordered_map<uint32_t, uint64_t> durations_;  // correlation id → measured ns
  std::deque<uint32_t> duration_order_;
  uint64_t unplaced_ = 0;
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_REPLAY_PLACEMENT_H_
