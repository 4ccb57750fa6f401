// lib/trace/input_file.cc — see input_file.h.
#include "lib/trace/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace sightline::trace {

const char* FileTypeName(mode_t mode) {
  if (S_ISREG(mode)) return "regular file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISLNK(mode)) return "symbolic link";
  return "unknown type";
}

absl::StatusOr<InputFile> OpenInputFile(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty input path");
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int err = errno;
    std::string message = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
    // ENXIO: a socket, or a FIFO opened for writing only; report the type.
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a regular file (", FileTypeName(st.st_mode), ")"));
    }
    return absl::InvalidArgumentError(message);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot stat: ", std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a trace file"));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file (", FileTypeName(st.st_mode), ")"));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int err = errno;
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": fcntl: ", std::strerror(err)));
  }
  return InputFile{fd, static_cast<uint64_t>(st.st_size)};
}

absl::StatusOr<std::string> ReadInputPrefix(const std::string& path, size_t max_bytes) {
  absl::StatusOr<InputFile> in = OpenInputFile(path);
  if (!in.ok()) return in.status();
  std::string out;
  out.resize(static_cast<size_t>(std::min<uint64_t>(in->size, max_bytes)));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(in->fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(in->fd);
      return absl::DataLossError(absl::StrCat(path, ": read error: ", std::strerror(err)));
    }
    if (n == 0) break;  // shrank since fstat
    done += static_cast<size_t>(n);
  }
  ::close(in->fd);
  out.resize(done);
  return out;
}

}  // namespace sightline::trace
