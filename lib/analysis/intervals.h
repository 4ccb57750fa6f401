// lib/analysis/intervals.h — half-open time intervals and sets of them.
//
// The analyzer's arithmetic: a device's busy time is the union of its
// activities, idle is the window minus that union, overlap of communication
// and compute is an intersection. An IntervalSet is a sorted vector of
// disjoint, non-empty [start, end) intervals; every operation is a linear
// merge (no allocation beyond the result).
#ifndef SIGHTLINE_LIB_ANALYSIS_INTERVALS_H_
#define SIGHTLINE_LIB_ANALYSIS_INTERVALS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sightline::analysis {

struct Interval {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;  // exclusive
  uint64_t length() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

class IntervalSet {
 public:
  IntervalSet() = default;
  // Normalises arbitrary (unsorted, overlapping, empty) intervals.
  static IntervalSet FromUnsorted(std::vector<Interval> intervals);
  // Builds from intervals already sorted by start (may overlap); O(n).
  static IntervalSet FromSortedByStart(const std::vector<Interval>& intervals);

  // Appends an interval whose start is >= the start of every interval added
  // so far (streaming union of start-sorted input).
  void AddSorted(uint64_t start_ns, uint64_t end_ns);

  void Reserve(size_t n) { intervals_.reserve(n); }
  const std::vector<Interval>& intervals() const { return intervals_; }
  bool empty() const { return intervals_.empty(); }
  size_t size() const { return intervals_.size(); }
  uint64_t total() const;  // sum of lengths

  IntervalSet Union(const IntervalSet& other) const;
  IntervalSet Intersect(const IntervalSet& other) const;
  IntervalSet Subtract(const IntervalSet& other) const;
  // Restricted to [start, end).
  IntervalSet Clip(uint64_t start_ns, uint64_t end_ns) const;
  // Length of the intersection with [start, end) (binary search + scan).
  uint64_t OverlapWith(uint64_t start_ns, uint64_t end_ns) const;
  // The gaps between consecutive intervals inside [start, end): the complement.
  IntervalSet Complement(uint64_t start_ns, uint64_t end_ns) const;

 private:
  std::vector<Interval> intervals_;
};

// Length of the union of start-sorted intervals, in O(1) memory (a busy time
// without materialising the set).
class UnionLength {
 public:
  void Add(uint64_t start_ns, uint64_t end_ns) {
    if (end_ns <= start_ns) return;
    if (count_ == 0 || start_ns > end_) {
      total_ += end_ - start_;
      start_ = start_ns;
      end_ = end_ns;
      ++count_;
    } else if (end_ns > end_) {
      end_ = end_ns;
    }
  }
  uint64_t total() const { return total_ + (end_ - start_); }
  // Number of disjoint intervals the union has.
  size_t intervals() const { return count_; }

 private:
  uint64_t total_ = 0, start_ = 0, end_ = 0;
  size_t count_ = 0;
};

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_INTERVALS_H_
