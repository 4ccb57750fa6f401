#include "lib/analysis/intervals.h"

#include <algorithm>

namespace sightline::analysis {

IntervalSet IntervalSet::FromUnsorted(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.start_ns < b.start_ns;
  });
  return FromSortedByStart(intervals);
}

IntervalSet IntervalSet::FromSortedByStart(const std::vector<Interval>& intervals) {
  IntervalSet set;
  for (const Interval& i : intervals) set.AddSorted(i.start_ns, i.end_ns);
  return set;
}

void IntervalSet::AddSorted(uint64_t start_ns, uint64_t end_ns) {
  if (end_ns <= start_ns) return;
  if (!intervals_.empty() && start_ns <= intervals_.back().end_ns) {
    intervals_.back().end_ns = std::max(intervals_.back().end_ns, end_ns);
    return;
  }
  intervals_.push_back({start_ns, end_ns});
}

uint64_t IntervalSet::total() const {
  uint64_t sum = 0;
  for (const Interval& i : intervals_) sum += i.length();
  return sum;
}

IntervalSet IntervalSet::Union(const IntervalSet& other) const {
  IntervalSet out;
  size_t a = 0, b = 0;
  const auto& x = intervals_;
  const auto& y = other.intervals_;
  while (a < x.size() || b < y.size()) {
    const Interval& next =
        (b >= y.size() || (a < x.size() && x[a].start_ns <= y[b].start_ns)) ? x[a++] : y[b++];
    out.AddSorted(next.start_ns, next.end_ns);
  }
  return out;
}

IntervalSet IntervalSet::Intersect(const IntervalSet& other) const {
  IntervalSet out;
  size_t a = 0, b = 0;
  const auto& x = intervals_;
  const auto& y = other.intervals_;
  while (a < x.size() && b < y.size()) {
    uint64_t lo = std::max(x[a].start_ns, y[b].start_ns);
    uint64_t hi = std::min(x[a].end_ns, y[b].end_ns);
    if (lo < hi) out.intervals_.push_back({lo, hi});
    if (x[a].end_ns < y[b].end_ns) {
      ++a;
    } else {
      ++b;
    }
  }
  return out;
}

IntervalSet IntervalSet::Subtract(const IntervalSet& other) const {
  IntervalSet out;
  size_t b = 0;
  const auto& y = other.intervals_;
  for (const Interval& i : intervals_) {
    uint64_t cur = i.start_ns;
    while (b < y.size() && y[b].end_ns <= cur) ++b;
    size_t k = b;
    while (k < y.size() && y[k].start_ns < i.end_ns) {
      if (y[k].start_ns > cur) out.intervals_.push_back({cur, y[k].start_ns});
      cur = std::max(cur, y[k].end_ns);
      if (cur >= i.end_ns) break;
      ++k;
    }
    if (cur < i.end_ns) out.intervals_.push_back({cur, i.end_ns});
  }
  return out;
}

IntervalSet IntervalSet::Clip(uint64_t start_ns, uint64_t end_ns) const {
  IntervalSet out;
  auto it = std::lower_bound(intervals_.begin(), intervals_.end(), start_ns,
                             [](const Interval& i, uint64_t t) { return i.end_ns <= t; });
  for (; it != intervals_.end() && it->start_ns < end_ns; ++it) {
    uint64_t lo = std::max(it->start_ns, start_ns);
    uint64_t hi = std::min(it->end_ns, end_ns);
    if (lo < hi) out.intervals_.push_back({lo, hi});
  }
  return out;
}

uint64_t IntervalSet::OverlapWith(uint64_t start_ns, uint64_t end_ns) const {
  if (end_ns <= start_ns) return 0;
  uint64_t sum = 0;
  auto it = std::lower_bound(intervals_.begin(), intervals_.end(), start_ns,
                             [](const Interval& i, uint64_t t) { return i.end_ns <= t; });
  for (; it != intervals_.end() && it->start_ns < end_ns; ++it) {
    uint64_t lo = std::max(it->start_ns, start_ns);
    uint64_t hi = std::min(it->end_ns, end_ns);
    if (lo < hi) sum += hi - lo;
  }
  return sum;
}

IntervalSet IntervalSet::Complement(uint64_t start_ns, uint64_t end_ns) const {
  IntervalSet window;
  window.AddSorted(start_ns, end_ns);
  return window.Subtract(*this);
}

}  // namespace sightline::analysis
