// lib/collect/range_profiler_sequence.cc — see range_profiler_sequence.h.
#include "lib/collect/range_profiler_sequence.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "lib/trace/events.h"

namespace sightline::collect {

namespace {
constexpr size_t kMaxCandidates = 128;
constexpr size_t kMaxKeys = 1u << 16;  // distinct launch configurations remembered
}  // namespace

// ---- PeriodFinder ---------------------------------------------------------------

PeriodFinder::PeriodFinder(size_t max_period, size_t min_run)
    : max_period_(std::max<size_t>(1, max_period)),
      min_run_(min_run),
      history_(3 * std::max<size_t>(1, max_period) + 1, 0) {}

size_t PeriodFinder::Required(size_t period) const {
  // Two equal P-long sequences in a row: a run of P launches equal to the
  // one P earlier.
  size_t need = std::max(period, min_run_);
  auto it = rejections_.find(period);
  if (it != rejections_.end()) need <<= std::min<uint32_t>(it->second, 16);
  return need;
}

void PeriodFinder::Reject(size_t period) {
  if (period == 0) return;
  ++rejections_[period];
  for (Candidate& c : candidates_) {
    if (c.period == period) c.run = 0;  // it must repeat from here on
  }
}

bool PeriodFinder::Add(uint64_t key) {
  const uint64_t n = n_++;
  history_[n % history_.size()] = key;
  period_ = 0;
  // Candidates still repeating at this launch.
  size_t kept = 0;
  for (const Candidate& c : candidates_) {
    if (n >= c.period && At(n - c.period) == key) {
      candidates_[kept] = c;
      ++candidates_[kept].run;
      ++kept;
    }
  }
  candidates_.resize(kept);
  // The gap since this key's last launch is a candidate period; its run
  // counted back over the launches already seen (as far as confirmation
  // needs), so a step is confirmed at the end of its second repetition.
  auto it = last_seen_.find(key);
  if (it != last_seen_.end()) {
    const uint64_t gap = n - (it->second - 1);
    it->second = n + 1;
    const bool known = std::any_of(candidates_.begin(), candidates_.end(),
                                   [&](const Candidate& c) { return c.period == gap; });
    if (gap >= 1 && gap <= max_period_ && !known) {
      const size_t need = Required(gap);
      size_t run = 1;
      while (run < need && run + gap <= n && run + gap < history_.size() &&
             At(n - run) == At(n - run - gap)) {
        ++run;
      }
      if (candidates_.size() >= kMaxCandidates) {
        auto weakest = std::min_element(
            candidates_.begin(), candidates_.end(),
            [](const Candidate& a, const Candidate& b) { return a.run < b.run; });
        *weakest = Candidate{gap, run};
      } else {
        candidates_.push_back(Candidate{gap, run});
      }
    }
  } else {
    if (last_seen_.size() >= kMaxKeys) last_seen_.clear();  // shapes that never repeat
    last_seen_.emplace(key, n + 1);
  }
  // The smallest confirmed period that no longer one has outlasted.
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates_) {
    if (c.run < Required(c.period)) continue;
    bool outlasted = false;
    for (const Candidate& q : candidates_) {
      if (q.period > c.period && q.run >= Required(q.period) && q.run > c.run + q.period) {
        outlasted = true;
        break;
      }
    }
    if (!outlasted && (best == nullptr || c.period < best->period)) best = &c;
  }
  if (best == nullptr) return false;
  period_ = best->period;
  return true;
}

std::vector<uint64_t> PeriodFinder::Pattern() const {
  std::vector<uint64_t> out;
  if (period_ == 0 || n_ == 0) return out;
  const uint64_t n = n_ - 1;  // this launch: the pattern's first
  out.reserve(period_);
  for (size_t i = 0; i < period_; ++i) out.push_back(At(n - period_ + i));
  return out;
}

// ---- SequenceSpread -------------------------------------------------------------

SequenceSpread::SequenceSpread(SequenceTarget* target, uint32_t num_passes, size_t max_period,
                               size_t min_run)
    : target_(target),
      num_passes_(num_passes == 0 ? 1 : num_passes),
      max_period_(std::max<size_t>(1, max_period)),
      min_run_(min_run) {}

void SequenceSpread::Fail(const std::string& why) {
  if (!failed_) error_ = why;
  failed_ = true;
  collecting_ = false;
  pass_open_ = false;
}

void SequenceSpread::Add(const SpreadLaunch& launch) {
  Position p;
  p.key = launch.key;
  p.name = std::string(launch.name);
  p.device_id = launch.device_id;
  p.correlation_id = launch.correlation_id;
  current_.push_back(std::move(p));
}

bool SequenceSpread::Start(const SpreadLaunch& launch, std::vector<uint64_t> pattern) {
  if (dirty_.count(launch.context) != 0) {
    if (!target_->ResetSequencePasses(launch.context)) {
      Fail("sequence: resetting the pass counter failed");
      return false;
    }
    dirty_.erase(launch.context);
  }
  // Exactly one step's ranges: a range-profiler Start costs more the more
  // ranges its image holds (bench/metrics/README.md).
  if (!target_->InitSequenceImage(launch.context, pattern.size())) {
    Fail("sequence: counter-data image initialisation failed");
    return false;
  }
  if (!target_->BeginSequencePass(launch.context)) {
    Fail("sequence: starting pass 0 failed");
    return false;
  }
  collecting_ = true;
  pass_open_ = true;
  context_ = launch.context;
  pattern_ = std::move(pattern);
  passes_done_ = 0;
  first_.clear();
  current_.clear();
  last_done_.clear();
  stats_.period = pattern_.size();
  if (debug_) {
    std::fprintf(stderr,
                 "sightline: sequence: a step of %zu launches learned after %llu launches; "
                 "pass 0 starts at '%.80s' (%u passes)\n",
                 pattern_.size(),
                 static_cast<unsigned long long>(finders_.at(launch.context).launches()),
                 std::string(launch.name).c_str(), num_passes_);
  }
  Add(launch);
  return true;
}

void SequenceSpread::Discard() {
  ++stats_.discarded;
  collecting_ = false;
  pass_open_ = false;
  dirty_.insert(context_);
  auto f = finders_.find(context_);
  if (f != finders_.end()) f->second.Reject(pattern_.size());
  first_.clear();
  current_.clear();
  last_done_.clear();
}

void SequenceSpread::Debug(uint32_t pass, const SpreadPassResult& r, const char* verdict,
                           const SpreadLaunch* differing) const {
  if (!debug_) return;
  std::fprintf(stderr,
               "sightline: sequence pass %u: %zu of %zu launches, CUPTI %llu ranges (%llu dropped), "
               "next pass %llu%s%s",
               pass, current_.size(), pattern_.size(), static_cast<unsigned long long>(r.ranges),
               static_cast<unsigned long long>(r.ranges_dropped),
               static_cast<unsigned long long>(r.stop_pass_index),
               r.all_submitted ? ", all submitted" : "", verdict);
  if (differing != nullptr) {
    const std::string expected =
        current_.size() < first_.size() ? first_[current_.size()].name : std::string("?");
    std::fprintf(stderr, "; launch %zu was '%.60s', pass 0 had '%.60s'", current_.size(),
                 std::string(differing->name).c_str(), expected.c_str());
  }
  std::fprintf(stderr, "\n");
}

void SequenceSpread::CountUnseen(const SpreadPassResult& r) {
  // The image holds the step's ranges: pass 0 decodes as many as its
  // kernels (up to the capacity, the rest dropped); a later pass reports
  // the image's ranges whatever it ran, so only what overflowed tells.
  const uint64_t capacity = pattern_.size();
  const uint64_t ran = passes_done_ == 0 || current_.size() == capacity
                           ? r.ranges + r.ranges_dropped
                           : (r.ranges_dropped > 0 ? capacity + r.ranges_dropped : 0);
  if (ran > current_.size()) stats_.unseen_kernels += ran - current_.size();
}

bool SequenceSpread::EndPass(bool begin_next) {
  SpreadPassResult r;
  pass_open_ = false;
  if (!target_->EndSequencePass(context_, &r)) {
    Fail("sequence: ending pass " + std::to_string(passes_done_) + " failed");
    return false;
  }
  const uint32_t pass = passes_done_;
  bool same = r.ranges_dropped == 0 && r.ranges == pattern_.size();
  if (r.ranges_dropped == 0 && r.ranges != pattern_.size()) ++stats_.range_mismatch;
  CountUnseen(r);
  if (same && !r.all_submitted && r.stop_pass_index != pass + 1u && r.stop_pass_index != pass) {
    Fail("sequence: CUPTI reported pass " + std::to_string(r.stop_pass_index) + " after pass " +
         std::to_string(pass));
    return false;
  }
  // All passes in before the schedule's last one: the counter was not at
  // pass 0 when the sequence began (its passes are not the schedule's).
  if (same && r.all_submitted && pass + 1u != num_passes_) same = false;
  Debug(pass, r, same ? "" : ", DISCARDED", nullptr);
  if (!same) {
    Discard();
    return true;
  }
  if (pass == 0) first_ = current_;
  realigns_left_ = kMaxRealigns;
  last_done_ = current_;
  ++passes_done_;
  ++stats_.passes;
  if (r.all_submitted) {
    for (size_t i = 0; i < first_.size(); ++i) {
      SpreadCollection c = MakeSet(i);
      if (!target_->EvaluateSequenceRange(context_, i, &c.values)) {
        Fail("sequence: evaluating range " + std::to_string(i) + " failed");
        return false;
      }
      completed_.push_back(std::move(c));
      ++stats_.completed;
    }
    ++stats_.sequences;
    ++sequences_in_window_;
    ++collected_periods_[pattern_.size()];
    for (const Position& p : first_) covered_keys_.insert(p.key);
    collecting_ = false;
    return true;  // complete: this launch runs unprofiled (a next sequence starts later)
  }
  if (passes_done_ >= num_passes_) {
    Fail("sequence: CUPTI wants more than the " + std::to_string(num_passes_) +
         " passes of the schedule");
    return false;
  }
  if (!begin_next) {
    current_.clear();
    return true;  // the caller stops here (capture end, Interrupt); the pass is counted
  }
  if (!target_->BeginSequencePass(context_)) {
    Fail("sequence: starting pass " + std::to_string(passes_done_) + " failed");
    return false;
  }
  pass_open_ = true;
  current_.clear();
  return true;
}

void SequenceSpread::Interrupt(void* context, const char* why) {
  if (failed_ || !pass_open_ || context != context_) return;
  if (current_.size() == pattern_.size()) {
    // The step's launches are all in: the pass ends as the next launch
    // would have ended it; the next pass begins at the step's first launch.
    ++stats_.paused;
    EndPass(/*begin_next=*/false);
    return;
  }
  SpreadPassResult ignored;
  if (target_->EndSequencePass(context_, &ignored)) {  // best effort: the pass is not used
    CountUnseen(ignored);
  }
  const std::string verdict = std::string(", DISCARDED (") + why + " inside the step)";
  Debug(passes_done_, ignored, verdict.c_str(), nullptr);
  ++stats_.interrupted;
  const size_t k = current_.size();
  std::vector<uint64_t> rotated;
  if (realigns_left_ > 0 && k > 0 && k < pattern_.size()) {
    rotated.assign(pattern_.begin() + static_cast<std::ptrdiff_t>(k), pattern_.end());
    rotated.insert(rotated.end(), pattern_.begin(), pattern_.begin() + static_cast<std::ptrdiff_t>(k));
  }
  void* context_was = context_;
  Discard();
  if (!rotated.empty()) {
    --realigns_left_;
    ++stats_.realigned;
    realign_ = std::move(rotated);
    realign_context_ = context_was;
  }
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

bool SequenceSpread::Learn(const SpreadLaunch& launch) {
  confirmed_ = false;
  if (failed_) return false;
  auto f = finders_.find(launch.context);
  if (f == finders_.end()) {
    f = finders_.emplace(launch.context, PeriodFinder(max_period_, min_run_)).first;
  }
  confirmed_ = f->second.Add(launch.key);
  realign_now_ = false;
  if (!realign_.empty() && !collecting_ && launch.context == realign_context_) {
    // The step realigned after an interruption begins here, or it changed.
    if (launch.key == realign_[0]) {
      realign_now_ = true;
      confirmed_ = true;
    } else {
      realign_.clear();
    }
  }
  if (confirmed_ && !realign_now_ && !collecting_ && !done_for_window() &&
      sequences_in_window_ > 0) {
    confirmed_ = WorthStarting(f->second);
  }
  return confirmed_ && !collecting_ && !done_for_window();
}

bool SequenceSpread::WorthStarting(const PeriodFinder& f) const {
  // A step already collected: again only while it has fewer sequences than
  // asked for (the usual case, one, answers at once).
  auto done = collected_periods_.find(f.period());
  if (done != collected_periods_.end()) return done->second < sequences_per_step_;
  for (uint64_t key : f.Pattern()) {
    if (covered_keys_.count(key) == 0) return true;
  }
  return false;
}

void SequenceSpread::OnLaunch(const SpreadLaunch& launch, bool start_ok) {
  if (failed_) return;
  if (!collecting_) {
    if (confirmed_ && start_ok && !done_for_window()) {
      std::vector<uint64_t> pattern;
      if (realign_now_) {
        pattern.swap(realign_);
      } else {
        pattern = finders_.at(launch.context).Pattern();
        realigns_left_ = kMaxRealigns;  // a newly learned step: its own budget
      }
      realign_.clear();
      Start(launch, std::move(pattern));
    }
    confirmed_ = false;
    realign_now_ = false;
    return;
  }
  confirmed_ = false;
  if (launch.context != context_) return;  // another context: another object, not in our image
  if (!pass_open_) {
    // Between passes (Interrupt ended the last one at its step's end): the
    // next pass begins at the step's first launch, or the step changed.
    if (launch.key != pattern_[0]) {
      if (debug_) {
        std::fprintf(stderr,
                     "sightline: sequence: after pass %u the next step began with '%.60s', not "
                     "'%.60s': DISCARDED\n",
                     passes_done_, std::string(launch.name).c_str(),
                     first_.empty() ? "?" : first_[0].name.c_str());
      }
      Discard();
      return;
    }
    if (!target_->BeginSequencePass(context_)) {
      Fail("sequence: starting pass " + std::to_string(passes_done_) + " failed");
      return;
    }
    pass_open_ = true;
    Add(launch);
    return;
  }
  if (current_.size() == pattern_.size()) {
    // The launch after a pass's last: the pass is over.
    if (!EndPass() || !collecting_) return;
  }
  if (launch.key != pattern_[current_.size()]) {
    SpreadPassResult ignored;
    if (target_->EndSequencePass(context_, &ignored)) {  // best effort: the pass is not used
      CountUnseen(ignored);
    }
    Debug(passes_done_, ignored, ", DISCARDED (the step changed)", &launch);
    Discard();
    return;
  }
  Add(launch);
}

std::vector<SpreadCollection> SequenceSpread::TakeCompleted() {
  std::vector<SpreadCollection> out;
  out.swap(completed_);
  return out;
}

std::vector<SpreadCollection> SequenceSpread::FinishIncomplete(void* context) {
  std::vector<SpreadCollection> out;
  if (context != nullptr) finders_.erase(context);  // going away: its launches are history
  if (context == nullptr || context == realign_context_) realign_.clear();
  if (context != nullptr && context != context_) {
    dirty_.erase(context);
    return out;
  }
  if (!collecting_) {
    if (context != nullptr) dirty_.erase(context);
    return out;
  }
  if (!current_.empty() && current_.size() == pattern_.size()) {
    // The window closed right after a pass's last launch: that pass is
    // whole (and may be the schedule's last); end it as the next launch
    // would have, without starting another.
    if (!EndPass(/*begin_next=*/false)) return out;
    if (!collecting_) {  // completed (TakeCompleted has the sets) or discarded
      if (context != nullptr) dirty_.erase(context);
      return out;
    }
  } else if (pass_open_) {
    SpreadPassResult ignored;
    if (target_->EndSequencePass(context_, &ignored)) {  // best effort: the pass is not used
      CountUnseen(ignored);
    }
  }
  collecting_ = false;
  pass_open_ = false;
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

// ---- ReplayTopChooser -------------------------------------------------------------

std::vector<size_t> TopWeightIndices(const std::vector<std::string>& metrics) {
  auto find = [&](std::string_view name) -> std::optional<size_t> {
    for (size_t i = 0; i < metrics.size(); ++i) {
      if (metrics[i] == name) return i;
    }
    return std::nullopt;
  };
  if (auto b = find("dram__bytes.sum")) return {*b};
  auto r = find("dram__bytes_read.sum"), w = find("dram__bytes_write.sum");
  if (r && w) return {*r, *w};
  if (auto d = find("gpu__time_duration.sum")) return {*d};
  return {};
}

double TopWeight(const std::vector<size_t>& indices, const std::vector<double>& values) {
  if (indices.empty()) return -1.0;
  double sum = 0;
  for (size_t i : indices) {
    if (i >= values.size()) return -1.0;
    sum += values[i];
  }
  return sum;
}

std::vector<std::string> ReplayMetrics(const std::vector<std::string>& metrics) {
  std::vector<std::string> out;
  bool dram = false;
  for (const std::string& m : metrics) {
    if (IsDramMetric(m) || m == "gpu__time_duration.sum") out.push_back(m);
    dram = dram || IsDramMetric(m);
  }
  if (!dram || out.size() == metrics.size()) out.clear();  // nothing to replay, or the list itself
  return out;
}

void ReplayTopChooser::AddSet(uint64_t key, double weight) {
  if (top_ == 0) return;
  if (tally_.size() >= kMaxKeys && tally_.count(key) == 0) return;
  Tally& t = tally_[key];
  if (weight > 0) t.weight += weight;
  ++t.sets;
  changed_ = true;
}

void ReplayTopChooser::Choose() {
  if (!changed_) return;
  changed_ = false;
  std::vector<std::pair<uint64_t, Tally>> ranked(tally_.begin(), tally_.end());
  const size_t k = std::min<size_t>(top_, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k), ranked.end(),
                    [](const auto& a, const auto& b) {
                      if (a.second.weight != b.second.weight) {
                        return a.second.weight > b.second.weight;
                      }
                      if (a.second.sets != b.second.sets) return a.second.sets > b.second.sets;
                      return a.first < b.first;
                    });
  for (size_t i = 0; i < k; ++i) {
    if (done_.insert(ranked[i].first).second) pending_.emplace(ranked[i].first, launches_);
  }
}

bool ReplayTopChooser::TakeIfPending(uint64_t key) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return false;
  if (--it->second == 0) pending_.erase(it);
  ++taken_;
  return true;
}

}  // namespace sightline::collect
