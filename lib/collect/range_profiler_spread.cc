// lib/collect/range_profiler_spread.cc — see range_profiler_spread.h.
#include "lib/collect/range_profiler_spread.h"

#include <utility>

namespace sightline::collect {

namespace {
uint64_t Fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}
}  // namespace

uint64_t SpreadKey(const void* context, std::string_view name, uint32_t gx, uint32_t gy, uint32_t gz,
                   uint32_t bx, uint32_t by, uint32_t bz, uint32_t smem) {
  uint64_t h = 1469598103934665603ull;
  const uintptr_t ctx = reinterpret_cast<uintptr_t>(context);
  h = Fnv(h, &ctx, sizeof(ctx));
  h = Fnv(h, name.data(), name.size());
  for (uint32_t v : {gx, gy, gz, bx, by, bz, smem}) h = Fnv(h, &v, sizeof(v));
  return h;
}

SpreadScheduler::SpreadScheduler(SpreadTarget* target, uint32_t num_passes, size_t max_in_flight,
                                 uint32_t max_restarts)
    : target_(target),
      num_passes_(num_passes == 0 ? 1 : num_passes),
      max_in_flight_(max_in_flight == 0 ? 1 : max_in_flight),
      max_restarts_(max_restarts) {}

void SpreadScheduler::Fail(const std::string& why) {
  if (!failed_) error_ = why;
  failed_ = true;
}

SpreadCollection SpreadScheduler::Collection(uint64_t key, const Active& a) const {
  SpreadCollection c;
  c.key = key;
  c.context = a.context;
  c.name = a.name;
  c.device_id = a.device_id;
  c.first_correlation_id = a.first_correlation_id;
  c.last_correlation_id = a.last_correlation_id;
  c.launches = a.launches;
  c.passes_done = a.next_pass;
  c.passes_needed = num_passes_;
  return c;  // no values yet
}

void SpreadScheduler::Release(uint64_t key) {
  auto it = active_.find(key);
  if (it == active_.end()) return;
  target_->ReleaseImage(it->second.slot);
  active_.erase(it);
}

SpreadEnter SpreadScheduler::Enter(const SpreadLaunch& launch) {
  if (failed_ || open_) return SpreadEnter::kSkipped;
  if (abandoned_.count(launch.key) != 0) return SpreadEnter::kSkipped;
  auto it = active_.find(launch.key);
  if (it == active_.end()) {
    if (active_.size() >= max_in_flight_) {
      ++stats_.slots_full;
      return SpreadEnter::kSkipped;
    }
    Active a;
    a.slot = next_slot_++;
    a.context = launch.context;
    a.name = std::string(launch.name);
    a.device_id = launch.device_id;
    it = active_.emplace(launch.key, std::move(a)).first;
  }
  Active& a = it->second;
  if (a.needs_init) {
    if (dirty_.count(a.context) != 0) {
      if (!target_->ResetPasses(a.context)) {
        Release(launch.key);
        Fail("spread: resetting the pass counter failed");
        return SpreadEnter::kFailed;
      }
      dirty_.erase(a.context);
    }
    if (!target_->InitImage(a.context, a.slot)) {
      Release(launch.key);
      Fail("spread: counter-data image initialisation failed");
      return SpreadEnter::kFailed;
    }
    a.needs_init = false;
    a.next_pass = 0;
    a.launches = 0;
  }
  if (!target_->BeginPass(a.context, a.slot, a.next_pass)) {
    // Release() erases `a`: take what the message needs first (reading
    // a.next_pass after it was a heap-use-after-free).
    const uint32_t pass = a.next_pass;
    Release(launch.key);
    Fail("spread: starting pass " + std::to_string(pass) + " failed");
    return SpreadEnter::kFailed;
  }
  if (a.launches == 0) a.first_correlation_id = launch.correlation_id;
  a.last_correlation_id = launch.correlation_id;
  ++a.launches;
  open_ = true;
  open_key_ = launch.key;
  return SpreadEnter::kStarted;
}

bool SpreadScheduler::Exit() {
  if (!open_) return !failed_;
  open_ = false;
  auto it = active_.find(open_key_);
  if (it == active_.end()) return !failed_;
  Active& a = it->second;
  const uint32_t pass = a.next_pass;
  SpreadPassResult r;
  if (!target_->EndPass(a.context, a.slot, &r)) {
    Release(open_key_);
    Fail("spread: ending pass " + std::to_string(pass) + " failed");
    return false;
  }
  // On the last pass CUPTI may report anything (0, num_passes): only check
  // the index while passes remain.
  if (!r.all_submitted && r.stop_pass_index != pass && r.stop_pass_index != pass + 1u) {
    Release(open_key_);
    Fail("spread: CUPTI reported pass " + std::to_string(r.stop_pass_index) + " where pass " +
         std::to_string(pass) + " was configured");
    return false;
  }
  if (!r.all_submitted && r.stop_pass_index == pass + 1u) ++stats_.stop_index_is_next;
  const bool early = r.all_submitted && pass + 1u < num_passes_;
  if (r.ranges != 1 || r.ranges_dropped != 0 || early) {
    // Another kernel ran inside the pass (or the range was lost): the
    // configuration's partial data cannot be trusted.
    ++stats_.discarded;
    if (!target_->ResetPasses(a.context)) {
      Release(open_key_);
      Fail("spread: resetting the pass counter after a discarded pass failed");
      return false;
    }
    if (++a.restarts > max_restarts_) {
      ++stats_.abandoned;
      abandoned_.insert(open_key_);
      Release(open_key_);
    } else {
      a.needs_init = true;  // from pass 0 again at its next launch
      a.next_pass = 0;
      a.launches = 0;
    }
    return true;
  }
  ++stats_.passes;
  waiting_.clear();
  a.next_pass = pass + 1;
  if (!r.all_submitted) {
    if (a.next_pass >= num_passes_) {
      Release(open_key_);
      Fail("spread: CUPTI wants more than the " + std::to_string(num_passes_) +
           " passes of the schedule (pass index not followed?)");
      return false;
    }
    return true;
  }
  SpreadCollection c = Collection(open_key_, a);
  if (!target_->Evaluate(a.context, a.slot, &c.values)) {
    Release(open_key_);
    Fail("spread: evaluating the collected passes failed");
    return false;
  }
  ++stats_.completed;
  completed_.push_back(std::move(c));
  Release(open_key_);
  return true;
}

std::vector<SpreadCollection> SpreadScheduler::TakeCompleted() {
  std::vector<SpreadCollection> out;
  out.swap(completed_);
  return out;
}

void SpreadScheduler::NoteWaiting(uint64_t key) {
  ++stats_.slots_full;
  if (open_ || active_.empty()) return;
  if (++waiting_[key] < 3) return;
  waiting_.clear();
  std::vector<uint64_t> keys = InProgressKeys();
  for (uint64_t k : keys) {
    Active& a = active_[k];
    if (a.launches > 0) {
      SpreadCollection c = Collection(k, a);
      completed_.push_back(std::move(c));  // no values: incomplete
      ++stats_.incomplete;
      dirty_.insert(a.context);
    }
    ++stats_.preempted;
    Release(k);
  }
}

std::vector<SpreadCollection> SpreadScheduler::FinishIncomplete(void* context) {
  std::vector<SpreadCollection> out;
  std::vector<uint64_t> keys;
  if (context != nullptr) dirty_.erase(context);  // destroyed with its counter
  for (const auto& [key, a] : active_) {
    if (open_ && key == open_key_) continue;  // its launch is still running
    if (context != nullptr && a.context != context) continue;
    keys.push_back(key);
    if (a.launches == 0) continue;  // restarted after a discard, nothing collected
    if (context == nullptr) dirty_.insert(a.context);  // reset before its next set
    SpreadCollection c = Collection(key, a);
    out.push_back(std::move(c));
    ++stats_.incomplete;
  }
  for (uint64_t key : keys) Release(key);
  return out;
}

std::vector<uint64_t> SpreadScheduler::InProgressKeys() const {
  std::vector<uint64_t> keys;
  keys.reserve(active_.size());
  for (const auto& [key, a] : active_) keys.push_back(key);
  return keys;
}

void SpreadScheduler::DropAll() {
  std::vector<uint64_t> keys = InProgressKeys();
  for (uint64_t key : keys) Release(key);
  open_ = false;
}

}  // namespace sightline::collect
