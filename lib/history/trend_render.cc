// lib/history/trend_render.cc — text and HTML renderings of a Trend (trend.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "lib/trace/html_text.h"
#include "lib/history/trend.h"

namespace sightline::history {
namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Value(double v) { return std::isfinite(v) ? Fmt("%.3f", v) : "-"; }

std::string Date(int64_t t) {
  time_t tt = static_cast<time_t>(t);
  tm tm_utc = {};
  gmtime_r(&tt, &tm_utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M", &tm_utc);
  return buf;
}

std::string Labels(const RunRecord& r) {
  std::string out;
  for (const auto& [k, v] : r.labels) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? "-" : out;
}

std::string Html(const std::string& s) { return trace::HtmlEscape(s); }

std::string Plot(const Trend& t, const Series& s) {
  const double w = 760, h = 220, ml = 70, mr = 20, mt = 20, mb = 40;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : s.values) {
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  std::string out = "<h2>" + Html(s.quantity->title) + " (" + Html(s.quantity->unit) + ")</h2>\n";
  if (!std::isfinite(lo)) return out + "<p class=none>No run has this quantity.</p>\n";
  if (hi - lo < 1e-12) {
    lo -= std::max(1e-3, std::fabs(lo) * 0.05);
    hi += std::max(1e-3, std::fabs(hi) * 0.05);
  }
  double pad = (hi - lo) * 0.1;
  lo -= pad;
  hi += pad;
  size_t n = s.values.size();
  auto X = [&](size_t i) { return ml + (n <= 1 ? 0.5 : static_cast<double>(i) / (n - 1)) * (w - ml - mr); };
  auto Y = [&](double v) { return mt + (hi - v) / (hi - lo) * (h - mt - mb); };
  out += "<svg width=\"" + Fmt("%.0f", w) + "\" height=\"" + Fmt("%.0f", h) +
         "\" role=img aria-label=\"" + Html(s.quantity->title) + "\">\n";
  out += "<line x1=\"" + Fmt("%.1f", ml) + "\" y1=\"" + Fmt("%.1f", h - mb) + "\" x2=\"" +
         Fmt("%.1f", w - mr) + "\" y2=\"" + Fmt("%.1f", h - mb) + "\" class=axis />\n";
  for (int k = 0; k <= 4; ++k) {
    double v = lo + (hi - lo) * k / 4;
    out += "<text x=\"" + Fmt("%.1f", ml - 6) + "\" y=\"" + Fmt("%.1f", Y(v) + 4) +
           "\" class=tick text-anchor=end>" + Fmt("%.4g", v) + "</text>\n";
  }
  std::string points;
  for (size_t i = 0; i < n; ++i) {
    if (s.marks[i].change_point) {
      out += "<line x1=\"" + Fmt("%.1f", X(i)) + "\" y1=\"" + Fmt("%.1f", mt) + "\" x2=\"" +
             Fmt("%.1f", X(i)) + "\" y2=\"" + Fmt("%.1f", h - mb) + "\" class=change />\n";
    }
    out += "<text x=\"" + Fmt("%.1f", X(i)) + "\" y=\"" + Fmt("%.1f", h - mb + 16) +
           "\" class=tick text-anchor=middle>#" + std::to_string(t.runs[i].id) + "</text>\n";
    if (std::isfinite(s.values[i])) points += Fmt("%.1f,", X(i)) + Fmt("%.1f ", Y(s.values[i]));
  }
  out += "<polyline points=\"" + points + "\" class=line />\n";
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(s.values[i])) continue;
    const PointMark& m = s.marks[i];
    std::string cls = m.regression ? "reg" : (m.improvement ? "imp" : "pt");
    out += "<circle cx=\"" + Fmt("%.1f", X(i)) + "\" cy=\"" + Fmt("%.1f", Y(s.values[i])) +
           "\" r=\"" + (cls == "pt" ? "3.5" : "6") + "\" class=" + cls + "><title>run #" +
           std::to_string(t.runs[i].id) + " " + Html(Labels(t.runs[i])) + ": " +
           Value(s.values[i]) + " " + Html(s.quantity->unit) +
           (m.why.empty() ? "" : " — " + Html(m.why)) + "</title></circle>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace

std::string RenderTrendText(const Trend& t) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-5s %-16s %10s %10s %8s %10s  %s\n", "run", "added (UTC)",
                "p50 ms", "p99 ms", "util %", "mem MiB", "labels");
  out += line;
  for (size_t i = 0; i < t.runs.size(); ++i) {
    const RunRecord& r = t.runs[i];
    std::snprintf(line, sizeof(line), "%-5lld %-16s %10s %10s %8s %10s  %s\n",
                  static_cast<long long>(r.id), Date(r.added_at).c_str(),
                  Value(t.series[0].values[i]).c_str(), Value(t.series[1].values[i]).c_str(),
                  Value(t.series[2].values[i]).c_str(), Value(t.series[3].values[i]).c_str(),
                  Labels(r).c_str());
    out += line;
    for (const Series& s : t.series) {
      const PointMark& m = s.marks[i];
      if (!m.regression && !m.improvement) continue;
      out += std::string("      ") + (m.regression ? "REGRESSION " : "improvement ") +
             s.quantity->name + ": " + m.why + "\n";
    }
  }
  if (t.runs.empty()) out += "(no runs match)\n";
  return out;
}

std::string RenderTrendHtml(const Trend& t, const std::string& title) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>" + Html(title) +
      "</title>\n<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}"
      "svg{background:#fafafa;border:1px solid #ddd}.axis{stroke:#888}.line{fill:none;"
      "stroke:#3465a4;stroke-width:1.5}.pt{fill:#3465a4}.reg{fill:#cc0000}.imp{fill:#4e9a06}"
      ".change{stroke:#cc0000;stroke-dasharray:4 3}.tick{font-size:11px;fill:#555}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
      "text-align:left;vertical-align:top}.regtxt{color:#cc0000}</style></head><body>\n<h1>" +
      Html(title) + "</h1>\n<p>" + std::to_string(t.runs.size()) +
      " runs. Red points are regressions (a change to a worse level, or a worse outlier); "
      "dashed lines are change points.</p>\n";
  for (const Series& s : t.series) out += Plot(t, s);
  out += "<h2>Runs</h2>\n<table><tr><th>run</th><th>added (UTC)</th><th>labels</th><th>source</th>"
         "<th>p50 ms</th><th>p99 ms</th><th>util %</th><th>marks</th><th>top findings</th></tr>\n";
  for (size_t i = 0; i < t.runs.size(); ++i) {
    const RunRecord& r = t.runs[i];
    std::string marks;
    for (const Series& s : t.series) {
      const PointMark& m = s.marks[i];
      if (m.regression) marks += "<div class=regtxt>regression " + Html(s.quantity->name) + ": " + Html(m.why) + "</div>";
      if (m.improvement) marks += "<div>improvement " + Html(s.quantity->name) + ": " + Html(m.why) + "</div>";
    }
    std::string findings;
    for (const std::string& f : r.top_findings) findings += "<div>" + Html(f) + "</div>";
    out += "<tr><td>#" + std::to_string(r.id) + "</td><td>" + Date(r.added_at) + "</td><td>" +
           Html(Labels(r)) + "</td><td>" + Html(r.source) + "</td><td>" +
           Value(t.series[0].values[i]) + "</td><td>" + Value(t.series[1].values[i]) +
           "</td><td>" + Value(t.series[2].values[i]) + "</td><td>" + marks + "</td><td>" +
           findings + "</td></tr>\n";
  }
  out += "</table>\n</body></html>\n";
  return out;
}

}  // namespace sightline::history
