// lib/export/output_file.cc — see output_file.h.
#include "lib/export/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "lib/trace/input_file.h"

namespace sightline::exporter {

namespace {

// Live temporary files, removed by a fatal SIGTERM/SIGHUP/SIGINT. Fixed
// slots so the handler touches no allocator and takes no lock: a slot's path
// is written before its state is published (release), and the handler only
// reads published slots.
constexpr int kTempSlots = 16;
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled or cleared, 2 live
  char path[PATH_MAX];
};
TempSlot g_temp_slots[kTempSlots];
constexpr int kCleanupSignals[] = {SIGTERM, SIGHUP, SIGINT};
struct sigaction g_previous[3];
std::once_flag g_handlers_once;

void RemoveTempFilesAndDie(int sig) {
  for (TempSlot& slot : g_temp_slots) {
    if (slot.state.load(std::memory_order_acquire) == 2) unlink(slot.path);
  }
  // Die of the signal as the process would have without us (the exit status
  // a shell or a supervisor sees stays "killed by SIGTERM").
  for (size_t i = 0; i < 3; ++i) {
    if (kCleanupSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  }
  raise(sig);
}

void InstallCleanupHandlers() {
  std::call_once(g_handlers_once, [] {
    for (size_t i = 0; i < 3; ++i) {
      struct sigaction current;
      if (sigaction(kCleanupSignals[i], nullptr, &current) != 0) continue;
      // A handler the program installed (or an ignored signal) stays as it is.
      if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
      g_previous[i] = current;
      struct sigaction sa = {};
      sa.sa_handler = RemoveTempFilesAndDie;
      sigemptyset(&sa.sa_mask);
      for (int s : kCleanupSignals) sigaddset(&sa.sa_mask, s);
      sa.sa_flags = SA_RESETHAND;
      sigaction(kCleanupSignals[i], &sa, nullptr);
    }
  });
}

int RegisterTemp(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  InstallCleanupHandlers();
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (g_temp_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      std::memcpy(g_temp_slots[i].path, path.c_str(), path.size() + 1);
      g_temp_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;  // more than kTempSlots open exports: the extras are not cleaned up
}

void UnregisterTemp(int slot) {
  if (slot < 0) return;
  g_temp_slots[slot].state.store(1, std::memory_order_release);
  g_temp_slots[slot].state.store(0, std::memory_order_release);
}

enum class Destination { kReplace, kInPlace, kStdout, kStderr };

bool SameFile(const struct stat& a, int fd) {
  struct stat b;
  return fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// What `path` names decides how it is written (see output_file.h).
absl::StatusOr<Destination> Classify(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty output path (use - for stdout)");
  struct stat st, lst;
  if (stat(path.c_str(), &st) != 0) return Destination::kReplace;  // new file (or dangling link)
  // A link to our own stdout/stderr (/dev/stdout, /dev/fd/1, /proc/self/fd/2)
  // means that stream, even when it was redirected to a regular file:
  // replacing the link (as root, /dev/stdout itself) is never wanted.
  if (lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    if (SameFile(st, STDOUT_FILENO)) return Destination::kStdout;
    if (SameFile(st, STDERR_FILENO)) return Destination::kStderr;
  }
  if (S_ISREG(st.st_mode)) return Destination::kReplace;
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", path, ": is a directory"));
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return Destination::kInPlace;
  return absl::InvalidArgumentError(absl::StrCat("cannot write ", path, ": not a regular file (",
                                                 trace::FileTypeName(st.st_mode), ")"));
}

absl::Status CannotWrite(const std::string& path, int err) {
  return absl::PermissionDeniedError(
      absl::StrCat("cannot write ", path, ": ", std::strerror(err)));
}

int CreateTemp(const std::string& temp) {
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
  return fd;
}

}  // namespace

absl::Status OutputFile::Check(const std::string& path) {
  if (path == "-") return absl::OkStatus();
  absl::StatusOr<Destination> where = Classify(path);
  if (!where.ok()) return where.status();
  if (*where == Destination::kStdout || *where == Destination::kStderr) return absl::OkStatus();
  if (*where == Destination::kInPlace) {
    if (access(path.c_str(), W_OK) != 0) return CannotWrite(path, errno);
    return absl::OkStatus();
  }
  std::string temp = absl::StrCat(path, ".tmp-", getpid());
  int fd = CreateTemp(temp);
  if (fd < 0) return CannotWrite(path, errno);
  close(fd);
  unlink(temp.c_str());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path,
                                                             size_t buffer_bytes) {
  if (buffer_bytes < 4096) buffer_bytes = 4096;
  if (path == "-") {
    return std::unique_ptr<OutputFile>(
        new OutputFile(path, std::string(), STDOUT_FILENO, buffer_bytes));
  }
  absl::StatusOr<Destination> where = Classify(path);
  if (!where.ok()) return where.status();
  if (*where == Destination::kStdout || *where == Destination::kStderr) {
    int fd = fcntl(*where == Destination::kStdout ? STDOUT_FILENO : STDERR_FILENO,
                   F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return CannotWrite(path, errno);
    return std::unique_ptr<OutputFile>(new OutputFile(path, std::string(), fd, buffer_bytes));
  }
  if (*where == Destination::kInPlace) {
    // No O_CREAT, no O_TRUNC: a device or FIFO is written, never replaced.
    int fd;
    do {
      fd = open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return CannotWrite(path, errno);
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
      return std::unique_ptr<OutputFile>(new OutputFile(path, std::string(), fd, buffer_bytes));
    }
    // Swapped for a regular file between stat and open: nothing was written
    // (no O_TRUNC); fall through to the replace path.
    close(fd);
  }
  std::string temp = absl::StrCat(path, ".tmp-", getpid());
  int fd = CreateTemp(temp);
  if (fd < 0) return CannotWrite(path, errno);  // the temporary name is a detail
  std::unique_ptr<OutputFile> out(new OutputFile(path, temp, fd, buffer_bytes));
  out->temp_slot_ = RegisterTemp(temp);
  return out;
}

void OutputFile::ForgetTemp() {
  UnregisterTemp(temp_slot_);
  temp_slot_ = -1;
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
  ForgetTemp();
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
    if (!temp_path_.empty()) {
      if (error_ == 0 && rename(temp_path_.c_str(), path_.c_str()) != 0) error_ = errno;
      if (error_ != 0) unlink(temp_path_.c_str());
      ForgetTemp();
    }
  }
  if (error_ != 0) {
    return absl::DataLossError(
        absl::StrCat("cannot write ", path_, ": ", std::strerror(error_)));
  }
  return absl::OkStatus();
}

}  // namespace sightline::exporter
