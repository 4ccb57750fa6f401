// lib/export/report_diff.cc — `sightline diff`: compares two reports and
// decides whether the new run regressed (see report_render.h for the rules).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/analysis/rule_util.h"
#include "lib/export/demangle.h"
#include "lib/export/report_render.h"
#include "lib/trace/terminal_text.h"
#include "lib/trace/json_writer.h"

namespace sightline::exporter {
namespace {

using analysis::Report;

double RelativeChange(double base, double now) {
  if (base == 0) return now == 0 ? 0 : 100.0;
  return (now - base) / base * 100.0;
}

std::string Label(const Report& r) {
  if (r.traces.empty()) return "(no trace)";
  std::string s = r.traces[0].path;
  if (r.traces.size() > 1) absl::StrAppend(&s, " +", r.traces.size() - 1);
  return s;
}

uint64_t KernelTotal(const Report& r) {
  uint64_t t = 0;
  for (const analysis::KernelRow& k : r.kernels) t += k.total_ns;
  return t;
}

}  // namespace

DiffResult DiffReports(const Report& base, const Report& now, const DiffOptions& options) {
  DiffResult d;
  d.base_label = Label(base);
  d.now_label = Label(now);
  d.threshold_pct = options.fail_on_regression_pct;
  // A damaged trace is compared as far as it was readable: say so, as
  // analyze does, so a gate result is never read as covering the whole run.
  for (const auto& [side, report] : {std::pair<const char*, const Report*>{"base", &base},
                                     std::pair<const char*, const Report*>{"new", &now}}) {
    for (const analysis::TraceSummary& t : report->traces) {
      if (t.complete) continue;
      d.damage_notes.push_back(absl::StrCat(
          side, ": ", t.path, ": incomplete trace: ",
          t.integrity_reason.empty() ? "no footer" : t.integrity_reason,
          "; compared what was readable"));
    }
  }
  const double pct = options.fail_on_regression_pct;
  const bool gate = pct >= 0;
  // Improvement is reported when the change exceeds the gate (or 1 unit).
  const double notable = gate ? std::max(pct, 1.0) : 1.0;

  auto add_time = [&](std::string name, double b, double n, std::string unit,
                      bool gateable = true) {
    QuantityChange q;
    q.name = std::move(name);
    q.unit = std::move(unit);
    q.base = b;
    q.now = n;
    q.change = RelativeChange(b, n);
    q.gated = gate && gateable && b > 0;
    q.regression = q.gated && q.change > pct;
    q.improvement = b > 0 && -q.change > notable;
    if (q.regression) {
      d.regressions.push_back(absl::StrFormat("%s grew %.1f%% (%s -> %s), over the %.1f%% limit",
                                              q.name, q.change, FormatDuration(b),
                                              FormatDuration(n), pct));
    }
    d.quantities.push_back(std::move(q));
  };

  const analysis::StepSummary& sb = base.summary.steps;
  const analysis::StepSummary& sn = now.summary.steps;
  if (sb.count > 0 && sn.count > 0) {
    add_time("step_time_mean_ns", sb.mean_ns, sn.mean_ns, "ns");
    add_time("step_time_p50_ns", static_cast<double>(sb.p50_ns), static_cast<double>(sn.p50_ns), "ns");
    // With fewer than 100 steps the "p99" is the slowest single step: shown,
    // not gated (one outlier step would fail a CI job).
    add_time("step_time_p99_ns", static_cast<double>(sb.p99_ns), static_cast<double>(sn.p99_ns), "ns",
             sb.count >= 100 && sn.count >= 100);
  }
  add_time("window_ns", static_cast<double>(base.summary.window_ns),
           static_cast<double>(now.summary.window_ns), "ns");
  add_time("kernel_time_total_ns", static_cast<double>(KernelTotal(base)),
           static_cast<double>(KernelTotal(now)), "ns");

  // Utilization is a means: when the run got faster (step mean, or the
  // window without steps), lower utilization is not a regression (e.g. the
  // fix removed copies the GPU used to be busy with).
  const bool faster = (sb.count > 0 && sn.count > 0) ? sn.mean_ns < sb.mean_ns
                                                      : now.summary.window_ns < base.summary.window_ns;
  size_t devices = std::min(base.summary.devices.size(), now.summary.devices.size());
  for (size_t i = 0; i < devices; ++i) {
    const analysis::DeviceSummary& b = base.summary.devices[i];
    const analysis::DeviceSummary& n = now.summary.devices[i];
    QuantityChange q;
    q.name = absl::StrCat("gpu_utilization_pct[", i, "]");
    q.unit = "pct";
    q.base = b.gpu_utilization_pct;
    q.now = n.gpu_utilization_pct;
    q.change = q.now - q.base;  // percentage points
    q.lower_is_better = false;
    q.gated = gate && !faster;
    q.regression = q.gated && -q.change > pct;
    q.improvement = q.change > notable;
    if (q.regression) {
      d.regressions.push_back(absl::StrFormat(
          "GPU %d utilization dropped %.1f points (%.1f%% -> %.1f%%), over the %.1f-point limit",
          n.id, -q.change, q.base, q.now, pct));
    }
    d.quantities.push_back(std::move(q));
  }
  // Device memory peaks (-t cuda-memory in both runs): a larger peak is a
  // regression past the same limit as times (OOM risk, fewer samples per GPU).
  for (size_t i = 0; i < devices; ++i) {
    const analysis::DeviceSummary& b = base.summary.devices[i];
    const analysis::DeviceSummary& n = now.summary.devices[i];
    if (b.memory_peak_bytes == 0 && n.memory_peak_bytes == 0) continue;
    QuantityChange q;
    q.name = absl::StrCat("memory_peak_bytes[", i, "]");
    q.unit = "bytes";
    q.base = double(b.memory_peak_bytes);
    q.now = double(n.memory_peak_bytes);
    q.change = RelativeChange(q.base, q.now);
    q.gated = gate && b.memory_peak_bytes > 0 && n.memory_peak_bytes > 0;
    q.regression = q.gated && q.change > pct;
    q.improvement = q.base > 0 && -q.change > notable;
    if (q.regression) {
      d.regressions.push_back(absl::StrFormat(
          "GPU %d memory peak grew %.1f%% (%s -> %s), over the %.1f%% limit", n.id, q.change,
          analysis::FormatBytes(q.base), analysis::FormatBytes(q.now), pct));
    }
    d.quantities.push_back(std::move(q));
  }

  // Kernels matched by name.
  std::map<std::string, const analysis::KernelRow*> in_base, in_now;
  for (const auto& k : base.kernels) in_base[k.name] = &k;
  for (const auto& k : now.kernels) in_now[k.name] = &k;
  std::set<std::string> names;
  for (const auto& [n, k] : in_base) names.insert(n);
  for (const auto& [n, k] : in_now) names.insert(n);
  for (const std::string& name : names) {
    const analysis::KernelRow* b = in_base.count(name) ? in_base[name] : nullptr;
    const analysis::KernelRow* n = in_now.count(name) ? in_now[name] : nullptr;
    KernelChange k;
    k.name = name;
    if (b) {
      k.base_count = b->count;
      k.base_total_ns = b->total_ns;
      k.base_share_pct = b->share_pct;
    }
    if (n) {
      k.now_count = n->count;
      k.now_total_ns = n->total_ns;
      k.now_share_pct = n->share_pct;
    }
    if (b && n) {
      k.total_change_pct = RelativeChange(static_cast<double>(k.base_total_ns),
                                          static_cast<double>(k.now_total_ns));
      bool significant = std::max(k.base_share_pct, k.now_share_pct) >= options.min_kernel_share_pct;
      k.regression = gate && significant && k.base_total_ns > 0 && k.total_change_pct > pct;
      if (k.regression) {
        d.regressions.push_back(absl::StrFormat(
            "kernel %s: total time grew %.1f%% (%s -> %s, %d -> %d calls)", DisplayKernelName(name, 60),
            k.total_change_pct, FormatDuration(k.base_total_ns), FormatDuration(k.now_total_ns),
            k.base_count, k.now_count));
      }
    } else if (b) {
      d.kernels_disappeared.push_back(name);
    } else {
      d.kernels_appeared.push_back(name);
    }
    d.kernels.push_back(std::move(k));
  }
  std::sort(d.kernels.begin(), d.kernels.end(), [](const KernelChange& a, const KernelChange& b) {
    uint64_t ma = std::max(a.base_total_ns, a.now_total_ns);
    uint64_t mb = std::max(b.base_total_ns, b.now_total_ns);
    return ma != mb ? ma > mb : a.name < b.name;
  });

  // Findings matched by (rule, scope).
  std::map<std::pair<std::string, std::string>, const analysis::Finding*> fb, fn;
  for (const auto& f : base.findings) fb.emplace(std::make_pair(f.rule, f.scope), &f);
  for (const auto& f : now.findings) fn.emplace(std::make_pair(f.rule, f.scope), &f);
  for (const auto& [key, f] : fn) {
    FindingChange c{f->rule, f->scope, f->title, "", analysis::SeverityName(f->severity), 0,
                    f->est_saving_ns};
    auto it = fb.find(key);
    if (it == fb.end()) {
      d.findings_appeared.push_back(std::move(c));
    } else {
      c.severity_base = analysis::SeverityName(it->second->severity);
      c.saving_base_ns = it->second->est_saving_ns;
      if (c.severity_base != c.severity_now || c.saving_base_ns != c.saving_now_ns) {
        d.findings_changed.push_back(std::move(c));
      }
    }
  }
  for (const auto& [key, f] : fb) {
    if (fn.count(key)) continue;
    d.findings_resolved.push_back({f->rule, f->scope, f->title, analysis::SeverityName(f->severity),
                                   "", f->est_saving_ns, 0});
  }
  return d;
}

std::string RenderDiffText(const DiffResult& d, int width_in) {
  const size_t width = static_cast<size_t>(std::max(60, width_in));
  std::string out;
  absl::StrAppend(&out, "sightline diff\n  base: ", Ellipsize(d.base_label, width - 8),
                  "\n  new:  ", Ellipsize(d.now_label, width - 8), "\n\n");
  for (const std::string& note : d.damage_notes) absl::StrAppend(&out, "WARNING: ", note, "\n");
  if (!d.damage_notes.empty()) out += "\n";
  absl::StrAppend(&out, absl::StrFormat("%-30s %14s %14s %10s  %s\n", "quantity", "base", "new",
                                        "change", "verdict"));
  for (const QuantityChange& q : d.quantities) {
    auto value = [&q](double v) {
      return q.unit == "pct" ? FormatPct(v) : q.unit == "bytes" ? analysis::FormatBytes(v)
                                                                : FormatDuration(v);
    };
    std::string b = value(q.base);
    std::string n = value(q.now);
    std::string c = q.unit == "pct" ? absl::StrFormat("%+.1f pt", q.change)
                                    : absl::StrFormat("%+.1f%%", q.change);
    const char* verdict = q.regression ? "REGRESSION" : q.improvement ? "improved" : "";
    absl::StrAppend(&out, absl::StrFormat("%-30s %14s %14s %10s  %s\n", Ellipsize(q.name, 30), b,
                                          n, c, verdict));
  }
  if (!d.kernels.empty()) {
    size_t name_w = width > 70 ? width - 62 : 20;
    absl::StrAppend(&out, "\n", absl::StrFormat("%-*s %15s %21s %9s\n", static_cast<int>(name_w + 2),
                                                "kernels (by time)", "calls base->new",
                                                "total base->new", "change"));
    size_t shown = 0;
    for (const KernelChange& k : d.kernels) {
      if (shown++ == 12) {
        absl::StrAppend(&out, "  ... ", d.kernels.size() - 12, " more (see --format json)\n");
        break;
      }
      std::string change = k.base_total_ns == 0   ? "new"
                           : k.now_total_ns == 0 ? "gone"
                                                 : absl::StrFormat("%+.1f%%", k.total_change_pct);
      absl::StrAppend(&out, absl::StrFormat(
                                "  %-*s %15s %21s %9s%s\n", static_cast<int>(name_w),
                                DisplayKernelName(k.name, name_w),
                                absl::StrCat(k.base_count, "->", k.now_count),
                                absl::StrCat(FormatDuration(k.base_total_ns), "->",
                                             FormatDuration(k.now_total_ns)),
                                change, k.regression ? "  REGRESSION" : ""));
    }
  }
  auto findings = [&](const char* title, const std::vector<FindingChange>& list, bool base_side) {
    if (list.empty()) return;
    absl::StrAppend(&out, "\n", title, ":\n");
    for (const FindingChange& f : list) {
      std::string line = absl::StrCat(
          "  [", base_side ? f.severity_base : f.severity_now, "] ", f.rule,
          f.scope.empty() ? "" : absl::StrCat(" (", f.scope, ")"), ": ", f.title);
      absl::StrAppend(&out, Ellipsize(line, width), "\n");
    }
  };
  findings("Findings resolved", d.findings_resolved, true);
  findings("Findings appeared", d.findings_appeared, false);
  if (!d.findings_changed.empty()) {
    absl::StrAppend(&out, "\nFindings changed:\n");
    for (const FindingChange& f : d.findings_changed) {
      std::string line = absl::StrCat("  ", f.rule, f.scope.empty() ? "" : absl::StrCat(" (", f.scope, ")"),
                                      ": ", f.severity_base, " -> ", f.severity_now, ", saving ",
                                      FormatDuration(f.saving_base_ns), " -> ",
                                      FormatDuration(f.saving_now_ns));
      absl::StrAppend(&out, Ellipsize(line, width), "\n");
    }
  }
  absl::StrAppend(&out, "\n");
  if (d.threshold_pct < 0) {
    absl::StrAppend(&out, "Verdict: no regression gate (use --fail-on-regression PCT)\n");
  } else if (d.regression()) {
    absl::StrAppend(&out, absl::StrFormat("Verdict: REGRESSION beyond %.1f%%:\n", d.threshold_pct));
    for (const std::string& r : d.regressions) absl::StrAppend(&out, "  - ", Ellipsize(r, width - 4), "\n");
  } else {
    absl::StrAppend(&out, absl::StrFormat("Verdict: no regression beyond %.1f%%\n", d.threshold_pct));
  }
  // Names come from traces: escaped for the terminal, layout kept.
  return trace::EscapeTerminalText(TrimLineEnds(out), trace::KeepLayout::kNewlinesAndTabs);
}

std::string RenderDiffJson(const DiffResult& d) {
  std::string out;
  json::JsonWriter w(&out, 2);
  w.BeginObject();
  w.Key("schema").String(kDiffSchema);
  w.Key("base").String(d.base_label);
  w.Key("new").String(d.now_label);
  w.Key("threshold_pct");
  if (d.threshold_pct < 0) w.Null(); else w.Double(d.threshold_pct);
  w.Key("regression").Bool(d.regression());
  w.Key("damage_notes").BeginArray();
  for (const std::string& n : d.damage_notes) w.String(n);
  w.EndArray();
  w.Key("regressions").BeginArray();
  for (const std::string& r : d.regressions) w.String(r);
  w.EndArray();
  w.Key("quantities").BeginArray();
  for (const QuantityChange& q : d.quantities) {
    w.BeginObject();
    w.Key("name").String(q.name);
    w.Key("unit").String(q.unit);
    w.Key("base").Double(q.base);
    w.Key("new").Double(q.now);
    w.Key("change").Double(q.change);
    w.Key("change_unit").String(q.unit == "pct" ? "points" : "pct");
    w.Key("lower_is_better").Bool(q.lower_is_better);
    w.Key("gated").Bool(q.gated);
    w.Key("regression").Bool(q.regression);
    w.Key("improvement").Bool(q.improvement);
    w.EndObject();
  }
  w.EndArray();
  w.Key("kernels").BeginArray();
  for (const KernelChange& k : d.kernels) {
    w.BeginObject();
    w.Key("name").String(k.name);
    w.Key("base_count").Uint(k.base_count);
    w.Key("new_count").Uint(k.now_count);
    w.Key("base_total_ns").Uint(k.base_total_ns);
    w.Key("new_total_ns").Uint(k.now_total_ns);
    w.Key("base_share_pct").Double(k.base_share_pct);
    w.Key("new_share_pct").Double(k.now_share_pct);
    w.Key("total_change_pct").Double(k.total_change_pct);
    w.Key("regression").Bool(k.regression);
    w.EndObject();
  }
  w.EndArray();
  w.Key("kernels_appeared").BeginArray();
  for (const std::string& k : d.kernels_appeared) w.String(k);
  w.EndArray();
  w.Key("kernels_disappeared").BeginArray();
  for (const std::string& k : d.kernels_disappeared) w.String(k);
  w.EndArray();
  auto findings = [&](const char* key, const std::vector<FindingChange>& list) {
    w.Key(key).BeginArray();
    for (const FindingChange& f : list) {
      w.BeginObject();
      w.Key("rule").String(f.rule);
      w.Key("scope").String(f.scope);
      w.Key("title").String(f.title);
      w.Key("severity_base").String(f.severity_base);
      w.Key("severity_new").String(f.severity_now);
      w.Key("est_saving_base_ns").Uint(f.saving_base_ns);
      w.Key("est_saving_new_ns").Uint(f.saving_now_ns);
      w.EndObject();
    }
    w.EndArray();
  };
  findings("findings_appeared", d.findings_appeared);
  findings("findings_resolved", d.findings_resolved);
  findings("findings_changed", d.findings_changed);
  w.EndObject();
  out += '\n';
  return out;
}

}  // namespace sightline::exporter
