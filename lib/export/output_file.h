// lib/export/output_file.h — a buffered, error-checked output file.
//
// Every exporter streams into an OutputFile: bytes are appended to a fixed
// buffer (default 1 MiB) that is written out with write(2) when full, so an
// export's memory is bounded by the buffer, not by the trace. Errors (cannot
// create, disk full, EIO) are remembered and reported once by Close() as an
// absl::Status naming the path, so callers can append without checking each
// call. Path "-" means standard output; an empty path is an error.
//
// Where the bytes go depends on what `path` names (stat() of the path,
// re-checked with fstat() on the opened descriptor):
//  * nothing, a regular file, or a symlink to one: the file is written to
//    "<path>.tmp-<pid>" (0600, O_EXCL, O_NOFOLLOW) and renamed over `path` by
//    a successful Close(), so a failed or interrupted export never leaves a
//    half-written file under the final name, and a symlink at `path` is
//    replaced, never written through;
//  * a character device or a FIFO (/dev/null, /dev/stdout → a pipe or tty,
//    a named pipe): written in place, opened without O_CREAT/O_TRUNC and
//    never replaced (a FIFO open waits for its reader, as a shell redirect
//    does);
//  * a symlink to our own stdout or stderr (/dev/stdout, /dev/fd/1,
//    /proc/self/fd/2), whatever they are redirected to: that stream (a
//    duplicate of the descriptor), never a replaced link;
//  * a directory, a socket or a block device: refused.
//
// Interrupted exports: SIGTERM, SIGHUP and SIGINT (when the process has not
// installed its own handler) remove every live temporary file before the
// process dies of the signal (see TempFileRegistry in output_file.cc).
#ifndef SIGHTLINE_LIB_EXPORT_OUTPUT_FILE_H_
#define SIGHTLINE_LIB_EXPORT_OUTPUT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sightline::exporter {

class OutputFile {
 public:
  // Creates the temporary file next to `path` (checked at once, so an
  // unwritable destination is reported before any work is done).
  static absl::StatusOr<std::unique_ptr<OutputFile>> Open(const std::string& path,
                                                          size_t buffer_bytes = 1 << 20);
  // The checks of Open() without opening a special file (so probing a FIFO
  // does not hand its reader an empty stream): for regular destinations the
  // temporary file is created and removed again.
  static absl::Status Check(const std::string& path);
  ~OutputFile();  // removes the temporary file unless Close() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void Append(std::string_view bytes) {
    if (bytes.size() <= capacity_ - used_) {
      std::memcpy(buffer_.get() + used_, bytes.data(), bytes.size());
      used_ += bytes.size();
    } else {
      AppendSlow(bytes);
    }
  }
  void Append(char c) {
    if (used_ == capacity_) FlushBuffer();
    buffer_[used_++] = c;
  }

  // Flushes, fsyncs nothing (exports are re-creatable), closes and renames the
  // temporary file to the final path. Idempotent; returns the first error.
  absl::Status Close();

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_flushed_ + used_; }

 private:
  OutputFile(std::string path, std::string temp_path, int fd, size_t buffer_bytes);
  void ForgetTemp();
  void AppendSlow(std::string_view bytes);
  void FlushBuffer();

  std::string path_;
  std::string temp_path_;  // empty for stdout and special files (written in place)
  int temp_slot_ = -1;     // slot in the signal-cleanup registry
  int fd_ = -1;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t used_ = 0;
  uint64_t bytes_flushed_ = 0;
  int error_ = 0;  // first errno seen
  bool closed_ = false;
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_OUTPUT_FILE_H_
