// nccl_straggler — with several ranks, the rank that arrives last at
// collectives makes every other rank wait inside NCCL. The k-th communication
// operation of each rank's device is matched across ranks (merged clock, see
// model.h); per collective, each rank's arrival delay is its start minus the
// earliest start. The straggler is the rank with the largest total delay.
// Fires with at least `min_collectives` matched collectives and a straggler
// mean delay of at least `min_mean_delay_ns`. Saving: the straggler's delay
// beyond the median rank's, summed over collectives — the time the others
// spend waiting for it.
#include <algorithm>
#include <map>

#include "lib/analysis/rule.h"
#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

void Run(const RuleContext& ctx, std::vector<Finding>* out) {
  const TimelineModel& model = ctx.model();
  // One device with communication per trace (the first such device).
  std::vector<uint32_t> devices;
  std::vector<bool> trace_taken(model.traces.size(), false);
  for (uint32_t d = 0; d < model.devices.size(); ++d) {
    if (trace_taken[model.devices[d].trace] || ctx.timeline().devices[d].comm.empty()) continue;
    trace_taken[model.devices[d].trace] = true;
    devices.push_back(d);
  }
  if (devices.size() < 2) return;
  std::vector<std::vector<const GpuActivity*>> ops(devices.size());
  size_t matched = SIZE_MAX;
  for (size_t r = 0; r < devices.size(); ++r) {
    const DeviceTimelineInfo& info = model.devices[devices[r]];
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      if (model.activities[i].klass == ActivityClass::kCommunication) {
        ops[r].push_back(&model.activities[i]);
      }
    }
    matched = std::min(matched, ops[r].size());
  }
  uint64_t min_collectives = static_cast<uint64_t>(ctx.Param("min_collectives"));
  if (matched < min_collectives || matched == 0) return;
  size_t n = devices.size();
  std::vector<uint64_t> delay(n, 0), last_count(n, 0), comm_ns(n, 0);
  uint64_t saving = 0;
  std::vector<uint64_t> starts(n);
  for (size_t k = 0; k < matched; ++k) {
    uint64_t earliest = UINT64_MAX;
    size_t last = 0;
    for (size_t r = 0; r < n; ++r) {
      starts[r] = ops[r][k]->start_ns;
      earliest = std::min(earliest, starts[r]);
      if (starts[r] > starts[last]) last = r;
      comm_ns[r] += ops[r][k]->duration();
    }
    for (size_t r = 0; r < n; ++r) delay[r] += starts[r] - earliest;
    last_count[last]++;
  }
  size_t straggler = std::max_element(delay.begin(), delay.end()) - delay.begin();
  // Saving: per collective, straggler start − median start (clipped at 0).
  for (size_t k = 0; k < matched; ++k) {
    std::vector<uint64_t> s(n);
    for (size_t r = 0; r < n; ++r) s[r] = ops[r][k]->start_ns;
    uint64_t mine = s[straggler];
    std::nth_element(s.begin(), s.begin() + n / 2, s.end());
    uint64_t median = s[n / 2];
    saving += mine > median ? mine - median : 0;
  }
  double mean_delay = double(delay[straggler]) / double(matched);
  if (mean_delay < ctx.Param("min_mean_delay_ns") || saving == 0) return;
  int32_t rank = model.traces[model.devices[devices[straggler]].trace].rank;
  double others_comm = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r != straggler) others_comm += double(comm_ns[r]);
  }
  others_comm /= double(n - 1);
  Finding f = ctx.NewFinding(saving);
  f.scope = "rank " + std::to_string(rank);
  f.title = "rank " + std::to_string(rank) + " arrives last at " +
            FormatPct(PctOf(double(last_count[straggler]), double(matched))) + " of " +
            std::to_string(matched) + " collectives, " + FormatNs(mean_delay) +
            " late on average";
  f.Number("straggler_rank", double(rank), "")
      .Number("ranks", double(n), "count")
      .Number("collectives_matched", double(matched), "count")
      .Number("mean_arrival_delay_ns", mean_delay, "ns")
      .Number("last_arrivals", double(last_count[straggler]), "count")
      .Number("straggler_comm_ns", double(comm_ns[straggler]), "ns")
      .Number("others_mean_comm_ns", others_comm, "ns");
  for (size_t r = 0; r < n; ++r) {
    Offender o;
    o.name = "rank " + std::to_string(model.traces[model.devices[devices[r]].trace].rank);
    o.count = last_count[r];
    o.total_ns = delay[r];
    o.share_pct = PctOf(double(last_count[r]), double(matched));
    o.detail = "arrival delay " + FormatNs(double(delay[r]) / double(matched)) +
               " mean; NCCL time " + FormatNs(double(comm_ns[r]));
    f.offenders.push_back(o);
  }
  KeepTopOffenders(&f.offenders, 8);
  f.recommendation =
      "The other ranks wait inside NCCL for this rank. Look at what it does before the "
      "collectives (uneven data shards or sequence lengths, extra logging/checkpointing on "
      "that rank, a slower GPU or host, CPU contention) and balance the work.";
  out->push_back(std::move(f));
}

}  // namespace
}  // namespace sightline::analysis

SIGHTLINE_RULE(nccl_straggler, sightline::analysis::kRuleTimeline,
               "A rank that arrives late at collectives",
               sightline::analysis::Run,
               {"min_collectives", 3, "matched collectives needed"},
               {"min_mean_delay_ns", 50e3, "fire when the straggler's mean delay is at least this"});
