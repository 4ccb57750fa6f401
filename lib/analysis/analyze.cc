#include "lib/analysis/analyze.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "lib/analysis/report_builder.h"

namespace sightline::analysis {

namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool IsOverviewRule(const std::string& id) {
  return id == "gpu_idle" || id == "gpu_low_utilization";
}

// Rules whose evidence is host/GPU timing. Kernel replay (metrics collection)
// serialises the process and stretches launch calls and GPU gaps by orders of
// magnitude, so these rules would report the profiler, not the program.
bool IsTimelineRule(const std::string& id) {
  static const char* const kTimeline[] = {
      "gpu_idle",          "gpu_low_utilization", "cpu_bound",
      "kernel_fragmentation", "sync_api",         "sync_memcpy",
      "pageable_memcpy",   "stream_serialization", "copy_compute_overlap",
      "comm_compute_overlap", "nccl_straggler",   "launch_latency"};
  for (const char* t : kTimeline) {
    if (id == t) return true;
  }
  return false;
}

uint64_t ReplayedKernels(const TimelineModel& model) {
  uint64_t n = 0;
  for (const TraceSource& t : model.traces) n += t.replayed_kernels;
  return n;
}

absl::Status CheckRuleIds(const AnalysisOptions& options) {
  for (const auto* list : {&options.only_rules, &options.disabled_rules}) {
    for (const std::string& id : *list) {
      if (FindRule(id) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("unknown rule '", id, "'"));
      }
    }
  }
  return absl::OkStatus();
}

TimelineOptions TimelineOptionsFrom(const AnalysisOptions& options) {
  TimelineOptions t;
  double kw = options.Global("kernel_wait_ns", double(t.kernel_wait_ns));
  t.kernel_wait_ns = kw > 0 ? static_cast<uint64_t>(kw) : 0;
  return t;
}

}  // namespace

Report BuildSummaryReport(const TimelineModel& model, const DerivedTimeline& timeline,
                          const AnalysisOptions& options) {
  Report report;
  FillTraces(model, &report);
  FillDevices(model, timeline, &report);
  FillTables(model, &report);
  FillSteps(model, timeline, options.step_range_name, &report);
  FillNvtx(model, &report);
  if (model.activities.empty()) {
    report.notes.push_back(model.api_calls.empty()
                               ? "no GPU activity and no API calls in the trace(s)"
                               : "no GPU activity in the trace(s): GPU utilization and GPU "
                                 "findings are not available");
  }
  return report;
}

void RunRules(const TimelineModel& model, const DerivedTimeline& timeline,
              const AnalysisOptions& options, Report* report) {
  std::vector<Finding> findings;
  // "timeline_rules_with_replay=1" forces the timeline rules on a metrics trace.
  const uint64_t replayed = ReplayedKernels(model);
  const bool skip_timeline = replayed > 0 && options.Global("timeline_rules_with_replay", 0) == 0;
  if (skip_timeline) {
    report->notes.push_back(absl::StrCat(
        replayed, " kernel launches were replayed to collect hardware metrics: timeline rules "
        "(idle, CPU-bound, launch latency, synchronization, overlap) are skipped because replay "
        "distorts host and GPU timing. Profile without --metrics for the timeline view."));
  }
  for (const RuleInfo& rule : Rules()) {
    if (!options.only_rules.empty() && !Contains(options.only_rules, rule.id)) continue;
    if (Contains(options.disabled_rules, rule.id)) continue;
    if (rule.run == nullptr) continue;
    if (skip_timeline && IsTimelineRule(rule.id)) continue;
    RuleContext ctx(model, timeline, *report, options, rule);
    std::vector<Finding> out;
    rule.run(ctx, &out);
    for (Finding& f : out) {
      if (f.rule.empty()) f.rule = rule.id;
      findings.push_back(std::move(f));
    }
  }
  double min_pct = options.Global("min_saving_pct", 0);
  if (min_pct > 0) {
    findings.erase(std::remove_if(findings.begin(), findings.end(),
                                  [&](const Finding& f) { return f.est_saving_pct < min_pct; }),
                   findings.end());
  }
  // Overview findings say where the GPU idles, not why: they rank below any
  // cause finding that explains at least a quarter of their saving.
  auto rank_key = [](const Finding& f) {
    return IsOverviewRule(f.rule) ? double(f.est_saving_ns) * kOverviewRankWeight
                                  : double(f.est_saving_ns);
  };
  std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) {
    double ka = rank_key(a), kb = rank_key(b);
    if (ka != kb) return ka > kb;
    if (IsOverviewRule(a.rule) != IsOverviewRule(b.rule)) return !IsOverviewRule(a.rule);
    if (a.severity != b.severity) return a.severity < b.severity;
    return a.rule < b.rule;
  });
  for (Finding& f : findings) report->findings.push_back(std::move(f));
}

Report AnalyzeModel(const TimelineModel& model, const AnalysisOptions& options) {
  DerivedTimeline timeline = BuildDerivedTimeline(model, TimelineOptionsFrom(options));
  Report report = BuildSummaryReport(model, timeline, options);
  RunRules(model, timeline, options, &report);
  return report;
}

absl::StatusOr<Report> Analyze(const std::vector<std::string>& trace_paths,
                               const AnalysisOptions& options) {
  if (trace_paths.empty()) return absl::InvalidArgumentError("no trace given");
  absl::Status s = CheckRuleIds(options);
  if (!s.ok()) return s;
  absl::StatusOr<TimelineModel> model = BuildModel(trace_paths, options.progress);
  if (!model.ok()) return model.status();
  return AnalyzeModel(*model, options);
}

absl::StatusOr<Report> Analyze(const std::vector<trace::TraceReader*>& readers,
                               const AnalysisOptions& options) {
  if (readers.empty()) return absl::InvalidArgumentError("no trace given");
  absl::Status s = CheckRuleIds(options);
  if (!s.ok()) return s;
  ModelBuilder builder;
  for (size_t i = 0; i < readers.size(); ++i) {
    ProgressCallback wrapped;
    if (options.progress) {
      wrapped = [&, i](const ReadProgress& p) {
        ReadProgress q = p;
        q.trace_index = i;
        q.trace_count = readers.size();
        options.progress(q);
      };
    }
    s = builder.AddTrace(*readers[i], wrapped);
    if (!s.ok()) return s;
  }
  TimelineModel model = builder.Finish();
  return AnalyzeModel(model, options);
}

}  // namespace sightline::analysis
