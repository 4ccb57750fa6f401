// lib/trace/sink.h — where framed trace bytes go: a file, a unix socket, memory.
//
// Sinks are used from one thread (the collector's writer thread, or a tool).
// They never throw and never abort: errors are returned and described by
// last_error(). This header and its implementation depend on libc only, so
// the injected library can use them without abseil or protobuf.
#ifndef SIGHTLINE_LIB_TRACE_SINK_H_
#define SIGHTLINE_LIB_TRACE_SINK_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace sightline::trace {

class Sink {
 public:
  virtual ~Sink() = default;
  // Writes `size` bytes in full (retrying on EINTR / short writes). A frame is
  // always passed in one call so that a crash leaves a whole frame or a
  // detectable partial tail. Returns false on error.
  virtual bool Write(const void* data, size_t size) = 0;
  // Makes written bytes durable/visible (fdatasync for files; no-op otherwise).
  virtual bool Sync() { return true; }
  // Final close. Returns false on error. Idempotent.
  virtual bool Close() = 0;
  // "file /path/x.sltrace", "unix socket /tmp/s", "memory".
  virtual std::string Describe() const = 0;
  virtual std::string last_error() const = 0;
};

struct FileSinkOptions {
  // Replace an existing regular file at the path (it is unlinked first; a
  // symlink at the path is never followed either way).
  bool overwrite = false;
  // Ownership between processes of one run: the new file is held with an
  // exclusive flock(2) for as long as the sink (or a forked copy of its
  // descriptor) is open, and an existing file that another process holds
  // that way is never replaced, even with `overwrite` (the open fails with
  // *in_use set). A file nobody holds is a finished trace of an earlier run.
  bool lock = false;
};

// Creates `path` with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600. Frames are
// appended as they come, so a crash leaves a readable prefix. On failure
// returns nullptr and sets *error to a message naming the path and the cause;
// *in_use (when given) says whether the cause was a live writer's lock.
std::unique_ptr<Sink> OpenFileSink(const std::string& path, const FileSinkOptions& options,
                                   std::string* error, bool* in_use = nullptr);

// True when another open file description holds an exclusive flock(2) on the
// regular file at `path` (a live sightline writer). Never follows a symlink;
// false when the path is missing or not a regular file.
bool FileLockedByWriter(const std::string& path);

// Connects to a `sightline serve` unix-domain stream socket at `path` and
// sends the same framing as a file.
std::unique_ptr<Sink> OpenUnixSocketSink(const std::string& path, std::string* error);

// Appends to *out (tests, fuzzing, benchmarks). `out` must outlive the sink.
std::unique_ptr<Sink> OpenMemorySink(std::string* out);

// Opens a destination spec: "unix:PATH" → socket sink, anything else → file.
std::unique_ptr<Sink> OpenSink(const std::string& spec, const FileSinkOptions& options,
                               std::string* error, bool* in_use = nullptr);

// Values substituted into output path patterns.
struct PatternContext {
  uint32_t pid = 0;
  std::string host;
  int32_t rank = -1;  // -1 when no launcher variable is set; %r then expands to "0"
  // Lookup for %q{VAR}; defaults to getenv when null.
  const char* (*getenv_fn)(const char*) = nullptr;
};

// Expands %p (pid), %h (host name), %r (rank, from RANK / OMPI_COMM_WORLD_RANK /
// SLURM_PROCID / PMI_RANK; "0" when none), %q{VAR} (environment variable VAR,
// empty when unset) and %% (a literal %). Unknown %x sequences are kept as is.
std::string ExpandOutputPattern(std::string_view pattern, const PatternContext& context);

// Rank from the usual launcher variables, or -1.
int32_t RankFromEnvironment(const char* (*getenv_fn)(const char*) = nullptr);

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_SINK_H_
