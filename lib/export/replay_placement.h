// lib/export/replay_placement.h — kernels replayed for hardware metrics on
// the streaming exports' timeline.
//
// CUPTI kernel replay reports a replayed kernel without timestamps
// (KernelEvent::replayed, start = end = 0). The exporters place it as the
// analyzer does (analysis::TimelineModel::replayed_activities): at its launch
// call's start, for the duration the replay measured (the
// gpu__time_duration.sum of its metric range), marked as replayed. A launch,
// its kernel and its metric range may come in any order and in different
// chunks, so they are matched as they arrive: a replayed kernel waits (at
// most `capacity` of them) with whatever of its launch and duration has come;
// launches and durations that come before their kernel are kept in
// FIFO-bounded maps (every API call passes through them) and never evicted
// once their kernel waits. TakeReady() hands out the kernels complete so far
// (the caller emits them per chunk); Finish() counts the ones still waiting
// (unplaced()), which are not drawn at time zero.
//
// Kernels measured in place without being traced (KernelEvent::untraced,
// sequence passes) are placed the same way; a sequence's values belong to
// one launch per position of the step, so before the end the untraced
// kernels still without a duration take the mean measured duration of the
// untraced kernels placed with the same name and launch configuration
// (ResolveByConfigMean), as the analyzer does — or, when half the table is
// taken, from the means so far, so that the table never overflows with
// kernels waiting for the end.
#ifndef SIGHTLINE_LIB_EXPORT_REPLAY_PLACEMENT_H_
#define SIGHTLINE_LIB_EXPORT_REPLAY_PLACEMENT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/trace/events.h"

namespace sightline::exporter {

class ReplayPlacement {
 public:
  explicit ReplayPlacement(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // True (and kept until placed) when `e` is a replayed or untraced kernel.
  bool OnKernel(const KernelEvent& e) {
    if (!e.untimed()) return false;
    if (waiting_.size() >= capacity_ && waiting_.count(e.correlation_id) == 0) {
      ++unplaced_;
      return true;
    }
    Waiting& w = waiting_[e.correlation_id];
    w.kernel = e;
    w.have_kernel = true;
    // What came before it.
    if (auto l = early_launch_.find(e.correlation_id); l != early_launch_.end()) {
      Launch(&w, l->second);
      early_launch_.erase(l);
    }
    if (auto d = early_duration_.find(e.correlation_id); d != early_duration_.end()) {
      w.duration_ns = d->second;
      early_duration_.erase(d);
    }
    return true;
  }
  // Every API call with a correlation id: the earliest call of an id is the
  // launch (a runtime call around its driver call).
  void OnApi(const ApiEvent& e) {
    if (e.correlation_id == 0) return;
    if (auto w = waiting_.find(e.correlation_id); w != waiting_.end()) {
      Launch(&w->second, e.start_ns);
      return;
    }
    Remember(&early_launch_, &launch_order_, e.correlation_id, e.start_ns, /*min=*/true);
  }
  // A metric range's measured duration (its gpu__time_duration.sum), ns.
  void OnMeasuredDuration(uint32_t correlation_id, double duration_ns) {
    if (correlation_id == 0 || !(duration_ns > 0)) return;
    const uint64_t ns = static_cast<uint64_t>(duration_ns);
    if (auto w = waiting_.find(correlation_id); w != waiting_.end()) {
      w->second.duration_ns = ns;
      return;
    }
    Remember(&early_duration_, &duration_order_, correlation_id, ns, /*min=*/false);
  }

  // The waiting kernels whose launch and duration are both known, placed
  // (start_ns / end_ns set). Call after each chunk (a runtime call and its
  // driver call of one chunk both count toward the earliest start).
  std::vector<KernelEvent> TakeReady() {
    std::vector<KernelEvent> out;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      const Waiting& w = it->second;
      if (w.have_kernel && w.have_launch && w.duration_ns > 0) {
        KernelEvent k = w.kernel;
        k.start_ns = w.launch_ns;
        k.end_ns = w.launch_ns + w.duration_ns;
        if (k.untraced && !w.by_mean) {
          Mean& m = untraced_mean_[ConfigKey(k)];
          m.sum += static_cast<double>(w.duration_ns);
          m.n++;
        }
        out.push_back(k);
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    std::sort(out.begin(), out.end(), [](const KernelEvent& a, const KernelEvent& b) {
      return a.start_ns < b.start_ns;
    });
    return out;
  }
  // Before the end: untraced kernels with a launch but no duration of their
  // own take their configuration's mean (TakeReady hands them out next).
  void ResolveByConfigMean() {
    for (auto& [id, w] : waiting_) {
      if (!w.have_kernel || !w.have_launch || w.duration_ns > 0 || !w.kernel.untraced) continue;
      auto m = untraced_mean_.find(ConfigKey(w.kernel));
      if (m == untraced_mean_.end() || m->second.n == 0) continue;
      w.duration_ns = static_cast<uint64_t>(m->second.sum / m->second.n);
      w.by_mean = true;
    }
  }
  // At the end: the kernels still waiting are counted, not drawn.
  void Finish() {
    unplaced_ += waiting_.size();
    waiting_.clear();
  }
  uint64_t unplaced() const { return unplaced_; }
  size_t waiting() const { return waiting_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  struct Waiting {
    KernelEvent kernel;
    bool have_kernel = false;
    bool have_launch = false;
    uint64_t launch_ns = 0;
    uint64_t duration_ns = 0;
    bool by_mean = false;  // duration from its configuration's mean
  };
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                         uint32_t, uint32_t>;
  static Key ConfigKey(const KernelEvent& k) {
    return {k.device_id, k.name_id, k.grid_x, k.grid_y, k.grid_z,
            k.block_x, k.block_y, k.block_z, k.dynamic_shared_bytes};
  }
  struct Mean {
    double sum = 0;
    uint64_t n = 0;
  };
  static void Launch(Waiting* w, uint64_t start_ns) {
    w->launch_ns = w->have_launch ? std::min(w->launch_ns, start_ns) : start_ns;
    w->have_launch = true;
  }
  void Remember(std::unordered_map<uint32_t, uint64_t>* map, std::deque<uint32_t>* order,
                uint32_t id, uint64_t value, bool min) {
    auto [it, fresh] = map->try_emplace(id, value);
    if (!fresh) {
      if (min) it->second = std::min(it->second, value);
      return;
    }
    order->push_back(id);
    while (order->size() > capacity_) {
      map->erase(order->front());
      order->pop_front();
    }
  }

  size_t capacity_;
  std::unordered_map<uint32_t, Waiting> waiting_;              // by correlation id
  std::unordered_map<uint32_t, uint64_t> early_launch_;        // launch start, kernel not seen yet
  std::deque<uint32_t> launch_order_;
  std::unordered_map<uint32_t, uint64_t> early_duration_;      // measured ns, kernel not seen yet
  std::deque<uint32_t> duration_order_;
  uint64_t unplaced_ = 0;
  std::map<Key, Mean> untraced_mean_;  // one entry per configuration placed untraced
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_REPLAY_PLACEMENT_H_
