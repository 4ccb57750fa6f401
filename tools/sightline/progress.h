// tools/sightline/progress.h — "reading x.sltrace: 42% (1.1 of 2.6 GB)" on stderr
// for reads that take more than a second.
//
// Silent for fast reads (nothing is printed before `delay_s`), rate-limited
// to ~4 updates a second, redrawn in place on a terminal ("\r") and printed
// as plain lines every 5 s otherwise (logs stay short). Finish() ends the
// line if anything was printed. Not thread-safe; owned by the CLI thread.
#ifndef SIGHTLINE_TOOLS_SIGHTLINE_PROGRESS_H_
#define SIGHTLINE_TOOLS_SIGHTLINE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace sightline::cli {

class ProgressLine {
 public:
  explicit ProgressLine(double delay_s = 1.0);
  ~ProgressLine() { Finish(); }

  // `what`: the file being read; `done`/`total` bytes (total 0 = unknown).
  void Update(const std::string& what, uint64_t done, uint64_t total);
  void Finish();

  bool printed() const { return printed_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
  Clock::time_point last_;
  double delay_s_;
  bool tty_;
  bool printed_ = false;
  bool open_line_ = false;
};

}  // namespace sightline::cli

#endif  // SIGHTLINE_TOOLS_SIGHTLINE_PROGRESS_H_
