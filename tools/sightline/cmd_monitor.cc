// sightline monitor [options] -- CMD [ARGS...]
//
// Runs CMD with the collector injected in monitor mode (SIGHTLINE_MODE=monitor,
// lib/monitor/monitor_config.h): no activity tracing; step times from NVTX
// step ranges/markers, NVML metrics, an optional Prometheus/OpenMetrics
// endpoint, and an anomaly detector that captures the next K steps. Every
// finished capture is announced on a private events file; this command
// analyzes it at once and prints its findings (the trace stays on disk).
// Flags map 1:1 onto SIGHTLINE_* variables, as for `sightline profile`.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/analyze.h"
#include "lib/analysis/baseline_compare.h"
#include "lib/export/report_render.h"
#include "lib/trace/setting_value.h"
#include "lib/trace/terminal_text.h"
#include "tools/sightline/child_process.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"

extern char** environ;

namespace sightline::cli {
namespace {


constexpr EnvOption kFlags[] = {
    {"--output", "-o", "SIGHTLINE_OUTPUT"},
    {"--metrics-listen", nullptr, "SIGHTLINE_METRICS_LISTEN"},
    {"--step-range", nullptr, "SIGHTLINE_STEP_RANGE"},
    {"--interval-ms", nullptr, "SIGHTLINE_MONITOR_INTERVAL_MS"},
    {"--capture-steps", nullptr, "SIGHTLINE_CAPTURE_STEPS"},
    {"--capture-max-s", nullptr, "SIGHTLINE_CAPTURE_MAX_S"},
    {"--max-captures", nullptr, "SIGHTLINE_MAX_CAPTURES"},
    {"--baseline-capture", nullptr, "SIGHTLINE_BASELINE_CAPTURE"},
    {"--flight-recorder", nullptr, "SIGHTLINE_FLIGHT_RECORDER_S"},
    {"--flight-recorder-mb", nullptr, "SIGHTLINE_FLIGHT_RECORDER_MB"},
    {"--cooldown", nullptr, "SIGHTLINE_ANOMALY_COOLDOWN_S"},
    {"--anomaly-p", nullptr, "SIGHTLINE_ANOMALY_P"},
    {"--anomaly-mad-k", nullptr, "SIGHTLINE_ANOMALY_MAD_K"},  // retired: a warning says so
    {"--anomaly-min-pct", nullptr, "SIGHTLINE_ANOMALY_MIN_PCT"},
    {"--anomaly-steps", nullptr, "SIGHTLINE_ANOMALY_STEPS"},
    {"--anomaly-warmup", nullptr, "SIGHTLINE_ANOMALY_WARMUP"},
    {"--job", nullptr, "SIGHTLINE_JOB"},
    {"--devices", nullptr, "SIGHTLINE_MONITOR_DEVICES"},
    {"--trace", "-t", "SIGHTLINE_TRACE"},
};

// "" (default: for Python commands), "on" (any command, e.g. a shell script
// that starts Python), "off": PyTorch allocator gauges through the Python hook.
std::string ParseArgs(const std::vector<std::string>& args, LauncherArgs* o,
                      std::string* pytorch_memory) {
  auto own = [pytorch_memory](ArgScanner* scan, std::string* problem) {
    std::string v;
    bool missing = false;
    if (scan->Value("--pytorch-memory", &v, &missing)) {
      bool on = true;
      if (missing) {
        *problem = "monitor: --pytorch-memory needs on or off";
      } else if (!trace::ParseBoolValue(v.c_str(), &on)) {
        *problem = "monitor: --pytorch-memory '" + v + "' is not a boolean (" +
                   trace::BoolValueWords() + ")";
      }
      *pytorch_memory = on ? "on" : "off";
      return true;
    }
    return false;
  };
  return ScanLauncherArgs("monitor", args, std::begin(kFlags), std::end(kFlags), own, nullptr, o);
}


std::vector<std::string> Split(const std::string& line, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = line.find(sep, start);
    out.push_back(line.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

struct Tally {
  int anomalies = 0;
  int captures = 0;
  // Each process's baseline capture (by pid), for its later captures.
  std::map<std::string, analysis::Report> baselines;
};

// "capture\tPID\tINDEX\tKIND\tSTEPS\tTRACE\tMESSAGE\tWINDOW": analyze the
// trace's window WINDOW (the collector's index of the window it opened for
// capture INDEX; older agents wrote no WINDOW: INDEX then) now.
void OnCapture(const std::vector<std::string>& f, bool quiet, Tally* tally) {
  if (f.size() < 7) return;
  const std::string& trace = f[5];
  // Every field came from the monitored process (or its trace): escaped.
  auto esc = [](const std::string& s) { return trace::EscapeTerminalText(s); };
  const std::string index = esc(f[2]), pid = esc(f[1]), shown_trace = esc(trace);
  std::fprintf(stderr, "sightline: capture #%s of pid %s (%s: %s), %s steps -> %s\n",
               index.c_str(), pid.c_str(), esc(f[3]).c_str(), esc(f[6]).c_str(),
               esc(f[4]).c_str(), shown_trace.c_str());
  if (f[3] == "baseline_rejected") {
    std::fprintf(stderr, "sightline: capture #%s: not kept as the baseline (its steps were off "
                 "the detector's level)\n", index.c_str());
    return;
  }
  // This capture's window only: the trace holds every capture of the process,
  // and the unrecorded time between them is not GPU idle time (capture #2
  // of an H200 run read "gpu_idle 95.7 %" over both windows and the gap).
  analysis::AnalysisOptions options;
  options.window = "capture:" + (f.size() >= 8 && !f[7].empty() ? f[7] : f[2]);
  absl::StatusOr<analysis::Report> report = analysis::Analyze({trace}, options);
  if (!report.ok()) {
    std::fprintf(stderr, "sightline: capture #%s could not be analyzed: %s\n", index.c_str(),
                 esc(std::string(report.status().message())).c_str());
    return;
  }
  if (report->summary.scope != "time") {
    // The window is not in the trace (a window the program opened itself
    // shifted the numbering, or the capture was cut): the whole trace would
    // count the unrecorded time between captures as idle. Say so instead.
    std::fprintf(stderr,
                 "sightline: capture #%s: its window was not found in %s; not analysed (see "
                 "sightline info)\n",
                 index.c_str(), shown_trace.c_str());
    return;
  }
  if (f[3] == "baseline") {
    const analysis::StepSummary& s = report->summary.steps;
    std::fprintf(stderr,
                 "sightline: baseline capture #%s of pid %s: %llu steps, step %.3f ms, GPU busy "
                 "%.0f %% of the step; later captures are compared with it\n",
                 index.c_str(), pid.c_str(), static_cast<unsigned long long>(s.count),
                 s.p50_ns / 1e6, s.mean_gpu_utilization_pct);
    tally->baselines[f[1]] = *std::move(report);
    return;
  }
  // Without a baseline, the report's order; with one, the findings that
  // explain the change first (baseline_compare.h FindingsByChange).
  std::vector<const analysis::Finding*> order;
  for (const analysis::Finding& finding : report->findings) order.push_back(&finding);
  if (auto base = tally->baselines.find(f[1]); base != tally->baselines.end()) {
    // What changed since the steady state: the step, the calls and kernels
    // that took the extra time, the findings that are new.
    analysis::BaselineComparison comparison = analysis::CompareWithBaseline(base->second, *report);
    for (const std::string& line : analysis::DescribeComparison(comparison)) {
      std::fprintf(stderr, "sightline: capture #%s vs baseline: %s\n", index.c_str(),
                   trace::EscapeTerminalText(line).c_str());
    }
    order = analysis::FindingsByChange(comparison, *report);
  }
  if (report->findings.empty()) {
    std::fprintf(stderr, "sightline: capture #%s: no findings\n", index.c_str());
  }
  size_t shown = 0;
  for (const analysis::Finding* shown_finding : order) {
    const analysis::Finding& finding = *shown_finding;
    if (++shown > 5) break;
    std::fprintf(stderr, "sightline: capture #%s finding %zu: [%s] %s (est. saving %s)\n",
                 index.c_str(), shown, finding.rule.c_str(),
                 trace::EscapeTerminalText(finding.title).c_str(),
                 exporter::FormatPct(finding.est_saving_pct).c_str());
  }
  if (!quiet) {
    std::fprintf(stderr, "sightline: full report: sightline analyze %s --window %s\n",
                 shown_trace.c_str(), esc(options.window).c_str());
  }
}

// Reads complete new lines of the events file from *offset.
void DrainEvents(int fd, std::string* partial, Tally* tally, bool quiet) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    partial->append(buf, static_cast<size_t>(n));
  }
  size_t nl;
  while ((nl = partial->find('\n')) != std::string::npos) {
    std::string line = partial->substr(0, nl);
    partial->erase(0, nl + 1);
    std::vector<std::string> f = Split(line, '\t');
    if (f[0] == "anomaly") ++tally->anomalies;
    if (f[0] == "capture") {
      ++tally->captures;
      OnCapture(f, quiet, tally);
    }
  }
}

int RunMonitor(const std::vector<std::string>& args) {
  LauncherArgs o;
  std::string pytorch_memory;
  std::string problem = ParseArgs(args, &o, &pytorch_memory);
  if (!problem.empty()) return UsageError(problem);
  std::string lib = InjectionLibrary("monitor", &problem);
  if (lib.empty()) return UsageError(problem);
  // PyTorch's allocator (allocated / peak / reserved bytes after every
  // optimizer step) through the Python start-up hook: for Python commands, or
  // any command with --pytorch-memory on (`bash train.sh`, `env X=1 python`);
  // an explicit SIGHTLINE_PYTORCH (e.g. ops ranges) is left as it is.
  const bool want_hook =
      pytorch_memory == "on" || (pytorch_memory.empty() && IsPythonCommand(o.command[0]));
  if (want_hook && std::getenv("SIGHTLINE_PYTORCH") == nullptr) {
    std::string hook = FindPythonHookDir();
    if (hook.empty()) {
      if (!o.quiet) {
        std::fprintf(stderr,
                     "sightline: monitor: no share/sightline/python/sitecustomize.py near the "
                     "executable (SIGHTLINE_PYTHON_DIR); no PyTorch allocator gauges\n");
      }
    } else {
      PreparePythonHook(hook, "memory");
    }
  }
  if (std::getenv("SIGHTLINE_OUTPUT") == nullptr) {
    setenv("SIGHTLINE_OUTPUT", "sightline-monitor-%p.sltrace", 1);
  }
  for (const auto& [var, value] : o.env) setenv(var.c_str(), value.c_str(), 1);
  setenv("SIGHTLINE_MODE", "monitor", 1);
  PrepareInjectionEnvironment(lib);
  // Private events file: a 0700 directory of ours, the file 0600.
  const char* tmp = std::getenv("TMPDIR");
  std::string dir_template = std::string(tmp != nullptr && *tmp == '/' ? tmp : "/tmp") +
                             "/sightline-monitor-XXXXXX";
  std::vector<char> dir_buf(dir_template.begin(), dir_template.end());
  dir_buf.push_back('\0');
  if (mkdtemp(dir_buf.data()) == nullptr) {
    return UsageError("monitor: cannot create a private directory under " +
                      dir_template.substr(0, dir_template.rfind('/')) + ": " +
                      std::strerror(errno));
  }
  std::string dir = dir_buf.data();
  std::string events = dir + "/events";
  int events_fd = open(events.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (events_fd < 0) {
    rmdir(dir.c_str());
    return UsageError("monitor: cannot create " + events + ": " + std::strerror(errno));
  }
  setenv("SIGHTLINE_MONITOR_EVENTS", events.c_str(), 1);
  auto cleanup = [&] {
    close(events_fd);
    unlink(events.c_str());
    rmdir(dir.c_str());
  };

  std::string error;
  pid_t child = StartCommand(o.command, nullptr, nullptr, nullptr, &error);
  if (child < 0) {
    cleanup();
    return UsageError("monitor: " + error);
  }
  ForwardSignalsTo(child, {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR2});

  Tally tally;
  std::string partial;
  int status = 0;
  for (;;) {
    DrainEvents(events_fd, &partial, &tally, o.quiet);
    pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) break;
    if (r < 0 && errno != EINTR) break;
    usleep(200 * 1000);
  }
  DrainEvents(events_fd, &partial, &tally, o.quiet);
  cleanup();
  int code = ExitCodeOf(status);
  if (!o.quiet) {
    std::fprintf(stderr, "sightline: monitor: '%s' exited (%d); %d anomalies, %d captures\n",
                 o.command[0].c_str(), code, tally.anomalies, tally.captures);
  }
  return code;
}

}  // namespace

SIGHTLINE_COMMAND("monitor",
                  "monitor [--metrics-listen HOST:PORT|unix:PATH] [--step-range NAMES] "
                  "[--capture-steps K] [--max-captures N] [--flight-recorder S] [--cooldown S] [--anomaly-min-pct P] "
                  "[--anomaly-steps N] [--anomaly-p P] [--anomaly-warmup N] [--baseline-capture on|off] "
                  "[--pytorch-memory on|off] "
                  "[--interval-ms MS] [--job NAME] [--devices LIST] [-o PATH] [-q] -- CMD [ARGS...]",
                  "Run a command under the always-on monitor: step times, NVML metrics, "
                  "Prometheus endpoint, anomaly-triggered captures",
                  RunMonitor);

}  // namespace sightline::cli
