// tools/sightline/cli_support.cc — see cli_support.h.
#include "tools/sightline/cli_support.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "lib/export/output_file.h"
#include "lib/trace/input_file.h"
#include "lib/trace/setting_value.h"

namespace sightline::cli {

absl::Status CheckInputFile(const std::string& path) {
  // Opened, not stat()ed: the type is checked on the descriptor, and a FIFO
  // is refused without blocking (lib/trace/input_file.h).
  absl::StatusOr<trace::InputFile> in = trace::OpenInputFile(path);
  if (!in.ok()) return in.status();
  close(in->fd);
  return absl::OkStatus();
}

absl::Status WriteTextOutput(const std::string& path, std::string_view text) {
  auto out = exporter::OutputFile::Open(path);
  if (!out.ok()) return out.status();
  (*out)->Append(text);
  return (*out)->Close();
}

absl::StatusOr<double> ParseNumberOption(std::string_view option, std::string_view text,
                                         double min, double max, bool percent) {
  std::string t(text);
  if (percent && !t.empty() && t.back() == '%') t.pop_back();
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(option), ": '", std::string(text), "' ", std::string(why),
        " (expected a number in [",
        min, ", ", max, "])"));
  };
  if (t.empty()) return refuse("is empty");
  // strtod takes "nan", "inf", hex floats and leading blanks: allow only
  // digits, one point, an exponent and a leading sign.
  for (char c : t) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
          c == '-' || c == '+')) {
      return refuse("is not a finite number");
    }
  }
  double v = 0;
  if (trace::ParseNumberValue(t.c_str(), min, max, &v)) return v;  // the one number parser
  // Refused: say why.
  char* end = nullptr;
  errno = 0;
  v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return refuse("is not a number");
  if (errno == ERANGE || !std::isfinite(v)) return refuse("is not a finite number");
  return refuse("is out of range");
}

absl::StatusOr<uint64_t> ParseCountOption(std::string_view option, std::string_view text,
                                          uint64_t min, uint64_t max) {
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(option), ": '", std::string(text),
                                                   "' ", std::string(why),
                                                   " (expected a whole number in [", min, ", ",
                                                   max, "])"));
  };
  if (text.empty()) return refuse("is empty");
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return refuse("is not a whole number");
  }
  uint64_t v = 0;
  if (!trace::ParseCountValue(std::string(text).c_str(), min, max, &v)) {
    return refuse("is out of range");
  }
  return v;
}

int TextWidth() {
  if (!isatty(STDOUT_FILENO)) return 100;
  int width = 0;
  if (const char* c = std::getenv("COLUMNS")) width = std::atoi(c);
  winsize ws{};
  if (width <= 0 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) width = ws.ws_col;
  if (width <= 0) width = 100;
  return std::clamp(width, 60, 100);
}

bool ArgScanner::Value(std::string_view name, std::string* value, bool* missing) {
  if (Done()) return false;
  const std::string& a = args_[i_];
  if (a == name) {
    ++i_;
    last_option_ = std::string(name);
    // An empty value is no value: `-o ""` must not quietly mean stdout,
    // `--fail-on-regression ""` must not mean 0.
    if (Done() || args_[i_].empty()) {
      *missing = true;
      if (!Done()) ++i_;
      return true;
    }
    *value = args_[i_++];
    return true;
  }
  if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=') {
    last_option_ = std::string(name);
    *value = a.substr(name.size() + 1);
    *missing = value->empty();
    ++i_;
    return true;
  }
  return false;
}

bool ArgScanner::Flag(std::string_view name) {
  if (Done() || args_[i_] != name) return false;
  ++i_;
  return true;
}

bool ArgScanner::OptionalValue(std::string_view name, std::string_view implied,
                               std::string* value) {
  if (Done()) return false;
  const std::string& a = args_[i_];
  if (a == name) {
    *value = std::string(implied);
  } else if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 &&
             a[name.size()] == '=') {
    *value = a.substr(name.size() + 1);
  } else {
    return false;
  }
  last_option_ = std::string(name);
  ++i_;
  return true;
}

std::string ScanReportArgs(const std::string& name, const std::vector<std::string>& args,
                           bool takes_format, const OwnOptionFn& own, ReportArgs* out) {
  ArgScanner scan(args);
  while (!scan.Done()) {
    std::string problem;
    if (own && own(&scan, &problem)) {
      if (!problem.empty()) return problem;
      continue;
    }
    bool missing = false;
    if ((takes_format &&
         (scan.Value("--format", &out->format, &missing) || scan.Value("-f", &out->format, &missing))) ||
        scan.Value("-o", &out->output, &missing) || scan.Value("--output", &out->output, &missing) ||
        scan.Value("--step-range", &out->step_range, &missing) ||
        scan.Value("--window", &out->window, &missing)) {
      if (missing) return name + ": " + scan.last_option() + " needs a non-empty value (see --help)";
      continue;
    }
    std::string a = scan.Next();
    if (a.size() > 1 && a[0] == '-') return name + ": unknown option '" + a + "'";
    out->traces.push_back(a);
  }
  return "";
}

const EnvOption* ScanEnvOption(ArgScanner* scan, const EnvOption* begin, const EnvOption* end,
                               std::string* value, bool* missing) {
  for (const EnvOption* o = begin; o != end; ++o) {
    if (scan->Value(o->name, value, missing) ||
        (o->short_name != nullptr && scan->Value(o->short_name, value, missing))) {
      return o;
    }
  }
  return nullptr;
}

std::string ScanLauncherArgs(const std::string& name, const std::vector<std::string>& args,
                             const EnvOption* begin, const EnvOption* end, const OwnOptionFn& own,
                             const CheckValueFn& check, LauncherArgs* out) {
  ArgScanner scan(args);
  while (!scan.Done()) {
    if (scan.Flag("--")) break;
    if (scan.Flag("-q") || scan.Flag("--quiet")) {
      out->quiet = true;
      out->env.emplace_back("SIGHTLINE_QUIET", "1");
      continue;
    }
    std::string problem;
    if (own && own(&scan, &problem)) {
      if (!problem.empty()) return problem;
      continue;
    }
    if (scan.Peek().empty() || scan.Peek()[0] != '-') break;  // the command starts here
    const std::string a = scan.Peek();
    std::string value;
    bool missing = false;
    const EnvOption* option = ScanEnvOption(&scan, begin, end, &value, &missing);
    if (option == nullptr) return name + ": unknown option '" + a + "'";
    if (missing) return name + ": option '" + scan.last_option() + "' needs a value";
    if (check) problem = check(*option, scan.last_option(), value);
    if (!problem.empty()) return problem;
    out->env.emplace_back(option->variable, value);
  }
  while (!scan.Done()) out->command.push_back(scan.Next());
  if (out->command.empty()) {
    return name + ": no command given (usage: sightline " + name + " [options] -- CMD ARGS...)";
  }
  return "";
}

}  // namespace sightline::cli
