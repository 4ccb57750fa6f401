// tools/sightline/progress.cc — see progress.h.
#include "tools/sightline/progress.h"

#include <unistd.h>

#include <cstdio>

namespace sightline::cli {

ProgressLine::ProgressLine(double delay_s)
    : start_(Clock::now()), last_(start_), delay_s_(delay_s), tty_(isatty(STDERR_FILENO) != 0) {}

void ProgressLine::Update(const std::string& what, uint64_t done, uint64_t total) {
  Clock::time_point now = Clock::now();
  double since_start = std::chrono::duration<double>(now - start_).count();
  if (since_start < delay_s_) return;
  double since_last = std::chrono::duration<double>(now - last_).count();
  if (printed_ && since_last < (tty_ ? 0.25 : 5.0)) return;
  last_ = now;
  printed_ = true;
  double mb_done = static_cast<double>(done) / 1e6;
  char line[512];
  if (total > 0) {
    std::snprintf(line, sizeof(line), "sightline: reading %s: %3.0f%% (%.1f of %.1f MB, %.0f s)",
                  what.c_str(), 100.0 * static_cast<double>(done) / static_cast<double>(total),
                  mb_done, static_cast<double>(total) / 1e6, since_start);
  } else {
    std::snprintf(line, sizeof(line), "sightline: reading %s: %.1f MB (%.0f s)", what.c_str(),
                  mb_done, since_start);
  }
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", line);
    open_line_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
  std::fflush(stderr);
}

void ProgressLine::Finish() {
  if (open_line_) {
    std::fprintf(stderr, "\n");
    open_line_ = false;
  }
}

}  // namespace sightline::cli
