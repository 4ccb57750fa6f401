// lib/export/report_html.h — `sightline report`: one self-contained HTML file
// (inline CSS, JS and data; no network access needed to view it) with summary
// cards, the findings, a zoomable canvas timeline of CUDA streams and NVTX
// ranges, GPU utilization over time, the kernel-time breakdown, the step-time
// distribution, and — for two runs — a before/after comparison (quantity
// table from DiffReports plus per-kernel bars).
//
// Size and speed: timeline data is decimated (html_timeline.h), so the page
// stays a few MB and redraws in milliseconds for traces of millions of events.
#ifndef SIGHTLINE_LIB_EXPORT_REPORT_HTML_H_
#define SIGHTLINE_LIB_EXPORT_REPORT_HTML_H_

#include <string>
#include <vector>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"
#include "lib/export/html_timeline.h"

namespace sightline::exporter {

struct HtmlRun {
  std::string label;  // e.g. the trace path
  const analysis::TimelineModel* model = nullptr;
  const analysis::Report* report = nullptr;
};

// One run: a report. Two runs: runs[0] is "before", runs[1] "after".
std::string RenderReportHtml(const std::vector<HtmlRun>& runs,
                             const HtmlDataOptions& options = {},
                             HtmlDataStats* stats = nullptr);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

// The call-site view (GPU and host-blocked time by Python stack); nothing
// when the report has no Python stacks. report_html_python.cc.
void PythonCallSitesHtml(std::string* out, const analysis::Report& r);

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_REPORT_HTML_H_
