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
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>

#include "lib/trace/reader.h"
#include "lib/trace/setting_value.h"
#include "lib/trace/sink.h"
#include "tools/sightline/child_process.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"

namespace sightline::cli {
namespace {


struct ProfileOptions : LauncherArgs {
  std::string output = "sightline-%p.sltrace";
  std::string python_backtrace;  // "" = default (on for Python commands)
  std::string pytorch;           // "" / "off" = no op ranges; "ops" | "shapes"
};

// Value-taking options: flag → variable.
constexpr EnvOption kFlags[] = {
    {"--output", "-o", "SIGHTLINE_OUTPUT"},
    {"--capture-range", nullptr, "SIGHTLINE_CAPTURE"},
    {"--capture-range-end", nullptr, "SIGHTLINE_CAPTURE_END"},
    {"--capture-skip", nullptr, "SIGHTLINE_CAPTURE_SKIP"},
    {"--capture-count", nullptr, "SIGHTLINE_CAPTURE_COUNT"},
    {"--delay", nullptr, "SIGHTLINE_DELAY"},
    {"--duration", nullptr, "SIGHTLINE_DURATION"},
    {"--trace", "-t", "SIGHTLINE_TRACE"},
    {"--metrics", nullptr, "SIGHTLINE_METRICS"},
    {"--metrics-kernels", nullptr, "SIGHTLINE_METRICS_KERNELS"},
    {"--metrics-launches", nullptr, "SIGHTLINE_METRICS_LAUNCHES"},
    {"--metrics-every", nullptr, "SIGHTLINE_METRICS_EVERY"},
    {"--metrics-sequences", nullptr, "SIGHTLINE_METRICS_SEQUENCES"},
    {"--metrics-replay-top", nullptr, "SIGHTLINE_METRICS_REPLAY_TOP"},
    {"--metrics-replay", nullptr, "SIGHTLINE_METRICS_REPLAY"},
    {"--metrics-range", nullptr, "SIGHTLINE_METRICS_RANGE"},
    {"--gpu-metrics-devices", nullptr, "SIGHTLINE_GPU_METRICS"},
    {"--gpu-metrics-frequency", nullptr, "SIGHTLINE_GPU_METRICS_FREQUENCY"},
    {"--buffer-kb", nullptr, "SIGHTLINE_BUFFER_KB"},
    {"--buffers", nullptr, "SIGHTLINE_BUFFERS"},
    {"--flush-ms", nullptr, "SIGHTLINE_FLUSH_MS"},
    {"--api-skip", nullptr, "SIGHTLINE_API_SKIP"},
    {"--backtrace-us", nullptr, "SIGHTLINE_BACKTRACE_US"},
};

// Finite seconds in [0, 1e7] (116 days): "inf", "1e309" and "nan" are refused.
bool ValidSeconds(const std::string& v) {
  double d = 0;
  return trace::ParseNumberValue(v.c_str(), 0, 1e7, &d);
}

// all | none | N[,N...] (CUDA device ordinals), as the collector accepts.
bool ValidGpuMetricsDevices(const std::string& v) {
  return v == "all" || v == "none" || trace::ParseCountList(v.c_str(), 0, 1023, nullptr);
}

// Returns an empty string on success, else the usage problem.
std::string ParseArgs(const std::vector<std::string>& args, ProfileOptions* o) {
  auto own = [o](ArgScanner* scan, std::string* problem) {
    std::string v;
    if (scan->OptionalValue("--python-backtrace", "on", &v)) {
      if (v == "cuda") v = "on";  // nsys's spelling
      if (v != "on" && v != "off" && v != "gil") {
        *problem = "profile: --python-backtrace '" + v + "' is not on, off or gil";
      }
      o->python_backtrace = v;
      o->env.emplace_back("SIGHTLINE_PYTHON_BACKTRACE", v);
      return true;
    }
    if (scan->OptionalValue("--gpu-metrics", "all", &v)) {
      if (!ValidGpuMetricsDevices(v)) {
        *problem = "profile: --gpu-metrics '" + v +
                   "' is not all, none or a list of CUDA device ordinals (0,1,...)";
      }
      o->env.emplace_back("SIGHTLINE_GPU_METRICS", v);
      return true;
    }
    if (scan->OptionalValue("--pytorch", "ops", &v)) {
      if (v == "autograd-nvtx" || v == "on") v = "ops";
      if (v == "autograd-shapes-nvtx") v = "shapes";
      if (v != "ops" && v != "shapes" && v != "off") {
        *problem = "profile: --pytorch '" + v + "' is not ops, shapes or off";
      }
      o->pytorch = v;
      return true;
    }
    return false;
  };
  auto check = [o](const EnvOption& option, const std::string& name,
                   const std::string& value) -> std::string {
    const std::string var = option.variable;
    if (var == "SIGHTLINE_OUTPUT") o->output = value;
    if ((var == "SIGHTLINE_DELAY" || var == "SIGHTLINE_DURATION") && !ValidSeconds(value)) {
      return "profile: " + name + " '" + value + "' is not a number of seconds";
    }
    if (var == "SIGHTLINE_CAPTURE" && value != "cudaProfilerApi" && value != "api" &&
        value != "none" && !(value.rfind("nvtx:", 0) == 0 && value.size() > 5)) {
      return "profile: --capture-range '" + value +
             "' is not one of cudaProfilerApi, nvtx:NAME, api, none";
    }
    uint64_t count = 0;
    if ((var == "SIGHTLINE_CAPTURE_SKIP" || var == "SIGHTLINE_CAPTURE_COUNT") &&
        !trace::ParseCountValue(value.c_str(), 0, 100000000, &count)) {
      // The collector's range (lib/collect/config.cc): a larger count was
      // accepted here and then refused by the collector with a warning.
      return "profile: " + name + " '" + value + "' is not a count (0..100000000)";
    }
    if (var == "SIGHTLINE_METRICS_SEQUENCES" &&
        !trace::ParseCountValue(value.c_str(), 1, 8, &count)) {
      // The collector's range (lib/collect/config.cc).
      return "profile: " + name + " '" + value + "' is not a count (1..8)";
    }
    if (var == "SIGHTLINE_METRICS_REPLAY_TOP" &&
        !trace::ParseCountValue(value.c_str(), 0, 64, &count)) {
      return "profile: " + name + " '" + value + "' is not a count (0..64)";
    }
    if (var == "SIGHTLINE_METRICS_RANGE" && value != "graph" &&
        !(value.rfind("nvtx:", 0) == 0 && value.size() > 5)) {
      return "profile: --metrics-range '" + value + "' is not nvtx:NAME or graph";
    }
    if (var == "SIGHTLINE_GPU_METRICS" && !ValidGpuMetricsDevices(value)) {
      return "profile: " + name + " '" + value +
             "' is not all, none or a list of CUDA device ordinals (0,1,...)";
    }
    if (var == "SIGHTLINE_GPU_METRICS_FREQUENCY" &&
        !trace::ParseCountValue(value.c_str(), 100, 100000, &count)) {
      return "profile: " + name + " '" + value +
             "' is not a sampling frequency in Hz (100..100000)";
    }
    if (var == "SIGHTLINE_CAPTURE_END" && value != "repeat" && value != "stop") {
      return "profile: --capture-range-end '" + value + "' is not repeat or stop";
    }
    return "";
  };
  std::string problem =
      ScanLauncherArgs("profile", args, std::begin(kFlags), std::end(kFlags), own, check, o);
  if (!problem.empty()) return problem;
  bool range = false, metrics = false, gpu_metrics = false, sequences = false, sequence = false,
       replay_top = false;
  for (const auto& [variable, value] : o->env) {
    range = range || variable == "SIGHTLINE_METRICS_RANGE";
    sequences = sequences || variable == "SIGHTLINE_METRICS_SEQUENCES";
    replay_top = replay_top || variable == "SIGHTLINE_METRICS_REPLAY_TOP";
    if (variable == "SIGHTLINE_METRICS_REPLAY") sequence = value == "sequence";
    if (variable == "SIGHTLINE_METRICS") metrics = !value.empty() && value != "none";
    if (variable == "SIGHTLINE_GPU_METRICS") gpu_metrics = value != "none";
  }
  if (gpu_metrics && metrics) {
    return "profile: --gpu-metrics cannot be combined with --metrics (PM sampling and the range "
           "profiler need the same performance monitors)";
  }
  if (range && !metrics) {
    return "profile: --metrics-range needs --metrics SET (the metrics to measure over the range)";
  }
  if (sequences && (!metrics || !sequence)) {
    return "profile: --metrics-sequences needs --metrics SET --metrics-replay sequence";
  }
  if (replay_top && (!metrics || !sequence)) {
    return "profile: --metrics-replay-top needs --metrics SET --metrics-replay sequence";
  }
  return "";
}


// "SIGHTLINE_SESSION_PID=<the child's pid>", written in the child between
// fork and exec. The command is the run's first process; every other traced
// process (its workers, tools it execs) writes a per-process file instead of
// replacing the command's trace (config.h ChooseOutputPath). The buffer is
// reserved before fork: only async-signal-safe work after it.
struct SessionVar {
  char text[64] = "SIGHTLINE_SESSION_PID=";
  static void WritePid(void* arg) {
    char* out = static_cast<SessionVar*>(arg)->text + sizeof("SIGHTLINE_SESSION_PID=") - 1;
    char digits[24];
    int nd = 0;
    for (unsigned long v = static_cast<unsigned long>(getpid()); v != 0 || nd == 0; v /= 10) {
      digits[nd++] = static_cast<char>('0' + v % 10);
    }
    for (int k = 0; k < nd; ++k) out[k] = digits[nd - 1 - k];
    out[nd] = '\0';
  }
};

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
  if (IsRegularFile(exact)) {
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
               "invalid timestamps %llu",
               static_cast<unsigned long long>(in.losses.total()),
               static_cast<unsigned long long>(in.losses.cupti_dropped_records),
               static_cast<unsigned long long>(in.losses.queue_dropped_buffers),
               static_cast<unsigned long long>(in.losses.invalid_timestamps));
  if (in.losses.untraced_kernels_lost > 0) {
    std::fprintf(stderr, ", kernels run untraced in metric passes without a launch seen %llu",
                 static_cast<unsigned long long>(in.losses.untraced_kernels_lost));
  }
  if (in.losses.gpu_metric_samples_dropped > 0) {
    std::fprintf(stderr, ", GPU metric samples missing %llu",
                 static_cast<unsigned long long>(in.losses.gpu_metric_samples_dropped));
  }
  std::fprintf(stderr, ")\n");
  std::fprintf(stderr, "  next: sightline analyze %s\n", path.c_str());
}

// What the traced processes of this run appended to SIGHTLINE_MANIFEST
// (collector.cc AppendManifest): one entry per process, the last line wins.
struct TracedProcess {
  pid_t pid = 0;
  std::string state;  // start, done, empty, off
  uint64_t gpu_records = 0, events = 0;
  std::string path;
};

std::vector<TracedProcess> ReadManifest(const std::string& path) {
  std::vector<TracedProcess> out;
  FILE* f = path.empty() ? nullptr : std::fopen(path.c_str(), "re");
  if (f == nullptr) return out;
  char line[4608];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string l(line);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    std::vector<std::string> fields;
    size_t begin = 0;
    for (int i = 0; i < 4; ++i) {
      size_t tab = l.find('\t', begin);
      if (tab == std::string::npos) break;
      fields.push_back(l.substr(begin, tab - begin));
      begin = tab + 1;
    }
    if (fields.size() != 4) continue;
    TracedProcess p;
    p.state = fields[0];
    p.pid = static_cast<pid_t>(std::strtol(fields[1].c_str(), nullptr, 10));
    p.gpu_records = std::strtoull(fields[2].c_str(), nullptr, 10);
    p.events = std::strtoull(fields[3].c_str(), nullptr, 10);
    p.path = l.substr(begin);
    bool merged = false;
    for (TracedProcess& q : out) {
      if (q.pid == p.pid) {
        q = p;
        merged = true;
      }
    }
    if (!merged) out.push_back(p);
  }
  std::fclose(f);
  return out;
}

// A private directory holding the manifest, removed at the end.
struct Manifest {
  std::string dir, path;
  ~Manifest() {
    if (!path.empty()) unlink(path.c_str());
    if (!dir.empty()) rmdir(dir.c_str());
  }
  bool Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/sightline-run.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) return false;  // mode 0700
    dir = buf.data();
    std::string file = dir + "/manifest";
    int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    close(fd);
    path = file;
    return true;
  }
};

bool Alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// Traced processes that outlive the command (compile workers, daemons) are
// waited for up to SIGHTLINE_PROFILE_WAIT seconds (default 15) so their
// traces are listed complete.
void WaitForStragglers(const std::string& manifest, bool quiet) {
  double wait_s = 15;
  if (const char* w = std::getenv("SIGHTLINE_PROFILE_WAIT"); w != nullptr && *w != '\0') {
    trace::ParseNumberValue(w, 0, 3600, &wait_s);  // else the default
  }
  bool announced = false;
  for (int tick = 0; tick <= static_cast<int>(wait_s * 10); ++tick) {
    std::vector<pid_t> running;
    for (const TracedProcess& p : ReadManifest(manifest)) {
      if (p.state == "start" && Alive(p.pid)) running.push_back(p.pid);
    }
    if (running.empty()) return;
    if (!announced && !quiet) {
      std::string pids;
      for (pid_t p : running) pids += " " + std::to_string(p);
      std::fprintf(stderr, "sightline: waiting up to %gs for %zu traced process(es) still running:%s\n",
                   wait_s, running.size(), pids.c_str());
      announced = true;
    }
    usleep(100000);
  }
}

// "sightline: 2 traced processes wrote traces: ..." then a summary of each
// (the command's own first, then by GPU records), and the processes that
// recorded no GPU work (their traces were removed).
void ListTraces(std::vector<TracedProcess> processes, pid_t child) {
  std::vector<TracedProcess> kept, empty;
  for (const TracedProcess& p : processes) {
    if (p.state == "done" || p.state == "start") kept.push_back(p);
    if (p.state == "empty") empty.push_back(p);
  }
  std::stable_sort(kept.begin(), kept.end(), [&](const TracedProcess& a, const TracedProcess& b) {
    if ((a.pid == child) != (b.pid == child)) return a.pid == child;
    return a.gpu_records > b.gpu_records;
  });
  if (kept.empty()) {
    std::fprintf(stderr, "sightline: no traced process recorded GPU work; no trace kept\n");
  } else if (kept.size() > 1) {
    std::fprintf(stderr, "sightline: %zu traced processes wrote traces (analyze them together "
                 "with `sightline analyze FILE...` or pick one):\n", kept.size());
    for (const TracedProcess& p : kept) {
      std::fprintf(stderr, "  pid %d%s: %s (%llu GPU records)%s\n", static_cast<int>(p.pid),
                   p.pid == child ? " (the command)" : "", p.path.c_str(),
                   static_cast<unsigned long long>(p.gpu_records),
                   p.state == "start" ? (Alive(p.pid) ? " still running" : " ended without "
                                         "finishing its trace")
                                      : "");
    }
  }
  if (!empty.empty()) {
    std::string pids;
    for (size_t i = 0; i < empty.size() && i < 12; ++i) pids += " " + std::to_string(empty[i].pid);
    if (empty.size() > 12) pids += " ...";
    std::fprintf(stderr, "sightline: %zu process(es) initialised CUDA but recorded no GPU work; "
                 "no trace kept for them (pid%s)\n", empty.size(), pids.c_str());
  }
  size_t shown = 0;
  for (const TracedProcess& p : kept) {
    if (++shown > 8) {
      std::fprintf(stderr, "sightline: ... and %zu more traces\n", kept.size() - 8);
      break;
    }
    if (p.state == "start" && Alive(p.pid)) continue;  // being written
    PrintSummary(p.path);
  }
}

int RunProfile(const std::vector<std::string>& args) {
  ProfileOptions o;
  std::string problem = ParseArgs(args, &o);
  if (!problem.empty()) return UsageError(problem);
  std::string lib = InjectionLibrary("profile", &problem);
  if (lib.empty()) return UsageError(problem);
  // Python stacks: on by default when the command is a Python interpreter
  // (an explicit flag or SIGHTLINE_PYTHON_BACKTRACE in the environment wins).
  if (o.python_backtrace.empty() && std::getenv("SIGHTLINE_PYTHON_BACKTRACE") == nullptr &&
      IsPythonCommand(o.command[0])) {
    o.env.emplace_back("SIGHTLINE_PYTHON_BACKTRACE", "on");
  }
  if (!o.pytorch.empty() && o.pytorch != "off") {
    std::string hook = FindPythonHookDir();
    if (hook.empty()) {
      return UsageError("profile: --pytorch: cannot find share/sightline/python/sitecustomize.py "
                        "near the sightline executable (" + ExecutableDir() +
                        "); set SIGHTLINE_PYTHON_DIR to its directory");
    }
    PreparePythonHook(hook, o.pytorch);
  }
  for (const auto& [var, value] : o.env) setenv(var.c_str(), value.c_str(), 1);
  PrepareInjectionEnvironment(lib);
  if (const char* out = std::getenv("SIGHTLINE_OUTPUT"); out != nullptr && *out != '\0') {
    o.output = out;
  }

  // Every traced process of the run reports its trace here (collector.cc).
  Manifest manifest;
  if (manifest.Create()) {
    setenv("SIGHTLINE_MANIFEST", manifest.path.c_str(), 1);
  } else {
    unsetenv("SIGHTLINE_MANIFEST");
  }

  // The child's environment: ours plus SIGHTLINE_SESSION_PID=<its pid>,
  // written into a reserved slot after fork (no allocation there).
  unsetenv("SIGHTLINE_SESSION_PID");
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  SessionVar session;
  envp.push_back(session.text);
  envp.push_back(nullptr);
  std::string error;
  pid_t child = StartCommand(o.command, envp.data(), &SessionVar::WritePid, &session, &error);
  if (child < 0) return UsageError("profile: " + error);
  ForwardSignalsTo(child, {SIGINT, SIGTERM, SIGHUP, SIGQUIT});
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int code = ExitCodeOf(status);
  WaitForStragglers(manifest.path, o.quiet);
  if (!o.quiet) {
    if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "sightline: '%s' was killed by signal %d\n", o.command[0].c_str(),
                   WTERMSIG(status));
    }
    std::vector<TracedProcess> processes = ReadManifest(manifest.path);
    if (processes.empty()) {
      // No manifest lines (the environment was scrubbed on the way, or an
      // older library): look for files matching the pattern.
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
    } else {
      ListTraces(processes, child);
    }
  }
  return code;
}

}  // namespace

SIGHTLINE_COMMAND("profile",
                  "profile [-o PATH] [--capture-range cudaProfilerApi|nvtx:NAME|api] "
                  "[--capture-range-end repeat|stop] [--capture-skip N] [--capture-count K] "
                  "[--delay S] [--duration S] "
                  "[-t cuda,cuda-driver,cuda-memory,nvtx,nccl,backtrace,python,graph-launches] [--metrics SET] "
                  "[--python-backtrace[=on|off|gil]] [--pytorch[=ops|shapes|off]] "
                  "[--metrics-replay kernel|spread|sequence] [--metrics-launches K] [--metrics-every N] "
                  "[--metrics-sequences N] [--metrics-replay-top K] [--metrics-range nvtx:NAME|graph] [--gpu-metrics[=all|N,...]] "
                  "[--gpu-metrics-frequency HZ] "
                  "[--buffer-kb N] [--flush-ms N] [--backtrace-us N] [-q] -- CMD [ARGS...]",
                  "Run a command with the CUPTI collector injected and write a trace",
                  RunProfile);

}  // namespace sightline::cli
