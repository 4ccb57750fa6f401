// lib/export/html_timeline.cc — see html_timeline.h.
#include "lib/export/html_timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/export/demangle.h"
#include "lib/trace/json_writer.h"

namespace sightline::exporter {
namespace {

using analysis::TimelineModel;
using json::JsonWriter;

struct Span {
  uint64_t start, end;
  uint32_t name;  // model string id
};

struct Track {
  std::string name;
  std::string kind;  // "stream" | "nvtx"
  std::vector<Span> spans;  // sorted by start, non-overlapping in practice
};

// Interns model string ids into the page's compact name table.
class NameTable {
 public:
  explicit NameTable(const TimelineModel& m) : model_(m) {}
  uint32_t Index(uint32_t model_id) {
    auto [it, inserted] = index_.try_emplace(model_id, static_cast<uint32_t>(names_.size()));
    if (inserted) names_.push_back(Demangle(model_.String(model_id)));
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  const TimelineModel& model_;
  std::unordered_map<uint32_t, uint32_t> index_;
  std::vector<std::string> names_;
};

// Writes "ev": [start_rel, dur, name, count, ...] with merging (see header).
// start_rel is signed: NVTX ranges may begin before the first GPU activity.
void WriteDecimated(JsonWriter& w, const Track& t, uint64_t origin, uint64_t window,
                    size_t budget, NameTable& names, HtmlDataStats* stats) {
  const uint64_t merge_gap = budget > 0 ? window / budget : 0;
  w.Key("ev").BeginArray();
  size_t i = 0;
  while (i < t.spans.size()) {
    const Span& first = t.spans[i];
    uint64_t start = first.start, end = first.end;
    uint32_t name = first.name;
    uint64_t longest = first.end - first.start;
    uint64_t count = 1;
    size_t j = i + 1;
    // Merge while the next event starts within merge_gap of the block's end
    // and the block stays short relative to the gap (so long events stay exact).
    while (j < t.spans.size() && merge_gap > 0 && t.spans[j].start < end + merge_gap &&
           (end - start) < 4 * merge_gap) {
      const Span& s = t.spans[j];
      end = std::max(end, s.end);
      if (s.end - s.start > longest) {
        longest = s.end - s.start;
        name = s.name;
      }
      ++count;
      ++j;
    }
    w.Int(static_cast<int64_t>(start - origin)).Uint(end - start).Uint(names.Index(name)).Uint(count);
    if (stats) {
      ++stats->blocks;
      if (count > 1) ++stats->merged_blocks;
    }
    i = j;
  }
  w.EndArray();
}

std::string DeviceName(const analysis::DeviceSummary& d) {
  std::string s = absl::StrCat("GPU ", d.id);
  if (d.rank >= 0) absl::StrAppend(&s, " rank ", d.rank);
  if (!d.name.empty()) absl::StrAppend(&s, " (", d.name, ")");
  return s;
}

}  // namespace

void AppendRunData(const TimelineModel& model, const analysis::Report& report,
                   const std::string& label, const HtmlDataOptions& options, std::string* json,
                   HtmlDataStats* stats) {
  HtmlDataStats local;
  if (!stats) stats = &local;
  const uint64_t origin = report.summary.window_start_ns;
  const uint64_t window = std::max<uint64_t>(1, report.summary.window_ns);
  NameTable names(model);

  // ---- timeline tracks ----
  std::vector<Track> tracks;
  for (const analysis::StreamInfo& s : model.streams) {
    Track t;
    const analysis::DeviceTimelineInfo& dev = model.devices[s.device];
    const analysis::TraceSource& src = model.traces[s.trace];
    t.name = absl::StrCat(model.traces.size() > 1 ? absl::StrCat("r", src.rank, " ") : "",
                          "GPU ", dev.device_id, " stream ", s.stream_id);
    t.kind = "stream";
    t.spans.reserve(s.activities.size());
    for (uint32_t a : s.activities) {
      const analysis::GpuActivity& act = model.activities[a];
      t.spans.push_back({act.start_ns, act.end_ns, act.name});
    }
    tracks.push_back(std::move(t));
  }
  for (size_t th = 0; th < model.threads.size(); ++th) {
    const analysis::ThreadInfo& info = model.threads[th];
    std::vector<Track> by_depth;
    for (uint32_t r = info.nvtx_begin; r < info.nvtx_end; ++r) {
      const analysis::NvtxRange& n = model.nvtx_ranges[r];
      size_t depth = std::min<size_t>(n.depth, 7);
      if (by_depth.size() <= depth) by_depth.resize(depth + 1);
      by_depth[depth].spans.push_back({n.start_ns, n.end_ns, n.name});
    }
    for (size_t d = 0; d < by_depth.size(); ++d) {
      Track& t = by_depth[d];
      if (t.spans.empty()) continue;
      const analysis::TraceSource& src = model.traces[info.trace];
      t.name = absl::StrCat(model.traces.size() > 1 ? absl::StrCat("r", src.rank, " ") : "",
                            "NVTX thread ", info.thread_id, d ? absl::StrCat(" L", d) : "");
      t.kind = "nvtx";
      std::sort(t.spans.begin(), t.spans.end(),
                [](const Span& a, const Span& b) { return a.start < b.start; });
      tracks.push_back(std::move(t));
    }
  }
  uint64_t total = 0;
  for (const Track& t : tracks) total += t.spans.size();
  stats->source_events += total;
  stats->tracks += tracks.size();

  JsonWriter w(json, 0);
  w.BeginObject();
  w.Key("label").String(label);
  w.Key("window_ns").Uint(window);
  w.Key("origin_ns").Uint(origin);
  w.Key("tracks").BeginArray();
  for (const Track& t : tracks) {
    size_t budget = total == 0 ? options.min_track_events
                               : std::max(options.min_track_events,
                                          static_cast<size_t>(static_cast<double>(options.max_events) *
                                                              t.spans.size() / total));
    w.BeginObject();
    w.Key("name").String(t.name);
    w.Key("kind").String(t.kind);
    w.Key("events").Uint(t.spans.size());
    WriteDecimated(w, t, origin, window, t.spans.size() > budget ? budget : 0, names, stats);
    w.EndObject();
  }
  w.EndArray();

  // ---- GPU utilization over time, per device ----
  const size_t bins = std::max<size_t>(10, options.util_bins);
  const double bin_ns = static_cast<double>(window) / static_cast<double>(bins);
  w.Key("util_bin_ns").Double(bin_ns);
  w.Key("util").BeginArray();
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const analysis::DeviceTimelineInfo& dev = model.devices[d];
    if (dev.activity_begin == dev.activity_end) continue;  // no GPU work on this device
    std::vector<double> busy(bins, 0.0);
    uint64_t cur_s = 0, cur_e = 0;
    bool open = false;
    // Adds [s, e) to the bins it overlaps. Integer bin edges
    // (origin + window * k / bins) so every step makes progress.
    auto edge = [&](size_t k) {
      return origin + static_cast<uint64_t>(static_cast<unsigned __int128>(window) * k / bins);
    };
    auto flush = [&](uint64_t s, uint64_t e) {
      s = std::max(s, origin);
      e = std::min(e, origin + window);
      if (e <= s) return;
      size_t bin = static_cast<size_t>(static_cast<unsigned __int128>(s - origin) * bins / window);
      while (s < e && bin < bins) {
        uint64_t upto = std::min(e, edge(bin + 1));
        if (upto > s) busy[bin] += static_cast<double>(upto - s);
        s = std::max(s, upto);
        ++bin;
      }
    };
    for (uint32_t i = dev.activity_begin; i < dev.activity_end; ++i) {
      const analysis::GpuActivity& a = model.activities[i];
      if (!open) {
        cur_s = a.start_ns;
        cur_e = a.end_ns;
        open = true;
      } else if (a.start_ns > cur_e) {
        flush(cur_s, cur_e);
        cur_s = a.start_ns;
        cur_e = a.end_ns;
      } else {
        cur_e = std::max(cur_e, a.end_ns);
      }
    }
    if (open) flush(cur_s, cur_e);
    w.BeginObject();
    // Report devices carry the model index they summarize.
    std::string name = absl::StrCat("GPU ", dev.device_id);
    for (const analysis::DeviceSummary& ds : report.summary.devices) {
      if (ds.index == d) name = DeviceName(ds);
    }
    w.Key("device").String(name);
    w.Key("pct").BeginArray();
    for (size_t k = 0; k < bins; ++k) {
      double width = static_cast<double>(edge(k + 1) - edge(k));
      w.Double(width > 0 ? std::min(100.0, std::round(1000.0 * busy[k] / width) / 10.0) : 0.0);
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();

  // ---- device memory over time (-t cuda-memory): the report's step
  // function, times relative to the run's origin ----
  w.Key("memory").BeginArray();
  for (const analysis::MemoryDevice& m : report.memory.devices) {
    w.BeginObject();
    std::string name = absl::StrCat("GPU ", m.id);
    for (const analysis::DeviceSummary& ds : report.summary.devices) {
      if (ds.index == m.device_index) name = DeviceName(ds);
    }
    w.Key("device").String(name);
    w.Key("peak_bytes").Uint(m.peak_bytes);
    w.Key("capacity_bytes").Uint(m.capacity_bytes);
    w.Key("points").BeginArray();
    for (const analysis::MemoryPoint& p : m.timeline) {
      w.BeginArray();
      w.Int(static_cast<int64_t>(p.t_ns - origin));
      w.Uint(p.bytes);
      w.EndArray();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();

  // ---- PM samples (--gpu-metrics): the report's bucket means of the percent
  // quantities, times relative to the run's origin ----
  w.Key("gpu_metrics").BeginArray();
  for (const analysis::GpuMetricsDevice& d : report.gpu_metrics) {
    w.BeginObject();
    w.Key("device").String(absl::StrCat("GPU ", d.device_id,
                                        d.device_name.empty() ? "" : " " + d.device_name));
    w.Key("interval_ns").Double(d.interval_ns);
    w.Key("t").BeginArray();
    for (uint64_t t : d.timeline_ns) w.Int(static_cast<int64_t>(t - origin));
    w.EndArray();
    w.Key("series").BeginArray();
    for (size_t j = 0; j < d.stats.size() && j < d.timeline.size(); ++j) {
      if (d.stats[j].unit != "%") continue;
      w.BeginObject().Key("key").String(d.stats[j].key).Key("label").String(d.stats[j].label);
      w.Key("v").BeginArray();
      for (float v : d.timeline[j]) w.Double(std::isnan(v) ? -1.0 : std::round(v * 10) / 10);
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();

  // ---- kernel breakdown ----
  w.Key("kernels").BeginArray();
  uint64_t other = 0, other_count = 0;
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const analysis::KernelRow& k = report.kernels[i];
    if (i >= options.top_kernels) {
      other += k.total_ns;
      other_count += k.count;
      continue;
    }
    w.BeginObject().Key("name").String(Demangle(k.name)).Key("total_ns").Uint(k.total_ns);
    w.Key("count").Uint(k.count).Key("share_pct").Double(k.share_pct).EndObject();
  }
  if (other_count > 0) {
    double share = 0;
    for (size_t i = options.top_kernels; i < report.kernels.size(); ++i) share += report.kernels[i].share_pct;
    w.BeginObject().Key("name").String(absl::StrCat("other (", report.kernels.size() - options.top_kernels, " kernels)"));
    w.Key("total_ns").Uint(other).Key("count").Uint(other_count).Key("share_pct").Double(share).EndObject();
  }
  w.EndArray();

  // ---- steps ----
  const analysis::StepSummary& st = report.summary.steps;
  w.Key("steps").BeginObject();
  w.Key("source").String(st.source).Key("name").String(st.name);
  w.Key("mean_ns").Double(st.mean_ns).Key("p50_ns").Uint(st.p50_ns).Key("p99_ns").Uint(st.p99_ns);
  w.Key("duration_ns").BeginArray();
  for (const analysis::StepRow& r : st.steps) w.Uint(r.duration_ns);
  w.EndArray();
  w.Key("util_pct").BeginArray();
  for (const analysis::StepRow& r : st.steps) w.Double(std::round(r.gpu_utilization_pct * 10) / 10);
  w.EndArray();
  w.EndObject();

  w.Key("names").BeginArray();
  for (const std::string& n : names.names()) w.String(n);
  w.EndArray();
  w.EndObject();
}

}  // namespace sightline::exporter
