// Sinks (file, unix socket, memory) and output path patterns. libc only.
#include "lib/trace/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace sightline::trace {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// Writes all of [data, data+size) to fd; retries EINTR and short writes.
// Sockets use send(MSG_NOSIGNAL) so a vanished reader never raises SIGPIPE in
// the profiled process.
bool WriteFully(int fd, bool is_socket, const void* data, size_t size, std::string* error) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = is_socket ? ::send(fd, p, size, MSG_NOSIGNAL) : ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = ErrnoText(errno);
      return false;
    }
    if (n == 0) {
      *error = "write returned 0";
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

class FdSink : public Sink {
 public:
  FdSink(int fd, bool is_socket, std::string description)
      : fd_(fd), is_socket_(is_socket), description_(std::move(description)) {}
  ~FdSink() override { Close(); }

  bool Write(const void* data, size_t size) override {
    if (fd_ < 0) {
      last_error_ = description_ + ": write after close";
      return false;
    }
    std::string cause;
    if (!WriteFully(fd_, is_socket_, data, size, &cause)) {
      last_error_ = description_ + ": write failed: " + cause;
      return false;
    }
    return true;
  }

  bool Sync() override {
    if (fd_ < 0 || is_socket_) return true;
    if (::fdatasync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
      last_error_ = description_ + ": fdatasync failed: " + ErrnoText(errno);
      return false;
    }
    return true;
  }

  bool Close() override {
    if (fd_ < 0) return closed_ok_;
    int fd = fd_;
    fd_ = -1;
    if (is_socket_) ::shutdown(fd, SHUT_WR);
    closed_ok_ = ::close(fd) == 0;
    if (!closed_ok_) last_error_ = description_ + ": close failed: " + ErrnoText(errno);
    return closed_ok_;
  }

  std::string Describe() const override { return description_; }
  std::string last_error() const override { return last_error_; }

 private:
  int fd_;
  bool is_socket_;
  bool closed_ok_ = true;
  std::string description_;
  std::string last_error_;
};

class MemorySink : public Sink {
 public:
  explicit MemorySink(std::string* out) : out_(out) {}
  bool Write(const void* data, size_t size) override {
    if (closed_) return false;
    out_->append(static_cast<const char*>(data), size);
    return true;
  }
  bool Close() override {
    closed_ = true;
    return true;
  }
  std::string Describe() const override { return "memory"; }
  std::string last_error() const override { return closed_ ? "memory: write after close" : ""; }

 private:
  std::string* out_;
  bool closed_ = false;
};

const char* DefaultGetenv(const char* name) { return std::getenv(name); }

}  // namespace

bool FileLockedByWriter(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool locked = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    locked = rc != 0 && errno == EWOULDBLOCK;
  }
  ::close(fd);  // releases the probe's own lock, if it got one
  return locked;
}

std::unique_ptr<Sink> OpenFileSink(const std::string& path, const FileSinkOptions& options,
                                   std::string* error, bool* in_use) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (in_use != nullptr) *in_use = false;
  if (path.empty()) {
    *error = "empty output path";
    return nullptr;
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      *error = path + ": is a symbolic link; refusing to write through it";
      return nullptr;
    }
    if (!S_ISREG(st.st_mode)) {
      *error = path + ": exists and is not a regular file";
      return nullptr;
    }
    if (options.lock && FileLockedByWriter(path)) {
      *error = path + ": is being written by another process";
      if (in_use != nullptr) *in_use = true;
      return nullptr;
    }
    if (!options.overwrite) {
      *error = path + ": already exists (choose another name or allow overwriting)";
      return nullptr;
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      *error = path + ": cannot remove existing file: " + ErrnoText(errno);
      return nullptr;
    }
  }
  // O_EXCL|O_NOFOLLOW: if anything (a symlink included) appeared at the path
  // since the check above, the open fails instead of following it.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    if (err == EEXIST) {
      *error = path + ": already exists (created concurrently?)";
      // Another process of the run claimed it between our check and create.
      if (in_use != nullptr && options.lock) *in_use = true;
    } else if (err == ELOOP) {
      *error = path + ": is a symbolic link; refusing to write through it";
    } else {
      *error = path + ": cannot create: " + ErrnoText(err);
    }
    return nullptr;
  }
  // The mode passed to open() is filtered by the umask; make it exactly 0600.
  if (::fchmod(fd, 0600) != 0) {
    *error = path + ": cannot set mode 0600: " + ErrnoText(errno);
    ::close(fd);
    ::unlink(path.c_str());
    return nullptr;
  }
  // Held until the descriptor's last copy closes; a fresh O_EXCL file cannot
  // be locked by anyone else yet, so this only fails on filesystems without
  // flock (then the file is written unlocked).
  if (options.lock) ::flock(fd, LOCK_EX | LOCK_NB);
  return std::make_unique<FdSink>(fd, false, "file " + path);
}

std::unique_ptr<Sink> OpenUnixSocketSink(const std::string& path, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    *error = "unix socket path '" + path + "' is empty or longer than " +
             std::to_string(sizeof(addr.sun_path) - 1) + " bytes";
    return nullptr;
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = "unix socket " + path + ": socket() failed: " + ErrnoText(errno);
    return nullptr;
  }
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    *error = "unix socket " + path + ": cannot connect: " + ErrnoText(errno);
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<FdSink>(fd, true, "unix socket " + path);
}

std::unique_ptr<Sink> OpenMemorySink(std::string* out) { return std::make_unique<MemorySink>(out); }

std::unique_ptr<Sink> OpenSink(const std::string& spec, const FileSinkOptions& options,
                               std::string* error, bool* in_use) {
  if (in_use != nullptr) *in_use = false;
  constexpr std::string_view kUnix = "unix:";
  constexpr std::string_view kFile = "file:";
  std::string_view s(spec);
  if (s.substr(0, kUnix.size()) == kUnix) {
    return OpenUnixSocketSink(std::string(s.substr(kUnix.size())), error);
  }
  if (s.substr(0, kFile.size()) == kFile) {
    return OpenFileSink(std::string(s.substr(kFile.size())), options, error, in_use);
  }
  return OpenFileSink(spec, options, error, in_use);
}

int32_t RankFromEnvironment(const char* (*getenv_fn)(const char*)) {
  if (getenv_fn == nullptr) getenv_fn = DefaultGetenv;
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"}) {
    const char* value = getenv_fn(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(value, &end, 10);
    if (errno == 0 && *end == '\0' && v >= 0 && v <= INT32_MAX) return static_cast<int32_t>(v);
  }
  return -1;
}

std::string ExpandOutputPattern(std::string_view pattern, const PatternContext& context) {
  auto getenv_fn = context.getenv_fn ? context.getenv_fn : DefaultGetenv;
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c != '%' || i + 1 == pattern.size()) {
      out.push_back(c);
      continue;
    }
    char next = pattern[i + 1];
    switch (next) {
      case 'p':
        out += std::to_string(context.pid != 0 ? context.pid : static_cast<uint32_t>(::getpid()));
        ++i;
        break;
      case 'h': {
        if (!context.host.empty()) {
          out += context.host;
        } else {
          char host[256] = {};
          if (::gethostname(host, sizeof(host) - 1) == 0) out += host;
        }
        ++i;
        break;
      }
      case 'r':
        out += std::to_string(context.rank >= 0 ? context.rank : 0);
        ++i;
        break;
      case '%':
        out.push_back('%');
        ++i;
        break;
      case 'q': {
        size_t close = pattern.find('}', i + 2);
        if (i + 2 < pattern.size() && pattern[i + 2] == '{' && close != std::string_view::npos) {
          std::string name(pattern.substr(i + 3, close - (i + 3)));
          const char* value = name.empty() ? nullptr : getenv_fn(name.c_str());
          if (value != nullptr) out += value;
          i = close;
        } else {
          out.push_back('%');  // malformed %q: kept as is
        }
        break;
      }
      default:
        out.push_back('%');  // unknown %x: kept as is
        break;
    }
  }
  return out;
}

}  // namespace sightline::trace
