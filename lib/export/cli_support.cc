// lib/export/cli_support.cc — see cli_support.h.
#include "lib/export/cli_support.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "lib/export/output_file.h"

namespace sightline::exporter {

absl::Status CheckInputFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a trace file"));
  }
  if (access(path.c_str(), R_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteTextOutput(const std::string& path, std::string_view text) {
  auto out = OutputFile::Open(path.empty() ? "-" : path);
  if (!out.ok()) return out.status();
  (*out)->Append(text);
  return (*out)->Close();
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
    if (Done()) {
      *missing = true;
      return true;
    }
    *value = args_[i_++];
    return true;
  }
  if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=') {
    *value = a.substr(name.size() + 1);
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

}  // namespace sightline::exporter
