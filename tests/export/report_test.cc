// Report renderers: text width and content, JSON round trip of key numbers,
// the diff's regression rules (thresholds, points vs percent, kernel share
// filter, findings appeared/resolved), HTML escaping and timeline decimation
// bounds on a real model built from a synthetic trace.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/analysis/analyze.h"
#include "lib/export/demangle.h"
#include "lib/export/html_timeline.h"
#include "lib/export/report_html.h"
#include "lib/export/report_json_read.h"
#include "lib/export/report_render.h"
#include "tests/export/synthetic_trace.h"

namespace sightline::exporter {
namespace {

using analysis::Report;

Report MakeReport(double step_mean_ns, double util_pct, uint64_t gemm_ns, uint64_t tiny_ns,
                  bool with_finding) {
  Report r;
  analysis::TraceSummary t;
  t.path = "run.sltrace";
  t.complete = true;
  r.traces.push_back(t);
  r.summary.window_ns = 1'000'000'000;
  analysis::DeviceSummary d;
  d.name = "NVIDIA H200";
  d.gpu_utilization_pct = util_pct;
  r.summary.devices.push_back(d);
  r.summary.steps.count = 200;
  r.summary.steps.mean_ns = step_mean_ns;
  r.summary.steps.p50_ns = static_cast<uint64_t>(step_mean_ns);
  r.summary.steps.p99_ns = static_cast<uint64_t>(step_mean_ns);
  analysis::KernelRow gemm;
  gemm.name = "_Z4gemmPKfS0_Pfi";
  gemm.count = 100;
  gemm.total_ns = gemm_ns;
  gemm.share_pct = 90;
  analysis::KernelRow tiny;
  tiny.name = "tiny_kernel";
  tiny.count = 5;
  tiny.total_ns = tiny_ns;
  tiny.share_pct = 0.1;
  r.kernels = {gemm, tiny};
  if (with_finding) {
    analysis::Finding f;
    f.rule = "kernel_fragmentation";
    f.severity = analysis::Severity::kHigh;
    f.title = std::string(300, 'x');  // long titles wrap
    f.est_saving_ns = 5'000'000;
    f.est_saving_pct = 0.5;
    f.recommendation = "Fuse <the> kernels & \"capture\" a CUDA graph.";
    f.Number("short_kernels", 42, "count");
    r.findings.push_back(f);
  }
  return r;
}

TEST(ReportTextTest, FitsTheWidthAndShowsEverySection) {
  Report r = MakeReport(2e6, 80, 1'000'000, 1000, true);
  for (int width : {60, 80, 100}) {
    std::string text = RenderReportText(r, {width});
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      EXPECT_LE(static_cast<int>(line.size()), width) << line << "\n" << text;
      EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing space: " << line;
    }
    EXPECT_NE(text.find("  gemm "), std::string::npos) << text;
    EXPECT_NE(text.find("[high] kernel_fragmentation"), std::string::npos);
    EXPECT_NE(text.find("short_kernels=42"), std::string::npos);
    EXPECT_NE(text.find("Steps ("), std::string::npos);
  }
}

// A call site's GPU time counts its copies and memsets: its share in
// `--group-by python` is of all GPU work, so the column never passes 100 %
// (a graph replay's line read 102 % of kernel time beside its input copy's
// 16.5 %).
TEST(ReportTextTest, PythonSiteSharesAreOfAllGpuWork) {
  Report r = MakeReport(5e6, 50, 90'000'000, 10'000'000, false);  // 100 ms of kernels
  analysis::MemcpyRow copy;
  copy.kind = "HtoD";
  copy.total_ns = 25'000'000;
  r.memcpys = {copy};
  analysis::PythonSiteRow replay, input;
  replay.site = "train.py:88 in step";
  replay.gpu_ns = 102'000'000;  // the graph's kernels and its memset
  input.site = "train.py:87 in step";
  input.gpu_ns = 23'000'000;  // the input copy
  r.python_sites = {replay, input};
  std::string text = RenderGroupByText(r, "python", 100);
  EXPECT_NE(text.find(" 81.6% "), std::string::npos) << text;
  EXPECT_NE(text.find(" 18.4% "), std::string::npos) << text;
  EXPECT_NE(text.find("kernels, copies and memsets"), std::string::npos) << text;
}

TEST(ReportJsonTest, CarriesSchemaAndNumbers) {
  Report r = MakeReport(2e6, 80, 1'000'000, 1000, true);
  std::string json = RenderReportJson(r);
  EXPECT_NE(json.find("\"schema\": \"sightline.report.v1\""), std::string::npos);
  EXPECT_NE(json.find("\"gpu_utilization_pct\": 80"), std::string::npos);
  EXPECT_NE(json.find("\"display_name\": \"gemm(float const*, float const*, float*, int)\""),
            std::string::npos);
  EXPECT_NE(json.find("\"theoretical_occupancy_pct\": null"), std::string::npos);
  EXPECT_NE(json.find("\"short_kernels\": 42"), std::string::npos);
  EXPECT_NE(json.find("\"short_kernels\": \"count\""), std::string::npos);
}

TEST(DiffTest, ImprovementPassesAndRegressionFails) {
  Report slow = MakeReport(2e6, 50, 1'000'000, 1000, true);
  Report fixed = MakeReport(1e6, 90, 900'000, 1000, false);
  DiffOptions gate;
  gate.fail_on_regression_pct = 5;
  DiffResult better = DiffReports(slow, fixed, gate);
  EXPECT_FALSE(better.regression());
  ASSERT_EQ(better.findings_resolved.size(), 1u);
  EXPECT_TRUE(better.findings_appeared.empty());
  bool step_improved = false;
  for (const QuantityChange& q : better.quantities) {
    if (q.name == "step_time_mean_ns") step_improved = q.improvement && q.change < -49;
  }
  EXPECT_TRUE(step_improved);

  DiffResult worse = DiffReports(fixed, slow, gate);
  EXPECT_TRUE(worse.regression());
  // Step time +100%, utilization -40 points; the gemm kernel grew 11%.
  std::string all;
  for (const std::string& s : worse.regressions) all += s + "\n";
  EXPECT_NE(all.find("step_time_mean_ns grew 100.0%"), std::string::npos) << all;
  EXPECT_NE(all.find("utilization dropped 40.0 points"), std::string::npos) << all;
  EXPECT_NE(all.find("kernel gemm:"), std::string::npos) << all;
  EXPECT_EQ(worse.findings_appeared.size(), 1u);
  std::string text = RenderDiffText(worse);
  EXPECT_NE(text.find("Verdict: REGRESSION beyond 5.0%"), std::string::npos);
  EXPECT_NE(RenderDiffJson(worse).find("\"regression\": true"), std::string::npos);
}

TEST(DiffTest, ThresholdsAndSmallKernelsAreRespected) {
  Report base = MakeReport(1e6, 80, 1'000'000, 1000, false);
  // +4% step time, -3 points utilization, a 0.1%-share kernel tripled.
  Report now = MakeReport(1.04e6, 77, 1'000'000, 3000, false);
  DiffOptions gate;
  gate.fail_on_regression_pct = 5;
  EXPECT_FALSE(DiffReports(base, now, gate).regression());
  gate.fail_on_regression_pct = 3.5;
  DiffResult d = DiffReports(base, now, gate);
  ASSERT_EQ(d.regressions.size(), 3u);  // step mean, p50, p99; utilization -3 pt < 3.5
  gate.fail_on_regression_pct = 2;
  d = DiffReports(base, now, gate);
  EXPECT_EQ(d.regressions.size(), 4u);  // + utilization; tiny kernel stays below the share filter
  DiffOptions report_only;
  EXPECT_FALSE(DiffReports(base, now, report_only).regression());
}

TEST(DiffTest, FewStepsP99AndUtilizationOfAFasterRunAreNotGated) {
  // The fix made every step faster but one slow step sets the p99 of 59
  // steps, and the GPU is less busy because copies went away: no regression.
  Report base = MakeReport(350e3, 63.5, 1'000'000, 1000, false);
  Report now = MakeReport(96e3, 51.7, 1'000'000, 1000, false);
  base.summary.steps.count = now.summary.steps.count = 59;
  base.summary.steps.p99_ns = 770'000;
  now.summary.steps.p99_ns = 861'000;
  now.summary.window_ns = base.summary.window_ns / 2;
  DiffOptions gate;
  gate.fail_on_regression_pct = 10;
  DiffResult d = DiffReports(base, now, gate);
  EXPECT_FALSE(d.regression()) << (d.regressions.empty() ? "" : d.regressions[0]);
  // With 100+ steps the p99 is gated; a slower run's utilization drop is.
  base.summary.steps.count = now.summary.steps.count = 150;
  d = DiffReports(base, now, gate);
  ASSERT_EQ(d.regressions.size(), 1u);
  EXPECT_NE(d.regressions[0].find("step_time_p99_ns"), std::string::npos);
  Report slower = MakeReport(400e3, 40, 1'000'000, 1000, false);
  d = DiffReports(base, slower, gate);
  bool util = false;
  for (const std::string& s : d.regressions) util |= s.find("utilization dropped") != std::string::npos;
  EXPECT_TRUE(util);
}

// Device memory peaks (-t cuda-memory): a larger peak is a regression past
// the gate, a smaller one an improvement; both survive the JSON round trip
// and render in bytes.
TEST(DiffTest, MemoryPeaksAreComparedAndGated) {
  Report base = MakeReport(2.5e6, 70, 1'000'000, 1000, false);
  Report now = MakeReport(2.5e6, 70, 1'000'000, 1000, false);
  base.summary.devices[0].memory_peak_bytes = 1ull << 30;
  now.summary.devices[0].memory_peak_bytes = 3ull << 29;  // +50 %
  DiffOptions gate;
  gate.fail_on_regression_pct = 10;
  auto saved = ReportFromJson("now.json", RenderReportJson(now));
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->summary.devices[0].memory_peak_bytes, 3ull << 29);
  DiffResult d = DiffReports(base, *saved, gate);
  ASSERT_EQ(d.regressions.size(), 1u);
  EXPECT_NE(d.regressions[0].find("memory peak grew 50.0%"), std::string::npos) << d.regressions[0];
  EXPECT_NE(d.regressions[0].find("1.00 GiB -> 1.50 GiB"), std::string::npos) << d.regressions[0];
  EXPECT_NE(RenderDiffText(d, 100).find("memory_peak_bytes[0]"), std::string::npos);
  DiffResult back = DiffReports(now, base, gate);
  EXPECT_FALSE(back.regression());
  bool improved = false;
  for (const QuantityChange& q : back.quantities) improved |= q.name == "memory_peak_bytes[0]" && q.improvement;
  EXPECT_TRUE(improved);
  // Without memory records on either side: no quantity.
  DiffResult none = DiffReports(MakeReport(2.5e6, 70, 1'000'000, 1000, false),
                                MakeReport(2.5e6, 70, 1'000'000, 1000, false), gate);
  for (const QuantityChange& q : none.quantities) EXPECT_EQ(q.name.find("memory_peak"), std::string::npos);
}

TEST(ReportJsonReadTest, RoundTripsWhatTheDiffUses) {
  Report r = MakeReport(2.5e6, 73.25, 1'000'000, 1000, true);
  r.findings[0].title = "quote \" backslash \\ tab \t \u00e9";
  auto back = ReportFromJson("saved.json", RenderReportJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->summary.window_ns, r.summary.window_ns);
  EXPECT_DOUBLE_EQ(back->summary.steps.mean_ns, 2.5e6);
  EXPECT_DOUBLE_EQ(back->summary.devices[0].gpu_utilization_pct, 73.25);
  ASSERT_EQ(back->kernels.size(), 2u);
  EXPECT_EQ(back->kernels[0].name, "_Z4gemmPKfS0_Pfi");
  EXPECT_EQ(back->kernels[0].total_ns, 1'000'000u);
  ASSERT_EQ(back->findings.size(), 1u);
  EXPECT_EQ(back->findings[0].title, r.findings[0].title);
  EXPECT_EQ(back->findings[0].severity, analysis::Severity::kHigh);
  DiffOptions gate;
  gate.fail_on_regression_pct = 0;
  EXPECT_FALSE(DiffReports(r, *back, gate).regression());

  EXPECT_FALSE(ReportFromJson("x", "{\"schema\": \"other\"}").ok());
  auto bad = ReportFromJson("cut.json", "{\"schema\": \"sightline.report.v1\", \"kernels\": [1,");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cut.json: invalid JSON at byte"), absl::string_view::npos);
  std::string deep(100, '[');
  EXPECT_FALSE(ReportFromJson("deep", deep).ok());
  EXPECT_TRUE(LooksLikeJson("  \n {"));
  EXPECT_FALSE(LooksLikeJson("SLTRACE\n"));
}

// An integer field out of its type's range is an error naming the field (it
// was an out-of-range double-to-integer conversion: undefined behaviour).
TEST(ReportJsonTest, IntegerFieldsOutOfRangeAreErrorsNamingTheField) {
  const std::string head = "{\"schema\": \"sightline.report.v1\", ";
  struct Case {
    std::string body, message;
  };
  const Case cases[] = {
      {"\"traces\": [{\"pid\": 1e300}]}", "traces[0].pid: 1e+300 is outside [0, 4294967295]"},
      {"\"traces\": [{}, {\"rank\": -3e9}]}", "traces[1].rank: -3e+09 is outside [-2147483648, 2147483647]"},
      {"\"summary\": {\"window_ns\": -1}}", "summary.window_ns: -1 is outside [0, 18446744073709551615]"},
      {"\"summary\": {\"steps\": {\"p50_ns\": 1e999}}}", "summary.steps.p50_ns: inf is outside"},
      {"\"kernels\": [{\"count\": 18446744073709551616}]}", "kernels[0].count: 1.84467e+19 is outside"},
      {"\"findings\": [{\"est_saving_ns\": -0.5e20}]}", "findings[0].est_saving_ns: -5e+19 is outside"},
  };
  for (const Case& c : cases) {
    auto r = ReportFromJson("odd.json", head + c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_NE(r.status().message().find("odd.json: " + c.message), absl::string_view::npos)
        << r.status().message();
  }
  // The edges of each range, and a fraction (truncated), still read.
  auto edge = ReportFromJson(
      "edge.json", head +
                       "\"traces\": [{\"pid\": 4294967295, \"rank\": -2147483648}], "
                       "\"summary\": {\"window_ns\": 18446744073709549568}, "
                       "\"kernels\": [{\"count\": 2.9, \"total_ns\": 0}]}");
  ASSERT_TRUE(edge.ok()) << edge.status();
  EXPECT_EQ(edge->traces[0].pid, 4294967295u);
  EXPECT_EQ(edge->traces[0].rank, -2147483648);
  EXPECT_EQ(edge->summary.window_ns, 18446744073709549568u);
  EXPECT_EQ(edge->kernels[0].count, 2u);
}

TEST(DisplayNameTest, KernelNamesShortenAtTokenBoundaries) {
  // PyTorch's vectorized_elementwise_kernel, as CUPTI reports it.
  const char* mangled =
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
  std::string full = Demangle(mangled);
  ASSERT_GT(full.size(), 60u);
  EXPECT_EQ(DisplayKernelName(mangled, 60), "at::native::vectorized_elementwise_kernel<\u2026>");
  EXPECT_EQ(DisplayKernelName(mangled, 200).find("void "), std::string::npos);  // no return type
  EXPECT_EQ(DisplayKernelName(mangled, 200).find("(int"), std::string::npos);  // no parameters
  EXPECT_EQ(DisplayKernelName(mangled, 40), "\u2026::vectorized_elementwise_kernel<\u2026>");
  // A long plain name is cut at '_' with an ellipsis, never mid-word.
  std::string xmma =
      "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4";
  std::string cut = DisplayKernelName(xmma, 40);
  EXPECT_EQ(cut, "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n\u2026");
  EXPECT_EQ(DisplayKernelName("relu_kernel", 40), "relu_kernel");
}

TEST(HtmlTest, EscapesAndDecimatesWithinBudget) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(Demangle("_Z4gemmPKfS0_Pfi"), "gemm(float const*, float const*, float*, int)");
  EXPECT_EQ(Demangle("_Znot_valid"), "_Znot_valid");
  EXPECT_EQ(Demangle("relu"), "relu");

  testing::SyntheticOptions o;
  o.steps = 300;
  o.kernels_per_step = 100;  // 30 000 kernels on one stream
  o.kernel_ns = 3'000;
  std::string path = ::testing::TempDir() + "/html-" + std::to_string(getpid()) + ".sltrace";
  std::string error;
  ASSERT_TRUE(testing::WriteSyntheticTraceTo(path, o, &error)) << error;
  auto model = analysis::BuildModel({path});
  ASSERT_TRUE(model.ok()) << model.status();
  Report report = analysis::AnalyzeModel(*model, {});
  HtmlDataOptions options;
  options.max_events = 4000;
  options.min_track_events = 1000;
  HtmlDataStats stats;
  std::string html = RenderReportHtml({{"run<1>", &*model, &report}}, options, &stats);
  // 30 000 kernels + 300 memcpys on the stream, plus the NVTX ranges.
  EXPECT_GE(stats.source_events, 30'600u);
  EXPECT_LT(stats.source_events, 32'000u);
  // Each track: at most ~1.25 x its budget + 1 blocks (stream budget ~3900).
  EXPECT_LT(stats.blocks, 1.25 * 4000 + 1000 + 10);
  EXPECT_GT(stats.merged_blocks, 0u);
  EXPECT_NE(html.find("run&lt;1&gt;"), std::string::npos);
  // Nothing is fetched: no external scripts, styles, images or fonts.
  for (const char* external : {"src=\"http", "href=\"http", "url(http", "@import", "src=\"//"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  EXPECT_NE(html.find("id=\"sl-data\""), std::string::npos);
}

}  // namespace
}  // namespace sightline::exporter

namespace sightline::exporter {
namespace {

// NCCL: host ranges with NCCL's payload fields (size, communicator), the
// communicator's rank info arriving last (as NCCL 2.28's ncclCommDestroy
// does), and the op's kernels → per-op table with bytes, algbw, communicator.
TEST(ReportNcclTest, OpsCarrySizeBandwidthAndCommunicator) {
  analysis::SyntheticTrace t;
  t.header.process.rank = 1;
  t.header.devices.resize(1);
  t.header.devices[0].name = "NVIDIA H200";
  uint32_t kernel_name = t.Intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  uint32_t range_name = t.Intern("ncclAllReduce");
  const uint64_t comm = 0x0123456789abcdefull, bytes = 16u << 20;
  for (int i = 0; i < 4; ++i) {
    uint64_t t0 = 1'000'000 + i * 1'000'000;
    NcclEvent host;
    host.start_ns = t0;
    host.end_ns = t0 + 20'000;
    host.op = NcclOp::kAllReduce;
    host.bytes = bytes;
    host.comm_id = comm;
    host.name_id = range_name;
    host.source = NcclSource::kHostNvtx;
    t.nccls.push_back(host);
    KernelEvent k;
    k.start_ns = t0 + 30'000;
    k.end_ns = t0 + 30'000 + 200'000;  // 200 us: 16 MiB / 200 us = 83.9 GB/s
    k.stream_id = 17;
    k.correlation_id = 100 + i;
    k.name_id = kernel_name;
    k.grid_x = 24;
    k.block_x = 544;
    t.kernels.push_back(k);
    NcclEvent gpu;
    gpu.start_ns = k.start_ns;
    gpu.end_ns = k.end_ns;
    gpu.stream_id = 17;
    gpu.correlation_id = k.correlation_id;
    gpu.op = NcclOp::kAllReduce;
    gpu.name_id = kernel_name;
    gpu.source = NcclSource::kGpuKernel;
    t.nccls.push_back(gpu);
  }
  NcclEvent info;  // ncclCommDestroy's payload, at the end
  info.start_ns = 9'000'000;
  info.end_ns = 9'100'000;
  info.comm_id = comm;
  info.rank = 1;
  info.nranks = 2;
  info.name_id = t.Intern("ncclCommDestroy");
  info.source = NcclSource::kCommunicatorInfo;
  t.nccls.push_back(info);

  analysis::ModelBuilder builder;
  builder.AddSynthetic(t);
  analysis::TimelineModel model = builder.Finish();
  ASSERT_EQ(model.communicators.size(), 1u);
  ASSERT_EQ(model.collectives.size(), 8u);  // the communicator info is not an operation
  for (const analysis::Collective& c : model.collectives) {
    if (c.source == NcclSource::kHostNvtx) {
      EXPECT_EQ(c.rank, 1);
      EXPECT_EQ(c.nranks, 2);
    }
  }
  Report report = analysis::AnalyzeModel(model, {});
  ASSERT_EQ(report.nccl_ops.size(), 1u);
  const analysis::NcclOpRow& op = report.nccl_ops[0];
  EXPECT_EQ(op.op, "AllReduce");
  EXPECT_EQ(op.count, 4u);
  EXPECT_EQ(op.sized_count, 4u);
  EXPECT_EQ(op.bytes_total, 4 * bytes);
  EXPECT_EQ(op.bytes_min, bytes);
  EXPECT_EQ(op.gpu_count, 4u);
  EXPECT_EQ(op.gpu_total_ns, 800'000u);
  EXPECT_NEAR(op.algbw_gbps, double(bytes) / 200'000.0, 1e-9);
  EXPECT_EQ(op.comm_id, "0x0123456789abcdef");
  EXPECT_EQ(op.comm_rank, 1);
  EXPECT_EQ(op.comm_nranks, 2);
  EXPECT_EQ(op.rank, 1);

  std::string json = RenderReportJson(report);
  EXPECT_TRUE(ReportFromJson("nccl", json).ok());
  for (const char* field : {"\"nccl_ops\"", "\"bytes_total\"", "67108864", "\"algbw_gbps\"",
                            "\"0x0123456789abcdef\"", "\"comm_nranks\""}) {
    EXPECT_NE(json.find(field), std::string::npos) << field;
  }
  TextOptions text_options;
  std::string text = RenderReportText(report, text_options);
  EXPECT_NE(text.find("NCCL ops"), std::string::npos) << text;
  EXPECT_NE(text.find("16.78 MB"), std::string::npos) << text;
  EXPECT_NE(text.find("83.9 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("0x0123456789abcdef (1/2)"), std::string::npos) << text;
}

// AnalyzeModel over a model it may consume cuts the scope from the model in
// place (the CLI's path); the report must be the one the copied scope gives:
// steady state, capture windows, memory (read from the whole run before the
// cut), two ranks, and the whole trace.
TEST(ReportScopeTest, ScopeCutInPlaceGivesTheCopysReport) {
  const char* src = std::getenv("SIGHTLINE_SOURCE_DIR");
  const std::string data = std::string(src ? src : ".") + "/tests/data/";
  const std::vector<std::vector<std::string>> sets = {
      {"pytorch_train_slow"},
      {"pytorch_mem_leak"},
      {"pytorch_loader_slow"},
      {"training_loop_capture_nvtx_epoch"},
      {"nccl_allreduce_slow_rank0", "nccl_allreduce_slow_rank1"},
  };
  for (const std::vector<std::string>& set : sets) {
    std::vector<std::string> paths;
    for (const std::string& stem : set) paths.push_back(data + stem + ".sltrace");
    struct stat st;
    if (stat(paths[0].c_str(), &st) != 0) continue;  // data not checked out
    for (const char* window : {"steady", "all"}) {
      analysis::AnalysisOptions o;
      o.window = window;
      auto model = analysis::BuildModel(paths);
      ASSERT_TRUE(model.ok()) << model.status();
      const std::string copied = RenderReportJson(analysis::AnalyzeModel(*model, o));
      const std::string in_place = RenderReportJson(analysis::AnalyzeModel(*std::move(model), o));
      EXPECT_EQ(copied, in_place) << set[0] << " --window " << window;
    }
  }
  testing::SyntheticOptions so;
  so.steps = 40;
  std::string path = ::testing::TempDir() + "/scope-" + std::to_string(getpid()) + ".sltrace";
  std::string error;
  ASSERT_TRUE(testing::WriteSyntheticTraceTo(path, so, &error)) << error;
  auto model = analysis::BuildModel({path});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string copied = RenderReportJson(analysis::AnalyzeModel(*model, {}));
  EXPECT_EQ(copied, RenderReportJson(analysis::AnalyzeModel(*std::move(model), {})));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sightline::exporter
