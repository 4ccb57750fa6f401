// tests/kernel/kernel_rules_test.cc — golden tests of the kernel-level rules:
// a synthetic H200 trace in (launch configurations, and metric ranges shaped
// like the ones recorded on the H200), the expected findings out, through
// both the direct model path and the real wire format.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/analysis/synthetic.h"

namespace sightline::analysis {
namespace {

using testing::AnalyzeTraces;
using testing::BuildPath;
using testing::ms;
using testing::TraceBuilder;
using testing::us;

KernelEvent Config(uint32_t grid, uint32_t block, uint32_t regs, uint32_t dynamic_smem = 0,
                   uint32_t static_smem = 0) {
  KernelEvent k;
  k.grid_x = grid;
  k.block_x = block;
  k.registers_per_thread = regs;
  k.dynamic_shared_bytes = dynamic_smem;
  k.static_shared_bytes = static_smem;
  return k;
}

// Findings of `rule` scoped to kernel `short_name`.
std::vector<const Finding*> Of(const Report& r, const std::string& rule, const std::string& short_name = "") {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings) {
    if (f.rule == rule && (short_name.empty() || f.scope == "kernel " + short_name)) out.push_back(&f);
  }
  return out;
}

std::string Evidence(const Finding& f, const std::string& key) {
  for (const EvidenceItem& e : f.evidence) {
    if (e.key == key) return e.is_number ? std::to_string(e.number) : e.text;
  }
  return "<missing>";
}

// First finding (highest saving) scoped to a kernel.
const Finding* TopFor(const Report& r, const std::string& short_name) {
  for (const Finding& f : r.findings) {
    if (f.scope == "kernel " + short_name) return &f;
  }
  return nullptr;
}

class KernelRules : public ::testing::TestWithParam<BuildPath> {};

TEST_P(KernelRules, LaunchConfigurationRulesWorkOnPlainTraces) {
  TraceBuilder t;
  uint64_t at = ms(1);
  auto add = [&](const std::string& name, const KernelEvent& c, uint64_t dur, int n) {
    for (int i = 0; i < n; ++i, at += dur + us(5)) t.KernelWithConfig(name, at, at + dur, c);
  };
  add("register_heavy(float const*)", Config(16384, 256, 128), us(400), 5);  // 25%, registers
  add("odd_block(float*)", Config(41944, 100, 32), us(300), 5);               // 100 threads
  add("tiny_grid(float*)", Config(16, 256, 32), us(600), 5);                  // 16 < 132 SMs
  add("tail(float*)", Config(1162, 256, 32), us(500), 5);                     // 1.10 waves
  add("healthy(float*)", Config(1056 * 4, 256, 32), us(500), 5);              // 4 full waves, 100%
  const Report r = AnalyzeTraces({t.trace()}, GetParam());

  auto occ = Of(r, "occupancy_limited", "register_heavy");
  ASSERT_EQ(occ.size(), 1u);
  EXPECT_EQ(Evidence(*occ[0], "limiter"), "registers");
  EXPECT_EQ(Evidence(*occ[0], "theoretical_occupancy_pct"), std::to_string(25.0));
  // 3 blocks of 8 warps need 6 warps per sub-partition: 16384/6 → 2560 per warp → 80 regs.
  EXPECT_EQ(Evidence(*occ[0], "registers_per_thread_for_next_step"), std::to_string(80.0));
  EXPECT_EQ(Evidence(*occ[0], "latency_bound"), "unknown (no metrics)");
  EXPECT_NE(occ[0]->title.find("limited by registers"), std::string::npos) << occ[0]->title;
  EXPECT_NE(occ[0]->recommendation.find("≤ 80 per thread"), std::string::npos) << occ[0]->recommendation;
  // Saving = kernel time × (1 − 25/37.5) × 0.5 without metrics.
  EXPECT_NEAR(double(occ[0]->est_saving_ns), 5 * 400e3 * (1 - 25 / 37.5) * 0.5, 5);

  auto odd = Of(r, "block_size_not_warp_multiple", "odd_block");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(Evidence(*odd[0], "idle_lane_pct"), std::to_string(100.0 * 28 / 128));
  EXPECT_NEAR(double(odd[0]->est_saving_ns), 5 * 300e3 * 28 / 128, 5);

  auto grid = Of(r, "small_grid", "tiny_grid");
  ASSERT_EQ(grid.size(), 1u);
  EXPECT_NEAR(double(grid[0]->est_saving_ns), 5 * 600e3 * 116.0 / 132, 5);

  auto tail = Of(r, "tail_effect", "tail");
  ASSERT_EQ(tail.size(), 1u);
  const double waves = 1162.0 / 1056.0;
  EXPECT_NEAR(std::stod(Evidence(*tail[0], "tail_idle_pct")), 100 * (2 - waves) / 2, 1e-6);

  EXPECT_TRUE(Of(r, "occupancy_limited", "healthy").empty());
  EXPECT_TRUE(Of(r, "tail_effect", "healthy").empty());
  EXPECT_TRUE(TopFor(r, "healthy") == nullptr);
  // No metric-based finding without metrics.
  for (const char* rule : {"achieved_occupancy_gap", "uncoalesced_global", "shared_bank_conflicts",
                           "branch_divergence", "memory_bound", "compute_bound", "latency_bound",
                           "tensor_core_idle"}) {
    EXPECT_TRUE(Of(r, rule).empty()) << rule;
  }
  // Ranked by saving: the 88%-idle small grid outranks the others.
  EXPECT_EQ(r.findings.front().rule, "small_grid");
}

// Metric values shaped like those recorded on the H200 for the example
// kernels (tests/data/metrics).
void AddMetrics(TraceBuilder& t, uint32_t corr, const std::vector<std::pair<std::string, double>>& values) {
  for (const auto& [name, value] : values) t.Metric(corr, name, value);
}

TEST_P(KernelRules, MetricRulesNameTheExpectedProblemFirst) {
  TraceBuilder t;
  uint64_t at = ms(1);
  auto kernel = [&](const std::string& name, const KernelEvent& c, uint64_t dur) {
    const uint32_t corr = t.KernelWithConfig(name, at, at + dur, c);
    at += dur + us(5);
    return corr;
  };
  // Naive matmul: 16.5 load sectors per request, memory pipes at 95%.
  uint32_t c = kernel("matmul_naive(float const*, float const*, float*, int)", Config(4096, 256, 32), us(4450));
  AddMetrics(t, c, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 5.8},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 95.3},
                    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 0.02},
                    {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1107296256},
                    {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 67108864},
                    {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1047681},
                    {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 32768},
                    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 0},
                    {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 65536},
                    {"smsp__thread_inst_executed_per_inst_executed.ratio", 32},
                    {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 0.0},
                    {"sm__warps_active.avg.pct_of_peak_sustained_active", 89.9}});
  // Transpose through an unpadded tile: 93% of shared wavefronts are conflicts.
  c = kernel("transpose_shared<0>(float const*, float*, int, int)", Config(1024, 1024, 31, 0, 4096), us(75));
  AddMetrics(t, c, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 13.2},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 92.6},
                    {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 2097152},
                    {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 524288},
                    {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 16260000},
                    {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 17400000}});
  // The padded fix: a few thousand arbitration conflicts, not reported.
  c = kernel("transpose_shared<1>(float const*, float*, int, int)", Config(1024, 1024, 31, 0, 4224), us(15));
  AddMetrics(t, c, {{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 4084},
                    {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 1149000}});
  // Register-heavy: 128 regs → 25%, SM at 73%.
  c = kernel("register_heavy<96>(float const*, float*, int, int)", Config(16384, 256, 128), us(386));
  AddMetrics(t, c, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 73.5},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20.5},
                    {"sm__warps_active.avg.pct_of_peak_sustained_active", 23.9},
                    {"smsp__thread_inst_executed_per_inst_executed.ratio", 32}});
  // Divergent branch: 17.6 of 32 threads per instruction, SM at 89%.
  c = kernel("divergent_branch(float const*, float*, int, int)", Config(16384, 256, 10), us(320));
  AddMetrics(t, c, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 88.8},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 22.0},
                    {"smsp__thread_inst_executed_per_inst_executed.ratio", 17.6}});
  // Odd block: 25 threads per instruction is the ceiling for 100-thread blocks.
  c = kernel("odd_block(float*)", Config(41944, 100, 32), us(280));
  AddMetrics(t, c, {{"smsp__thread_inst_executed_per_inst_executed.ratio", 25.0},
                    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40.3},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 39.9}});
  // A small grid: latency-bound, imbalanced.
  c = kernel("saxpy_small(float const*, float*, int, int)", Config(16, 256, 32), us(640));
  AddMetrics(t, c, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 0.5},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 1.9},
                    {"sm__warps_active.avg.pct_of_peak_sustained_active", 12.4},
                    {"sm__cycles_active.avg", 137944},
                    {"sm__cycles_active.max", 1175321}});
  // Tiled FP32 GEMM: tensor cores idle while SM at 74%.
  c = kernel("matmul_tiled(float const*, float const*, float*, int)", Config(1024, 1024, 32, 0, 8320), us(241));
  AddMetrics(t, c, {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 73.8},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 88.0},
                    {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 0.9},
                    {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 8388608},
                    {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 2097152}});
  const Report r = AnalyzeTraces({t.trace()}, GetParam());

  const Finding* top = TopFor(r, "matmul_naive");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->rule, "uncoalesced_global");
  EXPECT_NE(top->title.find("16.5 sectors per request"), std::string::npos) << top->title;
  ASSERT_EQ(Of(r, "memory_bound", "matmul_naive").size(), 1u);
  EXPECT_EQ(Evidence(*Of(r, "memory_bound", "matmul_naive")[0], "memory_wall"), "on-chip (L1/shared/L2 pipes)");

  top = TopFor(r, "transpose_shared<0>");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->rule, "shared_bank_conflicts");
  EXPECT_TRUE(Of(r, "shared_bank_conflicts", "transpose_shared<1>").empty());

  top = TopFor(r, "register_heavy<96>");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->rule, "occupancy_limited");
  EXPECT_EQ(Evidence(*top, "limiter"), "registers");
  EXPECT_EQ(Evidence(*top, "latency_bound"), "no");
  ASSERT_EQ(Of(r, "compute_bound", "register_heavy<96>").size(), 1u);
  EXPECT_EQ(Of(r, "compute_bound", "register_heavy<96>")[0]->severity, Severity::kInfo);

  top = TopFor(r, "divergent_branch");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->rule, "branch_divergence");
  EXPECT_TRUE(Of(r, "branch_divergence", "odd_block").empty());
  ASSERT_NE(TopFor(r, "odd_block"), nullptr);
  EXPECT_EQ(TopFor(r, "odd_block")->rule, "block_size_not_warp_multiple");

  top = TopFor(r, "saxpy_small");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->rule, "small_grid");
  ASSERT_EQ(Of(r, "latency_bound", "saxpy_small").size(), 1u);
  auto gap = Of(r, "achieved_occupancy_gap", "saxpy_small");
  ASSERT_EQ(gap.size(), 1u);
  EXPECT_EQ(Evidence(*gap[0], "likely_cause"), "imbalance");

  top = TopFor(r, "matmul_tiled");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->rule, "tensor_core_idle");
  EXPECT_TRUE(Of(r, "uncoalesced_global", "matmul_tiled").empty());  // 4 sectors per request

  // Ranked by estimated saving across kernels.
  for (size_t i = 1; i < r.findings.size(); ++i) {
    EXPECT_GE(r.findings[i - 1].est_saving_ns, r.findings[i].est_saving_ns);
  }
}

TEST_P(KernelRules, ReplayedKernelsAreWeighedByTheirMeasuredDuration) {
  TraceBuilder t;
  // Every instance replayed (a fully profiled run): timeline durations are
  // unusable, gpu__time_duration.sum carries the real cost.
  KernelEvent big = Config(16, 256, 32);
  big.replayed = true;
  KernelEvent small = Config(8, 256, 32);
  small.replayed = true;
  uint32_t c1 = t.KernelWithConfig("big_small_grid(float*)", ms(1), ms(50), big);  // distorted
  t.Metric(c1, "gpu__time_duration.sum", 900e3);
  uint32_t c2 = t.KernelWithConfig("little_small_grid(float*)", ms(60), ms(200), small);  // distorted
  t.Metric(c2, "gpu__time_duration.sum", 100e3);
  t.Kernel("other(float*)", ms(210), ms(210) + us(10));
  const Report r = AnalyzeTraces({t.trace()}, GetParam());
  auto big_f = Of(r, "small_grid", "big_small_grid");
  auto little_f = Of(r, "small_grid", "little_small_grid");
  ASSERT_EQ(big_f.size(), 1u);
  ASSERT_EQ(little_f.size(), 1u);
  EXPECT_NEAR(double(big_f[0]->est_saving_ns), 900e3 * 116 / 132, 5);
  EXPECT_NEAR(double(little_f[0]->est_saving_ns), 100e3 * 124 / 132, 5);
  EXPECT_NEAR(std::stod(Evidence(*big_f[0], "kernel_share_pct")), 100.0 * 900 / 1010, 1e-6);
}

TEST_P(KernelRules, ParametersAreHonoured) {
  TraceBuilder t;
  t.KernelWithConfig("register_heavy(float*)", ms(1), ms(2), Config(16384, 256, 128));
  AnalysisOptions options;
  ASSERT_TRUE(options.SetFromString("occupancy_limited.max_occupancy_pct=20").ok());
  EXPECT_TRUE(Of(AnalyzeTraces({t.trace()}, GetParam(), options), "occupancy_limited").empty());
  AnalysisOptions loose;
  ASSERT_TRUE(loose.SetFromString("occupancy_limited.max_occupancy_pct=30").ok());
  EXPECT_EQ(Of(AnalyzeTraces({t.trace()}, GetParam(), loose), "occupancy_limited").size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(BothPaths, KernelRules,
                         ::testing::Values(BuildPath::kDirect, BuildPath::kWireFormat));

}  // namespace
}  // namespace sightline::analysis
