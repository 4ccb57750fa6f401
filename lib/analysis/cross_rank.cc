// Cross-rank matching, clock alignment and wait attribution (cross_rank.h).
#include "lib/analysis/cross_rank.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "lib/analysis/report_builder.h"
#include "lib/analysis/timeline.h"

namespace sightline::analysis {
namespace {

constexpr int kCandidates = 4;  // nearest same-label reference calls per call

bool IsP2p(NcclOp op) { return op == NcclOp::kSend || op == NcclOp::kRecv; }

// One NCCL operation of one rank, before matching.
struct Call {
  RankCall part;
  uint64_t label = 0;  // what must be equal to pair: op/bytes, or kernel name
  uint64_t comm = 0;
  uint64_t bytes = 0;
  NcclOp op = NcclOp::kUnknown;
  int32_t self = -1, peer = -1;  // point-to-point: own and peer rank in the communicator
};

// An ordered stream of calls that NCCL's ordering rule makes comparable
// across ranks: (communicator, collectives) or (communicator, from, to).
struct ChannelKey {
  uint64_t comm = 0;
  int32_t from = -1, to = -1;  // -1, -1 for collectives
  bool operator<(const ChannelKey& o) const {
    return std::tie(comm, from, to) < std::tie(o.comm, o.from, o.to);
  }
};

struct Channel {
  // Per rank index: the calls (indices into calls[rank]) in call order.
  std::map<uint32_t, std::vector<uint32_t>> members;
  uint32_t reference = kNone;
};

uint64_t Mix(uint64_t a, uint64_t b) {
  return a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
}


// Builds each rank's calls. Returns the method.
std::string CollectCalls(const TimelineModel& model, std::vector<RankCrossStats>* ranks,
                         std::vector<std::vector<Call>>* calls_by_rank,
                         std::vector<uint32_t>* rank_of_trace) {
  rank_of_trace->assign(model.traces.size(), kNone);
  // Traces with host NCCL calls that carry a communicator id.
  std::vector<uint32_t> with_comm(model.traces.size(), 0);
  for (const Collective& c : model.collectives) {
    if (c.source == NcclSource::kHostNvtx && c.comm_id != 0 && c.trace < with_comm.size()) {
      with_comm[c.trace]++;
    }
  }
  size_t comm_traces = 0;
  for (uint32_t n : with_comm) comm_traces += n > 0;
  auto rank_index = [&](uint16_t trace) {
    if ((*rank_of_trace)[trace] == kNone) {
      (*rank_of_trace)[trace] = static_cast<uint32_t>(ranks->size());
      RankCrossStats s;
      s.trace = trace;
      s.rank = model.traces[trace].rank;
      ranks->push_back(s);
      calls_by_rank->emplace_back();
    }
    return (*rank_of_trace)[trace];
  };
  if (comm_traces >= 2) {
    // A host call's kernel: NCCL launches it through the driver API, which
    // may not be recorded, so the link is by CUPTI correlation id (one
    // counter per process, taken at every API entry): the communication
    // kernel whose id lies between the calling thread's last recorded API
    // call before the host call and its first one after it.
    absl::flat_hash_map<uint16_t, std::vector<std::pair<uint32_t, uint32_t>>> kernels;
    for (uint32_t i = 0; i < model.activities.size(); ++i) {
      const GpuActivity& a = model.activities[i];
      if (a.klass != ActivityClass::kCommunication || a.correlation_id == 0) continue;
      kernels[a.trace].push_back({a.correlation_id, i});
    }
    absl::flat_hash_map<uint16_t, std::vector<uint8_t>> owned;  // claimed by a call's window
    for (auto& [t, v] : kernels) {
      std::sort(v.begin(), v.end());
      owned[t].assign(v.size(), 0);
    }
    struct Host {
      uint32_t collective;
      uint32_t lo = 0, hi = UINT32_MAX;  // correlation window (exclusive)
      uint32_t link = kNone;             // index into kernels[trace]
    };
    std::vector<Host> host;
    for (uint32_t i = 0; i < model.collectives.size(); ++i) {
      const Collective& c = model.collectives[i];
      if (c.source != NcclSource::kHostNvtx || c.comm_id == 0 || with_comm[c.trace] == 0) continue;
      Host h;
      h.collective = i;
      if (c.thread < model.threads.size()) {
        const ThreadInfo& th = model.threads[c.thread];
        const ApiCall* b = model.api_calls.data() + th.api_begin;
        const ApiCall* e = model.api_calls.data() + th.api_end;
        const ApiCall* k = std::lower_bound(
            b, e, c.start_ns, [](const ApiCall& x, uint64_t v) { return x.start_ns < v; });
        if (k != b) h.lo = (k - 1)->correlation_id;
        const ApiCall* after = std::upper_bound(
            k, e, c.end_ns, [](uint64_t v, const ApiCall& x) { return v < x.start_ns; });
        if (after != e && after->correlation_id != 0) h.hi = after->correlation_id;
      }
      auto it = kernels.find(c.trace);
      if (it != kernels.end()) {
        const auto& v = it->second;
        auto& own = owned[c.trace];
        size_t k = std::upper_bound(v.begin(), v.end(), std::make_pair(h.lo, UINT32_MAX)) - v.begin();
        while (k < v.size() && own[k]) ++k;
        if (k < v.size() && v[k].first < h.hi) {
          h.link = static_cast<uint32_t>(k);
          own[k] = 1;
        }
      }
      host.push_back(h);
    }
    // Calls of an NCCL group have no kernel of their own (it is launched at
    // ncclGroupEnd): the first later kernel no call's window claimed, before
    // the next linked call on the thread.
    uint32_t bound = UINT32_MAX;
    absl::flat_hash_map<uint32_t, uint32_t> next_linked_lo;  // thread → lo of the next linked call
    for (size_t x = host.size(); x-- > 0;) {
      Host& h = host[x];
      const Collective& c = model.collectives[h.collective];
      auto nl = next_linked_lo.find(c.thread);
      bound = nl == next_linked_lo.end() ? UINT32_MAX : nl->second;
      if (h.link != kNone) {
        next_linked_lo[c.thread] = h.lo;
        continue;
      }
      auto it = kernels.find(c.trace);
      if (it == kernels.end()) continue;
      const auto& v = it->second;
      const auto& own = owned[c.trace];
      size_t k = std::upper_bound(v.begin(), v.end(), std::make_pair(h.lo, UINT32_MAX)) - v.begin();
      while (k < v.size() && own[k]) ++k;
      if (k < v.size() && v[k].first <= bound) h.link = static_cast<uint32_t>(k);
    }
    for (const Host& h : host) {
      const Collective& c = model.collectives[h.collective];
      Call call;
      RankCall& p = call.part;
      p.trace = c.trace;
      p.rank_index = rank_index(c.trace);
      p.call_ns = c.start_ns;
      p.thread = c.thread;
      p.arrival_ns = c.start_ns;
      p.end_ns = c.end_ns;
      if (h.link != kNone) {
        uint32_t act = kernels[c.trace][h.link].second;
        const GpuActivity& a = model.activities[act];
        p.activity = act;
        p.arrival_ns = a.start_ns;
        p.end_ns = a.end_ns;
        p.gpu_times = true;
      }
      bool p2p = IsP2p(c.op);
      call.label = Mix(p2p ? 0xffu : static_cast<uint64_t>(c.op), c.bytes);
      call.comm = c.comm_id;
      call.bytes = c.bytes;
      call.op = c.op;
      call.self = c.rank >= 0 ? c.rank : model.traces[c.trace].rank;
      call.peer = c.peer;
      (*calls_by_rank)[p.rank_index].push_back(call);
    }
    return "communicator";
  }
  // Kernel-only: each trace's first device with communication kernels.
  std::vector<bool> taken(model.traces.size(), false);
  for (uint32_t d = 0; d < model.devices.size(); ++d) {
    const DeviceTimelineInfo& dev = model.devices[d];
    if (taken[dev.trace]) continue;
    bool any = false;
    for (uint32_t i = dev.activity_begin; i < dev.activity_end; ++i) {
      const GpuActivity& a = model.activities[i];
      if (a.klass != ActivityClass::kCommunication) continue;
      any = true;
      Call call;
      RankCall& p = call.part;
      p.trace = a.trace;
      p.rank_index = rank_index(a.trace);
      const ApiCall* api = model.LaunchOf(a);
      p.call_ns = api != nullptr ? api->start_ns : 0;
      p.thread = api != nullptr ? api->thread : kNone;
      p.arrival_ns = a.start_ns;
      p.end_ns = a.end_ns;
      p.activity = i;
      p.gpu_times = true;
      call.label = a.name;
      if (a.kind == ActivityKind::kNccl && a.detail < model.collectives.size()) {
        call.op = model.collectives[a.detail].op;
      }
      (*calls_by_rank)[p.rank_index].push_back(call);
    }
    if (any) taken[dev.trace] = true;
  }
  return "device_order";
}

int64_t Median(std::vector<int64_t>* v, bool* ok) {
  *ok = !v->empty();
  if (v->empty()) return 0;
  size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + mid, v->end());
  return (*v)[mid];
}

// a − b as a signed number, saturated (timestamps of a hostile trace can be
// anywhere in uint64).
int64_t Diff(uint64_t a, uint64_t b) {
  constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
  return a >= b ? int64_t(std::min(a - b, kMax)) : -int64_t(std::min(b - a, kMax));
}

int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return r;
}

// Maximum-weight common subsequence of `other` against `ref` (see header).
// Returns, per other call, the reference position it pairs with, or -1.
std::vector<int32_t> Align(const std::vector<const Call*>& ref, const std::vector<const Call*>& other,
                           int64_t offset /* other → ref clock */) {
  std::vector<int32_t> out(other.size(), -1);
  if (ref.empty() || other.empty()) return out;
  // Reference period: median spacing of its ends.
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < ref.size(); ++i) {
    gaps.push_back(std::llabs(Diff(ref[i]->part.end_ns, ref[i - 1]->part.end_ns)));
  }
  bool ok;
  double period = std::max<double>(1000.0, double(Median(&gaps, &ok)));
  // Reference positions by label, in time order.
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> by_label;
  for (uint32_t i = 0; i < ref.size(); ++i) by_label[ref[i]->label].push_back(i);
  struct Pair {
    uint32_t i, j;
    double w;
  };
  std::vector<Pair> pairs;
  pairs.reserve(other.size() * kCandidates);
  for (uint32_t j = 0; j < other.size(); ++j) {
    auto it = by_label.find(other[j]->label);
    if (it == by_label.end()) continue;
    const std::vector<uint32_t>& pos = it->second;
    // On the reference's clock (unsigned wrap-around is defined).
    uint64_t t = other[j]->part.end_ns + uint64_t(offset);
    // Nearest in time: ends of one label are ordered like the calls.
    size_t k = std::lower_bound(pos.begin(), pos.end(), t, [&](uint32_t i, uint64_t v) {
                 return ref[i]->part.end_ns < v;
               }) - pos.begin();
    // The kCandidates positions around k (fewer when the label has fewer).
    size_t lo = k >= kCandidates / 2 ? k - kCandidates / 2 : 0;
    lo = std::min(lo, pos.size() > kCandidates ? pos.size() - kCandidates : 0);
    size_t hi = std::min(pos.size(), lo + kCandidates);
    for (size_t q = lo; q < hi; ++q) {
      double d = std::fabs(double(Diff(ref[pos[q]]->part.end_ns, t)));
      pairs.push_back({pos[q], j, 1.0 + 0.5 / (1.0 + d / period)});
    }
  }
  if (pairs.empty()) return out;
  // Weighted longest chain with strictly increasing i and j: by j, then i
  // descending (pairs of one j never chain), Fenwick prefix maximum over i.
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
    return a.j != b.j ? a.j < b.j : a.i > b.i;
  });
  const size_t n = ref.size();
  std::vector<std::pair<double, int32_t>> tree(n + 1, {0.0, -1});  // (score, pair)
  std::vector<int32_t> prev(pairs.size(), -1);
  std::vector<double> score(pairs.size(), 0);
  double best = 0;
  int32_t best_pair = -1;
  for (size_t p = 0; p < pairs.size(); ++p) {
    std::pair<double, int32_t> q{0.0, -1};
    for (size_t x = pairs[p].i; x > 0; x -= x & (~x + 1)) q = std::max(q, tree[x]);
    score[p] = q.first + pairs[p].w;
    prev[p] = q.second;
    for (size_t x = pairs[p].i + 1; x <= n; x += x & (~x + 1)) {
      tree[x] = std::max(tree[x], std::make_pair(score[p], int32_t(p)));
    }
    if (score[p] > best) {
      best = score[p];
      best_pair = int32_t(p);
    }
  }
  for (int32_t p = best_pair; p >= 0; p = prev[p]) out[pairs[p].j] = int32_t(pairs[p].i);
  return out;
}

}  // namespace

CrossRankAnalysis AnalyzeCrossRank(const TimelineModel& model,
                                   const std::vector<DeviceTimeline>& devices) {
  CrossRankAnalysis out;
  std::vector<RankCrossStats> ranks;
  std::vector<std::vector<Call>> calls;
  std::vector<uint32_t> rank_of_trace;
  std::string method = CollectCalls(model, &ranks, &calls, &rank_of_trace);
  size_t ranks_with_calls = 0;
  for (const auto& c : calls) ranks_with_calls += !c.empty();
  if (ranks_with_calls < 2) return out;
  out.method = method;
  const uint32_t R = static_cast<uint32_t>(ranks.size());

  // Channels.
  std::map<ChannelKey, Channel> channels;
  for (uint32_t r = 0; r < R; ++r) {
    for (uint32_t i = 0; i < calls[r].size(); ++i) {
      const Call& c = calls[r][i];
      ChannelKey key{c.comm, -1, -1};
      if (method == "communicator" && IsP2p(c.op)) {
        if (c.peer < 0 || c.self < 0) continue;  // unpairable: counted unmatched
        key.from = c.op == NcclOp::kSend ? c.self : c.peer;
        key.to = c.op == NcclOp::kSend ? c.peer : c.self;
      }
      channels[key].members[r].push_back(i);
    }
  }
  for (auto& [key, ch] : channels) {
    size_t most = 0;
    for (auto& [r, v] : ch.members) {
      if (v.size() > most) {
        most = v.size();
        ch.reference = r;
      }
    }
  }
  for (uint32_t r = 0; r < R; ++r) {
    ranks[r].calls = calls[r].size();
    out.calls += calls[r].size();
  }

  // The first pass starts from the merged clock (each trace's CLOCK_REALTIME
  // mapping, or its raw CUPTI clock without one).
  std::vector<int64_t> offset(R, 0);
  std::vector<bool> aligned(R, false);
  auto seq_of = [&](uint32_t r, const std::vector<uint32_t>& idx) {
    std::vector<const Call*> s;
    s.reserve(idx.size());
    for (uint32_t i : idx) s.push_back(&calls[r][i]);
    return s;
  };

  // Two passes: align with the current offsets, re-estimate offsets.
  struct Edge {
    uint32_t a, b;  // offset[b] = offset[a] + d
    int64_t d;
    size_t n;
  };
  std::map<ChannelKey, std::map<uint32_t, std::vector<int32_t>>> alignment;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Edge> edges;
    for (auto& [key, ch] : channels) {
      uint32_t ref = ch.reference;
      std::vector<const Call*> rs = seq_of(ref, ch.members[ref]);
      auto& al = alignment[key];
      for (auto& [r, v] : ch.members) {
        if (r == ref) continue;
        std::vector<const Call*> os = seq_of(r, v);
        al[r] = Align(rs, os, offset[r] - offset[ref]);
        std::vector<int64_t> d;
        for (size_t j = 0; j < os.size(); ++j) {
          int32_t i = al[r][j];
          if (i < 0 || !rs[i]->part.gpu_times || !os[j]->part.gpu_times) continue;
          d.push_back(Diff(rs[i]->part.end_ns, os[j]->part.end_ns));
        }
        bool ok;
        int64_t m = Median(&d, &ok);
        if (ok) edges.push_back({ref, r, m, d.size()});
      }
    }
    // Offsets relative to the rank with the most matched completions,
    // chained over channels (strongest edges first).
    std::vector<size_t> weight(R, 0);
    for (const Edge& e : edges) {
      weight[e.a] += e.n;
      weight[e.b] += e.n;
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.n > y.n; });
    std::vector<bool> known(R, false);
    std::vector<int64_t> next = offset;
    uint32_t root = uint32_t(std::max_element(weight.begin(), weight.end()) - weight.begin());
    if (!edges.empty()) {
      known[root] = true;
      next[root] = 0;
      for (bool grew = true; grew;) {
        grew = false;
        for (const Edge& e : edges) {
          if (known[e.a] && !known[e.b]) {
            next[e.b] = SatAdd(next[e.a], e.d);
            known[e.b] = grew = true;
          } else if (known[e.b] && !known[e.a]) {
            next[e.a] = SatAdd(next[e.b], e.d == std::numeric_limits<int64_t>::min()
                                               ? std::numeric_limits<int64_t>::max()
                                               : -e.d);
            known[e.a] = grew = true;
          }
        }
      }
      // Ranks with no matched completion keep their starting offset, moved
      // by the root's change so the unaligned stay on the merged clock.
      int64_t shift = offset[root] == std::numeric_limits<int64_t>::min()
                          ? std::numeric_limits<int64_t>::max()
                          : -offset[root];
      for (uint32_t r = 0; r < R; ++r) {
        if (!known[r]) next[r] = SatAdd(offset[r], shift);
      }
    }
    offset = next;
    aligned = known;
  }
  out.clock_source = std::any_of(aligned.begin(), aligned.end(), [](bool b) { return b; })
                         ? "collective_ends"
                         : "realtime";
  for (uint32_t r = 0; r < R; ++r) {
    ranks[r].clock_offset_ns = offset[r];
    ranks[r].clock_aligned = aligned[r];
  }

  // Matched operations from the final alignment.
  std::vector<std::vector<uint8_t>> matched(R);
  for (uint32_t r = 0; r < R; ++r) matched[r].assign(calls[r].size(), 0);
  for (auto& [key, ch] : channels) {
    out.channels++;
    uint32_t ref = ch.reference;
    const std::vector<uint32_t>& rv = ch.members[ref];
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> by_ref(rv.size());
    for (auto& [r, al] : alignment[key]) {
      const std::vector<uint32_t>& v = ch.members[r];
      for (size_t j = 0; j < al.size(); ++j) {
        if (al[j] >= 0) by_ref[al[j]].push_back({r, v[j]});
      }
    }
    for (uint32_t i = 0; i < rv.size(); ++i) {
      if (by_ref[i].empty()) continue;
      MatchedOp op;
      op.comm_id = key.comm;
      op.p2p = key.from >= 0;
      op.seq = i;
      const Call& rc = calls[ref][rv[i]];
      op.op = rc.op;
      op.bytes = rc.bytes;
      op.parts_begin = static_cast<uint32_t>(out.parts.size());
      by_ref[i].push_back({ref, rv[i]});
      for (auto [r, c] : by_ref[i]) {
        matched[r][c] = 1;
        out.parts.push_back(calls[r][c].part);
      }
      op.parts_end = static_cast<uint32_t>(out.parts.size());
      out.ops.push_back(op);
    }
  }
  // Attribution on aligned clocks.
  std::vector<uint64_t> spreads;
  for (MatchedOp& op : out.ops) {
    uint64_t first = UINT64_MAX, last = 0, second = 0;
    uint32_t last_rank = kNone;
    uint64_t end_lo = UINT64_MAX, end_hi = 0;
    for (uint32_t k = op.parts_begin; k < op.parts_end; ++k) {
      const RankCall& p = out.parts[k];
      uint64_t a = p.arrival_ns + uint64_t(offset[p.rank_index]);
      first = std::min(first, a);
      if (last_rank == kNone) {
        last = second = a;
        last_rank = p.rank_index;
      } else if (a > last) {
        second = last;
        last = a;
        last_rank = p.rank_index;
      } else if (k == op.parts_begin + 1 || a > second) {
        second = a;  // (with two parts, second starts as the first's arrival)
      }
      if (p.gpu_times) {
        uint64_t e = p.end_ns + uint64_t(offset[p.rank_index]);
        end_lo = std::min(end_lo, e);
        end_hi = std::max(end_hi, e);
        op.gpu_ends++;
      }
    }
    op.earliest_arrival_ns = first;
    op.last = last_rank;
    op.last_margin_ns = last - second;
    if (op.gpu_ends >= 2) {
      op.end_spread_ns = end_hi - end_lo;
      spreads.push_back(op.end_spread_ns);
    }
    ranks[last_rank].last_arrivals++;
    ranks[last_rank].late_margin_ns += op.last_margin_ns;
    for (uint32_t k = op.parts_begin; k < op.parts_end; ++k) {
      const RankCall& p = out.parts[k];
      uint64_t a = p.arrival_ns + uint64_t(offset[p.rank_index]);
      ranks[p.rank_index].arrival_delay_ns += a - first;
      ranks[p.rank_index].wait_ns += last - a;
      ranks[p.rank_index].matched_calls++;
      if (ranks[p.rank_index].device == kNone && p.activity != kNone) {
        ranks[p.rank_index].device = model.DeviceOf(model.activities[p.activity]);
      }
    }
  }
  std::sort(out.ops.begin(), out.ops.end(), [](const MatchedOp& a, const MatchedOp& b) {
    return a.earliest_arrival_ns < b.earliest_arrival_ns;
  });
  if (!spreads.empty()) {
    out.skew_samples = spreads.size();
    out.skew_max_ns = *std::max_element(spreads.begin(), spreads.end());
    std::nth_element(spreads.begin(), spreads.begin() + spreads.size() / 2, spreads.end());
    out.skew_median_ns = spreads[spreads.size() / 2];
  }
  for (uint32_t r = 0; r < R; ++r) {
    ranks[r].unmatched_calls = ranks[r].calls - ranks[r].matched_calls;
    out.matched_calls += ranks[r].matched_calls;
    out.unmatched_calls += ranks[r].unmatched_calls;
    uint32_t d = ranks[r].device;
    if (d == kNone) {  // no matched kernel: the trace's first device with communication
      for (uint32_t x = 0; x < devices.size(); ++x) {
        if (model.devices[x].trace == ranks[r].trace && !devices[x].comm.empty()) {
          d = x;
          break;
        }
      }
      ranks[r].device = d;
    }
    if (d != kNone && d < devices.size()) {
      ranks[r].comm_ns = devices[d].comm.total();
      ranks[r].exposed_comm_ns = devices[d].comm.Subtract(devices[d].compute).total();
    }
  }
  out.ranks = std::move(ranks);
  return out;
}

}  // namespace sightline::analysis

namespace sightline::analysis {

void FillCrossRank(const CrossRankAnalysis& x, Report* report) {
  CrossRankSummary& s = report->cross_rank;
  s = CrossRankSummary();
  if (!x.active()) return;
  s.method = x.method;
  s.clock_source = x.clock_source;
  s.channels = x.channels;
  s.collectives_matched = x.ops.size();
  s.calls = x.calls;
  s.matched_calls = x.matched_calls;
  s.unmatched_calls = x.unmatched_calls;
  s.skew_median_ns = x.skew_median_ns;
  s.skew_max_ns = x.skew_max_ns;
  s.skew_samples = x.skew_samples;
  for (const RankCrossStats& r : x.ranks) {
    CrossRankRow row;
    row.trace_index = r.trace;
    row.rank = r.rank;
    row.clock_offset_ns = r.clock_offset_ns;
    row.clock_aligned = r.clock_aligned;
    row.calls = r.calls;
    row.matched_calls = r.matched_calls;
    row.unmatched_calls = r.unmatched_calls;
    row.arrival_delay_ns = r.arrival_delay_ns;
    row.wait_ns = r.wait_ns;
    row.last_arrivals = r.last_arrivals;
    row.late_margin_ns = r.late_margin_ns;
    row.comm_ns = r.comm_ns;
    row.exposed_comm_ns = r.exposed_comm_ns;
    s.ranks.push_back(row);
  }
  constexpr size_t kLatest = 20;
  std::vector<const MatchedOp*> ops;
  for (const MatchedOp& op : x.ops) {
    if (op.last_margin_ns > 0) ops.push_back(&op);
  }
  size_t n = std::min(kLatest, ops.size());
  std::partial_sort(ops.begin(), ops.begin() + n, ops.end(),
                    [](const MatchedOp* a, const MatchedOp* b) {
                      if (a->last_margin_ns != b->last_margin_ns) {
                        return a->last_margin_ns > b->last_margin_ns;
                      }
                      return a->earliest_arrival_ns < b->earliest_arrival_ns;
                    });
  for (size_t i = 0; i < n; ++i) {
    const MatchedOp& op = *ops[i];
    CrossRankOpRow row;
    if (op.comm_id != 0) row.comm_id = absl::StrFormat("0x%016x", op.comm_id);
    row.op = NcclOpName(op.op);
    row.bytes = op.bytes;
    row.seq = op.seq;
    row.p2p = op.p2p;
    row.ranks = op.parts_end - op.parts_begin;
    row.first_arrival_ns = op.earliest_arrival_ns;
    row.last_rank = op.last < x.ranks.size() ? x.ranks[op.last].rank : -1;
    row.last_margin_ns = op.last_margin_ns;
    row.end_spread_ns = op.end_spread_ns;
    s.latest.push_back(row);
  }
  // Per step: the steps of the rank with the most analysed steps, on its
  // aligned clock; operations by their earliest (aligned) arrival.
  const std::vector<StepRow>& steps = report->summary.steps.steps;
  std::map<uint32_t, size_t> rows_of;  // trace → rows
  for (const StepRow& st : steps) rows_of[st.trace]++;
  uint32_t ref = kNone;
  size_t most = 0;
  for (uint32_t r = 0; r < x.ranks.size(); ++r) {
    auto it = rows_of.find(x.ranks[r].trace);
    if (it != rows_of.end() && it->second > most) {
      most = it->second;
      ref = r;
    }
  }
  if (ref != kNone) {
    size_t k = 0;  // x.ops is sorted by earliest arrival
    for (const StepRow& st : steps) {
      if (st.trace != x.ranks[ref].trace) continue;
      const uint64_t start = x.Aligned(ref, st.start_ns), end = x.Aligned(ref, st.end_ns);
      CrossRankStepRow row;
      row.index = st.index;
      std::map<uint32_t, std::pair<uint64_t, uint64_t>> late;  // rank index → (margin, count)
      while (k < x.ops.size() && x.ops[k].earliest_arrival_ns < start) ++k;
      for (size_t j = k; j < x.ops.size() && x.ops[j].earliest_arrival_ns < end; ++j) {
        const MatchedOp& op = x.ops[j];
        ++row.ops;
        if (op.last_margin_ns == 0) continue;
        auto& l = late[op.last];
        l.first += op.last_margin_ns;
        l.second++;
      }
      for (auto& [r, l] : late) {
        if (l.first > row.late_ns) {
          row.late_ns = l.first;
          row.last_arrivals = l.second;
          row.last_rank = x.ranks[r].rank;
        }
      }
      s.steps.push_back(row);
    }
  }
  if (x.unmatched_calls > 0) {
    report->notes.push_back(
        std::to_string(x.unmatched_calls) + " of " + std::to_string(x.calls) +
        " NCCL calls could not be matched to another rank's (a capture window or trace that "
        "starts or ends at another time, dropped records, or calls on one rank only)");
  }
  if (x.method == "device_order") {
    report->notes.push_back(
        "NCCL operations matched across ranks in each rank's device order of communication "
        "kernels (no NCCL NVTX payloads with communicator ids in the traces)");
  }
}

}  // namespace sightline::analysis
