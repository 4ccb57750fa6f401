// tools/sightline/cmd_profile.cc — `sightline profile [options] -- CMD ARGS...`
//
// Runs CMD with libsightline_inject.so injected: sets CUDA_INJECTION64_PATH and
// NVTX_INJECTION64_PATH to the library and maps every option 1:1 onto a
// SIGHTLINE_* variable (lib/collect/config.h documents them). Needs no CUDA
// itself. Forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to the child, exits with the
// child's status (128+N when the child died of signal N), then prints where
// the trace is and a one-screen summary (counts, span, losses).
//
// The library is found through $SIGHTLINE_INJECT_LIB, else next to the
// executable in the build tree (../../injection/) or the install tree
// (../lib/, ../lib64/, .). With $CUDA_HOME set, $CUDA_HOME/lib64 and
// $CUDA_HOME/extras/CUPTI/lib64 are put first on the child's LD_LIBRARY_PATH so
// the injected library loads that install's libcupti.
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "tools/sightline/command.h"

namespace sightline::cli {
namespace {

constexpr const char* kLibName = "libsightline_inject.so";

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string FindInjectionLibrary() {
  if (const char* env = std::getenv("SIGHTLINE_INJECT_LIB"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string dir = ExecutableDir();
  for (const char* rel : {"/../../injection/", "/../lib/", "/../lib64/", "/",
                          "/../injection/"}) {
    std::string candidate = dir + rel + kLibName;
    if (IsFile(candidate)) {
      char resolved[4096];
      if (realpath(candidate.c_str(), resolved) != nullptr) return resolved;
      return candidate;
    }
  }
  return "";
}

struct ProfileOptions {
  std::vector<std::pair<std::string, std::string>> env;  // SIGHTLINE_* to set
  std::string output = "sightline-%p.sltrace";
  bool quiet = false;
  std::vector<std::string> command;
};

// Value-taking options: flag → variable.
struct FlagMap {
  const char* long_name;
  const char* short_name;
  const char* variable;
};
constexpr FlagMap kFlags[] = {
    {"--output", "-o", "SIGHTLINE_OUTPUT"},
    {"--capture-range", nullptr, "SIGHTLINE_CAPTURE"},
    {"--capture-range-end", nullptr, "SIGHTLINE_CAPTURE_END"},
    {"--delay", nullptr, "SIGHTLINE_DELAY"},
    {"--duration", nullptr, "SIGHTLINE_DURATION"},
    {"--trace", "-t", "SIGHTLINE_TRACE"},
    {"--metrics", nullptr, "SIGHTLINE_METRICS"},
    {"--metrics-kernels", nullptr, "SIGHTLINE_METRICS_KERNELS"},
    {"--metrics-launches", nullptr, "SIGHTLINE_METRICS_LAUNCHES"},
    {"--metrics-every", nullptr, "SIGHTLINE_METRICS_EVERY"},
    {"--metrics-replay", nullptr, "SIGHTLINE_METRICS_REPLAY"},
    {"--buffer-kb", nullptr, "SIGHTLINE_BUFFER_KB"},
    {"--buffers", nullptr, "SIGHTLINE_BUFFERS"},
    {"--flush-ms", nullptr, "SIGHTLINE_FLUSH_MS"},
    {"--api-skip", nullptr, "SIGHTLINE_API_SKIP"},
    {"--backtrace-us", nullptr, "SIGHTLINE_BACKTRACE_US"},
};

bool ValidSeconds(const std::string& v) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  return !v.empty() && end != nullptr && *end == '\0' && d >= 0;
}

// Returns an empty string on success, else the usage problem.
std::string ParseArgs(const std::vector<std::string>& args, ProfileOptions* o) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-q" || a == "--quiet") {
      o->quiet = true;
      o->env.emplace_back("SIGHTLINE_QUIET", "1");
      continue;
    }
    if (a.empty() || a[0] != '-') break;  // the command starts here
    std::string name = a, value;
    bool has_value = false;
    size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    const FlagMap* flag = nullptr;
    for (const FlagMap& f : kFlags) {
      if (name == f.long_name || (f.short_name != nullptr && name == f.short_name)) flag = &f;
    }
    if (flag == nullptr) return "profile: unknown option '" + a + "'";
    if (!has_value) {
      if (i + 1 >= args.size()) return "profile: option '" + a + "' needs a value";
      value = args[++i];
    }
    std::string var = flag->variable;
    if (var == "SIGHTLINE_OUTPUT") o->output = value;
    if ((var == "SIGHTLINE_DELAY" || var == "SIGHTLINE_DURATION") && !ValidSeconds(value)) {
      return "profile: " + name + " '" + value + "' is not a number of seconds";
    }
    if (var == "SIGHTLINE_CAPTURE" && value != "cudaProfilerApi" && value != "api" &&
        value != "none" && !(value.rfind("nvtx:", 0) == 0 && value.size() > 5)) {
      return "profile: --capture-range '" + value +
             "' is not one of cudaProfilerApi, nvtx:NAME, api, none";
    }
    if (var == "SIGHTLINE_CAPTURE_END" && value != "repeat" && value != "stop") {
      return "profile: --capture-range-end '" + value + "' is not repeat or stop";
    }
    o->env.emplace_back(var, value);
  }
  for (; i < args.size(); ++i) o->command.push_back(args[i]);
  if (o->command.empty()) return "profile: no command given (usage: sightline profile [options] -- CMD ARGS...)";
  return "";
}

pid_t g_child = 0;

void ForwardSignal(int signo) {
  if (g_child > 0) kill(g_child, signo);
}

// Traces this run may have written: the pattern with the child's pid, or any
// file matching it with %p/%r/%h/%q wildcarded (launchers spawn other pids).
std::vector<std::string> TracesWritten(const std::string& pattern, pid_t child) {
  std::vector<std::string> out;
  trace::PatternContext ctx;
  ctx.pid = static_cast<uint32_t>(child);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  ctx.host = host;
  ctx.rank = trace::RankFromEnvironment(nullptr);
  std::string exact = trace::ExpandOutputPattern(pattern, ctx);
  auto with_ext = [](std::string p) {
    size_t slash = p.rfind('/');
    size_t dot = p.rfind('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) p += ".sltrace";
    return p;
  };
  exact = with_ext(exact);
  if (IsFile(exact)) {
    out.push_back(exact);
    return out;
  }
  std::string wild;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[i + 1];
      if (c == 'p' || c == 'r' || c == 'h') {
        wild += '*';
        ++i;
        continue;
      }
      if (c == 'q') {
        size_t close = pattern.find('}', i);
        if (close != std::string::npos) {
          wild += '*';
          i = close;
          continue;
        }
      }
      if (c == '%') {
        wild += '%';
        ++i;
        continue;
      }
    }
    wild += pattern[i];
  }
  wild = with_ext(wild);
  glob_t g;
  if (glob(wild.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    globfree(&g);
  }
  return out;
}

void PrintSummary(const std::string& path) {
  auto reader_or = trace::TraceReader::Open(path);
  if (!reader_or.ok()) {
    std::fprintf(stderr, "sightline: %s\n", std::string(reader_or.status().message()).c_str());
    return;
  }
  trace::EventVisitor ignore;
  absl::Status s = (*reader_or)->ReadAll(ignore);
  const trace::Integrity& in = (*reader_or)->integrity();
  const TraceHeaderData& h = (*reader_or)->header();
  std::fprintf(stderr, "sightline: trace %s (%s%s)\n", path.c_str(),
               in.complete ? "complete" : "INCOMPLETE: ",
               in.complete ? "" : in.reason.c_str());
  for (const DeviceInfo& d : h.devices) {
    std::fprintf(stderr, "  device %u: %s (cc %u.%u, %u SMs)\n", d.id, d.name.c_str(),
                 d.cc_major, d.cc_minor, d.sm_count);
  }
  double span_ms = in.last_ns > in.first_ns ? (in.last_ns - in.first_ns) / 1e6 : 0;
  std::fprintf(stderr, "  span %.3f ms, %llu events:", span_ms,
               static_cast<unsigned long long>(in.events_read));
  for (int k = 1; k < kNumEventKinds; ++k) {
    if (in.counts[k] == 0) continue;
    std::fprintf(stderr, " %s %llu", EventKindName(static_cast<EventKind>(k)),
                 static_cast<unsigned long long>(in.counts[k]));
  }
  std::fprintf(stderr, "\n  lost: %llu (CUPTI dropped %llu, buffers refused %llu, "
               "invalid timestamps %llu)\n",
               static_cast<unsigned long long>(in.losses.total()),
               static_cast<unsigned long long>(in.losses.cupti_dropped_records),
               static_cast<unsigned long long>(in.losses.queue_dropped_buffers),
               static_cast<unsigned long long>(in.losses.invalid_timestamps));
  std::fprintf(stderr, "  next: sightline analyze %s\n", path.c_str());
}

int RunProfile(const std::vector<std::string>& args) {
  ProfileOptions o;
  std::string problem = ParseArgs(args, &o);
  if (!problem.empty()) return UsageError(problem);
  std::string lib = FindInjectionLibrary();
  if (lib.empty() || !IsFile(lib)) {
    return UsageError("profile: cannot find " + std::string(kLibName) +
                      " next to the sightline executable (" + ExecutableDir() +
                      "); set SIGHTLINE_INJECT_LIB to its path");
  }
  for (const auto& [var, value] : o.env) setenv(var.c_str(), value.c_str(), 1);
  // libcupti must match the CUDA install: with $CUDA_HOME set, its CUPTI
  // comes first on the child's library path.
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home != nullptr && *cuda_home) {
    std::string path = std::string(cuda_home) + "/lib64:" + cuda_home + "/extras/CUPTI/lib64";
    if (const char* old = std::getenv("LD_LIBRARY_PATH"); old != nullptr && *old) {
      path += std::string(":") + old;
    }
    setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  }
  setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
  if (const char* out = std::getenv("SIGHTLINE_OUTPUT"); out != nullptr && *out != '\0') {
    o.output = out;
  }

  std::vector<char*> argv;
  for (std::string& a : o.command) argv.push_back(a.data());
  argv.push_back(nullptr);
  int err_pipe[2];
  if (pipe(err_pipe) != 0) return UsageError("profile: pipe failed");
  fcntl(err_pipe[1], F_SETFD, FD_CLOEXEC);
  pid_t child = fork();
  if (child < 0) return UsageError(std::string("profile: fork failed: ") + std::strerror(errno));
  if (child == 0) {
    close(err_pipe[0]);
    execvp(argv[0], argv.data());
    int e = errno;
    ssize_t n = write(err_pipe[1], &e, sizeof(e));
    (void)n;
    _exit(127);
  }
  close(err_pipe[1]);
  int exec_errno = 0;
  if (read(err_pipe[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
    close(err_pipe[0]);
    waitpid(child, nullptr, 0);
    return UsageError("profile: cannot run '" + o.command[0] + "': " + std::strerror(exec_errno));
  }
  close(err_pipe[0]);
  g_child = child;
  struct sigaction sa = {};
  sa.sa_handler = &ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(s, &sa, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status)
                               : (WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1);
  if (!o.quiet) {
    if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "sightline: '%s' was killed by signal %d\n", o.command[0].c_str(),
                   WTERMSIG(status));
    }
    std::vector<std::string> traces = TracesWritten(o.output, child);
    if (traces.empty()) {
      std::fprintf(stderr,
                   "sightline: no trace was written for pattern '%s' (did the program use "
                   "CUDA?)\n",
                   o.output.c_str());
    }
    size_t shown = 0;
    for (const std::string& t : traces) {
      if (++shown > 8) {
        std::fprintf(stderr, "sightline: ... and %zu more traces\n", traces.size() - 8);
        break;
      }
      PrintSummary(t);
    }
  }
  return code;
}

}  // namespace

SIGHTLINE_COMMAND("profile",
                  "profile [-o PATH] [--capture-range cudaProfilerApi|nvtx:NAME|api] "
                  "[--capture-range-end repeat|stop] [--delay S] [--duration S] "
                  "[-t cuda,cuda-driver,nvtx,nccl,backtrace,graph] [--metrics SET] "
                  "[--metrics-replay kernel|spread|sequence] [--metrics-launches K] [--metrics-every N] "
                  "[--buffer-kb N] [--flush-ms N] [--backtrace-us N] [-q] -- CMD [ARGS...]",
                  "Run a command with the CUPTI collector injected and write a trace",
                  RunProfile);

}  // namespace sightline::cli
