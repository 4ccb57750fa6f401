// lib/export/html_timeline.h — the data behind the HTML report's charts,
// computed from a timeline model and its report, sized for the browser.
//
// Timeline: one track per CUDA stream (kernels, copies, memsets) and one per
// (thread, NVTX nesting depth <= 7). Each track is decimated to a budget
// (`max_events` shared by all tracks in proportion to their event counts,
// at least `min_track_events` each): neighbouring events closer than
// window / budget are merged into one block (itself at most 4 x that gap
// long) that carries the number of events it stands for and the name of its
// longest member. Every track is thus bounded by about 1.25 x budget + 1
// blocks whatever the trace size, so a 1 M-event
// trace yields a page that loads and redraws quickly; zooming in on a merged
// block shows it as "N ops" (exact events are in the Perfetto export).
//
// Also: GPU-utilization-over-time per device (busy fraction of each of
// `util_bins` equal bins of the global window), the kernel-time breakdown
// (top kernels + "other"), step durations with their GPU utilization.
#ifndef SIGHTLINE_LIB_EXPORT_HTML_TIMELINE_H_
#define SIGHTLINE_LIB_EXPORT_HTML_TIMELINE_H_

#include <cstddef>
#include <string>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"

namespace sightline::exporter {

struct HtmlDataOptions {
  size_t max_events = 150000;    // all timeline tracks together
  size_t min_track_events = 2000;
  size_t util_bins = 240;
  size_t top_kernels = 12;
};

// Statistics of one build (tests check the decimation bound).
struct HtmlDataStats {
  uint64_t source_events = 0;  // activities + NVTX ranges considered
  uint64_t blocks = 0;         // timeline blocks emitted
  uint64_t merged_blocks = 0;  // blocks standing for more than one event
  size_t tracks = 0;
};

// Appends one run's data as a JSON object to *json.
void AppendRunData(const analysis::TimelineModel& model, const analysis::Report& report,
                   const std::string& label, const HtmlDataOptions& options, std::string* json,
                   HtmlDataStats* stats = nullptr);

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_HTML_TIMELINE_H_
