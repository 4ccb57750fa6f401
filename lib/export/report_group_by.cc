// lib/export/report_group_by.cc — `sightline analyze --group-by` tables (see
// report_render.h).
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/export/demangle.h"
#include "lib/export/report_render.h"

namespace sightline::exporter {
namespace {

std::string Ms(uint64_t ns) { return absl::StrFormat("%.3f", ns / 1e6); }

std::string Fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  if (width < 4) return s.substr(0, width);
  // Keep the end: file names and line numbers matter more than directories.
  return "..." + s.substr(s.size() - (width - 3));
}

}  // namespace

std::string RenderGroupByText(const analysis::Report& r, const std::string& group_by, int width) {
  std::string out;
  size_t name_w = static_cast<size_t>(std::max(30, width - 46));
  uint64_t total_gpu = 0;  // kernel time: the ops' and kernels' share
  for (const analysis::KernelRow& k : r.kernels) total_gpu += k.total_ns;
  // A call site's GPU time counts its copies and memsets too: its share is of
  // all GPU work (kernels alone made a graph replay's line read 102 %).
  uint64_t total_work = total_gpu;
  for (const analysis::MemcpyRow& m : r.memcpys) total_work += m.total_ns;
  if (group_by == "python") {
    if (r.python_sites.empty()) {
      return "No Python call sites in this trace (record with `sightline profile "
             "--python-backtrace` on a Python program).\n";
    }
    absl::StrAppend(&out, absl::StrFormat(
        "Python call sites (%.1f%% of kernel time at a line of the user's code; %.1f%% by "
        "inference for threads without Python frames; GPU: kernels, copies and memsets)\n",
        r.python_attributed_gpu_pct, r.python_inferred_gpu_pct));
    absl::StrAppend(&out, absl::StrFormat("%12s %7s %12s %9s  %s\n", "GPU ms", "GPU %",
                                          "blocked ms", "launches", "site"));
    for (const analysis::PythonSiteRow& s : r.python_sites) {
      double pct = total_work > 0 ? 100.0 * double(s.gpu_ns) / double(total_work) : 0;
      std::string site = s.site + (s.inferred ? " [inferred: other threads' work]" : "");
      absl::StrAppend(&out, absl::StrFormat("%12s %6.1f%% %12s %9u  %s\n", Ms(s.gpu_ns), pct,
                                            Ms(s.host_blocked_ns), s.launches,
                                            Fit(site, name_w)));
    }
    return out;
  }
  if (group_by == "op") {
    if (r.ops.empty()) {
      return "No PyTorch ops in this trace (record with `sightline profile --pytorch`).\n";
    }
    absl::StrAppend(&out, absl::StrFormat("PyTorch ops (%.1f%% of kernel time inside an op)\n",
                                          r.op_attributed_gpu_pct));
    absl::StrAppend(&out, absl::StrFormat("%12s %7s %9s  %s\n", "GPU ms", "GPU %", "kernels", "op"));
    for (const analysis::OpRow& o : r.ops) {
      double pct = total_gpu > 0 ? 100.0 * double(o.gpu_ns) / double(total_gpu) : 0;
      absl::StrAppend(&out, absl::StrFormat("%12s %6.1f%% %9u  %s\n", Ms(o.gpu_ns), pct, o.kernels,
                                            Fit(o.op, name_w)));
    }
    return out;
  }
  // kernel
  absl::StrAppend(&out, absl::StrFormat("%12s %7s %9s  %s\n", "GPU ms", "GPU %", "count",
                                        "kernel / op / call site"));
  for (const analysis::KernelRow& k : r.kernels) {
    absl::StrAppend(&out, absl::StrFormat("%12s %6.1f%% %9u  %s\n", Ms(k.total_ns), k.share_pct,
                                          k.count, Fit(Demangle(k.name), name_w)));
    if (!k.op.empty()) absl::StrAppend(&out, std::string(33, ' '), "op   ", Fit(k.op, name_w), "\n");
    if (!k.python_site.empty()) {
      absl::StrAppend(&out, std::string(33, ' '), "at   ", Fit(k.python_site, name_w), "\n");
    }
  }
  return out;
}

}  // namespace sightline::exporter
