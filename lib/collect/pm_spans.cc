// lib/collect/pm_spans.cc — see pm_spans.h.
#include "lib/collect/pm_spans.h"

#include <algorithm>
#include <iterator>

namespace sightline::collect {

void RecordingSpans::Open(uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!spans_.empty() && spans_.back().second == UINT64_MAX) return;
  spans_.emplace_back(now_ns, UINT64_MAX);
}

void RecordingSpans::Close(uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (spans_.empty() || spans_.back().second != UINT64_MAX) return;
  spans_.back().second = std::max(now_ns, spans_.back().first);
}

bool RecordingSpans::Overlaps(uint64_t start, uint64_t end) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::upper_bound(spans_.begin(), spans_.end(), end,
                             [](uint64_t t, const auto& s) { return t < s.first; });
  return it != spans_.begin() && std::prev(it)->second >= start;
}

uint64_t RecordingSpans::Filter(PmSampleBatch* batch, GapState* state) const {
  std::lock_guard<std::mutex> lock(mu_);
  GpuMetricSamplesEvent& e = batch->event;
  const size_t n = e.sample_start_ns.size();
  const size_t metrics = n == 0 ? 0 : e.values.size() / n;
  const uint64_t interval = e.interval_ns;
  uint64_t missing = 0;
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t start = e.sample_start_ns[i];
    const uint64_t end = e.sample_end_ns[i];
    // The last span starting at or before the sample's end.
    auto it = std::upper_bound(spans_.begin(), spans_.end(), end,
                               [](uint64_t t, const auto& s) { return t < s.first; });
    if (it == spans_.begin() || std::prev(it)->second < start) continue;
    const size_t span = static_cast<size_t>(std::prev(it) - spans_.begin());
    // Consecutive samples abut (one's end is the next one's start): a gap of
    // more than half an interval held samples that never arrived.
    if (state->span == span && interval != 0 && start > state->last_end + interval / 2) {
      missing += (start - state->last_end + interval / 2) / interval;
    }
    if (state->span != span || end > state->last_end) state->last_end = end;
    state->span = span;
    if (kept != i) {
      e.sample_start_ns[kept] = start;
      e.sample_end_ns[kept] = end;
      std::copy_n(e.values.begin() + i * metrics, metrics, e.values.begin() + kept * metrics);
    }
    ++kept;
  }
  e.sample_start_ns.resize(kept);
  e.sample_end_ns.resize(kept);
  e.values.resize(kept * metrics);
  return missing;
}

}  // namespace sightline::collect
