// sightline report TRACE... -o report.html [--merge] [--max-events N]
//
// Writes one self-contained HTML file (inline CSS/JS/data, no network) with
// the findings, a zoomable timeline of streams and NVTX ranges, GPU
// utilization over time, the kernel-time breakdown and the step-time
// distribution. Two traces give a before/after comparison (first = before);
// --merge (or three or more traces) treats the traces as ranks of one run.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/analysis/analyze.h"
#include "lib/analysis/steps.h"
#include "lib/export/output_file.h"
#include "lib/export/report_html.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"
#include "tools/sightline/progress.h"
#include "tools/sightline/trace_inputs.h"

namespace sightline::cli {
namespace {

int RunReport(const std::vector<std::string>& args) {
  std::string max_events;
  bool merge = false;
  auto own = [&](ArgScanner* scan, std::string* problem) {
    bool missing = false;
    if (scan->Value("--max-events", &max_events, &missing)) {
      if (missing) *problem = "report: --max-events needs a non-empty value (see --help)";
      return true;
    }
    if (scan->Flag("--merge")) {
      merge = true;
      return true;
    }
    return false;
  };
  ReportArgs r;
  r.output = "";  // required
  std::string problem = ScanReportArgs("report", args, /*takes_format=*/false, own, &r);
  if (!problem.empty()) return UsageError(problem);
  std::vector<std::string> traces = std::move(r.traces);
  const std::string& output = r.output;
  analysis::AnalysisOptions options;
  options.step_range_name = r.step_range;
  options.window = r.window;
  if (absl::StatusOr<analysis::WindowSpec> w = analysis::ParseWindowSpec(options.window); !w.ok()) {
    return UsageError("report: " + std::string(w.status().message()));
  }
  if (traces.empty()) return UsageError("report: missing TRACE (usage: sightline report TRACE... -o report.html)");
  if (output.empty()) return UsageError("report: missing -o report.html");
  exporter::HtmlDataOptions html_options;
  if (!max_events.empty()) {
    absl::StatusOr<uint64_t> v =
        ParseCountOption("--max-events", max_events, 1000, uint64_t{1} << 32);
    if (!v.ok()) return UsageError("report: " + std::string(v.status().message()));
    html_options.max_events = static_cast<size_t>(*v);
  }
  // Each argument may be a set (a directory or a quoted glob): two
  // arguments are before/after, each side its own set.
  std::vector<std::vector<std::string>> sets;
  for (const std::string& t : traces) {
    absl::StatusOr<std::vector<std::string>> set = ExpandTraceArguments({t});
    if (!set.ok()) return UsageError("report: " + std::string(set.status().message()));
    for (const std::string& path : *set) {
      absl::Status s = CheckInputFile(path);
      if (!s.ok()) return UsageError(std::string(s.message()));
    }
    sets.push_back(*std::move(set));
  }
  // Fail on an unwritable destination before the (possibly long) analysis.
  // (Checked, not opened: opening a FIFO now would hand its reader an
  // empty stream.)
  absl::Status writable = exporter::OutputFile::Check(output);
  if (!writable.ok()) return UsageError(std::string(writable.message()));
  std::vector<std::vector<std::string>> groups;
  if (sets.size() == 2 && !merge) {
    groups = sets;
  } else {
    groups.emplace_back();
    for (const auto& set : sets) groups.back().insert(groups.back().end(), set.begin(), set.end());
  }
  ProgressLine progress;
  analysis::ProgressCallback on_progress = [&](const analysis::ReadProgress& p) {
    progress.Update(p.trace_name, p.bytes_done, p.bytes_total);
  };
  std::vector<analysis::TimelineModel> models;
  std::vector<analysis::Report> reports;
  models.reserve(groups.size());
  reports.reserve(groups.size());
  for (const auto& group : groups) {
    absl::StatusOr<analysis::TimelineModel> model = analysis::BuildModel(group, on_progress);
    if (!model.ok()) return UsageError(std::string(model.status().message()));
    models.push_back(std::move(*model));
    reports.push_back(analysis::AnalyzeModel(models.back(), options));
  }
  progress.Finish();
  std::vector<exporter::HtmlRun> runs;
  for (size_t i = 0; i < groups.size(); ++i) {
    // Labels are file names: the cards, selector and chart titles stay short.
    std::string label = groups[i][0].substr(groups[i][0].rfind('/') + 1);
    if (groups[i].size() > 1) label += " +" + std::to_string(groups[i].size() - 1) + " ranks";
    runs.push_back({label, &models[i], &reports[i]});
  }
  exporter::HtmlDataStats stats;
  std::string html = exporter::RenderReportHtml(runs, html_options, &stats);
  absl::Status written = WriteTextOutput(output, html);
  if (!written.ok()) return UsageError(std::string(written.message()));
  std::fprintf(stderr,
               "sightline: wrote %s (%.1f MB; %s; timeline: %llu events in %llu blocks on %zu tracks)\n",
               output.c_str(), static_cast<double>(html.size()) / 1e6,
               groups.size() == 2 ? "before/after comparison" : "1 run",
               static_cast<unsigned long long>(stats.source_events),
               static_cast<unsigned long long>(stats.blocks), stats.tracks);
  return kExitOk;
}

}  // namespace

SIGHTLINE_COMMAND("report", "report TRACE... -o report.html [--merge] [--max-events N] [--window steady|all|steps:A-B|capture:N|T0..T1]",
                  "Write a self-contained HTML report (two traces: before/after comparison)",
                  RunReport);

}  // namespace sightline::cli
