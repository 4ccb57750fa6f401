// lib/export/report_text.cc — the one-screen terminal report.
#include <algorithm>
#include <map>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "lib/analysis/kernel_metrics.h"
#include "lib/analysis/rule_util.h"
#include "lib/export/demangle.h"
#include "lib/export/report_render.h"
#include "lib/trace/terminal_text.h"
#include "lib/analysis/gpu_metrics.h"

namespace sightline::exporter {
namespace {

using analysis::Report;

// Word-wraps `text` into lines of at most `width` columns, each prefixed by
// `indent` (the first by `first_indent`).
// Spaces that must not break a line ("1.43 ms") are written as kKeep.
constexpr char kKeep = '\x1f';
std::string Keep(std::string s) {
  for (char& c : s) {
    if (c == ' ') c = kKeep;
  }
  return s;
}

void Wrap(std::string* out, const std::string& text, size_t width, const std::string& first_indent,
          const std::string& indent) {
  const size_t start_size = out->size();
  std::string line = first_indent;
  size_t line_start_len = first_indent.size();
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    i = j + 1;
    if (word.empty()) continue;
    if (line.size() > line_start_len && line.size() + 1 + word.size() > width) {
      absl::StrAppend(out, line, "\n");
      line = indent;
      line_start_len = indent.size();
    }
    if (line.size() > line_start_len) line += ' ';
    if (word.size() > width - line.size() && width > line.size() + 4) {
      word = Ellipsize(word, width - line.size());
    }
    line += word;
  }
  if (line.size() > line_start_len) absl::StrAppend(out, line, "\n");
  for (size_t i = start_size; i < out->size(); ++i) {
    if ((*out)[i] == kKeep) (*out)[i] = ' ';
  }
}

// A text table whose first column (a name) shrinks to fit `width`; when even
// a 12-column name does not fit, columns are dropped from the right.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Render(std::string* out, size_t width, const std::string& indent) const {
    size_t cols = rows_[0].size();
    std::vector<size_t> w(cols, 0);
    for (const auto& r : rows_) {
      for (size_t c = 0; c < cols; ++c) w[c] = std::max(w[c], r[c].size());
    }
    auto total = [&](size_t n) {
      size_t t = indent.size();
      for (size_t c = 1; c < n; ++c) t += w[c] + 2;
      return t;
    };
    while (cols > 2 && total(cols) + 12 > width) --cols;
    size_t name_w = std::min(w[0], width > total(cols) ? width - total(cols) : 12);
    for (const auto& r : rows_) {
      std::string line = indent + absl::StrFormat("%-*s", static_cast<int>(name_w), Ellipsize(r[0], name_w));
      for (size_t c = 1; c < cols; ++c) {
        absl::StrAppend(&line, "  ", absl::StrFormat("%*s", static_cast<int>(w[c]), r[c]));
      }
      absl::StrAppend(out, line, "\n");
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string Evidence(const analysis::EvidenceItem& e) {
  if (!e.is_number) return absl::StrCat(e.key, "=", e.text);
  if (e.unit == "ns") return absl::StrCat(e.key, "=", Keep(FormatDuration(e.number)));
  if (e.unit == "pct") return absl::StrCat(e.key, "=", FormatPct(e.number));
  if (e.unit == "bytes") return absl::StrCat(e.key, "=", Keep(FormatBytes(e.number)));
  std::string num = (std::fabs(e.number - std::round(e.number)) < 1e-9 && std::fabs(e.number) < 1e15)
                        ? absl::StrFormat("%.0f", e.number)
                        : absl::StrFormat("%.3g", e.number);
  return absl::StrCat(e.key, "=", num, e.unit.empty() || e.unit == "count" ? "" : "\x1f",
                      e.unit == "count" ? "" : e.unit);
}

std::string DeviceLabel(const analysis::DeviceSummary& d) {
  std::string name = d.name;
  if (absl::StartsWith(name, "NVIDIA ")) name = name.substr(7);
  std::string label = absl::StrCat("GPU ", d.id);
  if (d.rank >= 0) absl::StrAppend(&label, " r", d.rank);
  if (!name.empty()) absl::StrAppend(&label, " ", name);
  return label;
}

}  // namespace

std::string TrimLineEnds(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string::npos ? text.size() : nl;
    size_t last = end;
    while (last > start && text[last - 1] == ' ') --last;
    out.append(text, start, last - start);
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

std::string FormatBytes(double b) {
  double a = std::fabs(b);
  if (a < 1e3) return absl::StrFormat("%.0f B", b);
  if (a < 1e6) return absl::StrFormat("%.1f kB", b / 1e3);
  if (a < 1e9) return absl::StrFormat("%.2f MB", b / 1e6);
  return absl::StrFormat("%.2f GB", b / 1e9);
}

std::string FormatMetricValue(const std::string& metric, double value) {
  if (absl::StrContains(metric, "time_duration")) return FormatDuration(value);
  if (absl::StrContains(metric, "pct")) return FormatPct(value);
  if (absl::StrContains(metric, "bytes") && absl::StrContains(metric, "per_second")) {
    return absl::StrCat(FormatBytes(value), "/s");
  }
  if (absl::StartsWith(metric, "dram__bytes") || absl::StrContains(metric, "bytes.sum")) {
    return FormatBytes(value);
  }
  return absl::StrFormat("%.4g", value);
}

std::string Ellipsize(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  if (width <= 3) return s.substr(0, width);
  size_t keep = width - 3;
  size_t head = (keep + 1) / 2, tail = keep / 2;
  return absl::StrCat(s.substr(0, head), "...", s.substr(s.size() - tail));
}

std::string FormatGpuMetric(const std::string& unit, double v) {
  if (std::isnan(v)) return "-";
  if (unit == "%") return FormatPct(v);
  if (unit == "B/s") return absl::StrCat(FormatBytes(v), "/s");
  if (unit == "Hz") return absl::StrFormat("%.2f GHz", v / 1e9);
  return absl::StrFormat("%.4g", v);
}

// Columns of the per-step and per-kernel tables: the quantities a training
// step is judged by, those present.
// The columns of the step, range and kernel tables: (stat index, short label).
std::vector<std::pair<size_t, const char*>> GpuMetricColumns(const analysis::GpuMetricsDevice& d) {
  std::vector<std::pair<size_t, const char*>> cols;
  for (auto [key, label] : {std::pair<const char*, const char*>{"sm_active", "SM act"},
                            {"tensor_active", "tensor"},
                            {"dram_read", "DRAM rd"},
                            {"dram_write", "DRAM wr"},
                            {"pcie_read_bytes", "PCIe rd"},
                            {"pcie_write_bytes", "PCIe wr"}}) {
    for (size_t j = 0; j < d.stats.size(); ++j) {
      if (d.stats[j].key == key) cols.emplace_back(j, label);
    }
  }
  return cols;
}

// Ranks side by side (lib/analysis/cross_rank.h): who arrived last at the
// matched NCCL operations, by how much, who waited, and the clock alignment.
// The 16 ranks that were late the longest; the JSON has every rank.
void AppendCrossRank(const analysis::CrossRankSummary& x, size_t width, std::string* out) {
  if (x.method.empty() || x.ranks.size() < 2) return;
  *out += '\n';
  Wrap(out, absl::StrCat("Ranks: ", x.collectives_matched, " NCCL operations matched across ",
                  x.ranks.size(), " ranks (",
                  x.method == "communicator" ? "by communicator and sequence"
                                             : "by device order: no communicator ids",
                  "), ", x.unmatched_calls, " of ", x.calls, " calls unmatched; clocks ",
                  x.clock_source == "collective_ends"
                      ? absl::StrCat("aligned on completions, residual skew median ",
                                     FormatDuration(double(x.skew_median_ns)), ", max ",
                                     FormatDuration(double(x.skew_max_ns)))
                      : std::string("as recorded (no matched GPU completions)")),
       width, "", "  ");
  std::map<int32_t, uint64_t> steps_last;  // rank → steps in which it cost the most
  for (const analysis::CrossRankStepRow& st : x.steps) {
    if (st.last_rank >= 0) steps_last[st.last_rank]++;
  }
  if (!steps_last.empty()) {
    auto top = std::max_element(steps_last.begin(), steps_last.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    Wrap(out, absl::StrCat("Per step: rank ", top->first, "'s late arrivals cost the most in ",
                           top->second, " of ", x.steps.size(), " steps"),
         width, "", "  ");
  }
  std::vector<const analysis::CrossRankRow*> rows;
  for (const analysis::CrossRankRow& k : x.ranks) rows.push_back(&k);
  std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
    return a->late_margin_ns > b->late_margin_ns;
  });
  constexpr size_t kMaxRows = 16;
  TextTable t({"rank", "clock offset", "matched", "last at", "late by", "waited", "exposed comm"});
  for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i) {
    const analysis::CrossRankRow& k = *rows[i];
    t.Add({absl::StrCat("  ", k.rank),
           k.clock_aligned ? absl::StrCat(k.clock_offset_ns < 0 ? "-" : "+",
                                          FormatDuration(double(k.clock_offset_ns < 0
                                                                    ? -k.clock_offset_ns
                                                                    : k.clock_offset_ns)))
                           : "-",
           absl::StrCat(k.matched_calls, "/", k.calls), absl::StrCat(k.last_arrivals),
           FormatDuration(double(k.late_margin_ns)), FormatDuration(double(k.wait_ns)),
           FormatDuration(double(k.exposed_comm_ns))});
  }
  t.Render(out, width, "");
  if (rows.size() > kMaxRows) {
    absl::StrAppend(out, "  ... ", rows.size() - kMaxRows, " more ranks (--format json lists all)\n");
  }
}

void AppendGpuMetrics(const analysis::GpuMetricsDevice& d, size_t width, std::string* out) {
  *out += '\n';
  std::string head = absl::StrCat(
      "GPU metrics (PM sampling) of device ", d.device_id,
      d.device_name.empty() ? "" : absl::StrCat(" (", d.device_name, ")"), ": ", d.samples,
      " samples of ", FormatDuration(d.interval_ns), " over the window (",
      FormatPct(d.coverage_pct), " of it covered)");
  if (d.samples_missing > 0) {
    absl::StrAppend(&head, "; ", d.samples_missing, " samples missing in the trace, ",
                    d.samples_missing_in_window, " of them in the window");
  }
  if (!d.unavailable.empty()) {
    absl::StrAppend(&head, "; not sampled here: ", absl::StrJoin(d.unavailable, ", "));
  }
  Wrap(out, head, width, "", "  ");
  TextTable t({"  Quantity", "mean", "p50", "p95", "max", "busy", "saturated"});
  for (const analysis::GpuMetricStat& st : d.stats) {
    const bool pct = st.busy_pct >= 0;
    const bool of_peak = st.unit == "%" && st.key.find("dram") == 0;
    t.Add({absl::StrCat("  ", st.label, of_peak ? " (of peak)" : ""),
           FormatGpuMetric(st.unit, st.mean), FormatGpuMetric(st.unit, st.p50),
           FormatGpuMetric(st.unit, st.p95), FormatGpuMetric(st.unit, st.max),
           pct ? FormatPct(st.busy_pct) : "", pct ? FormatPct(st.saturated_pct) : ""});
  }
  t.Render(out, width, "");
  Wrap(out, absl::StrCat("busy: share of the sampled time at >= ",
                         analysis::kGpuMetricBusyPct, " % of peak; saturated: at >= ",
                         analysis::kGpuMetricSaturatedPct, " %"),
       width, "  ", "    ");
  const std::vector<std::pair<size_t, const char*>> cols = GpuMetricColumns(d);
  if (cols.empty()) return;
  if (!d.steps.empty() || !d.ranges.empty() || !d.kernels.empty()) {
    Wrap(out,
         "Per step, NVTX range and kernel: the device over their GPU spans (SM act: SM "
         "active; tensor: tensor pipe active; DRAM rd/wr: % of peak); a kernel shares its "
         "samples with whatever ran beside it",
         width, "  ", "    ");
  }
  auto header = [&](const char* first, const char* second) {
    std::vector<std::string> h = {first, second};
    for (const auto& col : cols) h.push_back(col.second);
    return h;
  };
  auto cells = [&](const analysis::GpuMetricSpanRow& row, std::vector<std::string> c) {
    for (const auto& col : cols) {
      const size_t j = col.first;
      c.push_back(j < row.values.size() ? FormatGpuMetric(d.stats[j].unit, row.values[j]) : "-");
    }
    return c;
  };
  if (!d.steps.empty()) {
    // At most 12 rows: the first and last six steps.
    TextTable st(header("  Step", "GPU span"));
    for (size_t i = 0; i < d.steps.size(); ++i) {
      if (d.steps.size() > 12 && i == 6) st.Add(cells({}, {"  ...", ""}));
      if (d.steps.size() > 12 && i >= 6 && i < d.steps.size() - 6) continue;
      const analysis::GpuMetricSpanRow& row = d.steps[i];
      st.Add(cells(row, {absl::StrCat("  step ", row.index), FormatDuration(double(row.time_ns))}));
    }
    st.Render(out, width, "");
  }
  if (!d.ranges.empty()) {
    TextTable rt(header("  NVTX range", "GPU time"));
    for (const analysis::GpuMetricSpanRow& row : d.ranges) {
      rt.Add(cells(row, {absl::StrCat("  ", row.name.substr(0, 40), " x", row.instances),
                         FormatDuration(double(row.time_ns))}));
    }
    rt.Render(out, width, "");
  }
  size_t resolved = 0;
  for (const analysis::GpuMetricSpanRow& row : d.kernels) resolved += row.resolved ? 1 : 0;
  if (resolved > 0) {
    TextTable kt(header("  Kernel", "GPU time"));
    for (const analysis::GpuMetricSpanRow& row : d.kernels) {
      if (!row.resolved) continue;
      kt.Add(cells(row, {absl::StrCat("  ", DisplayKernelName(row.name, 40)),
                         FormatDuration(double(row.time_ns))}));
    }
    kt.Render(out, width, "");
  }
  if (resolved < d.kernels.size()) {
    Wrap(out, absl::StrCat(d.kernels.size() - resolved,
                           " of the heaviest kernels last less than two samples on average: "
                           "their values are in --format json gpu_metrics[].kernels "
                           "(resolved: false)"),
         width, "  ", "    ");
  }
}


std::string RenderReportText(const Report& r, const TextOptions& options) {
  const size_t width = static_cast<size_t>(std::max(60, options.width));
  std::string out;
  const analysis::Summary& s = r.summary;
  Wrap(&out,
       absl::StrCat("sightline analysis: ", r.traces.size(),
                    r.traces.size() == 1 ? " trace" : " traces", ", window ",
                    Keep(FormatDuration(static_cast<double>(s.window_ns))), ", ",
                    s.gpu_activities, " GPU activities, ", s.api_calls, " API calls"),
       width, "", "  ");
  for (const analysis::TraceSummary& t : r.traces) {
    std::string state = t.complete ? "complete" : absl::StrCat("INCOMPLETE: ", t.integrity_reason);
    std::string line = absl::StrCat("  ", Ellipsize(t.path, 40), "  pid ", t.pid,
                                    t.rank >= 0 ? absl::StrCat(" rank ", t.rank) : "", "  ",
                                    t.events, " events, ", t.lost_records, " lost; ", state);
    absl::StrAppend(&out, Ellipsize(line, width), "\n");
  }

  if (!s.devices.empty()) {
    out += '\n';
    TextTable t({"GPU", "util", "compute", "comm", "memory", "idle", "kernels", "window"});
    for (const analysis::DeviceSummary& d : s.devices) {
      t.Add({DeviceLabel(d), FormatPct(d.gpu_utilization_pct), FormatPct(d.compute_pct),
             FormatPct(d.comm_pct), FormatPct(d.memory_pct), FormatPct(d.idle_pct),
             absl::StrCat(d.kernels), FormatDuration(d.window_ns)});
    }
    t.Render(&out, width, "");
  }

  const analysis::StepSummary& st = s.steps;
  if (st.count > 0) {
    std::string src = st.name.empty() ? st.source : absl::StrCat(st.source, " \"", st.name, "\"");
    out += '\n';
    Wrap(&out,
         absl::StrCat("Steps (", src, "): ", st.count, ", mean ", Keep(FormatDuration(st.mean_ns)),
                      ", p50 ", Keep(FormatDuration(st.p50_ns)), ", p99 ",
                      Keep(FormatDuration(st.p99_ns)), ", min ", Keep(FormatDuration(st.min_ns)),
                      ", max ", Keep(FormatDuration(st.max_ns)), ", ", Keep("GPU util "),
                      FormatPct(st.mean_gpu_utilization_pct)),
         width, "", "  ");
  } else {
    absl::StrAppend(&out, "\nSteps: none detected (mark iterations with an NVTX range or "
                          "sightline step markers)\n");
  }
  if (s.scope == "steady_state") {
    const analysis::StartupSummary& u = s.startup;
    std::string line = absl::StrCat(
        "Scope: steady state from step ", s.steady_first_step, " (", st.warmup_steps,
        st.warmup_steps == 1 ? " warm-up step" : " warm-up steps", " skipped",
        st.metrics_steps > 0
            ? absl::StrCat(", ", st.metrics_steps, " of them ran metric passes or replays")
            : "",
        st.source == "launch_pattern"
            ? absl::StrCat("; steps found from the repeating launch sequence, ", st.period,
                           " GPU operations each")
            : "",
        "). Start-up before it: ", Keep(FormatDuration(double(u.duration_ns))));
    std::vector<std::string> parts;
    if (u.warmup_ns) parts.push_back(absl::StrCat("warm-up steps ", Keep(FormatDuration(double(u.warmup_ns)))));
    if (u.cuda_api_ns) {
      std::vector<std::string> sub;
      if (u.module_loading_ns) sub.push_back(absl::StrCat("module loading ", Keep(FormatDuration(double(u.module_loading_ns)))));
      if (u.memory_alloc_ns) sub.push_back(absl::StrCat("allocation ", Keep(FormatDuration(double(u.memory_alloc_ns)))));
      if (u.sync_ns) sub.push_back(absl::StrCat("synchronization ", Keep(FormatDuration(double(u.sync_ns)))));
      parts.push_back(absl::StrCat("CUDA calls ", Keep(FormatDuration(double(u.cuda_api_ns))),
                                   sub.empty() ? "" : absl::StrCat(" (", absl::StrJoin(sub, ", "), ")")));
    }
    if (u.lazy_loading_ns) parts.push_back(absl::StrCat("lazy kernel loading ", Keep(FormatDuration(double(u.lazy_loading_ns)))));
    if (u.compilation_ns) parts.push_back(absl::StrCat("JIT compilation ", Keep(FormatDuration(double(u.compilation_ns)))));
    if (u.gpu_busy_ns) parts.push_back(absl::StrCat("GPU busy ", Keep(FormatDuration(double(u.gpu_busy_ns)))));
    if (u.host_other_ns) parts.push_back(absl::StrCat("host outside CUDA calls ", Keep(FormatDuration(double(u.host_other_ns))),
                                                      " (imports, initialisation, data loading, Python)"));
    if (!parts.empty()) absl::StrAppend(&line, ": ", absl::StrJoin(parts, "; "));
    absl::StrAppend(&line, ". Use --window all to analyse the whole trace.");
    Wrap(&out, line, width, "", "  ");
  } else if (s.scope == "steps" || s.scope == "time") {
    // Chosen by --window, or by default for a trace recorded in capture
    // windows far apart (the notes say which).
    Wrap(&out, absl::StrCat("Scope: ", s.scope == "steps" ? "a range of steps" : "a time range",
                            ", ", Keep(FormatDuration(double(s.scope_end_ns - s.scope_start_ns))), " of host time"),
         width, "", "  ");
  }

  if (r.memory.recorded) {
    out += '\n';
    for (const analysis::MemoryDevice& m : r.memory.devices) {
      using analysis::FormatBytes;
      std::string line = absl::StrCat(
          "GPU memory, device ", m.id, m.rank >= 0 ? absl::StrCat(" (rank ", m.rank, ")") : "",
          ": peak ", FormatBytes(double(m.peak_bytes)),
          m.capacity_bytes ? absl::StrCat(" (", FormatPct(100.0 * double(m.peak_bytes) /
                                                           double(m.capacity_bytes)),
                                          " of ", FormatBytes(double(m.capacity_bytes)), ")")
                           : "");
      if (m.pool_bytes) absl::StrAppend(&line, ", of which stream-ordered pools ", FormatBytes(double(m.pool_bytes)));
      if (m.static_bytes) absl::StrAppend(&line, ", module statics ", FormatBytes(double(m.static_bytes)));
      if (s.scope != "whole") absl::StrAppend(&line, "; in the analysed steps ", FormatBytes(double(m.scope_peak_bytes)));
      if (!m.step_end_bytes.empty()) {
        absl::StrAppend(&line, ", ", m.growth_bytes_per_step >= 0 ? "+" : "",
                        FormatBytes(m.growth_bytes_per_step), " per step");
      }
      absl::StrAppend(&line, "; ", m.allocations, " allocations, ", m.releases, " releases");
      if (m.scope_allocations + m.scope_releases) {
        absl::StrAppend(&line, " (", m.scope_allocations + m.scope_releases,
                        " synchronous ones inside the analysed steps)");
      }
      absl::StrAppend(&line, "; still allocated at the end ", FormatBytes(double(m.end_bytes)));
      if (m.pinned_peak_bytes) absl::StrAppend(&line, "; pinned host peak ", FormatBytes(double(m.pinned_peak_bytes)));
      if (m.managed_peak_bytes) absl::StrAppend(&line, "; managed peak ", FormatBytes(double(m.managed_peak_bytes)));
      if (m.unmatched_releases) {
        absl::StrAppend(&line, "; ", m.unmatched_releases,
                        " releases of memory allocated before recording began (not counted)");
      }
      if (m.sources.size() > 1 || (m.sources.size() == 1 && !m.sources[0].source.empty())) {
        std::vector<std::string> parts;
        for (const analysis::MemorySource& src : m.sources) {
          if (src.peak_bytes == 0 || parts.size() == 4) continue;
          parts.push_back(absl::StrCat(src.source.empty() ? "(unknown)" : src.source, " ",
                                       FormatBytes(double(src.peak_bytes))));
        }
        absl::StrAppend(&line, ". Peak by requesting library: ", absl::StrJoin(parts, ", "));
      }
      if (!m.pools.empty()) {
        uint64_t allocations = 0;
        for (const analysis::MemoryPoolSummary& pool : m.pools) allocations += pool.allocations;
        const analysis::MemoryPoolSummary& top = m.pools.front();
        absl::StrAppend(&line, ". Stream-ordered pools: ", m.pools.size(), " (", allocations,
                        " allocations); the largest held ", FormatBytes(double(top.peak_bytes)),
                        " at its peak for ", FormatBytes(double(top.peak_used_bytes)),
                        " of allocations");
      }
      if (m.torch_samples > 0) {
        absl::StrAppend(&line, ". PyTorch (", m.torch_samples,
                        " optimizer steps): tensors peak ", FormatBytes(double(m.torch_allocated_peak_bytes)),
                        ", allocator reserved ", FormatBytes(double(m.torch_reserved_peak_bytes)));
        if (m.torch_allocated_peak_bytes > 0 &&
            m.torch_reserved_peak_bytes > m.torch_allocated_peak_bytes) {
          absl::StrAppend(&line, " (+", FormatPct(100.0 * double(m.torch_reserved_peak_bytes -
                                                                    m.torch_allocated_peak_bytes) /
                                                  double(m.torch_allocated_peak_bytes)),
                          " cached beyond the tensors' peak)");
        }
      }
      Wrap(&out, line, width, "", "  ");
      if (!m.peak_sites.empty()) {
        TextTable t({"  Live at the peak", "bytes", "allocations"});
        for (size_t i = 0; i < m.peak_sites.size() && i < 5; ++i) {
          const analysis::MemorySite& site = m.peak_sites[i];
          t.Add({absl::StrCat("    ", Ellipsize(site.site, width > 60 ? width - 40 : 20)),
                 FormatBytes(double(site.bytes)), absl::StrCat(site.allocations)});
        }
        t.Render(&out, width, "");
      }
    }
  }

  if (!r.kernels.empty()) {
    out += '\n';
    TextTable t({"Top kernels", "count", "total", "mean", "share", "occupancy"});
    size_t n = std::min(options.max_kernels, r.kernels.size());
    for (size_t i = 0; i < n; ++i) {
      const analysis::KernelRow& k = r.kernels[i];
      std::string occ = k.theoretical_occupancy_pct < 0
                            ? "-"
                            : absl::StrCat(FormatPct(k.theoretical_occupancy_pct),
                                           k.occupancy_limiter.empty()
                                               ? ""
                                               : absl::StrCat(" (", k.occupancy_limiter, ")"));
      // Launches replayed for metrics are listed but not timed: "0+9r".
      std::string count = k.replayed_count == 0
                              ? absl::StrCat(k.count)
                              : absl::StrCat(k.count, "+", k.replayed_count, "r");
      t.Add({absl::StrCat("  ", DisplayKernelName(k.name, width > 86 ? width - 56 : 30)), count,
             FormatDuration(k.total_ns), FormatDuration(k.mean_ns), FormatPct(k.share_pct), occ});
    }
    t.Render(&out, width, "");
    if (r.kernels.size() > n) {
      absl::StrAppend(&out, "  ... ", r.kernels.size() - n, " more kernels (see --format json)\n");
    }
  }

  if (r.metrics_coverage.present) {
    const analysis::MetricsCoverage& c = r.metrics_coverage;
    out += '\n';
    Wrap(&out,
         absl::StrCat("Hardware metrics for ", Keep(FormatPct(c.kernel_time_pct)),
                      " of kernel time (", c.configs_with, " kernel configurations measured, ",
                      c.configs_without, " not); per kernel: --format json kernels[].metrics, "
                      "details page: --kernel REGEX"),
         width, "", "  ");
    if (!c.missing.empty()) {
      TextTable t({"  Without metrics", "count", "total", "share", "why"});
      for (const analysis::MetricsCoverage::Missing& m : c.missing) {
        t.Add({absl::StrCat("  ", DisplayKernelName(m.name, width > 86 ? width - 56 : 30)),
               absl::StrCat(m.count), FormatDuration(m.total_ns), FormatPct(m.share_pct),
               m.reason.substr(0, m.reason.find(':'))});
      }
      t.Render(&out, width, "");
    }
  }

  for (const analysis::RangeMetricsRow& row : r.range_metrics) {
    out += '\n';
    const uint64_t averaged = row.from_window ? row.complete_in_window : row.complete;
    const uint32_t passes = row.set_rows.empty() ? 0 : row.set_rows.front().passes_needed;
    Wrap(&out,
         absl::StrCat("Metrics of NVTX range '", row.range, "' as a whole: ", row.complete,
                      " complete sets of ", row.sets, " (", passes,
                      " instances a set, one pass each); mean over ", averaged,
                      row.from_window ? " in the analysed window" : " (none inside the window)",
                      averaged == 0 ? "" : ":"),
         width, "", "  ");
    if (!row.metrics.empty()) {
      TextTable t({"  Metric", "value"});
      for (const analysis::KernelMetricValue& m : row.metrics) {
        t.Add({absl::StrCat("  ", m.name), FormatMetricValue(m.name, m.value)});
      }
      t.Render(&out, width, "");
    }
  }

  for (const analysis::GpuMetricsDevice& d : r.gpu_metrics) AppendGpuMetrics(d, width, &out);

  if (!r.nccl_ops.empty()) {
    out += '\n';
    // algbw as NCCL-tests define it: message size / time of the op on the GPU.
    TextTable t({"NCCL ops", "rank", "calls", "size", "GPU time", "algbw", "communicator"});
    for (const analysis::NcclOpRow& n : r.nccl_ops) {
      std::string size = n.sized_count == 0 ? "-"
                         : n.bytes_min == n.bytes_max
                             ? FormatBytes(double(n.bytes_min))
                             : absl::StrCat(FormatBytes(double(n.bytes_min)), "..",
                                            FormatBytes(double(n.bytes_max)));
      std::string comm = n.comm_id.empty() ? "-" : n.comm_id;
      if (n.comm_nranks > 0) absl::StrAppend(&comm, " (", n.comm_rank, "/", n.comm_nranks, ")");
      t.Add({absl::StrCat("  ", n.op), n.rank >= 0 ? absl::StrCat(n.rank) : "-",
             absl::StrCat(n.count, n.gpu_count != n.count ? absl::StrCat("/", n.gpu_count, "k") : ""),
             size, n.gpu_count ? FormatDuration(double(n.gpu_total_ns)) : "-",
             n.algbw_gbps > 0 ? absl::StrFormat("%.1f GB/s", n.algbw_gbps) : "-", comm});
    }
    t.Render(&out, width, "");
  }
  AppendCrossRank(r.cross_rank, width, &out);

  if (r.findings.empty()) {
    absl::StrAppend(&out, "\nFindings: none\n");
  } else {
    const analysis::FirstAction& a = s.first_action;
    if (!a.rule.empty()) {
      std::string line = absl::StrCat("\nDo this first: ", a.rule, " — ", a.title);
      if (a.step_ns > 0) {
        absl::StrAppend(&line, "; step ", Keep(FormatDuration(double(a.step_ns))), " -> ~",
                        Keep(FormatDuration(double(a.expected_step_ns))), " expected");
      } else {
        absl::StrAppend(&line, "; ~", FormatPct(a.saving_pct), " of the window");
      }
      Wrap(&out, line, width, "", "  ");
    }
    absl::StrAppend(&out, "\nFindings (", r.findings.size(), ", most important first):\n");
    size_t n = std::min(options.max_findings, r.findings.size());
    for (size_t i = 0; i < n; ++i) {
      const analysis::Finding& f = r.findings[i];
      std::string head = absl::StrFormat("[%s] %s: %s", analysis::SeverityName(f.severity),
                                         f.rule, f.title);
      Wrap(&out, head, width, absl::StrFormat("%2d. ", static_cast<int>(i + 1)), "      ");
      std::string saving = absl::StrCat("saving ~", Keep(FormatDuration(f.est_saving_ns)), " (",
                                        FormatPct(f.est_saving_pct), " of the window)");
      if (!f.scope.empty()) absl::StrAppend(&saving, "; scope: ", f.scope);
      if (!f.symptoms.empty()) absl::StrAppend(&saving, "; also explains: ", absl::StrJoin(f.symptoms, ", "));
      Wrap(&out, saving, width, "      ", "      ");
      if (!f.evidence.empty()) {
        std::string ev = "evidence:";
        for (size_t k = 0; k < f.evidence.size() && k < 6; ++k) {
          absl::StrAppend(&ev, " ", Evidence(f.evidence[k]), k + 1 < f.evidence.size() && k < 5 ? ";" : "");
        }
        Wrap(&out, ev, width, "      ", "        ");
      }
      for (size_t k = 0; k < f.offenders.size() && k < 3; ++k) {
        const analysis::Offender& o = f.offenders[k];
        std::string line = absl::StrCat("- ", DisplayKernelName(o.name, width / 2), ": ", o.count,
                                        "x, ", FormatDuration(o.total_ns));
        if (o.share_pct > 0) absl::StrAppend(&line, ", ", FormatPct(o.share_pct));
        // Details (call stacks, streams) are cut at the end, keeping their start.
        size_t room = width - 6;
        if (!o.detail.empty() && line.size() + 12 < room) {
          std::string detail = o.detail;
          if (line.size() + detail.size() + 3 > room) {
            detail = detail.substr(0, room - line.size() - 6) + "...";
          }
          absl::StrAppend(&line, " (", detail, ")");
        }
        absl::StrAppend(&out, "      ", Ellipsize(line, room), "\n");
        if (!o.python_site.empty()) {
          absl::StrAppend(&out, "        at ", Ellipsize(o.python_site, room - 2), "\n");
        }
      }
      if (!f.recommendation.empty()) {
        Wrap(&out, absl::StrCat("-> ", f.recommendation), width, "      ", "         ");
      }
    }
    if (r.findings.size() > n) {
      absl::StrAppend(&out, "  ... ", r.findings.size() - n, " more findings (see --format json)\n");
    }
  }
  if (!r.notes.empty()) {
    absl::StrAppend(&out, "\nNotes:\n");
    for (const std::string& note : r.notes) Wrap(&out, absl::StrCat("- ", note), width, "  ", "    ");
  }
  // Kernel, NVTX and host names come from the trace: no control sequence
  // reaches the terminal (lib/trace/terminal_text.h); the layout's own
  // newlines stay.
  return trace::EscapeTerminalText(TrimLineEnds(out), trace::KeepLayout::kNewlinesAndTabs);
}

std::string RenderKernelPagesText(const std::vector<analysis::KernelPage>& pages, int width_in) {
  const size_t width = static_cast<size_t>(std::max(60, width_in));
  std::string out;
  if (pages.empty()) return "no kernel matches\n";
  for (const analysis::KernelPage& p : pages) {
    if (!out.empty()) out += '\n';
    absl::StrAppend(&out, std::string(std::min<size_t>(width, 100), '='), "\n");
    Wrap(&out, absl::StrCat("Kernel ", p.display_name), width, "", "  ");
    if (p.display_name != p.name) Wrap(&out, absl::StrCat("(", p.name, ")"), width, "  ", "  ");
    for (const analysis::KernelPageSection& s : p.sections) {
      absl::StrAppend(&out, "\n", s.title, "\n");
      // Values right-aligned in a column as wide as the short ones; a long
      // value (a call site, an op) follows its label without setting the
      // column's width.
      constexpr size_t kShortValue = 24;
      size_t label_w = 0, value_w = 0;
      for (const analysis::KernelPageRow& row : s.rows) {
        label_w = std::max(label_w, row.label.size());
        if (row.value.size() <= kShortValue) value_w = std::max(value_w, row.value.size());
      }
      for (const analysis::KernelPageRow& row : s.rows) {
        std::string line =
            row.value.size() <= kShortValue
                ? absl::StrFormat("  %-*s  %*s", static_cast<int>(label_w), row.label,
                                  static_cast<int>(value_w), row.value)
                : absl::StrFormat("  %-*s  %s", static_cast<int>(label_w), row.label, row.value);
        if (row.note.empty()) {
          absl::StrAppend(&out, line, "\n");
        } else {
          // The padded label and value must not be broken or squeezed.
          std::replace(line.begin(), line.end(), ' ', kKeep);
          Wrap(&out, absl::StrCat(line, std::string(2, kKeep), row.note), width, "",
               std::string(label_w + value_w + 6, ' '));
        }
      }
    }
    absl::StrAppend(&out, "\nFindings on this kernel\n");
    if (p.findings.empty()) absl::StrAppend(&out, "  none\n");
    for (const std::string& f : p.findings) Wrap(&out, absl::StrCat("- ", f), width, "  ", "    ");
  }
  return trace::EscapeTerminalText(TrimLineEnds(out), trace::KeepLayout::kNewlinesAndTabs);
}

}  // namespace sightline::exporter
