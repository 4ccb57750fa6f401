// tools/sightline/trace_inputs.h — TRACE arguments of analyze, report and diff.
//
// One argument can name a set of traces: the traces of one run are one file
// per process (`sightline profile -o run.sltrace` writes run.sltrace for the
// command and run.<pid>.sltrace for every other traced process of the run),
// so a user passes the directory or a glob:
//   * a directory → every regular *.sltrace file in it (sorted by name);
//   * an argument with glob characters (* ? [) that names no file → its
//     matches (for quoted globs; the shell expands unquoted ones);
//   * anything else → itself (checked later as an input file).
// In a set of several traces, traces without GPU work (no kernel, copy,
// memset, sync, NCCL operation or CUDA call: launchers, workers, crashed
// helpers) are left out, each with a note; a set with none left is an error.
#ifndef SIGHTLINE_TOOLS_SIGHTLINE_TRACE_INPUTS_H_
#define SIGHTLINE_TOOLS_SIGHTLINE_TRACE_INPUTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sightline::cli {

struct TraceSet {
  std::vector<std::string> paths;  // what to analyze
  std::vector<std::string> notes;  // "run.123.sltrace: no GPU work, left out"
};

// Expands one TRACE argument (rules above). Errors name the argument.
absl::StatusOr<TraceSet> ExpandTraceArgument(const std::string& arg);

// Expands every argument and concatenates the sets (notes printed to stderr
// unless `quiet`).
absl::StatusOr<std::vector<std::string>> ExpandTraceArguments(
    const std::vector<std::string>& args, bool quiet = false);

// True when the trace at `path` holds GPU work (rules above). Reads it whole
// (unreadable → true: the analysis reports the problem).
bool TraceHasGpuWork(const std::string& path);

}  // namespace sightline::cli

#endif  // SIGHTLINE_TOOLS_SIGHTLINE_TRACE_INPUTS_H_
