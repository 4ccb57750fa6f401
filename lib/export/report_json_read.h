// lib/export/report_json_read.h — reads a saved `sightline analyze --format
// json` report back, so `sightline diff` can compare a run against a stored
// baseline report (CI keeps a small JSON, not a trace).
//
// Only what the diff uses is restored: traces[].path, summary.window_ns,
// summary.devices[] (id, rank, name, gpu_utilization_pct), summary.steps
// (count, mean/p50/p99), kernels[] (name, class, count, total_ns, share_pct)
// and findings[] (rule, scope, title, severity, est_saving_ns/pct).
// The parser is a small strict RFC 8259 reader (depth-limited, no
// allocation beyond the document) returning a Status that names the file and
// the byte offset of the problem.
#ifndef SIGHTLINE_LIB_EXPORT_REPORT_JSON_READ_H_
#define SIGHTLINE_LIB_EXPORT_REPORT_JSON_READ_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "lib/analysis/report.h"

namespace sightline::exporter {

// True when `bytes` looks like a JSON document (first non-space byte '{').
bool LooksLikeJson(std::string_view bytes);

// Parses `text` (named `name` in messages) as a sightline.report.v1 document.
absl::StatusOr<analysis::Report> ReportFromJson(const std::string& name, std::string_view text);

// Reads and parses a file.
absl::StatusOr<analysis::Report> ReadReportJson(const std::string& path);

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_REPORT_JSON_READ_H_
