// lib/analysis/rule.h — the rule interface, its options and the registry.
//
// A rule is a pure function of the timeline model (plus the derived timeline
// and the already computed summary tables) and its parameters; it appends zero
// or more Findings. One rule per file in lib/analysis/rules/<rule_id>.cc:
//
//   #include "lib/analysis/rule.h"
//   namespace sightline::analysis {
//   namespace {
//   void Run(const RuleContext& ctx, std::vector<Finding>* out) { ... }
//   }  // namespace
//   }  // namespace sightline::analysis
//   SIGHTLINE_RULE(small_grid, sightline::analysis::kRuleKernel,  // traits
//                  "Grid smaller than the SM count",
//                  sightline::analysis::Run,
//                  {"min_share_pct", 1.0, "ignore kernels under this share of GPU time"},
//                  {"another_key", 2.0, "..."});   // zero or more RuleParams
//
// SIGHTLINE_RULE must be used at global scope and its first argument MUST be
// the file's base name (small_grid.cc → small_grid): lib/analysis/CMakeLists.txt
// globs rules/*.cc (CONFIGURE_DEPENDS) and generates a table that calls
// every rule's registration function, so registration survives static linking
// and adding a rule means adding one file. A mismatch is a link error.
//
// Parameters: a rule declares each with a default; users override them as
// "<rule_id>.<key>=<value>" (AnalysisOptions::params, CLI `--set`).
// RuleContext::Param("key") returns the override or the declared default.
#ifndef SIGHTLINE_LIB_ANALYSIS_RULE_H_
#define SIGHTLINE_LIB_ANALYSIS_RULE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "lib/analysis/model.h"
#include "lib/analysis/report.h"
#include "lib/analysis/timeline.h"
#include "lib/analysis/whatif.h"

namespace sightline::analysis {

struct RuleParam {
  std::string key;  // without the rule prefix, e.g. "min_gap_ns"
  double default_value = 0;
  std::string help;
  // Accepted range of a user override (`--set`), checked by SetFromString.
  // NaN = derived from the key's unit (ParamBounds): *_pct [0, 100],
  // *_ns [0, 1e15] (11.6 days), anything else [0, 1e12]. Give explicit
  // bounds where a value sizes memory or work (e.g. a number of chunks).
  double min_value = std::numeric_limits<double>::quiet_NaN();
  double max_value = std::numeric_limits<double>::quiet_NaN();
};

struct ParamRange {
  double min, max;
};
// The accepted range of `p` (explicit or derived from its key, see RuleParam).
ParamRange ParamBounds(const RuleParam& p);

class RuleContext;
using RuleFn = void (*)(const RuleContext& ctx, std::vector<Finding>* out);

// What the analyzer needs to know about a rule besides running it (bits of
// RuleInfo::traits, given in SIGHTLINE_RULE).
enum RuleTrait : uint32_t {
  kRuleKernel = 0,             // per-kernel rule: launch configuration, occupancy, metrics
  // Its evidence is host/GPU timing: skipped on traces whose timing the
  // metrics collection distorted (kernel replay; passes started inside
  // launch calls), unless timeline_rules_with_replay=1.
  kRuleTimeline = 1u << 0,
  // Says where the GPU idles, not why: ranks below a cause finding that
  // explains at least a quarter of its saving.
  kRuleOverview = 1u << 1,
  // A scheduling cause (kernels queued one at a time): a kRuleIdleSmKernel
  // finding about a kernel it names ranks right after it (analyze.cc).
  kRuleScheduling = 1u << 2,
  // A launch-configuration finding about SMs a kernel's grid leaves idle.
  kRuleIdleSmKernel = 1u << 3,
  // Its cost is memory (out of memory ahead), not time: no time saving; at
  // severity medium or high it ranks right below the findings that save at
  // least 5 % of the window, above the smaller ones (analyze.cc).
  kRuleCapacity = 1u << 4,
};

struct RuleInfo {
  std::string id;
  std::string description;
  std::vector<RuleParam> params;
  RuleFn run = nullptr;
  uint32_t traits = kRuleKernel;  // RuleTrait bits
};

struct AnalysisOptions {
  // "<rule_id>.<key>" → value, and global keys:
  //   "kernel_wait_ns"    idle gaps at most this long are kernel-wait (10000)
  //   "min_saving_pct"    findings below this saving are dropped, unless
  //                       severity info is requested (default 0: keep all)
  //   "root_causes"       0 = list every rule's finding with its own saving
  //                       (default 1: one finding per root cause, what-if
  //                       savings, symptoms folded; root_cause.cc)
  //   "host_gap_ns"       host pauses at least this long are work (data
  //                       loading...), shorter ones launch overhead (200000)
  //   "timeline_rules_with_replay"  1 = run the timeline rules even when
  //                       kernels were replayed for metrics (default 0: they
  //                       are skipped, with a note, since replay distorts timing)
  absl::flat_hash_map<std::string, double> params;
  // NVTX range name that marks one iteration; "" = auto-detect.
  std::string step_range_name;
  // What to analyse (steps.h, ParseWindowSpec): "steady" (default), "all",
  // "steps:A-B", "T0..T1".
  std::string window = "steady";
  // When non-empty, only these rule ids run.
  std::vector<std::string> only_rules;
  std::vector<std::string> disabled_rules;
  // Progress of slow reads (Analyze over paths); may be null.
  ProgressCallback progress;
  // Report::kernel_pages: kernels matching this POSIX extended regex ("" = the
  // heaviest), at most kernel_pages_limit (0 = every match).
  std::string kernel_pages_pattern;
  size_t kernel_pages_limit = 5;

  double Global(std::string_view key, double fallback) const;
  // Parses "key=value" (value: a number, optionally with a unit suffix
  // ns/us/ms/s for keys ending in _ns, or % ignored). Error names the problem.
  absl::Status SetFromString(std::string_view assignment);
};

class RuleContext {
 public:
  RuleContext(const TimelineModel& model, const DerivedTimeline& timeline, const Report& report,
              const AnalysisOptions& options, const RuleInfo& rule, WhatIfCache* what_ifs)
      : model_(model),
        timeline_(timeline),
        report_(report),
        options_(options),
        rule_(rule),
        what_ifs_(what_ifs) {}

  const TimelineModel& model() const { return model_; }
  const DerivedTimeline& timeline() const { return timeline_; }
  // Summary and tables are filled; findings are not.
  const Report& report() const { return report_; }
  const AnalysisOptions& options() const { return options_; }
  const RuleInfo& rule() const { return rule_; }

  // Override "<rule>.<key>" or the declared default (0 for undeclared keys).
  double Param(std::string_view key) const;
  // Global analysis window length (ns, >= 1 to make divisions safe).
  uint64_t window_ns() const;
  double PctOfWindow(uint64_t ns) const { return 100.0 * double(ns) / double(window_ns()); }
  // A Finding pre-filled with this rule's id, the saving (ns and % of the
  // window) and the default severity for that saving.
  Finding NewFinding(uint64_t est_saving_ns) const;
  // The what-if replay of the model with `params`, shared by every rule of
  // this analysis and ApplyRootCauses (built on first use).
  const WhatIf& what_if(const WhatIfParams& params) const { return what_ifs_->Get(params); }

 private:
  const TimelineModel& model_;
  const DerivedTimeline& timeline_;
  const Report& report_;
  const AnalysisOptions& options_;
  const RuleInfo& rule_;
  WhatIfCache* what_ifs_;
};

// Registry. RegisterRule keeps the first registration of an id.
void RegisterRule(RuleInfo info);
// Every rule, sorted by id (runs the generated registration table once).
const std::vector<RuleInfo>& Rules();
const RuleInfo* FindRule(std::string_view id);

}  // namespace sightline::analysis

#define SIGHTLINE_RULE(rule_id, traits, description, fn, ...)                        \
  namespace sightline::analysis::rule_registration {                                 \
  void Register_##rule_id() {                                                        \
    ::sightline::analysis::RegisterRule(::sightline::analysis::RuleInfo{              \
        #rule_id, description, std::vector<::sightline::analysis::RuleParam>{__VA_ARGS__}, \
        fn, static_cast<uint32_t>(traits)});                                         \
  }                                                                                  \
  }                                                                                  \
  static_assert(true, "")

#endif  // SIGHTLINE_LIB_ANALYSIS_RULE_H_
