// lib/export/report_html.cc — see report_html.h. The stylesheet and script
// are lib/export/html/report.{css,js}, embedded at build time.
#include "lib/export/report_html.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "lib/analysis/rule_util.h"
#include "lib/export/demangle.h"
#include "lib/trace/html_text.h"
#include "lib/export/report_render.h"

namespace sightline::exporter {

namespace assets {
extern const char kReportCss[];
extern const char kReportJs[];
}  // namespace assets

namespace {

using analysis::Report;

void Card(std::string* out, const std::string& key, const std::string& value,
          const std::string& sub = "") {
  absl::StrAppend(out, "<div class=\"card\"><div class=\"k\">", HtmlEscape(key),
                  "</div><div class=\"v\">", HtmlEscape(value), "</div>");
  if (!sub.empty()) absl::StrAppend(out, "<div class=\"k\">", HtmlEscape(sub), "</div>");
  absl::StrAppend(out, "</div>");
}

void SummaryCards(std::string* out, const Report& r, const std::string& label) {
  absl::StrAppend(out, "<section class=\"cards\" id=\"summary\">");
  Card(out, "analysed window", FormatDuration(r.summary.window_ns), label);
  for (const analysis::DeviceSummary& d : r.summary.devices) {
    Card(out, absl::StrCat("GPU ", d.id, d.rank >= 0 ? absl::StrCat(" rank ", d.rank) : "",
                           " utilization"),
         FormatPct(d.gpu_utilization_pct),
         absl::StrCat("compute ", FormatPct(d.compute_pct), " · idle ", FormatPct(d.idle_pct)));
    if (r.summary.devices.size() > 4) break;
  }
  const analysis::StepSummary& s = r.summary.steps;
  if (s.count > 0) {
    Card(out, "step time (mean)", FormatDuration(s.mean_ns),
         absl::StrCat(s.count, " steps · p99 ", FormatDuration(s.p99_ns)));
  }
  uint64_t events = 0, lost = 0;
  bool complete = true;
  for (const analysis::TraceSummary& t : r.traces) {
    events += t.events;
    lost += t.lost_records;
    complete &= t.complete;
  }
  Card(out, "events", absl::StrCat(events),
       absl::StrCat(lost, " lost", complete ? "" : " · INCOMPLETE trace"));
  Card(out, "findings", absl::StrCat(r.findings.size()),
       r.findings.empty() ? "" : absl::StrCat("top saving ", FormatDuration(r.findings[0].est_saving_ns)));
  absl::StrAppend(out, "</section>\n");
}

void Findings(std::string* out, const Report& r) {
  absl::StrAppend(out, "<section id=\"findings\"><h2>Findings, most important first</h2>");
  if (r.findings.empty()) absl::StrAppend(out, "<p class=\"empty\">No findings.</p>");
  constexpr size_t kShownFindings = 6;  // the rest fold into a <details>
  for (size_t index = 0; index < r.findings.size(); ++index) {
    const analysis::Finding& f = r.findings[index];
    if (index == kShownFindings) {
      absl::StrAppend(out, "<details><summary>", r.findings.size() - kShownFindings,
                      " more findings</summary>");
    }
    const char* sev = analysis::SeverityName(f.severity);
    absl::StrAppend(out, "<div class=\"finding ", sev, "\"><div><span class=\"badge ", sev, "\">",
                    sev, "</span><span class=\"t\">", HtmlEscape(f.title), "</span> <span class=\"rule\">",
                    HtmlEscape(f.rule), f.scope.empty() ? "" : " · ", HtmlEscape(f.scope),
                    "</span></div>");
    absl::StrAppend(out, "<div class=\"ev\">estimated saving ", FormatDuration(f.est_saving_ns), " (",
                    FormatPct(f.est_saving_pct), " of the window)");
    for (const analysis::EvidenceItem& e : f.evidence) {
      std::string v = !e.is_number ? e.text
                      : e.unit == "ns" ? FormatDuration(e.number)
                      : e.unit == "pct" ? FormatPct(e.number)
                      : e.unit == "bytes" ? FormatBytes(e.number)
                                          : absl::StrFormat("%.4g%s%s", e.number, e.unit.empty() || e.unit == "count" ? "" : " ",
                                                            e.unit == "count" ? "" : e.unit);
      absl::StrAppend(out, " · ", HtmlEscape(e.key), " ", HtmlEscape(v));
    }
    absl::StrAppend(out, "</div>");
    if (!f.offenders.empty()) {
      absl::StrAppend(out, "<div class=\"ev\">top: ");
      for (size_t i = 0; i < f.offenders.size() && i < 3; ++i) {
        const analysis::Offender& o = f.offenders[i];
        absl::StrAppend(out, i ? "; " : "", HtmlEscape(DisplayKernelName(o.name, 80)), " (", o.count, "x, ",
                        FormatDuration(o.total_ns), ")");
        if (!o.python_site.empty()) {
          absl::StrAppend(out, " at <code>", HtmlEscape(o.python_site), "</code>");
        }
      }
      absl::StrAppend(out, "</div>");
    }
    if (!f.symptoms.empty()) {
      std::string list;
      for (const std::string& s : f.symptoms) absl::StrAppend(&list, list.empty() ? "" : ", ", s);
      absl::StrAppend(out, "<div class=\"ev\">also explains: ", HtmlEscape(list), "</div>");
    }
    if (!f.recommendation.empty()) {
      absl::StrAppend(out, "<div class=\"rec\">&rarr; ", HtmlEscape(f.recommendation), "</div>");
    }
    absl::StrAppend(out, "</div>");
  }
  if (r.findings.size() > kShownFindings) absl::StrAppend(out, "</details>");
  absl::StrAppend(out, "</section>\n");
}

// PM samples (--gpu-metrics): the plot over time (report.js gpuMetricsChart)
// and, per device, busy vs saturated per quantity and the per-step values.
void GpuMetricsSection(std::string* out, const Report& r) {
  if (r.gpu_metrics.empty()) return;
  absl::StrAppend(out, "<section id=\"gpu-metrics-section\"><h2>GPU metrics over time (PM "
                       "sampling)</h2><svg id=\"gpu-metrics\"></svg>");
  auto label = [](const analysis::GpuMetricStat& s) {
    return s.unit == "%" && s.key.rfind("dram", 0) == 0 ? s.label + " (of peak)" : s.label;
  };
  for (const analysis::GpuMetricsDevice& d : r.gpu_metrics) {
    absl::StrAppend(out, "<h3>Device ", d.device_id, " ", HtmlEscape(d.device_name), ": ",
                    d.samples, " samples of ", HtmlEscape(FormatDuration(d.interval_ns)),
                    ", ", absl::StrFormat("%.1f", d.coverage_pct), "% of the window covered",
                    d.samples_missing_in_window > 0
                        ? absl::StrCat(", ", d.samples_missing_in_window, " missing")
                        : std::string(),
                    "</h3><table><tr><th>quantity</th><th class=\"n\">mean</th><th class=\"n\">"
                    "p95</th><th class=\"n\">busy (&ge;10%)</th><th class=\"n\">saturated "
                    "(&ge;80%)</th></tr>");
    for (const analysis::GpuMetricStat& s : d.stats) {
      const bool pct = s.busy_pct >= 0;
      absl::StrAppend(out, "<tr><td>", HtmlEscape(label(s)), "</td><td class=\"n\">",
                      HtmlEscape(FormatGpuMetric(s.unit, s.mean)), "</td><td class=\"n\">",
                      HtmlEscape(FormatGpuMetric(s.unit, s.p95)), "</td><td class=\"n\">",
                      pct ? absl::StrFormat("%.1f%%", s.busy_pct) : "", "</td><td class=\"n\">",
                      pct ? absl::StrFormat("%.1f%%", s.saturated_pct) : "", "</td></tr>");
    }
    absl::StrAppend(out, "</table>");
    if (d.steps.empty()) continue;
    absl::StrAppend(out, "<details><summary>per step (", d.steps.size(),
                    " steps, the device over each step's GPU span)</summary><table><tr>"
                    "<th>step</th><th class=\"n\">GPU span</th>");
    for (const analysis::GpuMetricStat& s : d.stats) {
      absl::StrAppend(out, "<th class=\"n\">", HtmlEscape(label(s)), "</th>");
    }
    absl::StrAppend(out, "</tr>");
    for (const analysis::GpuMetricSpanRow& row : d.steps) {
      absl::StrAppend(out, "<tr><td>", row.index, "</td><td class=\"n\">",
                      HtmlEscape(FormatDuration(double(row.time_ns))), "</td>");
      for (size_t j = 0; j < d.stats.size(); ++j) {
        absl::StrAppend(out, "<td class=\"n\">",
                        HtmlEscape(FormatGpuMetric(d.stats[j].unit, j < row.values.size() ? row.values[j]
                                                                              : std::nan(""))),
                        "</td>");
      }
      absl::StrAppend(out, "</tr>");
    }
    absl::StrAppend(out, "</table></details>");
  }
  absl::StrAppend(out, "</section>\n");
}

// Metrics of NVTX ranges measured as a whole (--metrics-range nvtx:NAME): per
// range, the mean over the complete sets in the window and each set's values
// (warm-up and incomplete sets marked), as the text report's block.
void RangeMetricsSection(std::string* out, const Report& r) {
  if (r.range_metrics.empty()) return;
  constexpr size_t kShownSets = 12;
  absl::StrAppend(out, "<section id=\"range-metrics-section\"><h2>Metrics of NVTX ranges "
                       "measured as a whole</h2>");
  for (const analysis::RangeMetricsRow& row : r.range_metrics) {
    const uint64_t averaged = row.from_window ? row.complete_in_window : row.complete;
    const uint32_t passes = row.set_rows.empty() ? 0 : row.set_rows.front().passes_needed;
    absl::StrAppend(out, "<h3>", HtmlEscape(row.range), ": ", row.complete, " complete sets of ",
                    row.sets, " (", passes, " instances a set, one pass each), mean over ",
                    averaged, row.from_window ? " in the analysed window" : " (none inside the window)",
                    "</h3>");
    // Columns: the mean, then the sets in time order (at most kShownSets).
    std::vector<const analysis::RangeMetricSetRow*> sets;
    for (const analysis::RangeMetricSetRow& set : row.set_rows) {
      if (sets.size() < kShownSets) sets.push_back(&set);
    }
    absl::StrAppend(out, "<table><tr><th>metric</th><th class=\"n\">mean</th>");
    const uint64_t t0 = sets.empty() ? 0 : sets.front()->start_ns;
    for (size_t i = 0; i < sets.size(); ++i) {
      const analysis::RangeMetricSetRow& set = *sets[i];
      const char* mark = !set.complete ? " (incomplete)" : !set.in_window ? " (outside the window)" : "";
      absl::StrAppend(out, "<th class=\"n\" title=\"", set.instances, " instances from +",
                      HtmlEscape(FormatDuration(double(set.start_ns - t0))), ", ",
                      set.passes_collected, " of ", set.passes_needed, " passes\">set ", i + 1,
                      mark, "</th>");
    }
    absl::StrAppend(out, "</tr>");
    // Every metric any set has, in the order of the mean's list, then the rest.
    std::vector<std::string> names;
    auto add_name = [&names](const std::string& n) {
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    };
    for (const analysis::KernelMetricValue& m : row.metrics) add_name(m.name);
    for (const analysis::RangeMetricSetRow* set : sets) {
      for (const analysis::KernelMetricValue& m : set->metrics) add_name(m.name);
    }
    auto value = [](const std::vector<analysis::KernelMetricValue>& list, const std::string& n) {
      for (const analysis::KernelMetricValue& m : list) {
        if (m.name == n) return FormatMetricValue(n, m.value);
      }
      return std::string("-");
    };
    for (const std::string& n : names) {
      absl::StrAppend(out, "<tr><td>", HtmlEscape(n), "</td><td class=\"n\">",
                      HtmlEscape(value(row.metrics, n)), "</td>");
      for (const analysis::RangeMetricSetRow* set : sets) {
        absl::StrAppend(out, "<td class=\"n\">", HtmlEscape(value(set->metrics, n)), "</td>");
      }
      absl::StrAppend(out, "</tr>");
    }
    absl::StrAppend(out, "</table>");
    if (row.set_rows.size() > sets.size()) {
      absl::StrAppend(out, "<div class=\"hint\">", row.set_rows.size() - sets.size(),
                      " later sets not shown (all are in the JSON report's range_metrics)</div>");
    }
  }
  absl::StrAppend(out, "</section>\n");
}

// GPU memory (-t cuda-memory): the plot (report.js memoryChart) and, per
// device, what was live at the peak by call site.
void MemorySection(std::string* out, const Report& r) {
  if (!r.memory.recorded) return;
  absl::StrAppend(out, "<section id=\"memory-section\"><h2>GPU memory over time</h2>"
                       "<svg id=\"memory\"></svg>");
  for (const analysis::MemoryDevice& m : r.memory.devices) {
    absl::StrAppend(out, "<h3>Device ", m.id, m.rank >= 0 ? absl::StrCat(" (rank ", m.rank, ")") : "",
                    ": peak ", HtmlEscape(analysis::FormatBytes(double(m.peak_bytes))),
                    m.capacity_bytes ? absl::StrCat(" of ", HtmlEscape(analysis::FormatBytes(double(m.capacity_bytes))))
                                     : "",
                    ", still allocated at the end ", HtmlEscape(analysis::FormatBytes(double(m.end_bytes))),
                    "</h3>");
    if (m.peak_sites.empty()) continue;
    absl::StrAppend(out, "<table><tr><th>live at the peak, by call site</th><th class=\"n\">bytes</th>"
                         "<th class=\"n\">allocations</th></tr>");
    for (const analysis::MemorySite& s : m.peak_sites) {
      absl::StrAppend(out, "<tr><td>", HtmlEscape(s.site), "</td><td class=\"n\">",
                      HtmlEscape(analysis::FormatBytes(double(s.bytes))), "</td><td class=\"n\">",
                      s.allocations, "</td></tr>");
    }
    absl::StrAppend(out, "</table>");
  }
  absl::StrAppend(out, "</section>\n");
}

// Ranks side by side (lib/analysis/cross_rank.h), the latest first: who
// arrived last at the matched NCCL operations, by how much, who waited.
void RanksSection(std::string* out, const Report& r) {
  const analysis::CrossRankSummary& x = r.cross_rank;
  if (x.method.empty() || x.ranks.size() < 2) return;
  absl::StrAppend(out, "<section id=\"ranks\"><h2>Ranks</h2><div class=\"hint\">",
                  x.collectives_matched, " NCCL operations matched across ", x.ranks.size(),
                  " ranks (", x.method == "communicator" ? "by communicator and sequence" : "by device order",
                  "), ", x.unmatched_calls, " of ", x.calls, " calls unmatched; ",
                  x.clock_source == "collective_ends"
                      ? absl::StrCat("clocks aligned on completions, residual skew median ",
                                     HtmlEscape(FormatDuration(double(x.skew_median_ns))), ", max ",
                                     HtmlEscape(FormatDuration(double(x.skew_max_ns))))
                      : std::string("clocks as recorded"),
                  "</div><table><tr><th>rank</th><th class=\"n\">clock offset</th>"
                  "<th class=\"n\">matched</th><th class=\"n\">last at</th>"
                  "<th class=\"n\">late by</th><th class=\"n\">waited</th>"
                  "<th class=\"n\">exposed comm</th></tr>");
  std::vector<const analysis::CrossRankRow*> rows;
  for (const analysis::CrossRankRow& k : x.ranks) rows.push_back(&k);
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
    return a->late_margin_ns > b->late_margin_ns;
  });
  for (const analysis::CrossRankRow* k : rows) {
    int64_t off = k->clock_offset_ns;
    absl::StrAppend(out, "<tr><td>", k->rank, "</td><td class=\"n\">",
                    k->clock_aligned ? absl::StrCat(off < 0 ? "-" : "+",
                                                    HtmlEscape(FormatDuration(double(off < 0 ? -off : off))))
                                     : "-",
                    "</td><td class=\"n\">", k->matched_calls, "/", k->calls, "</td><td class=\"n\">",
                    k->last_arrivals, "</td><td class=\"n\">",
                    HtmlEscape(FormatDuration(double(k->late_margin_ns))), "</td><td class=\"n\">",
                    HtmlEscape(FormatDuration(double(k->wait_ns))), "</td><td class=\"n\">",
                    HtmlEscape(FormatDuration(double(k->exposed_comm_ns))), "</td></tr>");
  }
  absl::StrAppend(out, "</table></section>\n");
}

// Hardware metrics: the coverage line and an ncu-style details page per
// heaviest kernel (Report::kernel_pages, kernel_metrics.h), collapsed.
void KernelDetailsSection(std::string* out, const Report& r) {
  if (r.kernel_pages.empty()) return;
  absl::StrAppend(out, "<section id=\"kernel-details\"><h2>Kernel details</h2>");
  const analysis::MetricsCoverage& c = r.metrics_coverage;
  if (c.present) {
    absl::StrAppend(out, "<div class=\"hint\">hardware metrics for ",
                    HtmlEscape(FormatPct(c.kernel_time_pct)), " of kernel time (", c.configs_with,
                    " kernel configurations measured, ", c.configs_without, " not)</div>");
  } else {
    absl::StrAppend(out, "<div class=\"hint\">no hardware metrics in this trace: profile with "
                         "<code>--metrics full --metrics-replay sequence</code> for the speed-of-light, "
                         "memory and compute sections</div>");
  }
  for (const analysis::KernelPage& p : r.kernel_pages) {
    absl::StrAppend(out, "<details class=\"kernel-page\"><summary>",
                    HtmlEscape(DisplayKernelName(p.name, 100)),
                    p.bound.empty() ? "" : absl::StrCat(" — ", HtmlEscape(p.bound), "-bound"),
                    "</summary><div class=\"ev\">", HtmlEscape(p.display_name), "</div>");
    for (const analysis::KernelPageSection& sec : p.sections) {
      absl::StrAppend(out, "<h3>", HtmlEscape(sec.title), "</h3><table>");
      for (const analysis::KernelPageRow& row : sec.rows) {
        absl::StrAppend(out, "<tr><td>", HtmlEscape(row.label), "</td><td class=\"n\">",
                        HtmlEscape(row.value), "</td><td>", HtmlEscape(row.note), "</td></tr>");
      }
      absl::StrAppend(out, "</table>");
    }
    absl::StrAppend(out, "<h3>Findings on this kernel</h3><ul>");
    if (p.findings.empty()) absl::StrAppend(out, "<li>none</li>");
    for (const std::string& f : p.findings) absl::StrAppend(out, "<li>", HtmlEscape(f), "</li>");
    absl::StrAppend(out, "</ul></details>");
  }
  absl::StrAppend(out, "</section>\n");
}

void Comparison(std::string* out, const Report& before, const Report& after) {
  DiffResult d = DiffReports(before, after, DiffOptions{});
  absl::StrAppend(out, "<section id=\"comparison\"><h2>Before / after</h2><table><tr><th>quantity</th>"
                       "<th class=\"n\">before</th><th class=\"n\">after</th><th class=\"n\">change</th></tr>");
  for (const QuantityChange& q : d.quantities) {
    bool pct = q.unit == "pct";
    auto value = [&](double v) {
      return pct ? FormatPct(v) : q.unit == "bytes" ? analysis::FormatBytes(v) : FormatDuration(v);
    };
    bool worse = q.lower_is_better ? q.change > 1 : q.change < -1;
    bool better = q.improvement;
    absl::StrAppend(out, "<tr><td>", HtmlEscape(q.name), "</td><td class=\"n\">",
                    value(q.base), "</td><td class=\"n\">", value(q.now), "</td><td class=\"n ",
                    better ? "imp" : worse ? "reg" : "", "\">",
                    pct ? absl::StrFormat("%+.1f pt", q.change) : absl::StrFormat("%+.1f%%", q.change),
                    "</td></tr>");
  }
  absl::StrAppend(out, "</table>");
  auto list = [&](const char* title, const std::vector<FindingChange>& l) {
    if (l.empty()) return;
    absl::StrAppend(out, "<p><b>", title, ":</b> ");
    for (size_t i = 0; i < l.size(); ++i) {
      absl::StrAppend(out, i ? ", " : "", HtmlEscape(l[i].rule),
                      l[i].scope.empty() ? "" : absl::StrCat(" (", HtmlEscape(l[i].scope), ")"));
    }
    absl::StrAppend(out, "</p>");
  };
  list("Findings resolved", d.findings_resolved);
  list("Findings appeared", d.findings_appeared);
  absl::StrAppend(out, "<h2>Kernel time, before (blue) vs after (green)</h2><svg id=\"cmp-kernels\"></svg></section>\n");
}

}  // namespace

std::string HtmlEscape(std::string_view s) { return trace::HtmlEscape(s); }

std::string RenderReportHtml(const std::vector<HtmlRun>& runs, const HtmlDataOptions& options,
                             HtmlDataStats* stats) {
  std::string out;
  if (runs.empty()) return out;
  const HtmlRun& main_run = runs.back();
  const Report& r = *main_run.report;
  std::string title = runs.size() == 2
                          ? absl::StrCat(runs[0].label, " vs ", runs[1].label)
                          : main_run.label;
  absl::StrAppend(&out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                        "<title>sightline report — ", HtmlEscape(title), "</title>\n<style>\n",
                  assets::kReportCss, "</style></head>\n<body>\n<header><h1>sightline report</h1>"
                  "<div class=\"sub\">", HtmlEscape(title), "</div></header>\n<main>\n");
  SummaryCards(&out, r, main_run.label);
  if (runs.size() == 2) Comparison(&out, *runs[0].report, r);
  Findings(&out, r);
  RanksSection(&out, r);
  PythonCallSitesHtml(&out, r);
  absl::StrAppend(&out, "<section><h2>Timeline: CUDA streams and NVTX ranges");
  if (runs.size() == 2) absl::StrAppend(&out, "<select id=\"run-select\"></select>");
  absl::StrAppend(&out, "</h2><div class=\"hint\">wheel: zoom · drag: pan · double-click: reset · "
                        "hover: details (dense regions are merged into blocks; exact events are in "
                        "<code>sightline export</code>)</div><div id=\"timeline-wrap\"><canvas "
                        "id=\"timeline\"></canvas></div><div id=\"tooltip\"></div></section>\n"
                        "<section><h2>GPU utilization over time</h2><svg id=\"util\"></svg></section>\n"
                        "<section class=\"two\"><div><h2>Kernel time breakdown</h2><svg id=\"kernels\">"
                        "</svg></div><div><h2>Step time distribution</h2><svg id=\"steps\"></svg></div>"
                        "</section>\n");
  MemorySection(&out, r);
  GpuMetricsSection(&out, r);
  RangeMetricsSection(&out, r);
  KernelDetailsSection(&out, r);
  if (!r.notes.empty()) {
    absl::StrAppend(&out, "<section><h2>Notes</h2><ul>");
    for (const std::string& n : r.notes) absl::StrAppend(&out, "<li>", HtmlEscape(n), "</li>");
    absl::StrAppend(&out, "</ul></section>\n");
  }
  absl::StrAppend(&out, "</main>\n<script type=\"application/json\" id=\"sl-data\">{\"runs\":[");
  std::string data;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i) data += ',';
    AppendRunData(*runs[i].model, *runs[i].report, runs[i].label, options, &data, stats);
  }
  // Inside <script>, "</script" ends the element and "<!--" followed by
  // "<script" switches the parser into a state where the real end tag no
  // longer counts (a kernel named "<!--<script>" blanked the page). In JSON
  // these characters only occur inside strings, where \u escapes are the
  // same text: no '<', '>' or '&' reaches the HTML parser at all. U+2028/9
  // are escaped too (line terminators for older JavaScript parsers).
  absl::StrAppend(&out,
                  absl::StrReplaceAll(data, {{"<", "\\u003c"},
                                             {">", "\\u003e"},
                                             {"&", "\\u0026"},
                                             {"\u2028", "\\u2028"},
                                             {"\u2029", "\\u2029"}}),
                  "]}</script>\n<script>\n",
                  assets::kReportJs, "</script>\n</body></html>\n");
  return out;
}

}  // namespace sightline::exporter
