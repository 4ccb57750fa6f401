// One finding per root cause, savings that add up (analyze.h ApplyRootCauses).
//
// 1. Cause findings whose fix the what-if replay models (whatif.h) get the
//    replay's saving: sync_api (kFixSyncApi), sync_memcpy and
//    pageable_memcpy (kFixSyncMemcpy), cpu_bound (kFixHostGaps),
//    launch_bound, kernel_fragmentation and launch_latency (kFixGraph),
//    fp32_math and tensor_core_idle (kFixTensorCores), allocation_churn
//    (kFixAllocations), comm_compute_overlap (kFixCommOverlap: one finding
//    per rank, the replayed rank's owns it). Findings that share a
//    fix are one cause: the first of the list above owns it, the others
//    become its symptoms.
// 2. Savings are marginal: each fix's saving is measured with the fixes
//    before it already applied, so they add up to at most what all fixes
//    together save. Synchronization and pageable-copy fixes come first (a
//    step that synchronizes cannot be captured in a CUDA graph), then the
//    others by standalone saving.
// 3. Symptom rules that restate idle time (gpu_idle, gpu_low_utilization)
//    fold into the top cause finding when there is one; a modelled cause
//    whose own fix saves under 1 % of the window folds too (not sync_api:
//    see IsIdleCause).
// 4. After ranking (analyze.cc), a final pass caps savings in rank order so
//    that their sum never exceeds the window, and picks the first action.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "lib/analysis/analyze.h"
#include "lib/analysis/whatif.h"

namespace sightline::analysis {

namespace {

struct Owner {
  const char* rule;
  uint32_t fix;
};
// Order = ownership priority within one fix.
constexpr Owner kOwners[] = {
    {"launch_bound", kFixGraph},          {"sync_api", kFixSyncApi},
    {"sync_memcpy", kFixSyncMemcpy},      {"cpu_bound", kFixHostGaps},
    {"tensor_core_idle", kFixTensorCores}, {"fp32_math", kFixTensorCores},
    {"pageable_memcpy", kFixSyncMemcpy},  {"kernel_fragmentation", kFixGraph},
    {"launch_latency", kFixGraph},        {"allocation_churn", kFixAllocations},
    {"comm_compute_overlap", kFixCommOverlap},
};

int OwnerIndex(const std::string& rule) {
  for (size_t i = 0; i < std::size(kOwners); ++i) {
    if (rule == kOwners[i].rule) return static_cast<int>(i);
  }
  return -1;
}

bool IsIdleSymptom(const std::string& rule) {
  return rule == "gpu_idle" || rule == "gpu_low_utilization";
}

// Causes of GPU idle time (host launch path, waits): when their own fix
// saves next to nothing, the idle they point at belongs to the top cause.
// Not sync_api: synchronizing calls that idle the GPU are named calls and
// lines (a per-step .item()), a cause of their own, kept at the severity of
// their small saving (those that only block the host and save nothing are
// dropped above).
bool IsIdleCause(const std::string& rule) {
  return rule == "cpu_bound" || rule == "sync_memcpy" ||
         rule == "pageable_memcpy" || rule == "launch_bound" || rule == "kernel_fragmentation" ||
         rule == "launch_latency" || rule == "allocation_churn";
}

void SetSaving(Finding* f, uint64_t ns, uint64_t window) {
  f->est_saving_ns = ns;
  f->est_saving_pct = window ? 100.0 * double(ns) / double(window) : 0;
  f->severity = SeverityForSavingPct(f->est_saving_pct);
}

}  // namespace

bool IsBlockedOnlySync(const Finding& f) {
  if (f.rule != "sync_api") return false;
  for (const EvidenceItem& e : f.evidence) {
    if (e.key == "fired_on") return e.text == "host_blocked";
  }
  return false;
}

void ApplyRootCauses(WhatIfCache& what_ifs, const AnalysisOptions& options,
                     uint64_t window_ns, std::vector<Finding>* findings) {
  std::vector<Finding>& fs = *findings;
  const uint64_t window = std::max<uint64_t>(window_ns, 1);
  WhatIfParams params;
  params.host_gap_ns = static_cast<uint64_t>(options.Global("host_gap_ns", 200000));
  const WhatIf& w = what_ifs.Get(params);
  // 1. Owners per fix.
  std::map<uint32_t, size_t> owner_of_fix;  // fix → index in fs
  for (size_t i = 0; i < fs.size(); ++i) {
    int o = OwnerIndex(fs[i].rule);
    if (o < 0 || w.empty()) continue;
    uint32_t fix = kOwners[o].fix;
    auto it = owner_of_fix.find(fix);
    if (it == owner_of_fix.end() || OwnerIndex(fs[it->second].rule) > o) owner_of_fix[fix] = i;
  }
  std::vector<uint8_t> drop(fs.size(), 0);
  for (size_t i = 0; i < fs.size(); ++i) {
    int o = OwnerIndex(fs[i].rule);
    if (o < 0 || w.empty()) continue;
    size_t owner = owner_of_fix[kOwners[o].fix];
    if (owner != i) {
      if (fs[i].rule == fs[owner].rule) {
        // The same cause on another device or rank: one finding, its scope
        // naming both (the replayed rank's numbers in the title).
        fs[owner].scope += ", " + fs[i].scope;
      } else {
        fs[owner].symptoms.push_back(fs[i].rule);
      }
      drop[i] = 1;
    }
  }
  // 2. Marginal savings. A step that synchronizes or copies pageable memory
  //    (or frees memory) cannot be captured in a graph, so those fixes come first; within each
  //    group the largest standalone saving first.
  auto prerequisite = [](uint32_t fix) {
    return fix == kFixSyncApi || fix == kFixSyncMemcpy || fix == kFixAllocations;
  };
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (standalone, fix)
  for (const auto& [fix, idx] : owner_of_fix) order.push_back({w.Saving(fix, kFixNone, window), fix});
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    if (prerequisite(a.second) != prerequisite(b.second)) return prerequisite(a.second);
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  uint32_t applied = kFixNone;
  for (const auto& [standalone, fix] : order) {
    Finding& f = fs[owner_of_fix[fix]];
    uint64_t marginal = w.Saving(fix, applied, window);
    applied |= fix;
    if (prerequisite(fix)) f.Text("fix_order", "first: a step that waits cannot be graphed");
    if (fix == kFixCommOverlap) {
      f.Number("syncs_before_collectives", double(w.comm_waits()), "count");
    }
    // Baseline replay / recorded window (a ratio, not a share: may pass 1).
    f.Number("replay_to_recorded_ratio", double(w.baseline()) / double(window), "x")
        .Number("standalone_saving_ns", double(standalone), "ns");
    SetSaving(&f, marginal, window);
  }
  // A synchronization that idles nothing itself fired for the host time it
  //    blocks (sync_api.cc): it is a cause only if removing its waits saves
  //    something (overlap regained); a final sync that waits for work the
  //    GPU must do anyway saves nothing and is no finding.
  for (size_t i = 0; i < fs.size(); ++i) {
    if (drop[i] || !IsBlockedOnlySync(fs[i])) continue;
    if (w.empty() || fs[i].est_saving_pct < 1) drop[i] = 1;
  }
  // 3. Fold idle symptoms and modelled causes that save (almost) nothing
  //    into the top cause.
  size_t top = fs.size();
  for (size_t i = 0; i < fs.size(); ++i) {
    if (drop[i] || OwnerIndex(fs[i].rule) < 0 || w.empty()) continue;
    if (top == fs.size() || fs[i].est_saving_ns > fs[top].est_saving_ns) top = i;
  }
  if (top != fs.size() && fs[top].est_saving_pct >= 1) {
    for (size_t i = 0; i < fs.size(); ++i) {
      if (i == top || drop[i]) continue;
      if (fs[i].rule == "sync_api" && fs[i].est_saving_pct < 1) {
        // Kept beside the top cause (IsIdleCause), saying why it is small.
        const std::string note =
            "in the replay, removing these waits saves under 1 % of the window on its own (with "
            "the fixes ranked before it applied); a step that synchronizes still cannot be "
            "captured in a CUDA graph";
        fs[i].Text("after_earlier_fixes", note);
        fs[i].recommendation = "Small by itself: " + note + ". " + fs[i].recommendation;
      }
      bool fold = IsIdleSymptom(fs[i].rule) ||
                  (IsIdleCause(fs[i].rule) && fs[i].est_saving_pct < 1);
      if (!fold) continue;
      fs[top].symptoms.push_back(fs[i].rule);
      for (const std::string& s : fs[i].symptoms) fs[top].symptoms.push_back(s);
      drop[i] = 1;
    }
  }
  std::vector<Finding> kept;
  for (size_t i = 0; i < fs.size(); ++i) {
    if (!drop[i]) kept.push_back(std::move(fs[i]));
  }
  fs = std::move(kept);
}

void CapSavingsAndChooseFirst(Report* report) {
  std::vector<Finding>& fs = report->findings;
  const uint64_t window = std::max<uint64_t>(report->summary.window_ns, 1);
  uint64_t used = 0;
  for (Finding& f : fs) {
    uint64_t left = window > used ? window - used : 0;
    if (f.est_saving_ns > left) {
      f.Number("uncapped_saving_ns", double(f.est_saving_ns), "ns");
      SetSaving(&f, left, window);
    }
    used += f.est_saving_ns;
  }
  // "Do this first".
  FirstAction& a = report->summary.first_action;
  for (const Finding& f : fs) {
    if (f.est_saving_ns == 0 || IsIdleSymptom(f.rule)) continue;
    a.rule = f.rule;
    a.title = f.title;
    a.saving_pct = f.est_saving_pct;
    // The step period (start to next start: what the loop takes per step,
    // also when the step's range leaves part of the loop out). A step that
    // starts before the previous one ended is another process's (ranks
    // step side by side; their capture windows open nanoseconds apart): no
    // period of one loop.
    const StepSummary& st = report->summary.steps;
    std::vector<uint64_t> periods;
    for (size_t i = 1; i < st.steps.size(); ++i) {
      if (st.steps[i].start_ns >= st.steps[i - 1].end_ns &&
          st.steps[i].start_ns > st.steps[i - 1].start_ns) {
        periods.push_back(st.steps[i].start_ns - st.steps[i - 1].start_ns);
      }
    }
    if (!periods.empty()) {
      std::nth_element(periods.begin(), periods.begin() + periods.size() / 2, periods.end());
      a.step_ns = periods[periods.size() / 2];
    } else if (st.count > 0) {
      a.step_ns = st.p50_ns;
    }
    a.expected_step_ns = static_cast<uint64_t>(double(a.step_ns) * (1 - f.est_saving_pct / 100));
    break;
  }
}

}  // namespace sightline::analysis
