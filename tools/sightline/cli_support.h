// tools/sightline/cli_support.h — CLI plumbing shared by the subcommands: the
// one argument scanner (every cmd_*.cc parses its arguments with ArgScanner),
// option values, input checks with clear messages, output writing.
#ifndef SIGHTLINE_TOOLS_SIGHTLINE_CLI_SUPPORT_H_
#define SIGHTLINE_TOOLS_SIGHTLINE_CLI_SUPPORT_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sightline::cli {

// Checks that `path` names a readable regular file; the error names it and
// says what is wrong ("no such file", "is a directory", ...).
absl::Status CheckInputFile(const std::string& path);

// Writes `text` to `path` ("-" = stdout) through OutputFile (atomic rename
// of regular files, special files written in place, errors name the path).
// Commands pass "-" when no -o was given; an explicit empty -o is refused by
// ArgScanner before it gets here.
absl::Status WriteTextOutput(const std::string& path, std::string_view text);

// Strict number of an option, parsed by lib/trace/setting_value.h (the one
// number parser of settings and options): the whole text is a finite decimal number
// (an optional trailing '%' when `percent` is set) inside [min, max]. NaN,
// inf, 1e309 (overflow), empty text, trailing junk and out-of-range values
// are refused with a message that names the option and the range, e.g.
// "--fail-on-regression: 'nan' is not a finite number".
absl::StatusOr<double> ParseNumberOption(std::string_view option, std::string_view text,
                                         double min, double max, bool percent = false);
// The same for whole numbers (no sign, no fraction, no exponent).
absl::StatusOr<uint64_t> ParseCountOption(std::string_view option, std::string_view text,
                                          uint64_t min, uint64_t max);

// Width for text output: $COLUMNS or the terminal's width when stdout is a
// tty, clamped to [60, 100]; 100 otherwise.
int TextWidth();

// The argument scanner of every subcommand: "--name VALUE", "--name=VALUE",
// "-x VALUE", bare flags, and whatever is left (traces, a command) by Next().
class ArgScanner {
 public:
  explicit ArgScanner(const std::vector<std::string>& args) : args_(args) {}
  bool Done() const { return i_ >= args_.size(); }
  const std::string& Peek() const { return args_[i_]; }
  // If the current argument is `name` (or `name=...`), consumes it and its
  // value. Sets *missing when the value is absent or empty (last_option()
  // names the option for the message).
  bool Value(std::string_view name, std::string* value, bool* missing);
  const std::string& last_option() const { return last_option_; }
  bool Flag(std::string_view name);
  // "--name" alone (*value = `implied`) or "--name=VALUE" (may be empty).
  bool OptionalValue(std::string_view name, std::string_view implied, std::string* value);
  std::string Next() { return args_[i_++]; }

 private:
  const std::vector<std::string>& args_;
  size_t i_ = 0;
  std::string last_option_;
};

// A subcommand's own options, tried before the shared ones: true when it
// took the current argument (a non-empty *problem ends the scan with it).
using OwnOptionFn = std::function<bool(ArgScanner* scan, std::string* problem)>;

// analyze, diff and report: "TRACE... [--format/-f F] [-o/--output FILE]
// [--step-range NAME] [--window SPEC]" plus their own options. The caller
// sets the defaults first.
struct ReportArgs {
  std::vector<std::string> traces;
  std::string format = "text";  // only when `takes_format`
  std::string output = "-";
  std::string step_range;
  std::string window;
};
// Returns "" or the usage problem ("NAME: --window needs a non-empty value").
std::string ScanReportArgs(const std::string& name, const std::vector<std::string>& args,
                           bool takes_format, const OwnOptionFn& own, ReportArgs* out);

// Options of `profile` and `monitor` that set one SIGHTLINE_* variable each
// (the variable's value is the option's; lib/collect/config.h and
// lib/monitor/monitor_config.h parse it).
struct EnvOption {
  const char* name;        // "--capture-range"
  const char* short_name;  // "-t", or nullptr
  const char* variable;    // "SIGHTLINE_CAPTURE"
};
// If the current argument is one of `options` (ArgScanner::Value under
// either name), consumes it and its value and returns the option; *missing
// as for Value. nullptr (nothing consumed) when it is none of them.
const EnvOption* ScanEnvOption(ArgScanner* scan, const EnvOption* begin, const EnvOption* end,
                               std::string* value, bool* missing);

// `profile` and `monitor`: "[OPTIONS] [--] CMD ARGS...".
struct LauncherArgs {
  std::vector<std::pair<std::string, std::string>> env;  // SIGHTLINE_* to set
  bool quiet = false;                                     // -q / --quiet
  std::vector<std::string> command;
};
// A table option's value checked: "" when fine, else the problem.
using CheckValueFn = std::function<std::string(const EnvOption& option, const std::string& name,
                                               const std::string& value)>;
// Scans -q/--quiet (SIGHTLINE_QUIET=1), `own`, then the EnvOption table into
// *out until "--" or the first word that is not an option: the command.
// Returns "" or the usage problem ("NAME: unknown option '--x'").
std::string ScanLauncherArgs(const std::string& name, const std::vector<std::string>& args,
                             const EnvOption* begin, const EnvOption* end, const OwnOptionFn& own,
                             const CheckValueFn& check, LauncherArgs* out);

}  // namespace sightline::cli

#endif  // SIGHTLINE_TOOLS_SIGHTLINE_CLI_SUPPORT_H_
