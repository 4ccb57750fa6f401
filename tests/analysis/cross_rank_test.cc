// Cross-rank matching, clock alignment and the straggler's cause
// (lib/analysis/cross_rank.h, rules/nccl_straggler.cc) on synthetic ranks,
// built directly and through the wire format.
//
// In every scenario a matched collective completes at one instant on all its
// ranks and different collectives complete at different instants, so a
// matched operation whose aligned completion times differ (end_spread_ns > 0)
// is a wrong match: "every spread is 0" is the correctness check.
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/cross_rank.h"
#include "lib/analysis/timeline.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::BuildPath;
using testing::FindFinding;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

constexpr uint64_t kCommA = 0x1111aaaa2222bbbbull;  // e.g. DDP's gradient all-reduces
constexpr uint64_t kCommB = 0x3333cccc4444ddddull;  // e.g. FSDP's all-gathers
constexpr uint64_t kCommP = 0x5555eeee6666ffffull;  // pipeline sends / receives
constexpr uint64_t kStep = ms(10);

// A call whose kernel runs [arrival, end]; the host call just before it.
void Call(TraceBuilder& b, NcclOp op, uint64_t comm, uint64_t bytes, uint64_t arrival,
          uint64_t end, int32_t peer = -1) {
  b.NcclCall(op, comm, bytes, arrival - us(30), arrival - us(10), arrival, end, peer);
}

class CrossRankTest : public ::testing::TestWithParam<BuildPath> {
 protected:
  CrossRankAnalysis Match(const std::vector<TraceBuilder>& ranks) {
    std::vector<SyntheticTrace> traces;
    for (const TraceBuilder& b : ranks) traces.push_back(b.trace());
    absl::StatusOr<TimelineModel> m = testing::Build(traces, GetParam());
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return {};
    return BuildDerivedTimeline(*m, {}).cross_rank;
  }
  static void ExpectRightMatches(const CrossRankAnalysis& x) {
    for (const MatchedOp& op : x.ops) {
      EXPECT_GE(op.parts_end - op.parts_begin, 2u);
      EXPECT_EQ(op.end_spread_ns, 0u) << "comm " << op.comm_id << " seq " << op.seq;
    }
  }
};

// Rank 0 calls A then B each step, rank 1 B then A: the k-th communication
// kernel of the two ranks is a different collective at every step.
TEST_P(CrossRankTest, TwoCommunicatorsInterleavedInDifferentOrders) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
  for (uint64_t k = 0; k < 6; ++k) {
    uint64_t base = ms(1) + k * kStep;
    Call(r[0], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1), base + ms(2));
    Call(r[0], NcclOp::kAllGather, kCommB, 4 << 20, base + ms(3), base + ms(4));
    Call(r[1], NcclOp::kAllGather, kCommB, 4 << 20, base + ms(0.5), base + ms(4));
    Call(r[1], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1.5), base + ms(2));
  }
  CrossRankAnalysis x = Match(r);
  EXPECT_EQ(x.method, "communicator");
  EXPECT_EQ(x.channels, 2u);
  EXPECT_EQ(x.ops.size(), 12u);
  EXPECT_EQ(x.unmatched_calls, 0u);
  ExpectRightMatches(x);
  // Rank 0 arrives last at every all-gather (3 ms vs 0.5 ms), rank 1 at every all-reduce.
  EXPECT_EQ(x.ranks[0].last_arrivals, 6u);
  EXPECT_EQ(x.ranks[0].late_margin_ns, 6 * ms(2.5));
  EXPECT_EQ(x.ranks[1].late_margin_ns, 6 * ms(0.5));
}

// One record missing on rank 1: one unmatched call, no later match shifted.
TEST_P(CrossRankTest, MissingCollectiveOnOneRank) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
  for (uint64_t k = 0; k < 8; ++k) {
    uint64_t base = ms(1) + k * kStep;
    for (int q = 0; q < 2; ++q) {
      if (q == 1 && k == 3) continue;
      // Identical operations (same op and size) on one communicator.
      Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1), base + ms(2));
      Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(4), base + ms(5));
    }
  }
  CrossRankAnalysis x = Match(r);
  EXPECT_EQ(x.ops.size(), 14u);
  EXPECT_EQ(x.ranks[0].unmatched_calls, 2u);
  EXPECT_EQ(x.ranks[1].unmatched_calls, 0u);
  EXPECT_EQ(x.unmatched_calls, 2u);
  ExpectRightMatches(x);
}

// One extra call (same operation and size) on rank 1 only.
TEST_P(CrossRankTest, ExtraCollectiveOnOneRank) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
  for (uint64_t k = 0; k < 8; ++k) {
    uint64_t base = ms(1) + k * kStep;
    for (int q = 0; q < 2; ++q) {
      Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1), base + ms(2));
      if (q == 1 && k == 4) Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(3), base + ms(3.5));
      Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(6), base + ms(7));
    }
  }
  CrossRankAnalysis x = Match(r);
  EXPECT_EQ(x.ops.size(), 16u);
  EXPECT_EQ(x.ranks[1].unmatched_calls, 1u);
  EXPECT_EQ(x.ranks[0].unmatched_calls, 0u);
  ExpectRightMatches(x);
}

// Rank 1's trace starts two steps later and runs one step longer (capture
// windows opened and closed at other times).
TEST_P(CrossRankTest, RankWhoseTraceStartsLater) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
  for (uint64_t k = 0; k < 10; ++k) {
    uint64_t base = ms(1) + k * kStep;
    for (int q = 0; q < 2; ++q) {
      if (q == 1 && k < 2) continue;
      if (q == 0 && k == 9) continue;
      Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1), base + ms(2));
      Call(r[q], NcclOp::kAllGather, kCommB, 1 << 20, base + ms(3), base + ms(4));
    }
  }
  CrossRankAnalysis x = Match(r);
  EXPECT_EQ(x.ops.size(), 14u);
  EXPECT_EQ(x.ranks[0].unmatched_calls, 4u);
  EXPECT_EQ(x.ranks[1].unmatched_calls, 2u);
  ExpectRightMatches(x);
}

// A ring of sends and receives over three ranks (even ranks send first, odd
// ranks receive first) plus an all-reduce on the same communicator: rank a's
// k-th Send to b pairs with rank b's k-th Recv from a.
TEST_P(CrossRankTest, PointToPointPairsByPeer) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1"), TraceBuilder(2, "r2")};
  for (uint64_t k = 0; k < 5; ++k) {
    uint64_t base = ms(1) + k * kStep;
    for (int q = 0; q < 3; ++q) {
      int to = (q + 1) % 3, from = (q + 2) % 3;
      // The transfer a → b completes at base + (a + 1) ms on both ends.
      // Calls are made in time order (CUPTI correlation ids grow with time).
      uint64_t first = base + us(100 + 10 * q), second = base + us(150 + 10 * q);
      bool send_first = q % 2 == 0;
      auto send = [&](uint64_t at) {
        Call(r[q], NcclOp::kSend, kCommP, 1 << 20, at, base + ms(q + 1), to);
      };
      auto recv = [&](uint64_t at) {
        Call(r[q], NcclOp::kRecv, kCommP, 1 << 20, at, base + ms(from + 1), from);
      };
      if (send_first) {
        send(first);
        recv(second);
      } else {
        recv(first);
        send(second);
      }
      Call(r[q], NcclOp::kAllReduce, kCommP, 8 << 20, base + ms(5), base + ms(6));
    }
  }
  CrossRankAnalysis x = Match(r);
  EXPECT_EQ(x.channels, 4u);  // three sender → receiver pairs + the collectives
  EXPECT_EQ(x.ops.size(), 5u * 4u);
  EXPECT_EQ(x.unmatched_calls, 0u);
  size_t p2p = 0;
  for (const MatchedOp& op : x.ops) {
    p2p += op.p2p;
    EXPECT_EQ(op.parts_end - op.parts_begin, op.p2p ? 2u : 3u);
  }
  EXPECT_EQ(p2p, 15u);
  ExpectRightMatches(x);
}

// Ranks whose recorded clocks (CLOCK_REALTIME mapping) are off by known
// amounts, with ±3 µs of completion jitter: the offsets are recovered to
// within 5 µs and the residual skew stays under 10 µs.
TEST_P(CrossRankTest, ClockOffsetsAreRecoveredFromCompletions) {
  const int64_t wrong_ns[] = {0, int64_t(us(3700)), -int64_t(us(2200)), int64_t(us(900))};
  std::vector<TraceBuilder> r;
  for (int q = 0; q < 4; ++q) {
    r.emplace_back(q, "r" + std::to_string(q));
    r.back().SetClock(ms(1000), uint64_t(int64_t(ms(1000)) + wrong_ns[q]));
  }
  for (uint64_t k = 0; k < 20; ++k) {
    uint64_t base = ms(1000) + k * kStep;
    for (int q = 0; q < 4; ++q) {
      int64_t jitter = int64_t((q * 7919 + k * 104729) % 7) - 3;  // µs
      uint64_t end = base + ms(2) + uint64_t(int64_t(us(1)) * jitter + int64_t(us(3)));
      Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1) + us(10 * q), end);
    }
  }
  CrossRankAnalysis x = Match(r);
  ASSERT_EQ(x.ranks.size(), 4u);
  EXPECT_EQ(x.clock_source, "collective_ends");
  EXPECT_EQ(x.ops.size(), 20u);
  for (int q = 1; q < 4; ++q) {
    // Aligned = merged + offset; merged is off by wrong_ns: offset ≈ −wrong.
    int64_t relative = x.ranks[q].clock_offset_ns - x.ranks[0].clock_offset_ns;
    EXPECT_NEAR(double(relative), double(-wrong_ns[q]), 5000.0) << "rank " << q;
    EXPECT_TRUE(x.ranks[q].clock_aligned);
  }
  EXPECT_LT(x.skew_median_ns, us(10));
  EXPECT_LE(x.skew_max_ns, us(12));
}

// Everything at once: two communicators, clocks off by up to 1.3 ms, rank 2's
// trace starting two steps late, rank 1 missing one record and having one
// extra: every match right, the offsets recovered, the unmatched counted.
TEST_P(CrossRankTest, OffsetsLateStartMissingAndExtraTogether) {
  const int64_t wrong_ns[] = {0, -int64_t(us(1300)), int64_t(us(800))};
  std::vector<TraceBuilder> r;
  for (int q = 0; q < 3; ++q) {
    r.emplace_back(q, "r" + std::to_string(q));
    r.back().SetClock(ms(1000), uint64_t(int64_t(ms(1000)) + wrong_ns[q]));
  }
  for (uint64_t k = 0; k < 12; ++k) {
    uint64_t base = ms(1000) + k * kStep;
    for (int q = 0; q < 3; ++q) {
      if (q == 2 && k < 2) continue;
      if (!(q == 1 && k == 5)) {
        Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1) + us(40 * q), base + ms(2));
      }
      if (q == 1 && k == 7) Call(r[q], NcclOp::kAllGather, kCommB, 2 << 20, base + ms(2.5), base + ms(2.8));
      Call(r[q], NcclOp::kAllGather, kCommB, 2 << 20, base + ms(3) + us(40 * q), base + ms(4));
    }
  }
  CrossRankAnalysis x = Match(r);
  ASSERT_EQ(x.ranks.size(), 3u);
  // Rank 1's missing all-reduce still leaves ranks 0 and 2 to match.
  EXPECT_EQ(x.ops.size(), 24u);
  EXPECT_EQ(x.matched_calls, 3u * 24u - 4u - 1u);  // rank 2's 4 before its start, rank 1's missing
  EXPECT_EQ(x.ranks[0].unmatched_calls, 0u);
  EXPECT_EQ(x.ranks[1].unmatched_calls, 1u);  // the extra all-gather
  EXPECT_EQ(x.ranks[2].unmatched_calls, 0u);
  ExpectRightMatches(x);
  for (int q = 1; q < 3; ++q) {
    int64_t relative = x.ranks[q].clock_offset_ns - x.ranks[0].clock_offset_ns;
    EXPECT_NEAR(double(relative), double(-wrong_ns[q]), 1000.0) << "rank " << q;
  }
}

// Without NCCL payloads (kernels only): device order, stated as such.
TEST_P(CrossRankTest, KernelOnlyTracesFallBackToDeviceOrder) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
  for (uint64_t k = 0; k < 4; ++k) {
    uint64_t base = ms(1) + k * kStep;
    r[0].NcclKernel(base + ms(1), base + ms(2));
    r[1].NcclKernel(base + ms(1.2), base + ms(2));
  }
  CrossRankAnalysis x = Match(r);
  EXPECT_EQ(x.method, "device_order");
  EXPECT_EQ(x.ops.size(), 4u);
  EXPECT_EQ(x.ranks[1].last_arrivals, 4u);
  ExpectRightMatches(x);
}

// The report says what could not be matched and how ranks were matched.
TEST_P(CrossRankTest, ReportNotesUnmatchedCallsAndDeviceOrder) {
  auto has_note = [](const Report& r, const std::string& text) {
    for (const std::string& n : r.notes) {
      if (n.find(text) != std::string::npos) return true;
    }
    return false;
  };
  std::vector<SyntheticTrace> with_payloads, kernels_only;
  {
    std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
    for (uint64_t k = 0; k < 4; ++k) {
      uint64_t base = ms(1) + k * kStep;
      Call(r[0], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1), base + ms(2));
      if (k != 2) Call(r[1], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1), base + ms(2));
    }
    for (const TraceBuilder& b : r) with_payloads.push_back(b.trace());
  }
  {
    std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
    for (uint64_t k = 0; k < 4; ++k) {
      r[0].NcclKernel(ms(1) + k * kStep, ms(2) + k * kStep);
      r[1].NcclKernel(ms(1) + k * kStep, ms(2) + k * kStep);
    }
    for (const TraceBuilder& b : r) kernels_only.push_back(b.trace());
  }
  Report a = testing::AnalyzeTraces(with_payloads, GetParam());
  EXPECT_EQ(a.cross_rank.unmatched_calls, 1u);
  EXPECT_TRUE(has_note(a, "1 of 7 NCCL calls could not be matched"));
  EXPECT_FALSE(has_note(a, "device order"));
  Report b = testing::AnalyzeTraces(kernels_only, GetParam());
  EXPECT_EQ(b.cross_rank.method, "device_order");
  EXPECT_TRUE(has_note(b, "device order"));
}

// Hostile clocks: one rank's mapping puts its times near the top of uint64,
// the other's near zero. No overflow (UBSan build), a finished analysis.
TEST_P(CrossRankTest, ExtremeClocksDoNotOverflow) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0"), TraceBuilder(1, "r1")};
  r[0].SetClock(ms(1000), ~uint64_t{0} - ms(5000));
  r[1].SetClock(ms(1000), 1);
  for (uint64_t k = 0; k < 6; ++k) {
    uint64_t base = ms(1000) + k * kStep;
    for (int q = 0; q < 2; ++q) {
      Call(r[q], NcclOp::kAllReduce, kCommA, 1 << 20, base + ms(1), base + ms(2));
    }
  }
  std::vector<SyntheticTrace> traces;
  for (const TraceBuilder& b : r) traces.push_back(b.trace());
  Report report = testing::AnalyzeTraces(traces, GetParam());
  EXPECT_EQ(report.cross_rank.method, "communicator");
}

TEST_P(CrossRankTest, OneRankIsNoCrossRankAnalysis) {
  std::vector<TraceBuilder> r = {TraceBuilder(0, "r0")};
  Call(r[0], NcclOp::kAllReduce, kCommA, 1 << 20, ms(1), ms(2));
  EXPECT_FALSE(Match(r).active());
}

// ---- the straggler and its cause ------------------------------------------

enum class Cause {
  kNone, kSlowKernel, kHostBound, kDataLoading, kSynchronization,
  kSyncOnOtherThread,  // synchronizes on thread 2, calls NCCL from thread 1 (autograd-like)
};

// Four ranks, 8 steps: a 2 ms compute kernel, then the host calls the
// all-reduce (same stream). Rank 2 is 1 ms late for `cause`, or no one is
// (kNone: ±3 µs jitter only).
std::vector<SyntheticTrace> Straggling(Cause cause) {
  std::vector<TraceBuilder> r;
  for (int q = 0; q < 4; ++q) r.emplace_back(q, "rank" + std::to_string(q));
  for (uint64_t k = 0; k < 8; ++k) {
    uint64_t base = ms(1) + k * kStep;
    uint64_t arrival[4];
    uint64_t call[4];
    for (int q = 0; q < 4; ++q) {
      bool late = q == 2;
      r[q].Nvtx("train_step", base - us(100), base + kStep - us(200));
      uint64_t compute = late && cause == Cause::kSlowKernel ? ms(3) : ms(2);
      r[q].Kernel("gemm", base, base + compute, 7, base - us(20));
      call[q] = base + us(50);
      if (late && cause == Cause::kHostBound) call[q] = base + ms(3);  // CPU work, no CUDA call
      if (late && cause == Cause::kDataLoading) {
        r[q].Memcpy(CopyKind::kHtoD, MemoryKind::kPageable, 64 << 20, base + ms(2.9),
                    base + ms(2.99), 7, "cudaMemcpy", base + us(50), base + ms(3), false);
        call[q] = base + ms(3);
      }
      if (late && (cause == Cause::kSynchronization || cause == Cause::kSyncOnOtherThread)) {
        r[q].Api("cudaStreamSynchronize", base + us(50), base + ms(3),
                 cause == Cause::kSyncOnOtherThread ? 2 : 1);
        call[q] = base + ms(3);
      }
      int64_t jitter = int64_t((q * 7919 + k * 104729) % 7) - 3;  // µs
      arrival[q] = std::max(base + compute, call[q] + us(20)) + uint64_t(int64_t(us(3)) + jitter * 1000);
    }
    uint64_t end = *std::max_element(arrival, arrival + 4) + us(500);
    for (int q = 0; q < 4; ++q) {
      r[q].NcclCall(NcclOp::kAllReduce, kCommA, 1 << 20, call[q], call[q] + us(20), arrival[q],
                    end, -1, 7);
    }
  }
  std::vector<SyntheticTrace> traces;
  for (const TraceBuilder& b : r) traces.push_back(b.trace());
  return traces;
}

struct CauseCase {
  Cause cause;
  const char* name;  // the expected evidence "cause"
  const char* label;
};

class StragglerCauseTest : public ::testing::TestWithParam<std::tuple<CauseCase, BuildPath>> {};

TEST_P(StragglerCauseTest, NamesTheRankAndWhatItWasDoing) {
  const CauseCase& c = std::get<0>(GetParam());
  Report report = testing::AnalyzeTraces(Straggling(c.cause), std::get<1>(GetParam()));
  const Finding* f = FindFinding(report, "nccl_straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->scope, "rank 2");
  EXPECT_EQ(f->EvidenceNumber("straggler_rank"), 2);
  EXPECT_EQ(f->EvidenceNumber("last_arrivals"), 8);
  bool found = false;
  for (const EvidenceItem& e : f->evidence) {
    if (e.key == "cause") {
      EXPECT_EQ(e.text, c.name);
      found = true;
    }
    if (e.key == "slow_kernel") {
      EXPECT_EQ(e.text, "gemm");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(f->EvidenceNumber("late_collectives_classified"), 7);  // the first has no "before"
  // The others wait about 1 ms at each of the 8 all-reduces.
  EXPECT_NEAR(double(f->est_saving_ns), double(ms(8)), double(us(300)));
  EXPECT_EQ(report.cross_rank.method, "communicator");
  EXPECT_EQ(report.cross_rank.collectives_matched, 8u);
  ASSERT_EQ(report.cross_rank.ranks.size(), 4u);
  EXPECT_EQ(report.cross_rank.ranks[2].last_arrivals, 8u);
  // Per step (the NVTX train_step ranges of one rank): rank 2 every time.
  ASSERT_EQ(report.cross_rank.steps.size(), 8u);
  for (const CrossRankStepRow& st : report.cross_rank.steps) {
    EXPECT_EQ(st.ops, 1u);
    EXPECT_EQ(st.last_rank, 2);
    EXPECT_EQ(st.last_arrivals, 1u);
  }
  ASSERT_EQ(report.cross_rank.latest.size(), 8u);
  for (const CrossRankOpRow& o : report.cross_rank.latest) {
    EXPECT_EQ(o.last_rank, 2);
    EXPECT_EQ(o.op, "AllReduce");
    EXPECT_EQ(o.comm_id, "0x1111aaaa2222bbbb");
    EXPECT_EQ(o.ranks, 4u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Causes, StragglerCauseTest,
    ::testing::Combine(
        ::testing::Values(CauseCase{Cause::kSlowKernel, "slow_kernel", "slow_kernel"},
                          CauseCase{Cause::kHostBound, "host_bound", "host_bound"},
                          CauseCase{Cause::kDataLoading, "data_loading", "data_loading"},
                          CauseCase{Cause::kSynchronization, "synchronization", "synchronization"},
                          CauseCase{Cause::kSyncOnOtherThread, "synchronization",
                                    "sync_on_other_thread"}),
                       ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).label) +
             (std::get<1>(info.param) == BuildPath::kDirect ? "_direct" : "_wire");
    });

TEST_P(CrossRankTest, BalancedRanksHaveNoStraggler) {
  std::vector<SyntheticTrace> traces = Straggling(Cause::kNone);
  Report report = testing::AnalyzeTraces(traces, GetParam());
  EXPECT_EQ(FindFinding(report, "nccl_straggler"), nullptr);
  EXPECT_EQ(report.cross_rank.collectives_matched, 8u);
  // As shipped (steady state, root causes) too.
  EXPECT_EQ(FindFinding(testing::AnalyzeTracesAsShipped(traces, GetParam()), "nccl_straggler"),
            nullptr);
}

TEST_P(CrossRankTest, StragglerSurvivesTheShippedDefaults) {
  Report report = testing::AnalyzeTracesAsShipped(Straggling(Cause::kHostBound), GetParam());
  const Finding* f = FindFinding(report, "nccl_straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->scope, "rank 2");
  uint64_t sum = 0;
  for (const Finding& x : report.findings) sum += x.est_saving_ns;
  EXPECT_LE(sum, report.summary.window_ns);
}

INSTANTIATE_TEST_SUITE_P(BothPaths, CrossRankTest,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat),
                         [](const auto& info) {
                           return info.param == BuildPath::kDirect ? "direct" : "wire";
                         });

}  // namespace
}  // namespace sightline::analysis
