// sightline diff BASE NEW [--format text|json] [-o FILE] [--fail-on-regression PCT]
//
// BASE and NEW are traces or saved `sightline analyze --format json` reports
// (a CI job can keep a baseline report instead of a trace).
// Analyzes two runs and compares step time, GPU utilization, per-kernel time
// and count (kernels matched by name) and findings (appeared / resolved).
// With --fail-on-regression PCT it is a CI performance gate: exit 1 when a
// tracked quantity regresses by more than PCT (relative % for times,
// percentage points for utilization; see lib/export/report_render.h).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/analysis/analyze.h"
#include "lib/analysis/steps.h"
#include "lib/export/report_json_read.h"
#include "lib/export/report_render.h"
#include "lib/trace/input_file.h"
#include "lib/trace/terminal_text.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"
#include "tools/sightline/progress.h"
#include "tools/sightline/trace_inputs.h"

namespace sightline::cli {
namespace {

int RunDiff(const std::vector<std::string>& args) {
  std::string threshold, min_share;
  auto own = [&](ArgScanner* scan, std::string* problem) {
    bool missing = false;
    if (scan->Value("--fail-on-regression", &threshold, &missing) ||
        scan->Value("--min-kernel-share", &min_share, &missing)) {
      if (missing) *problem = "diff: " + scan->last_option() + " needs a non-empty value (see --help)";
      return true;
    }
    return false;
  };
  ReportArgs r;
  std::string problem = ScanReportArgs("diff", args, /*takes_format=*/true, own, &r);
  if (!problem.empty()) return UsageError(problem);
  const std::vector<std::string>& traces = r.traces;
  const std::string& format = r.format;
  const std::string& output = r.output;
  analysis::AnalysisOptions options;
  options.step_range_name = r.step_range;
  options.window = r.window;
  if (absl::StatusOr<analysis::WindowSpec> w = analysis::ParseWindowSpec(options.window); !w.ok()) {
    return UsageError("diff: " + std::string(w.status().message()));
  }
  if (traces.size() != 2) {
    return UsageError("diff: expected two traces, BASE and NEW (usage: sightline diff BASE NEW "
                      "[--format text|json] [--fail-on-regression PCT])");
  }
  if (format != "text" && format != "json") {
    return UsageError("diff: unknown format '" + format + "' (expected text or json)");
  }
  exporter::DiffOptions diff_options;
  // NaN compared false with every change: "no regression beyond nan%" on a
  // +264 % regression. Finite and bounded only.
  if (!threshold.empty()) {
    absl::StatusOr<double> v =
        ParseNumberOption("--fail-on-regression", threshold, 0, 1e9, true);
    if (!v.ok()) return UsageError("diff: " + std::string(v.status().message()));
    diff_options.fail_on_regression_pct = *v;
  }
  if (!min_share.empty()) {
    absl::StatusOr<double> v =
        ParseNumberOption("--min-kernel-share", min_share, 0, 100, true);
    if (!v.ok()) return UsageError("diff: " + std::string(v.status().message()));
    diff_options.min_kernel_share_pct = *v;
  }
  // BASE and NEW may each be a set (a directory or a quoted glob).
  std::vector<std::vector<std::string>> sides;
  for (const std::string& t : traces) {
    absl::StatusOr<std::vector<std::string>> set = ExpandTraceArguments({t});
    if (!set.ok()) return UsageError("diff: " + std::string(set.status().message()));
    for (const std::string& path : *set) {
      absl::Status s = CheckInputFile(path);
      if (!s.ok()) return UsageError(std::string(s.message()));
    }
    sides.push_back(*std::move(set));
  }
  ProgressLine progress;
  options.progress = [&](const analysis::ReadProgress& p) {
    progress.Update(p.trace_name, p.bytes_done, p.bytes_total);
  };
  // A saved `analyze --format json` report is read back; a trace is analyzed.
  auto load = [&](const std::vector<std::string>& set) -> absl::StatusOr<analysis::Report> {
    if (set.size() > 1) return analysis::Analyze(set, options);
    const std::string& path = set.front();
    absl::StatusOr<std::string> head = trace::ReadInputPrefix(path, 64);
    if (!head.ok()) return head.status();
    if (exporter::LooksLikeJson(*head)) return exporter::ReadReportJson(path);
    return analysis::Analyze({path}, options);
  };
  absl::StatusOr<analysis::Report> base = load(sides[0]);
  if (!base.ok()) return UsageError(std::string(base.status().message()));
  absl::StatusOr<analysis::Report> now = load(sides[1]);
  if (!now.ok()) return UsageError(std::string(now.status().message()));
  progress.Finish();
  exporter::DiffResult diff = exporter::DiffReports(*base, *now, diff_options);
  for (const std::string& note : diff.damage_notes) {
    std::fprintf(stderr, "sightline: warning: %s\n", trace::EscapeTerminalText(note).c_str());
  }
  std::string text = format == "json" ? exporter::RenderDiffJson(diff)
                                      : exporter::RenderDiffText(diff, TextWidth());
  absl::Status written = WriteTextOutput(output, text);
  if (!written.ok()) return UsageError(std::string(written.message()));
  if (diff.regression()) {
    std::fprintf(stderr, "sightline: regression beyond %.1f%%: %s\n",
                 diff_options.fail_on_regression_pct, diff.regressions.front().c_str());
    return kExitThreshold;
  }
  return kExitOk;
}

}  // namespace

SIGHTLINE_COMMAND("diff",
                  "diff BASE NEW [--format text|json] [-o FILE] [--fail-on-regression PCT] "
                  "(BASE/NEW: traces or JSON reports) "
                  "[--min-kernel-share PCT] [--window steady|all|steps:A-B|capture:N|T0..T1]",
                  "Compare two runs; exit 1 on a regression beyond PCT (CI gate)", RunDiff);

}  // namespace sightline::cli
