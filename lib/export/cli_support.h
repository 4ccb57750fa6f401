// lib/export/cli_support.h — small helpers shared by the report-producing
// subcommands of the CLI (analyze, diff, report): argument scanning, input
// checks with clear messages, progress display and output writing.
#ifndef SIGHTLINE_LIB_EXPORT_CLI_SUPPORT_H_
#define SIGHTLINE_LIB_EXPORT_CLI_SUPPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace sightline::exporter {

// Checks that `path` names a readable regular file; the error names it and
// says what is wrong ("no such file", "is a directory", ...).
absl::Status CheckInputFile(const std::string& path);

// Writes `text` to `path` ("-" or "" = stdout) through OutputFile (atomic
// rename, errors name the path).
absl::Status WriteTextOutput(const std::string& path, std::string_view text);

// Width for text output: $COLUMNS or the terminal's width when stdout is a
// tty, clamped to [60, 100]; 100 otherwise.
int TextWidth();

// Simple flag scanner: "--name VALUE" or "--name=VALUE".
class ArgScanner {
 public:
  explicit ArgScanner(const std::vector<std::string>& args) : args_(args) {}
  bool Done() const { return i_ >= args_.size(); }
  const std::string& Peek() const { return args_[i_]; }
  // If the current argument is `name` (or `name=...`), consumes it and its
  // value. Sets *missing when the value is absent.
  bool Value(std::string_view name, std::string* value, bool* missing);
  bool Flag(std::string_view name);
  std::string Next() { return args_[i_++]; }

 private:
  const std::vector<std::string>& args_;
  size_t i_ = 0;
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_CLI_SUPPORT_H_
