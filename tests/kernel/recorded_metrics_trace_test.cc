// tests/kernel/recorded_metrics_trace_test.cc — golden test on a metrics trace
// recorded on the H200 (tests/data/metrics/, see its README): the workload of
// examples/metrics profiled with `--metrics full`. The kernel rules must name
// the expected problem first for each example kernel (issue 4):
//   matmul_naive         uncoalesced global loads
//   transpose_shared<0>  shared-memory bank conflicts
//   register_heavy<96>   occupancy limited by registers
// and the trace must carry one metric range per profiled launch, with every
// profiled kernel marked replayed — or, for the sequence-replay trace, no
// kernel replayed and the timeline rules left out.
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"

namespace sightline::analysis {
namespace {

std::string DataPath(const std::string& name) {
  const char* root = std::getenv("SIGHTLINE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/data/metrics/" + name;
}

const Finding* TopFor(const Report& r, const std::string& kernel) {
  for (const Finding& f : r.findings) {
    if (f.scope == "kernel " + kernel) return &f;
  }
  return nullptr;
}

std::string Evidence(const Finding& f, const std::string& key) {
  for (const EvidenceItem& e : f.evidence) {
    if (e.key == key) return e.is_number ? std::to_string(e.number) : e.text;
  }
  return "<missing>";
}

class RecordedMetricsTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordedMetricsTrace, RulesNameTheExpectedProblemFirst) {
  absl::StatusOr<Report> report = Analyze({DataPath(GetParam())}, AnalysisOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  const Report& r = *report;
  ASSERT_EQ(r.traces.size(), 1u);
  const bool sequence = std::string(GetParam()).find("sequence") != std::string::npos;
  if (sequence) {
    // Sequence replay: nothing replayed, the timeline rules left out (the
    // passes' Start/Stop sit inside launch calls), the kernel rules as usual.
    EXPECT_EQ(r.traces[0].replayed_kernels, 0u);
    bool note = false;
    for (const std::string& n : r.notes) {
      note = note || n.find("9 metric sets were collected across launches without replay") !=
                         std::string::npos;
    }
    EXPECT_TRUE(note);
    bool waitns = false;  // CUPTI's kernels were in the trace and left out
    for (const std::string& n : r.notes) {
      waitns = waitns || n.find("launched by CUPTI's range profiler (WaitNs) were left out") !=
                             std::string::npos;
    }
    EXPECT_TRUE(waitns);
    for (const Finding& f : r.findings) {
      for (const char* rule : {"gpu_idle", "gpu_low_utilization", "sync_memcpy",
                               "stream_serialization", "comm_compute_overlap"}) {
        EXPECT_NE(f.rule, rule);
      }
      EXPECT_NE(f.rule, "launch_latency");
      EXPECT_NE(f.rule, "cpu_bound");
      EXPECT_EQ(f.scope.find("WaitNs"), std::string::npos) << f.title;  // CUPTI's kernel
    }
  } else {
    EXPECT_GE(r.traces[0].replayed_kernels, 9u);
  }

  const Finding* naive = TopFor(r, "sightline_examples::matmul_naive");
  ASSERT_NE(naive, nullptr);
  EXPECT_EQ(naive->rule, "uncoalesced_global") << naive->title;
  EXPECT_GT(std::stod(Evidence(*naive, "load_sectors_per_request")), 16.0);

  const Finding* conflict = TopFor(r, "sightline_examples::transpose_shared<0>");
  ASSERT_NE(conflict, nullptr);
  EXPECT_EQ(conflict->rule, "shared_bank_conflicts") << conflict->title;
  EXPECT_EQ(TopFor(r, "sightline_examples::transpose_shared<1>") == nullptr ||
                TopFor(r, "sightline_examples::transpose_shared<1>")->rule != "shared_bank_conflicts",
            true);

  const Finding* regs = TopFor(r, "sightline_examples::register_heavy<96>");
  ASSERT_NE(regs, nullptr);
  EXPECT_EQ(regs->rule, "occupancy_limited") << regs->title;
  EXPECT_EQ(Evidence(*regs, "limiter"), "registers");
  EXPECT_EQ(Evidence(*regs, "theoretical_occupancy_pct"), std::to_string(25.0));

  // shared_heavy runs 0.7% of the kernel time: under the default 1% floor.
  EXPECT_EQ(TopFor(r, "sightline_examples::shared_heavy"), nullptr);
  AnalysisOptions low_floor;
  ASSERT_TRUE(low_floor.SetFromString("occupancy_limited.min_share_pct=0.1").ok());
  absl::StatusOr<Report> all = Analyze({DataPath(GetParam())}, low_floor);
  ASSERT_TRUE(all.ok()) << all.status();
  const Finding* shared = TopFor(*all, "sightline_examples::shared_heavy");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->rule, "occupancy_limited") << shared->title;
  EXPECT_EQ(Evidence(*shared, "limiter"), "shared_memory");
  EXPECT_EQ(Evidence(*shared, "theoretical_occupancy_pct"), std::to_string(25.0));

  // The two saxpy_loop launches differ only in their configuration: each is
  // judged on its own.
  bool small_grid = false, odd_block = false;
  for (const Finding& f : r.findings) {
    if (f.scope != "kernel sightline_examples::saxpy_loop") continue;
    small_grid |= f.rule == "small_grid" && f.title.find("grid 16×1×1") != std::string::npos;
    odd_block |= f.rule == "block_size_not_warp_multiple" && f.title.find("block 100×1×1") != std::string::npos;
  }
  EXPECT_TRUE(small_grid);
  EXPECT_TRUE(odd_block);

  const Finding* divergent = TopFor(r, "sightline_examples::divergent_branch");
  ASSERT_NE(divergent, nullptr);
  EXPECT_EQ(divergent->rule, "branch_divergence") << divergent->title;
}

// A PyTorch training loop (examples/pytorch_train.py, 60 steps) profiled with
// --metrics full --metrics-replay sequence: 24 kernels per step got a full
// set from 11 steps (one pass each), nothing replayed, the loss unchanged
// (2.2977 both ways). cuBLAS ran its FP32 GEMMs on the FMA pipes (TF32 off):
// the top finding says so.
TEST(RecordedMetricsTrace, PyTorchSequenceReplayNamesIdleTensorCores) {
  absl::StatusOr<Report> report =
      Analyze({DataPath("pytorch_train_h200_sequence.sltrace")}, AnalysisOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  const Report& r = *report;
  ASSERT_EQ(r.traces.size(), 1u);
  EXPECT_EQ(r.traces[0].replayed_kernels, 0u);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].rule, "tensor_core_idle") << r.findings[0].title;
  EXPECT_NE(r.findings[0].scope.find("gemm"), std::string::npos) << r.findings[0].scope;
  bool note = false;
  for (const std::string& n : r.notes) {
    note = note || n.find("24 metric sets were collected across launches without replay") !=
                       std::string::npos;
  }
  EXPECT_TRUE(note);
}

INSTANTIATE_TEST_SUITE_P(H200, RecordedMetricsTrace,
                         ::testing::Values("metrics_workload_h200.sltrace",
                                           "metrics_workload_h200_injected.sltrace",
                                           "metrics_workload_h200_sequence.sltrace"));

}  // namespace
}  // namespace sightline::analysis
