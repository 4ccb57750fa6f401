// lib/collect/range_profiler_sequence.cc — see range_profiler_sequence.h.
#include "lib/collect/range_profiler_sequence.h"

#include <algorithm>
#include <utility>

namespace sightline::collect {

SequenceSpread::SequenceSpread(SequenceTarget* target, uint32_t num_passes, size_t max_ranges,
                               uint32_t max_restarts, size_t first_ranges)
    : target_(target),
      num_passes_(num_passes == 0 ? 1 : num_passes),
      max_ranges_(std::max<size_t>(1, std::min(first_ranges == 0 ? max_ranges : first_ranges,
                                               max_ranges))),
      max_ranges_limit_(std::max<size_t>(1, max_ranges)),
      max_restarts_(max_restarts) {}

void SequenceSpread::Fail(const std::string& why) {
  if (!failed_) error_ = why;
  failed_ = true;
  collecting_ = false;
}

void SequenceSpread::Add(const SpreadLaunch& launch) {
  Position p;
  p.key = launch.key;
  p.name = std::string(launch.name);
  p.device_id = launch.device_id;
  p.correlation_id = launch.correlation_id;
  current_.push_back(std::move(p));
}

bool SequenceSpread::Start(const SpreadLaunch& launch) {
  if (dirty_.count(launch.context) != 0) {
    if (!target_->ResetSequencePasses(launch.context)) {
      Fail("sequence: resetting the pass counter failed");
      return false;
    }
    dirty_.erase(launch.context);
  }
  if (!target_->InitSequenceImage(launch.context, max_ranges_)) {
    Fail("sequence: counter-data image initialisation failed");
    return false;
  }
  if (!target_->BeginSequencePass(launch.context)) {
    Fail("sequence: starting pass 0 failed");
    return false;
  }
  collecting_ = true;
  context_ = launch.context;
  anchor_ = launch.key;
  passes_done_ = 0;
  first_.clear();
  current_.clear();
  last_done_.clear();
  Add(launch);
  return true;
}

bool SequenceSpread::Restart(const SpreadLaunch& launch) {
  ++stats_.discarded;
  collecting_ = false;
  dirty_.insert(context_);
  tried_.insert(anchor_);
  if (++restarts_ > max_restarts_) {
    Fail("sequence: the launches differed between passes with " + std::to_string(restarts_) +
         " different first kernels (not a repeating launch sequence)");
    return false;
  }
  // Another first kernel: a kernel launched at several places of a step (or
  // only during warm-up) does not delimit steps; one launched once per step
  // does. The next selected launch of a kernel not tried yet starts over.
  (void)launch;
  return true;
}

SpreadCollection SequenceSpread::MakeSet(size_t i) const {
  SpreadCollection c;
  c.key = first_[i].key;
  c.context = context_;
  c.name = first_[i].name;
  c.device_id = first_[i].device_id;
  c.first_correlation_id = first_[i].correlation_id;
  c.last_correlation_id = i < last_done_.size() ? last_done_[i].correlation_id : first_[i].correlation_id;
  c.launches = passes_done_;
  c.passes_done = passes_done_;
  c.passes_needed = num_passes_;
  return c;
}

void SequenceSpread::OnLaunch(const SpreadLaunch& launch, bool anchor_ok) {
  if (failed_) return;
  if (!collecting_) {
    if (anchor_ok && !done_for_window() && tried_.count(launch.key) == 0) Start(launch);
    return;
  }
  if (launch.context != context_) return;  // another context: another object, not in our image
  if (launch.key != anchor_) {
    if (current_.size() >= max_ranges_) {
      SpreadPassResult ignored;
      target_->EndSequencePass(context_, &ignored);
      dirty_.insert(context_);
      collecting_ = false;
      if (max_ranges_ < max_ranges_limit_) {
        // A longer step than the image holds: a 4x larger image from the
        // next selected launch on (images cost ~0.3 ms per range to set up,
        // so they start small).
        max_ranges_ = std::min(max_ranges_ * 4, max_ranges_limit_);
        ++stats_.grown;
        return;
      }
      Fail("sequence: more than " + std::to_string(max_ranges_) +
           " launches between two launches of the first kernel");
      return;
    }
    Add(launch);
    return;
  }
  // The anchor again: the pass is over.
  SpreadPassResult r;
  if (!target_->EndSequencePass(context_, &r)) {
    Fail("sequence: ending pass " + std::to_string(passes_done_) + " failed");
    return;
  }
  const uint32_t pass = passes_done_;
  bool same = r.ranges_dropped == 0 && r.ranges == current_.size();
  if (same && pass > 0) {
    same = current_.size() == first_.size();
    for (size_t i = 0; same && i < current_.size(); ++i) same = current_[i].key == first_[i].key;
  }
  if (same && !r.all_submitted && r.stop_pass_index != pass + 1u && r.stop_pass_index != pass) {
    Fail("sequence: CUPTI reported pass " + std::to_string(r.stop_pass_index) + " after pass " +
         std::to_string(pass));
    return;
  }
  // All passes in before the schedule's last one: the counter was not at
  // pass 0 when the sequence began (its passes are not the schedule's).
  if (same && r.all_submitted && pass + 1u != num_passes_) same = false;
  if (!same) {
    Restart(launch);
    return;
  }
  if (pass == 0) first_ = current_;
  last_done_ = current_;
  ++passes_done_;
  ++stats_.passes;
  if (r.all_submitted) {
    for (size_t i = 0; i < first_.size(); ++i) {
      SpreadCollection c = MakeSet(i);
      if (!target_->EvaluateSequenceRange(context_, i, &c.values)) {
        Fail("sequence: evaluating range " + std::to_string(i) + " failed");
        return;
      }
      completed_.push_back(std::move(c));
      ++stats_.completed;
    }
    ++stats_.sequences;
    ++sequences_in_window_;
    restarts_ = 0;
    collecting_ = false;
    return;  // one sequence per capture window: this launch runs unprofiled
  }
  if (passes_done_ >= num_passes_) {
    Fail("sequence: CUPTI wants more than the " + std::to_string(num_passes_) +
         " passes of the schedule");
    return;
  }
  if (!target_->BeginSequencePass(context_)) {
    Fail("sequence: starting pass " + std::to_string(passes_done_) + " failed");
    return;
  }
  current_.clear();
  Add(launch);
}

std::vector<SpreadCollection> SequenceSpread::TakeCompleted() {
  std::vector<SpreadCollection> out;
  out.swap(completed_);
  return out;
}

std::vector<SpreadCollection> SequenceSpread::FinishIncomplete(void* context) {
  std::vector<SpreadCollection> out;
  if (context != nullptr && context != context_) {
    dirty_.erase(context);
    return out;
  }
  if (!collecting_) {
    if (context != nullptr) dirty_.erase(context);
    return out;
  }
  SpreadPassResult ignored;
  target_->EndSequencePass(context_, &ignored);  // best effort: the pass is not used
  collecting_ = false;
  current_.clear();
  if (context == nullptr) {
    dirty_.insert(context_);  // reset before this context's next sequence
  } else {
    dirty_.erase(context);  // going away with its counter
  }
  for (size_t i = 0; i < first_.size(); ++i) {
    out.push_back(MakeSet(i));
    ++stats_.incomplete;
  }
  return out;
}

}  // namespace sightline::collect
