// lib/collect/range_profiler_user.cc — see range_profiler_user.h.
#include "lib/collect/range_profiler_user.h"

#include <utility>

namespace sightline::collect {

UserRangeSets::UserRangeSets(UserRangeTarget* target, std::string name, uint32_t passes_needed)
    : target_(target), name_(std::move(name)), passes_needed_(passes_needed > 0 ? passes_needed : 1) {}

void UserRangeSets::Fail(const std::string& why) {
  if (failed_) return;
  failed_ = true;
  error_ = why;
  open_ = false;
  in_set_ = false;
}

void UserRangeSets::Restart() {
  ++stats_.discarded;
  in_set_ = false;
  if (!target_->ResetUserPasses(set_.context)) Fail("resetting the pass counter failed");
}

bool UserRangeSets::OnPush(void* context, uint32_t device_id, uintptr_t thread, uint32_t depth,
                           uint64_t now_ns) {
  if (failed_) return false;
  if (open_ && open_thread_ == thread) return false;  // nested inside the open instance
  ++stats_.instances;
  if (open_) {
    ++stats_.other_thread;
    return false;
  }
  if (context == nullptr) {
    ++stats_.no_context;
    return false;
  }
  if (in_set_ && set_.context != context) {
    ++stats_.other_context;
    return false;
  }
  if (!in_set_) {
    if (!target_->InitUserImage(context)) {
      Fail("initialising the counter-data image failed");
      return false;
    }
    set_ = UserRangeSet();
    set_.context = context;
    set_.device_id = device_id;
    set_.name = name_;
    set_.start_ns = now_ns;
    set_.passes_needed = passes_needed_;
    in_set_ = true;
  }
  if (!target_->BeginUserPass(context, name_)) {
    Fail("starting a pass failed");
    return false;
  }
  open_ = true;
  open_thread_ = thread;
  open_depth_ = depth;
  return true;
}

bool UserRangeSets::OnPop(uintptr_t thread, uint32_t depth, uint64_t now_ns) {
  if (!open_ || thread != open_thread_ || depth != open_depth_) return false;
  open_ = false;
  SpreadPassResult r;
  if (!target_->EndUserPass(set_.context, &r)) {
    Fail("ending a pass failed");
    return true;
  }
  ++stats_.passes;
  if (r.ranges != 1 || r.ranges_dropped != 0) {
    Restart();
    return true;
  }
  ++set_.passes_done;
  ++set_.instances;
  set_.end_ns = now_ns;
  if (!r.all_submitted) {
    // CUPTI decides when the set is complete; a count far past ours means
    // its pass counter and ours disagree.
    if (set_.passes_done > passes_needed_ + 1) {
      Fail("CUPTI reported no last pass after " + std::to_string(set_.passes_done) +
           " passes of " + std::to_string(passes_needed_));
    }
    return true;
  }
  std::vector<double> values;
  if (!target_->EvaluateUserRange(set_.context, &values)) {
    Fail("evaluating the range failed");
    return true;
  }
  set_.values = std::move(values);
  ++stats_.completed;
  done_.push_back(std::move(set_));
  set_ = UserRangeSet();
  in_set_ = false;
  return true;
}

void UserRangeSets::FinishIncomplete(uint64_t now_ns, void* context, bool reset_passes) {
  if (!in_set_ || (context != nullptr && set_.context != context)) return;
  if (open_) {
    SpreadPassResult r;
    target_->EndUserPass(set_.context, &r);  // best effort: the pass is not kept
    open_ = false;
    ++stats_.cut;
    set_.end_ns = now_ns;
  }
  if (set_.passes_done > 0) {
    ++stats_.incomplete;
    done_.push_back(set_);
  }
  in_set_ = false;
  if (reset_passes && !target_->ResetUserPasses(set_.context)) {
    Fail("resetting the pass counter failed");
  }
  set_ = UserRangeSet();
}

std::vector<UserRangeSet> UserRangeSets::TakeCompleted() {
  std::vector<UserRangeSet> out;
  out.swap(done_);
  return out;
}

}  // namespace sightline::collect
