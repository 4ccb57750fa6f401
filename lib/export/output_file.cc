// lib/export/output_file.cc — see output_file.h.
#include "lib/export/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sightline::exporter {

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path,
                                                             size_t buffer_bytes) {
  if (path.empty()) return absl::InvalidArgumentError("empty output path");
  if (buffer_bytes < 4096) buffer_bytes = 4096;
  if (path == "-") {
    return std::unique_ptr<OutputFile>(
        new OutputFile(path, std::string(), STDOUT_FILENO, buffer_bytes));
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": is a directory"));
  }
  std::string temp = absl::StrCat(path, ".tmp-", getpid());
  // Private (0600, whatever the umask), never through a symlink, never an
  // existing file (O_EXCL): the finished file is then renamed over `path`,
  // which replaces a symlink there instead of writing through it.
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0 && fchmod(fd, 0600) != 0) {
    int saved = errno;
    close(fd);
    unlink(temp.c_str());
    errno = saved;
    fd = -1;
  }
  if (fd < 0) {
    // Report the final path: the temporary name is an implementation detail.
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, temp, fd, buffer_bytes));
}

OutputFile::OutputFile(std::string path, std::string temp_path, int fd, size_t buffer_bytes)
    : path_(std::move(path)),
      temp_path_(std::move(temp_path)),
      fd_(fd),
      buffer_(new char[buffer_bytes]),
      capacity_(buffer_bytes) {}

OutputFile::~OutputFile() {
  if (!closed_) {
    if (fd_ >= 0 && fd_ != STDOUT_FILENO) close(fd_);
    if (!temp_path_.empty()) unlink(temp_path_.c_str());
  }
}

void OutputFile::AppendSlow(std::string_view bytes) {
  while (!bytes.empty()) {
    if (used_ == capacity_) FlushBuffer();
    size_t n = std::min(bytes.size(), capacity_ - used_);
    std::memcpy(buffer_.get() + used_, bytes.data(), n);
    used_ += n;
    bytes.remove_prefix(n);
  }
}

void OutputFile::FlushBuffer() {
  size_t done = 0;
  while (done < used_ && error_ == 0) {
    ssize_t n = write(fd_, buffer_.get() + done, used_ - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
      break;
    }
    done += static_cast<size_t>(n);
  }
  bytes_flushed_ += used_;
  used_ = 0;
}

absl::Status OutputFile::Close() {
  if (closed_) {
    return error_ == 0 ? absl::OkStatus()
                       : absl::DataLossError(absl::StrCat("cannot write ", path_, ": ",
                                                          std::strerror(error_)));
  }
  FlushBuffer();
  closed_ = true;
  if (fd_ != STDOUT_FILENO) {
    if (close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    if (error_ == 0 && rename(temp_path_.c_str(), path_.c_str()) != 0) error_ = errno;
    if (error_ != 0) unlink(temp_path_.c_str());
  }
  if (error_ != 0) {
    return absl::DataLossError(
        absl::StrCat("cannot write ", path_, ": ", std::strerror(error_)));
  }
  return absl::OkStatus();
}

}  // namespace sightline::exporter
