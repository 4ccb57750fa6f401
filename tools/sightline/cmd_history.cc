// sightline history add TRACE|REPORT.json... [--label KEY=VALUE]... [--db PATH]
// sightline trend [--label KEY=VALUE]... [--db PATH] [-o PAGE.html] [--threshold PCT]
//                 [--quantity NAME] [--fail-on-regression PCT]
//
// `history add` analyzes a trace (or reads a saved `analyze --format json`
// report) and stores the run's summary with its labels in the history
// database (lib/history/history_store.h; default in the user's data
// directory). Several inputs in one call are stored as several runs.
// `trend` prints the matching runs oldest first with regressions marked
// (lib/history/trend.h), writes an HTML page with one plot per quantity, and
// with --fail-on-regression PCT exits 1 when the newest run's QUANTITY
// (default step_p50_ms) is worse than the median of the earlier runs by more
// than PCT percent.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/analyze.h"
#include "lib/export/report_json_read.h"
#include "lib/history/history_store.h"
#include "lib/history/trend.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"

namespace sightline::cli {
namespace {


// First bytes of a file (to tell a JSON report from a trace).
std::string Head(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[64];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

absl::StatusOr<analysis::Report> LoadRun(const std::string& path) {
  if (absl::Status s = CheckInputFile(path); !s.ok()) return s;
  if (exporter::LooksLikeJson(Head(path))) return exporter::ReadReportJson(path);
  return analysis::Analyze({path}, analysis::AnalysisOptions());
}

history::RunRecord RecordFromReport(const std::string& source, const analysis::Report& r) {
  history::RunRecord run;
  run.source = source;
  const analysis::StepSummary& steps = r.summary.steps;
  run.step_count = steps.count;
  if (steps.count > 0) {
    run.step_mean_ns = steps.mean_ns;
    run.step_p50_ns = static_cast<double>(steps.p50_ns);
    run.step_p99_ns = static_cast<double>(steps.p99_ns);
  }
  if (!r.summary.devices.empty()) {
    double sum = 0;
    for (const analysis::DeviceSummary& d : r.summary.devices) sum += d.gpu_utilization_pct;
    run.gpu_utilization_pct = sum / static_cast<double>(r.summary.devices.size());
  }
  for (const analysis::Finding& f : r.findings) {
    if (run.top_findings.size() >= 5) break;
    run.top_findings.push_back(f.rule + ": " + f.title);
  }
  return run;
}

bool ParseCommon(ArgScanner* scan, std::string* db,
                 std::map<std::string, std::string>* labels, std::string* problem,
                 const char* cmd) {
  bool missing = false;
  std::string label;
  if (scan->Value("--db", db, &missing)) {
    if (missing) *problem = std::string(cmd) + ": --db needs a path";
    return true;
  }
  if (scan->Value("--label", &label, &missing) || scan->Value("-l", &label, &missing)) {
    if (missing) {
      *problem = std::string(cmd) + ": --label needs KEY=VALUE";
      return true;
    }
    std::string k, v;
    absl::Status s = history::ParseLabel(label, &k, &v);
    if (!s.ok()) {
      *problem = std::string(cmd) + ": " + std::string(s.message());
    } else {
      (*labels)[k] = v;
    }
    return true;
  }
  return false;
}

int RunHistory(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "add") {
    return UsageError("history: expected 'add' (usage: sightline history add TRACE|REPORT.json "
                      "[--label KEY=VALUE]... [--db PATH])");
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  ArgScanner scan(rest);
  std::string db = history::DefaultDatabasePath(), problem;
  std::map<std::string, std::string> labels;
  std::vector<std::string> inputs;
  while (!scan.Done()) {
    if (ParseCommon(&scan, &db, &labels, &problem, "history add")) {
      if (!problem.empty()) return UsageError(problem);
      continue;
    }
    std::string a = scan.Next();
    if (a.size() > 1 && a[0] == '-') return UsageError("history add: unknown option '" + a + "'");
    inputs.push_back(a);
  }
  if (inputs.empty()) return UsageError("history add: no trace or report given");
  // Read everything first: a bad input stores nothing.
  std::vector<history::RunRecord> runs;
  for (const std::string& in : inputs) {
    absl::StatusOr<analysis::Report> report = LoadRun(in);
    if (!report.ok()) return UsageError("history add: " + std::string(report.status().message()));
    runs.push_back(RecordFromReport(in, *report));
    runs.back().labels = labels;
  }
  absl::StatusOr<std::unique_ptr<history::HistoryStore>> store = history::HistoryStore::Open(db);
  if (!store.ok()) return UsageError("history add: " + std::string(store.status().message()));
  for (const history::RunRecord& run : runs) {
    absl::StatusOr<int64_t> id = (*store)->Add(run);
    if (!id.ok()) return UsageError("history add: " + std::string(id.status().message()));
    std::printf("run #%lld added to %s: %llu steps, p50 %s ms, GPU utilization %s%%\n",
                static_cast<long long>(*id), db.c_str(),
                static_cast<unsigned long long>(run.step_count),
                run.step_p50_ns < 0 ? "-" : std::to_string(run.step_p50_ns / 1e6).c_str(),
                run.gpu_utilization_pct < 0 ? "-"
                                            : std::to_string(run.gpu_utilization_pct).c_str());
  }
  return kExitOk;
}

int RunTrend(const std::vector<std::string>& args) {
  ArgScanner scan(args);
  std::string db = history::DefaultDatabasePath(), problem, html = "sightline-trend.html";
  std::string threshold, fail, quantity = "step_p50_ms";
  std::map<std::string, std::string> labels;
  while (!scan.Done()) {
    if (ParseCommon(&scan, &db, &labels, &problem, "trend")) {
      if (!problem.empty()) return UsageError(problem);
      continue;
    }
    bool missing = false;
    if (scan.Value("-o", &html, &missing) || scan.Value("--html", &html, &missing) ||
        scan.Value("--threshold", &threshold, &missing) ||
        scan.Value("--fail-on-regression", &fail, &missing) ||
        scan.Value("--quantity", &quantity, &missing)) {
      if (missing) return UsageError("trend: option needs a value (see --help)");
      continue;
    }
    return UsageError("trend: unexpected argument '" + scan.Next() + "'");
  }
  history::TrendOptions options;
  if (!threshold.empty()) {
    absl::StatusOr<double> v = history::ParsePercent("--threshold", threshold);
    if (!v.ok()) return UsageError("trend: " + std::string(v.status().message()));
    options.threshold_pct = *v;
  }
  double fail_pct = -1;
  if (!fail.empty()) {
    absl::StatusOr<double> v = history::ParsePercent("--fail-on-regression", fail);
    if (!v.ok()) return UsageError("trend: " + std::string(v.status().message()));
    fail_pct = *v;
  }
  const history::QuantityDef* q = history::FindQuantity(quantity);
  if (q == nullptr) {
    std::string names;
    for (const history::QuantityDef& d : history::Quantities()) names += std::string(" ") + d.name;
    return UsageError("trend: unknown --quantity '" + quantity + "' (one of" + names + ")");
  }
  absl::StatusOr<std::unique_ptr<history::HistoryStore>> store = history::HistoryStore::Open(db);
  if (!store.ok()) return UsageError("trend: " + std::string(store.status().message()));
  absl::StatusOr<std::vector<history::RunRecord>> runs = (*store)->List(labels);
  if (!runs.ok()) return UsageError("trend: " + std::string(runs.status().message()));
  history::Trend trend = history::BuildTrend(*std::move(runs), options);
  std::fputs(history::RenderTrendText(trend).c_str(), stdout);
  std::string title = "sightline trend";
  for (const auto& [k, v] : labels) title += " " + k + "=" + v;
  if (html != "none") {
    absl::Status s = WriteTextOutput(html, history::RenderTrendHtml(trend, title));
    if (!s.ok()) return UsageError("trend: " + std::string(s.message()));
    std::fprintf(stderr, "sightline: trend page written to %s\n", html.c_str());
  }
  if (fail_pct > 0) {
    const history::Series* series = nullptr;
    for (const history::Series& s : trend.series) {
      if (s.quantity == q) series = &s;
    }
    history::NewestCheck c = history::CheckNewest(*series, options);
    if (!c.available) {
      std::printf("newest run: not enough runs with %s to judge\n", q->name);
      return kExitOk;
    }
    bool regressed = c.worse_pct > fail_pct;
    std::printf("newest run #%lld: %s %.4g %s vs baseline %.4g (%s%.1f%%)%s\n",
                static_cast<long long>(trend.runs.back().id), q->name, c.value, q->unit,
                c.baseline, c.worse_pct >= 0 ? "worse by " : "better by ", std::fabs(c.worse_pct),
                regressed ? " — REGRESSION over the threshold" : "");
    if (regressed) return kExitThreshold;
  }
  return kExitOk;
}


}  // namespace

SIGHTLINE_COMMAND("history",
                  "history add TRACE|REPORT.json... [--label KEY=VALUE]... [--db PATH]",
                  "Store a run's summary (step time, utilization, findings, labels) in the "
                  "history database",
                  RunHistory);
SIGHTLINE_COMMAND("trend",
                  "trend [--label KEY=VALUE]... [--db PATH] [-o PAGE.html|none] "
                  "[--threshold PCT] [--quantity step_p50_ms|step_p99_ms|gpu_utilization_pct|"
                  "memory_peak_mib] [--fail-on-regression PCT]",
                  "Print recorded runs with regressions marked and write an HTML trend page",
                  RunTrend);

}  // namespace sightline::cli
