// nccl_straggler — with several ranks, the rank that arrives last at
// collectives makes every other rank wait inside NCCL.
//
// Operations are matched across ranks by communicator and per-communicator
// sequence (or, without NCCL payloads, in device order), on clocks aligned
// from completion times: lib/analysis/cross_rank.h. A rank's lateness at an
// operation is its arrival minus the latest arrival of the others (positive
// only when it was last). The straggler is the rank with the largest median
// lateness; the rule fires when that median is at least `min_median_delay_ns`
// (so the rank is last at more than half of its operations, and one late
// start of a capture window does not make a straggler) over at least
// `min_collectives` matched operations.
//
// Cause: for each operation the straggler was last at by at least
// `min_median_delay_ns`, the interval from its previous operation's end to
// its arrival is compared with the same interval on the other ranks (each
// rank's own previous operation: the same one when all ranks share the
// communicators, a common completion instant). Per rank, on its own clock:
// compute kernel time on its device; host time blocked in synchronizing
// calls (stream/device/event synchronize) and in blocking copies up to its
// NCCL call, on any thread of the process (union); and host time before the
// call not so blocked (none when the host called NCCL before the previous
// operation ended, i.e. ran ahead of the GPU). An operation without a
// previous one on the straggler is left out of the classification.
// The straggler's excess over the other ranks' median, summed over those
// operations, is split into:
//   slow_kernel     its compute kernels ran longer (extra compute time);
//   data_loading    blocking copies beyond what the extra compute explains
//                   (a synchronous H2D/D2H copy waits for the loader);
//   synchronization synchronizing calls beyond what extra compute explains;
//   host_bound      the host reached the NCCL call later, not blocked on the
//                   GPU (Python, CPU preprocessing, logging);
// the largest share names the cause ("unexplained" when none covers half
// the lateness). Saving: the straggler's margins (its arrival − the
// second-last arrival) summed over the operations it was last at: how much
// sooner those operations could have started, at most the window. Not
// modelled by the what-if replay: root_cause.cc caps it with the others so
// savings never add up to more than the window. (The parameter was
// min_mean_delay_ns, a mean over the k-th kernels of each device, before
// issue 16.)
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "lib/analysis/intervals.h"
#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

enum Cause { kSlowKernel = 0, kDataLoading, kSynchronization, kHostBound, kNumCauses };
const char* const kCauseNames[kNumCauses] = {"slow_kernel", "data_loading", "synchronization",
                                             "host_bound"};

// What one rank did between its previous NCCL operation's end and its arrival.
struct Before {
  uint64_t span_ns = 0;     // previous end → arrival
  uint64_t compute_ns = 0;  // compute kernels on its device in that span
  uint64_t sync_ns = 0;     // host blocked in synchronizing calls (before its NCCL call)
  uint64_t copy_ns = 0;     // host blocked in blocking copies
  uint64_t host_ns = 0;     // previous end → NCCL call, minus the blocked time
};

Before Measure(const TimelineModel& model, const DerivedTimeline& timeline, uint32_t device,
               const std::vector<uint32_t>& threads, const RankCall& p, uint64_t prev_end,
               std::map<uint32_t, uint64_t>* kernel_ns) {
  Before b;
  if (p.arrival_ns <= prev_end) return b;
  b.span_ns = p.arrival_ns - prev_end;
  if (device < timeline.devices.size()) {
    b.compute_ns = timeline.devices[device].compute.OverlapWith(prev_end, p.arrival_ns);
    const DeviceTimelineInfo& d = model.devices[device];
    const GpuActivity* first = model.activities.data() + d.activity_begin;
    const GpuActivity* last = model.activities.data() + d.activity_end;
    // Activities are sorted by start: the ones that start in the span (a
    // kernel running across prev_end belongs to the previous interval).
    const GpuActivity* it = std::lower_bound(first, last, prev_end, [](const GpuActivity& a,
                                                                        uint64_t v) {
      return a.start_ns < v;
    });
    for (; it != last && it->start_ns < p.arrival_ns; ++it) {
      if (it->klass != ActivityClass::kCompute) continue;
      uint64_t e = std::min(it->end_ns, p.arrival_ns);
      (*kernel_ns)[it->name] += e - it->start_ns;
    }
  }
  // The host's part ends at its NCCL call; a call made before the previous
  // operation ended (the host ran ahead) or not known leaves no host time.
  uint64_t call = p.call_ns == 0 ? prev_end : std::clamp(p.call_ns, prev_end, p.arrival_ns);
  // Blocking calls on any thread of the process (frameworks call NCCL from
  // one thread, e.g. autograd's, and synchronize or copy on another).
  std::vector<Interval> sync, copy;
  for (uint32_t t : threads) {
    const ThreadInfo& th = model.threads[t];
    const ApiCall* bgn = model.api_calls.data() + th.api_begin;
    const ApiCall* end = model.api_calls.data() + th.api_end;
    // Calls are sorted by start; a blocking call started before prev_end
    // can still run into the span: begin a little earlier.
    const ApiCall* it = std::lower_bound(bgn, end, prev_end, [](const ApiCall& a, uint64_t v) {
      return a.start_ns < v;
    });
    for (int back = 0; it != bgn && back < 4; ++back) --it;
    for (; it != end && it->start_ns < call; ++it) {
      uint64_t s = std::max(it->start_ns, prev_end), e = std::min(it->end_ns, call);
      if (e <= s) continue;
      if (it->flags & kApiMemcpySync) {
        copy.push_back({s, e});
      } else if (it->flags & kApiSync) {
        sync.push_back({s, e});
      }
    }
  }
  b.sync_ns = IntervalSet::FromUnsorted(std::move(sync)).total();
  b.copy_ns = IntervalSet::FromUnsorted(std::move(copy)).total();
  uint64_t before_call = call - prev_end;
  uint64_t blocked = std::min(before_call, b.sync_ns + b.copy_ns);
  b.host_ns = before_call - blocked;
  return b;
}

uint64_t MedianOf(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

double Excess(uint64_t mine, uint64_t others_median) {
  return mine > others_median ? double(mine - others_median) : 0.0;
}

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  const CrossRankAnalysis& x = ctx.timeline().cross_rank;
  if (!x.active() || x.ranks.size() < 2) return;
  const double min_ops = std::max(1.0, ctx.Param("min_collectives"));
  const double min_delay = ctx.Param("min_median_delay_ns");
  const size_t R = x.ranks.size();
  // Lateness per rank and operation; each rank's parts in its arrival order.
  std::vector<std::vector<int64_t>> lateness(R);
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> order(R);  // (aligned arrival, part)
  for (uint32_t m = 0; m < x.ops.size(); ++m) {
    const MatchedOp& op = x.ops[m];
    uint64_t last = 0;
    for (uint32_t k = op.parts_begin; k < op.parts_end; ++k) {
      last = std::max(last, x.Aligned(x.parts[k].rank_index, x.parts[k].arrival_ns));
    }
    for (uint32_t k = op.parts_begin; k < op.parts_end; ++k) {
      const RankCall& p = x.parts[k];
      uint64_t a = x.Aligned(p.rank_index, p.arrival_ns);
      // a <= last here; the difference of two times fits int64 in any real trace.
      lateness[p.rank_index].push_back(p.rank_index == op.last
                                           ? int64_t(std::min<uint64_t>(op.last_margin_ns, INT64_MAX))
                                           : -int64_t(std::min<uint64_t>(last - a, INT64_MAX)));
      order[p.rank_index].push_back({a, k});
    }
  }
  size_t straggler = R;
  int64_t best = 0;
  for (size_t r = 0; r < R; ++r) {
    if (double(lateness[r].size()) < min_ops) continue;
    std::vector<int64_t>& v = lateness[r];
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    int64_t med = v[v.size() / 2];
    if (straggler == R || med > best) {
      straggler = r;
      best = med;
    }
  }
  if (straggler == R || double(best) < min_delay) return;
  const RankCrossStats& s = x.ranks[straggler];
  if (s.late_margin_ns == 0) return;
  for (auto& v : order) std::sort(v.begin(), v.end());
  // part index → position in its rank's order (for the previous operation).
  std::vector<uint32_t> pos(x.parts.size(), 0);
  for (size_t r = 0; r < R; ++r) {
    for (uint32_t i = 0; i < order[r].size(); ++i) pos[order[r][i].second] = i;
  }
  auto prev_end = [&](const RankCall& p, uint32_t part, uint64_t* end) {
    uint32_t i = pos[part];
    if (i == 0) return false;
    *end = x.parts[order[p.rank_index][i - 1].second].end_ns;
    return true;
  };
  std::vector<std::vector<uint32_t>> threads_of(model.traces.size());
  for (uint32_t t = 0; t < model.threads.size(); ++t) {
    if (model.threads[t].trace < threads_of.size()) threads_of[model.threads[t].trace].push_back(t);
  }
  // Causes over the operations it was last at by at least min_delay.
  double excess[kNumCauses] = {0, 0, 0, 0};
  double lateness_sum = 0;
  uint64_t late_ops = 0, classified = 0;
  std::map<uint32_t, uint64_t> mine_kernels;
  std::map<uint32_t, double> others_kernels;  // mean over other ranks, summed over ops
  for (const MatchedOp& op : x.ops) {
    if (op.last != straggler || double(op.last_margin_ns) < min_delay) continue;
    ++late_ops;
    Before me;
    std::vector<Before> others;
    std::map<uint32_t, uint64_t> my_k;
    std::vector<std::map<uint32_t, uint64_t>> their_k;
    bool ok = true;
    for (uint32_t k = op.parts_begin; k < op.parts_end && ok; ++k) {
      const RankCall& p = x.parts[k];
      uint64_t pe;
      if (!prev_end(p, k, &pe)) {
        ok = p.rank_index != straggler;  // another rank's first op: leave it out
        continue;
      }
      std::map<uint32_t, uint64_t> kn;
      Before b = Measure(model, ctx.timeline(), x.ranks[p.rank_index].device,
                         threads_of[p.trace], p, pe, &kn);
      if (p.rank_index == straggler) {
        me = b;
        my_k = std::move(kn);
      } else {
        others.push_back(b);
        their_k.push_back(std::move(kn));
      }
    }
    if (!ok || others.empty() || me.span_ns == 0) continue;
    ++classified;
    auto med = [&](uint64_t Before::*f) {
      std::vector<uint64_t> v;
      for (const Before& b : others) v.push_back(b.*f);
      return MedianOf(v);
    };
    double kernel = Excess(me.compute_ns, med(&Before::compute_ns));
    excess[kSlowKernel] += kernel;
    excess[kDataLoading] += std::max(0.0, Excess(me.copy_ns, med(&Before::copy_ns)) - kernel);
    excess[kSynchronization] += std::max(0.0, Excess(me.sync_ns, med(&Before::sync_ns)) - kernel);
    excess[kHostBound] += Excess(me.host_ns, med(&Before::host_ns));
    lateness_sum += double(op.last_margin_ns);
    for (auto& [n, t] : my_k) mine_kernels[n] += t;
    for (const auto& m : their_k) {
      for (auto& [n, t] : m) others_kernels[n] += double(t) / double(their_k.size());
    }
  }
  int cause = -1;
  for (int c = 0; c < kNumCauses; ++c) {
    if (excess[c] > 0 && (cause < 0 || excess[c] > excess[cause])) cause = c;
  }
  if (cause >= 0 && excess[cause] < 0.5 * lateness_sum) cause = -1;
  const char* cause_name = cause < 0 ? "unexplained" : kCauseNames[cause];
  // The kernel that grew the most on the straggler.
  uint32_t slow_name = 0;
  double slow_extra = 0;
  for (auto& [n, t] : mine_kernels) {
    double extra = double(t) - others_kernels[n];
    if (extra > slow_extra) {
      slow_extra = extra;
      slow_name = n;
    }
  }

  // Operations of several communicators can overlap in time, so the summed
  // margins are capped at the window (a saving is never more than it).
  const uint64_t saving = std::min<uint64_t>(s.late_margin_ns, ctx.window_ns());
  const double n_ops = double(s.matched_calls);
  const double per_op = classified > 0 ? 1.0 / double(classified) : 0.0;
  double others_comm = 0;
  for (size_t r = 0; r < R; ++r) {
    if (r != straggler) others_comm += double(x.ranks[r].comm_ns);
  }
  others_comm /= double(R - 1);
  Finding f = ctx.NewFinding(saving);
  std::string rank = std::to_string(s.rank);
  f.scope = "rank " + rank;
  std::string why;
  switch (cause) {
    case kSlowKernel:
      why = slow_name != 0
                ? absl::StrCat("its compute kernels run longer (", std::string(model.String(slow_name)), " +",
                               FormatNs(slow_extra * per_op), " per collective)")
                : absl::StrCat("its compute kernels run longer (+",
                               FormatNs(excess[kSlowKernel] * per_op), " per collective)");
      break;
    case kDataLoading:
      why = absl::StrCat("it waits in blocking copies (+", FormatNs(excess[kDataLoading] * per_op),
                         " per collective)");
      break;
    case kSynchronization:
      why = absl::StrCat("it waits in synchronizing calls (+",
                         FormatNs(excess[kSynchronization] * per_op), " per collective)");
      break;
    case kHostBound:
      why = absl::StrCat("its host reaches the NCCL call later (+",
                         FormatNs(excess[kHostBound] * per_op), " of CPU time per collective)");
      break;
    default:
      why = "cause not visible in the trace";
  }
  f.title = absl::StrCat("rank ", rank, " arrives last at ",
                         FormatPct(PctOf(double(s.last_arrivals), n_ops)), " of ",
                         s.matched_calls, " collectives, ", FormatNs(double(best)),
                         " late (median): ", why);
  f.Number("straggler_rank", double(s.rank), "")
      .Number("ranks", double(R), "count")
      .Number("collectives_matched", n_ops, "count")
      .Number("mean_arrival_delay_ns", double(s.arrival_delay_ns) / n_ops, "ns")
      .Number("median_lateness_ns", double(best), "ns")
      .Number("last_arrivals", double(s.last_arrivals), "count")
      .Text("match_method", x.method)
      .Number("clock_skew_median_ns", double(x.skew_median_ns), "ns")
      .Text("cause", cause_name)
      .Number("late_collectives", double(late_ops), "count")
      .Number("late_collectives_classified", double(classified), "count")
      .Number("extra_compute_ns", excess[kSlowKernel] * per_op, "ns")
      .Number("extra_copy_wait_ns", excess[kDataLoading] * per_op, "ns")
      .Number("extra_sync_wait_ns", excess[kSynchronization] * per_op, "ns")
      .Number("extra_host_ns", excess[kHostBound] * per_op, "ns")
      .Number("straggler_comm_ns", double(s.comm_ns), "ns")
      .Number("others_mean_comm_ns", others_comm, "ns");
  if (slow_name != 0 && cause == kSlowKernel) {
    f.Text("slow_kernel", std::string(model.String(slow_name)));
    f.Number("slow_kernel_extra_ns", slow_extra * per_op, "ns");
  }
  for (const RankCrossStats& r : x.ranks) {
    Offender o;
    o.name = "rank " + std::to_string(r.rank);
    o.count = r.last_arrivals;
    o.total_ns = r.late_margin_ns;
    o.share_pct = PctOf(double(r.last_arrivals), double(std::max<uint64_t>(1, r.matched_calls)));
    o.detail = "arrival delay " +
               FormatNs(double(r.arrival_delay_ns) / double(std::max<uint64_t>(1, r.matched_calls))) +
               " mean; waited " + FormatNs(double(r.wait_ns)) + "; exposed NCCL time " +
               FormatNs(double(r.exposed_comm_ns));
    f.offenders.push_back(o);
  }
  std::stable_sort(f.offenders.begin(), f.offenders.end(),
                   [](const Offender& a, const Offender& b) { return a.total_ns > b.total_ns; });
  KeepTopOffenders(&f.offenders, 8);
  switch (cause) {
    case kSlowKernel:
      f.recommendation =
          "The other ranks wait inside NCCL while this rank's GPU still computes: its kernels "
          "take longer (uneven shards or sequence lengths, a slower or throttled GPU, another "
          "process on it). Balance the work per rank or check the GPU's clocks and neighbours.";
      break;
    case kDataLoading:
      f.recommendation =
          "The other ranks wait while this rank blocks on copies before the collective (input "
          "batches not ready): prefetch with pinned memory and non_blocking copies, more "
          "DataLoader workers on this rank, or check its storage and CPU share.";
      break;
    case kSynchronization:
      f.recommendation =
          "The other ranks wait while this rank synchronizes with its GPU before the "
          "collective (.item(), .cpu(), torch.cuda.synchronize, logging of tensors): remove the "
          "synchronization or do it on every rank at the same point.";
      break;
    case kHostBound:
      f.recommendation =
          "The other ranks wait while this rank's CPU is busy before the collective (extra "
          "Python work, logging or checkpointing on one rank, CPU contention): move the extra "
          "work off the step or spread it over ranks, and check CPU affinity.";
      break;
    default:
      f.recommendation =
          "The other ranks wait inside NCCL for this rank; its compute, copies, synchronization "
          "and host time before the collectives do not explain it. Look for work the trace "
          "does not record (other streams' kernels not traced, the network, another process).";
  }
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(nccl_straggler, sightline::analysis::kRuleTimeline,
               "A rank that arrives late at collectives",
               sightline::analysis::Run,
               {"min_collectives", 3, "matched collectives the straggler must take part in",
                1, 1e9},
               {"min_median_delay_ns", 50e3,
                "fire when the straggler's median lateness (arrival − the others' latest) is at "
                "least this; also the margin of a late arrival whose cause is classified"});
