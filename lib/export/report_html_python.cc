// lib/export/report_html_python.cc — the HTML report's call-site view: GPU
// time and host-blocked time by Python stack, as a tree of nested <details>
// (outermost frame at the top, the user's lines below), each node with two
// bars (GPU, blocked) scaled to the run's totals — an icicle read top-down,
// without script. Every string from the trace is escaped.
#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/export/report_html.h"
#include "lib/export/report_render.h"

namespace sightline::exporter {
namespace {

struct Node {
  uint64_t gpu_ns = 0, blocked_ns = 0;
  std::map<std::string, std::unique_ptr<Node>> children;
};

void Render(std::string* out, const std::string& name, const Node& n, uint64_t gpu_total,
            uint64_t blocked_total, int depth) {
  auto pct = [](uint64_t v, uint64_t total) { return total ? 100.0 * double(v) / double(total) : 0; };
  std::string bars = absl::StrFormat(
      "<span class=\"pybar\" title=\"GPU time\" style=\"display:inline-block;height:8px;"
      "background:#4c78a8;width:%.1fpx\"></span><span class=\"pybar\" title=\"host blocked\" "
      "style=\"display:inline-block;height:8px;background:#e45756;width:%.1fpx\"></span>",
      1.5 * pct(n.gpu_ns, gpu_total), 1.5 * pct(n.blocked_ns, blocked_total));
  std::string label = absl::StrCat("<code>", HtmlEscape(name), "</code> · GPU ",
                                   FormatDuration(double(n.gpu_ns)), " · blocked ",
                                   FormatDuration(double(n.blocked_ns)), " ", bars);
  if (n.children.empty()) {
    absl::StrAppend(out, "<div style=\"margin-left:1.2em\">", label, "</div>");
    return;
  }
  absl::StrAppend(out, "<details", depth < 3 ? " open" : "", " style=\"margin-left:",
                  depth ? "1.2em" : "0", "\"><summary>", label, "</summary>");
  std::vector<std::pair<std::string, const Node*>> kids;
  for (const auto& [k, v] : n.children) kids.emplace_back(k, v.get());
  std::sort(kids.begin(), kids.end(), [](const auto& a, const auto& b) {
    return a.second->gpu_ns + a.second->blocked_ns > b.second->gpu_ns + b.second->blocked_ns;
  });
  for (const auto& [k, v] : kids) Render(out, k, *v, gpu_total, blocked_total, depth + 1);
  absl::StrAppend(out, "</details>");
}

}  // namespace

void PythonCallSitesHtml(std::string* out, const analysis::Report& r) {
  if (r.python_stacks.empty()) return;
  Node root;
  for (const analysis::PythonStackRow& s : r.python_stacks) {
    root.gpu_ns += s.gpu_ns;
    root.blocked_ns += s.host_blocked_ns;
    Node* n = &root;
    for (const std::string& f : s.frames) {
      std::unique_ptr<Node>& child = n->children[f];
      if (!child) child = std::make_unique<Node>();
      child->gpu_ns += s.gpu_ns;
      child->blocked_ns += s.host_blocked_ns;
      n = child.get();
    }
  }
  absl::StrAppend(out, "<section id=\"python-sites\"><h2>Python call sites</h2><div class=\"hint\">",
                  absl::StrFormat("%.1f%% of kernel time is at a line of the user's code",
                                  r.python_attributed_gpu_pct),
                  "; blue: GPU time launched from below this frame, red: time the host blocked "
                  "in CUDA calls made from below it. Entries marked inferred are other threads' "
                  "work (autograd's backward) attributed to the line that queued it.</div>");
  Render(out, "all Python stacks", root, root.gpu_ns, root.blocked_ns, 0);
  if (!r.python_sites.empty()) {
    absl::StrAppend(out, "<table><tr><th>call site</th><th>GPU</th><th>host blocked</th>"
                         "<th>launches</th></tr>");
    for (size_t i = 0; i < r.python_sites.size() && i < 25; ++i) {
      const analysis::PythonSiteRow& s = r.python_sites[i];
      absl::StrAppend(out, "<tr><td><code>", HtmlEscape(s.site), "</code>",
                      s.inferred ? " (inferred)" : "", "</td><td>",
                      FormatDuration(double(s.gpu_ns)), "</td><td>",
                      FormatDuration(double(s.host_blocked_ns)), "</td><td>", s.launches,
                      "</td></tr>");
    }
    absl::StrAppend(out, "</table>");
  }
  absl::StrAppend(out, "</section>\n");
}

}  // namespace sightline::exporter
