// sightline export TRACE --format chrome|perfetto -o OUT
//
// Streams a trace into a timeline that opens in chrome://tracing / Perfetto UI
// (chrome: trace-event JSON) or Perfetto UI (perfetto: protobuf TracePacket
// stream). Memory stays bounded by one chunk (see lib/export/chrome_trace.h).
// A trace whose writer died is exported up to its last complete chunk, with a
// warning; --strict makes any damage an error (exit 2).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "lib/export/chrome_trace.h"
#include "lib/export/output_file.h"
#include "lib/export/perfetto_trace.h"
#include "lib/trace/reader.h"
#include "lib/trace/terminal_text.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"
#include "tools/sightline/progress.h"

namespace sightline::cli {
namespace {

int RunExport(const std::vector<std::string>& args) {
  std::string input, output, format;
  bool strict = false;
  ArgScanner scan(args);
  while (!scan.Done()) {
    bool missing = false;
    if (scan.Value("--format", &format, &missing) || scan.Value("-f", &format, &missing)) {
      if (missing) return UsageError("export: --format needs a value (chrome or perfetto)");
      continue;
    }
    if (scan.Value("-o", &output, &missing) || scan.Value("--output", &output, &missing)) {
      if (missing) {
        return UsageError("export: " + scan.last_option() +
                          " needs a non-empty output path (- for stdout)");
      }
      continue;
    }
    const std::string a = scan.Next();
    if (a == "--strict") {
      strict = true;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return UsageError("export: unknown option '" + a + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      return UsageError("export: one trace at a time (got '" + input + "' and '" + a + "')");
    }
  }
  if (input.empty()) return UsageError("export: missing TRACE (usage: sightline export TRACE --format chrome|perfetto -o OUT)");
  if (output.empty()) return UsageError("export: missing -o OUT");
  if (format.empty()) {
    if (absl::EndsWith(output, ".json") || absl::EndsWith(output, ".json.tmp")) {
      format = "chrome";
    } else if (absl::EndsWith(output, ".pftrace") || absl::EndsWith(output, ".perfetto-trace") ||
               absl::EndsWith(output, ".pb")) {
      format = "perfetto";
    } else {
      return UsageError("export: missing --format chrome|perfetto");
    }
  }
  if (format != "chrome" && format != "perfetto") {
    return UsageError("export: unknown format '" + format + "' (expected chrome or perfetto)");
  }

  auto reader = trace::TraceReader::Open(input);
  if (!reader.ok()) return UsageError(std::string(reader.status().message()));
  auto out = exporter::OutputFile::Open(output);
  if (!out.ok()) return UsageError(std::string(out.status().message()));

  ProgressLine progress;
  uint64_t total = (*reader)->integrity().file_bytes;
  exporter::ExportOptions options;
  options.on_chunk = [&](uint64_t pos) { progress.Update(input, pos, total); };
  absl::StatusOr<exporter::ExportStats> stats =
      format == "chrome" ? exporter::ExportChromeTrace(**reader, **out, options)
                         : exporter::ExportPerfettoTrace(**reader, **out, options);
  progress.Finish();
  if (!stats.ok()) return UsageError(std::string(stats.status().message()));
  const trace::Integrity& integrity = (*reader)->integrity();
  if (!integrity.complete) {
    if (strict) {
      return UsageError(input + ": damaged trace (" + integrity.reason + "); not exported (--strict)");
    }
    std::fprintf(stderr, "sightline: warning: %s: %s; exported what was readable\n",
                 trace::EscapeTerminalText(input).c_str(),
                 trace::EscapeTerminalText(integrity.reason).c_str());
  }
  absl::Status closed = (*out)->Close();
  if (!closed.ok()) return UsageError(std::string(closed.message()));
  const std::string skipped =
      stats->events_skipped > 0
          ? "; " + std::to_string(stats->events_skipped) +
                " events without a place on the timeline (no timestamps) not drawn"
          : std::string();
  std::fprintf(stderr,
               "sightline: wrote %s (%s, %llu timeline events, %llu flows, %llu tracks, %.1f MB%s)\n",
               output.c_str(), format == "chrome" ? "Chrome trace JSON" : "Perfetto protobuf",
               static_cast<unsigned long long>(stats->events_written),
               static_cast<unsigned long long>(stats->flows),
               static_cast<unsigned long long>(stats->tracks),
               static_cast<double>(stats->bytes_written) / 1e6, skipped.c_str());
  return kExitOk;
}

}  // namespace

SIGHTLINE_COMMAND("export", "export TRACE --format chrome|perfetto -o OUT [--strict]",
                  "Write a timeline for chrome://tracing or Perfetto UI", RunExport);

}  // namespace sightline::cli
