#include "lib/analysis/analyze.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/analysis/kernel_metrics.h"
#include "lib/analysis/memory.h"
#include "lib/analysis/python_sites.h"
#include "lib/analysis/gpu_metrics.h"
#include "lib/analysis/range_metrics.h"
#include "lib/analysis/report_builder.h"

namespace sightline::analysis {

namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool HasTrait(const std::string& rule_id, uint32_t trait) {
  const RuleInfo* r = FindRule(rule_id);
  return r != nullptr && (r->traits & trait) != 0;
}

bool IsOverviewRule(const std::string& id) { return HasTrait(id, kRuleOverview); }

// A launch-configuration finding about SMs a kernel's grid leaves idle
// (kRuleIdleSmKernel), and a scheduling finding (kRuleScheduling) that names
// the same kernel (stream_serialization: small kernels run one at a time on
// one stream) describe the same idle SMs: their savings do not add up. When
// most of those kernels were already queued on the stream behind the
// previous one (launched before it started: the work was ready while SMs
// idled), the trace shows a scheduling problem, and the scheduling fix (run
// the independent kernels side by side) fills those SMs without changing the
// kernel. The kernel finding then ranks right after the scheduling one: its
// rank key is capped at the scheduling finding's, and on a tie the
// scheduling finding goes first. Kernels launched just in time get no such
// help from more streams: there the ranking stays by saving.
bool IsIdleSmKernelRule(const std::string& id) { return HasTrait(id, kRuleIdleSmKernel); }
bool IsSchedulingRule(const std::string& id) { return HasTrait(id, kRuleScheduling); }
constexpr double kMinQueuedPctToSubsume = 50;

std::string EvidenceText(const Finding& f, const std::string& key) {
  for (const EvidenceItem& e : f.evidence) {
    if (e.key == key && !e.is_number) return e.text;
  }
  return std::string();
}

bool NamesOffender(const Finding& f, const std::string& name) {
  for (const Offender& o : f.offenders) {
    if (o.name == name) return true;
  }
  return false;
}

// Rules whose evidence is host/GPU timing (kRuleTimeline): kernel replay
// serialises the process and stretches launch calls and GPU gaps by orders
// of magnitude, and passes started inside launch calls stretch those calls,
// so these rules would report the profiler, not the program.
bool IsTimelineRule(const std::string& id) { return HasTrait(id, kRuleTimeline); }

uint64_t ReplayedKernels(const TimelineModel& model) {
  uint64_t n = 0;
  for (const TraceSource& t : model.traces) n += t.replayed_kernels;
  return n;
}

uint64_t MetricSetsWithoutReplay(const TimelineModel& model) {
  uint64_t n = 0;
  for (const TraceSource& t : model.traces) n += t.metric_sets_without_replay;
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
  StepDetection steps = DetectSteps(model, options.step_range_name, &report.notes);
  FillSummaryTables(model, timeline, steps, ScopeChoice{}, &report);
  return report;
}

void FillSummaryTables(const TimelineModel& model, const DerivedTimeline& timeline,
                       const StepDetection& steps, const ScopeChoice& scope, Report* out) {
  Report& report = *out;
  FillTraces(model, &report);
  FillDevices(model, timeline, &report);
  FillTables(model, &report);
  FillKernelMetrics(model, &report);
  FillSteps(model, timeline, steps, scope, &report);
  FillCrossRank(timeline.cross_rank, &report);  // after the steps: per-step attribution
  FillNvtx(model, &report);
  FillRangeMetrics(model, timeline.window_start_ns, timeline.window_end_ns, &report);
  FillGpuMetrics(model, timeline.window_start_ns, timeline.window_end_ns, &report);
  if (model.activities.empty()) {
    report.notes.push_back(model.api_calls.empty()
                               ? "no GPU activity and no API calls in the trace(s)"
                               : "no GPU activity in the trace(s): GPU utilization and GPU "
                                 "findings are not available");
  }
}

void RunRules(const TimelineModel& model, const DerivedTimeline& timeline,
              const AnalysisOptions& options, Report* report) {
  std::vector<Finding> findings;
  // "timeline_rules_with_replay=1" forces the timeline rules on a metrics trace.
  const uint64_t replayed = ReplayedKernels(model);
  const uint64_t spread_sets = MetricSetsWithoutReplay(model);
  // Kernels measured untraced in passes have no timing of their own (some
  // are not even placed: passes discarded before any set completed).
  uint64_t untraced = 0;
  for (const TraceSource& t : model.traces) untraced += t.untraced_kernels;
  const bool skip_timeline = (replayed > 0 || spread_sets > 0 || untraced > 0) &&
                             options.Global("timeline_rules_with_replay", 0) == 0;
  if (skip_timeline && replayed > 0) {
    report->notes.push_back(absl::StrCat(
        replayed, " kernel launches were replayed to collect hardware metrics: timeline rules "
        "(idle, CPU-bound, launch latency, synchronization, overlap) are skipped because replay "
        "distorts host and GPU timing. Profile without --metrics for the timeline view."));
  } else if (skip_timeline && spread_sets == 0) {
    report->notes.push_back(absl::StrCat(
        untraced, " kernels ran untraced in metric passes that produced no metric set: timeline "
        "rules (idle, CPU-bound, launch latency, synchronization, overlap) are skipped. Profile "
        "without --metrics for the timeline view."));
  } else if (skip_timeline) {
    // Spread / sequence replay: kernels ran once, as launched, but every
    // pass was started and stopped inside a launch call (~20 ms each on the
    // H200), which the timeline rules would blame on the application.
    report->notes.push_back(absl::StrCat(
        spread_sets, " metric sets were collected across launches without replay: kernels ran "
        "as launched, but the profiler's pass starts and stops sit inside launch calls and the "
        "measured kernels ran one at a time, so timeline rules (idle, CPU-bound, launch latency, synchronization, overlap) "
        "are skipped. Profile without --metrics for the timeline view."));
  }
  WhatIfCache what_ifs(model);  // replays of this model, shared by the rules and the root causes
  for (const RuleInfo& rule : Rules()) {
    if (!options.only_rules.empty() && !Contains(options.only_rules, rule.id)) continue;
    if (Contains(options.disabled_rules, rule.id)) continue;
    if (rule.run == nullptr) continue;
    if (skip_timeline && IsTimelineRule(rule.id)) continue;
    RuleContext ctx(model, timeline, *report, options, rule, &what_ifs);
    std::vector<Finding> out;
    rule.run(ctx, &out);
    for (Finding& f : out) {
      if (f.rule.empty()) f.rule = rule.id;
      findings.push_back(std::move(f));
    }
  }
  // A sync_api finding that fired only for the host time it blocks has no
  // saving of its own: the what-if replay gives it one (root_cause.cc), or,
  // without the replay, it is no finding.
  const bool root_causes = options.Global("root_causes", 1) != 0 && !skip_timeline;
  if (!root_causes) {
    findings.erase(std::remove_if(findings.begin(), findings.end(), IsBlockedOnlySync),
                   findings.end());
  }
  double min_pct = options.Global("min_saving_pct", 0);
  if (min_pct > 0) {
    findings.erase(std::remove_if(findings.begin(), findings.end(),
                                  [&](const Finding& f) {
                                    return f.est_saving_pct < min_pct && !IsBlockedOnlySync(f);
                                  }),
                   findings.end());
  }
  // Not on traces whose timing replay distorted: the what-if replays timing.
  if (options.Global("root_causes", 1) != 0 && !skip_timeline) {
    ApplyRootCauses(what_ifs, options, report->summary.window_ns, &findings);
    if (min_pct > 0) {  // the blocked-only syncs, now that the replay judged them
      findings.erase(std::remove_if(findings.begin(), findings.end(),
                                    [&](const Finding& f) {
                                      return IsBlockedOnlySync(f) && f.est_saving_pct < min_pct;
                                    }),
                     findings.end());
    }
  }
  // Overview findings say where the GPU idles, not why: they rank below any
  // cause finding that explains at least a quarter of their saving.
  struct Rank {
    double key;
    bool subsumed;  // ranks after the scheduling finding that explains it
  };
  std::vector<Rank> rank(findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    rank[i] = {IsOverviewRule(f.rule) ? double(f.est_saving_ns) * kOverviewRankWeight
                                      : double(f.est_saving_ns),
               false};
  }
  // Host waits inside the step (synchronizations, blocking copies) rank
  // before launch_bound when they save at least 5 %: a step that waits
  // cannot be captured in a CUDA graph (root_cause.cc).
  double graph_key = -1;
  for (size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].rule == "launch_bound") graph_key = std::max(graph_key, rank[i].key);
  }
  for (size_t i = 0; i < findings.size() && graph_key >= 0; ++i) {
    if (!EvidenceText(findings[i], "fix_order").empty() && findings[i].est_saving_pct >= 5) {
      rank[i].key = std::max(rank[i].key, graph_key + 1);
    }
  }
  // Memory findings (no time saving) that matter rank below the big time
  // savings and above the small ones.
  const double capacity_key = 0.05 * double(report->summary.window_ns) - 1;
  for (size_t i = 0; i < findings.size(); ++i) {
    if (HasTrait(findings[i].rule, kRuleCapacity) && findings[i].severity <= Severity::kMedium) {
      rank[i].key = std::max(rank[i].key, capacity_key);
    }
  }
  for (size_t i = 0; i < findings.size(); ++i) {
    if (!IsIdleSmKernelRule(findings[i].rule)) continue;
    const std::string kernel = EvidenceText(findings[i], "kernel");
    if (kernel.empty()) continue;
    for (size_t j = 0; j < findings.size(); ++j) {
      if (!IsSchedulingRule(findings[j].rule) || !NamesOffender(findings[j], kernel)) continue;
      if (findings[j].EvidenceNumber("queued_pct", 0) < kMinQueuedPctToSubsume) continue;
      rank[i].key = std::min(rank[i].key, rank[j].key);
      rank[i].subsumed = true;
    }
  }
  std::vector<size_t> order(findings.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Finding& a = findings[x];
    const Finding& b = findings[y];
    if (rank[x].key != rank[y].key) return rank[x].key > rank[y].key;
    if (rank[x].subsumed != rank[y].subsumed) return !rank[x].subsumed;
    if (IsOverviewRule(a.rule) != IsOverviewRule(b.rule)) return !IsOverviewRule(a.rule);
    if (a.severity != b.severity) return a.severity < b.severity;
    return a.rule < b.rule;
  });
  for (size_t i : order) report->findings.push_back(std::move(findings[i]));
  // Every rule's own saving (root_causes=0) stays as the rule computed it.
  if (options.Global("root_causes", 1) != 0) CapSavingsAndChooseFirst(report);
}

namespace {

// `owned`, when set, is `whole`: the scope is cut from it in place once what
// reads the whole run (steps, scope, start-up, memory) has read it.
Report AnalyzeWhole(const TimelineModel& whole, TimelineModel* owned,
                    const AnalysisOptions& options) {
  Report report;
  StepDetection steps = DetectSteps(whole, options.step_range_name, &report.notes);
  absl::StatusOr<WindowSpec> spec = ParseWindowSpec(options.window);
  if (!spec.ok()) {
    report.notes.push_back(std::string(spec.status().message()) + "; analysing the whole trace");
    spec = WindowSpec{WindowSpec::kAll};
  }
  ScopeChoice scope = ChooseScope(whole, steps, *spec, &report.notes);
  // Whole-run views (they read outside the scope), before the scope replaces
  // the whole model; they go into the report after the summary tables.
  Report whole_views;
  FillStartup(whole, steps, scope, &whole_views);
  FillMemory(whole, steps, scope, &whole_views);
  TimelineModel scoped;
  const TimelineModel* model = &whole;
  if (scope.kind != "whole" && owned != nullptr) {
    ScopeModelInPlace(owned, scope.start_ns, scope.end_ns, scope.gpu_start_ns, scope.gpu_end_ns);
    model = owned;
  } else if (scope.kind != "whole") {
    scoped = ScopeModel(whole, scope.start_ns, scope.end_ns, scope.gpu_start_ns, scope.gpu_end_ns);
    model = &scoped;
  }
  DerivedTimeline timeline = BuildDerivedTimeline(*model, TimelineOptionsFrom(options));
  FillSummaryTables(*model, timeline, steps, scope, &report);
  Summary& s = report.summary;
  s.scope = scope.kind;
  s.scope_start_ns = scope.start_ns;
  s.scope_end_ns = scope.end_ns;
  s.steady_first_step = scope.first_step;
  s.startup = whole_views.summary.startup;
  s.startup_ns = s.startup.duration_ns;
  report.memory = std::move(whole_views.memory);
  SetDeviceMemoryPeaks(&report);
  RunRules(*model, timeline, options, &report);
  AddPythonSites(*model, &report);
  absl::StatusOr<std::vector<KernelPage>> pages = BuildKernelPages(
      *model, report, options.kernel_pages_pattern, options.kernel_pages_limit);
  if (pages.ok()) {
    report.kernel_pages = *std::move(pages);
  } else {
    report.notes.push_back(std::string(pages.status().message()));
  }
  return report;
}

}  // namespace

Report AnalyzeModel(const TimelineModel& whole, const AnalysisOptions& options) {
  return AnalyzeWhole(whole, nullptr, options);
}

Report AnalyzeModel(TimelineModel&& whole, const AnalysisOptions& options) {
  return AnalyzeWhole(whole, &whole, options);
}

absl::StatusOr<Report> Analyze(const std::vector<std::string>& trace_paths,
                               const AnalysisOptions& options) {
  if (trace_paths.empty()) return absl::InvalidArgumentError("no trace given");
  absl::Status s = CheckRuleIds(options);
  if (!s.ok()) return s;
  absl::StatusOr<TimelineModel> model = BuildModel(trace_paths, options.progress);
  if (!model.ok()) return model.status();
  return AnalyzeModel(*std::move(model), options);
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
  return AnalyzeModel(builder.Finish(), options);
}

}  // namespace sightline::analysis
