// sightline analyze TRACE... [--format text|json] [-o FILE] [--group-by python|op|kernel]
//                  [--kernel REGEX] [--set KEY=VALUE]... [--step-range NAME] [--rules A,B]
//                  [--fail-on high|medium|low]
//
// Reads one or more traces (several ranks or processes of one run are merged
// on the wall clock; a directory or a quoted glob names a set, see
// trace_inputs.h), runs every rule and prints the findings ranked by estimated
// saving: a one-screen text report or JSON ("schema": "sightline.report.v1").
// `--kernel REGEX` prints an ncu-style details page per matching kernel
// instead (kernel_metrics.h). Progress goes to stderr when reading takes more
// than a second.
// Exit: 0 ok; 1 when --fail-on is given and a finding at that severity or
// worse exists; 2 usage or input error.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/kernel_metrics.h"
#include "lib/analysis/steps.h"
#include "lib/export/report_render.h"
#include "lib/trace/terminal_text.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"
#include "tools/sightline/progress.h"
#include "tools/sightline/trace_inputs.h"

namespace sightline::cli {
namespace {

int SeverityRank(const std::string& s) {
  if (s == "high") return 0;
  if (s == "medium") return 1;
  if (s == "low") return 2;
  if (s == "info") return 3;
  return -1;
}

int RunAnalyze(const std::vector<std::string>& args) {
  std::string fail_on, group_by, kernel_pattern;
  bool kernel_pages = false;
  analysis::AnalysisOptions options;
  auto own = [&](ArgScanner* scan, std::string* problem) {
    std::string value;
    bool missing = false;
    if (scan->Value("--kernel", &kernel_pattern, &missing)) {
      kernel_pages = true;
      if (missing) *problem = "analyze: --kernel needs a regular expression (e.g. 'gemm|nvjet')";
      return true;
    }
    if (scan->Value("--fail-on", &fail_on, &missing) ||
        scan->Value("--group-by", &group_by, &missing)) {
      if (missing) *problem = "analyze: " + scan->last_option() + " needs a non-empty value (see --help)";
      return true;
    }
    if (scan->Value("--set", &value, &missing)) {
      if (missing) {
        *problem = "analyze: --set needs KEY=VALUE";
      } else if (absl::Status s = options.SetFromString(value); !s.ok()) {
        *problem = "analyze: --set " + value + ": " + std::string(s.message());
      }
      return true;
    }
    if (scan->Value("--rules", &value, &missing)) {
      if (missing) *problem = "analyze: --rules needs a list of rule ids";
      for (absl::string_view r : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        options.only_rules.emplace_back(r);
      }
      return true;
    }
    return false;
  };
  ReportArgs r;
  std::string problem = ScanReportArgs("analyze", args, /*takes_format=*/true, own, &r);
  if (!problem.empty()) return UsageError(problem);
  std::vector<std::string> traces = std::move(r.traces);
  const std::string& format = r.format;
  const std::string& output = r.output;
  options.step_range_name = r.step_range;
  options.window = r.window;
  if (traces.empty()) return UsageError("analyze: missing TRACE (usage: sightline analyze TRACE... [--format text|json] [-o FILE])");
  if (format != "text" && format != "json") {
    return UsageError("analyze: unknown format '" + format + "' (expected text or json)");
  }
  if (!group_by.empty() && group_by != "python" && group_by != "op" && group_by != "kernel") {
    return UsageError("analyze: --group-by expects python, op or kernel (got '" + group_by + "')");
  }
  if (!fail_on.empty() && SeverityRank(fail_on) < 0) {
    return UsageError("analyze: --fail-on expects high, medium, low or info (got '" + fail_on + "')");
  }
  if (kernel_pages) {
    if (!group_by.empty() || format != "text") {
      return UsageError("analyze: --kernel prints text pages; it does not combine with --group-by "
                        "or --format json (the JSON report has kernels[].metrics)");
    }
    if (absl::Status k = analysis::CheckKernelPattern(kernel_pattern); !k.ok()) {
      return UsageError("analyze: " + std::string(k.message()));
    }
    options.kernel_pages_pattern = kernel_pattern;
    options.kernel_pages_limit = 0;
  }
  if (absl::StatusOr<analysis::WindowSpec> w = analysis::ParseWindowSpec(options.window); !w.ok()) {
    return UsageError("analyze: " + std::string(w.status().message()));
  }
  absl::StatusOr<std::vector<std::string>> expanded = ExpandTraceArguments(traces);
  if (!expanded.ok()) return UsageError("analyze: " + std::string(expanded.status().message()));
  traces = *std::move(expanded);
  for (const std::string& t : traces) {
    absl::Status s = CheckInputFile(t);
    if (!s.ok()) return UsageError(std::string(s.message()));
  }
  ProgressLine progress;
  options.progress = [&](const analysis::ReadProgress& p) {
    progress.Update(p.trace_name, p.bytes_done, p.bytes_total);
  };
  absl::StatusOr<analysis::Report> report = analysis::Analyze(traces, options);
  progress.Finish();
  if (!report.ok()) return UsageError(std::string(report.status().message()));
  std::string text =
      kernel_pages         ? exporter::RenderKernelPagesText(report->kernel_pages, TextWidth())
      : format == "json"   ? exporter::RenderReportJson(*report)
      : !group_by.empty() ? exporter::RenderGroupByText(*report, group_by, TextWidth())
                          : exporter::RenderReportText(*report, {TextWidth()});
  absl::Status written = WriteTextOutput(output, text);
  if (!written.ok()) return UsageError(std::string(written.message()));
  if (!fail_on.empty()) {
    int limit = SeverityRank(fail_on);
    for (const analysis::Finding& f : report->findings) {
      if (static_cast<int>(f.severity) <= limit) {
        std::fprintf(stderr, "sightline: finding at or above '%s': %s (%s)\n", fail_on.c_str(),
                     f.rule.c_str(), trace::EscapeTerminalText(f.title).c_str());
        return kExitThreshold;
      }
    }
  }
  return kExitOk;
}

}  // namespace

SIGHTLINE_COMMAND("analyze",
                  "analyze TRACE... [--format text|json] [-o FILE] [--set KEY=VALUE]... "
                  "[--step-range NAME] [--window steady|all|steps:A-B|capture:N|T0..T1] [--rules A,B] "
                  "[--fail-on high|medium|low] [--group-by python|op|kernel] [--kernel REGEX]",
                  "Find bottlenecks: summary, top kernels and findings ranked by saving",
                  RunAnalyze);

}  // namespace sightline::cli
