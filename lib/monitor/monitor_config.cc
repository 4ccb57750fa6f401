// lib/monitor/monitor_config.cc — see monitor_config.h.
#include "lib/monitor/monitor_config.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "lib/trace/setting_value.h"

namespace sightline::monitor {
namespace {

const char* Get(const char* (*getenv_fn)(const char*), const char* name) {
  const char* v = getenv_fn != nullptr ? getenv_fn(name) : std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

template <typename T>
void Number(const char* (*getenv_fn)(const char*), const char* name, double lo, double hi,
            T* field, std::vector<std::string>* problems) {
  const char* v = Get(getenv_fn, name);
  if (v == nullptr) return;
  double d = 0;
  if (!trace::ParseNumberValue(v, lo, hi, &d)) {
    if (problems != nullptr) {
      std::ostringstream msg;
      msg << name << ": '" << v << "' is not a number from " << lo << " to " << hi
          << "; using the default";
      problems->push_back(msg.str());
    }
    return;
  }
  *field = static_cast<T>(d);
}

std::string ProgramName() {
  char buf[256] = {};
  FILE* f = std::fopen("/proc/self/comm", "r");
  if (f == nullptr) return "sightline";
  if (std::fgets(buf, sizeof(buf), f) == nullptr) buf[0] = '\0';
  std::fclose(f);
  std::string name = buf;
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  return name.empty() ? "sightline" : name;
}

}  // namespace

MonitorConfig MonitorConfigFromEnvironment(const char* (*getenv_fn)(const char*),
                                           std::vector<std::string>* problems) {
  MonitorConfig c;
  if (const char* m = Get(getenv_fn, "SIGHTLINE_MODE"); m != nullptr) {
    if (std::strcmp(m, "monitor") == 0) {
      c.enabled = true;
    } else if (std::strcmp(m, "trace") != 0 && problems != nullptr) {
      problems->push_back(std::string("SIGHTLINE_MODE: '") + m +
                          "' is not trace or monitor; tracing");
    }
  }
  if (const char* v = Get(getenv_fn, "SIGHTLINE_METRICS_LISTEN"); v != nullptr) c.listen = v;
  if (const char* v = Get(getenv_fn, "SIGHTLINE_STEP_RANGE"); v != nullptr) {
    c.step_names.clear();
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) c.step_names.push_back(item);
    }
  }
  Number(getenv_fn, "SIGHTLINE_MONITOR_INTERVAL_MS", 50, 60000, &c.interval_ms, problems);
  Number(getenv_fn, "SIGHTLINE_MONITOR_DEVICE_GRACE_MS", 0, 3600000, &c.device_grace_ms, problems);
  Number(getenv_fn, "SIGHTLINE_CAPTURE_STEPS", 1, 100000, &c.capture_steps, problems);
  Number(getenv_fn, "SIGHTLINE_CAPTURE_MAX_S", 0.1, 3600, &c.capture_max_s, problems);
  Number(getenv_fn, "SIGHTLINE_MAX_CAPTURES", 0, 1000, &c.max_captures, problems);
  if (const char* v = Get(getenv_fn, "SIGHTLINE_FLIGHT_RECORDER_S"); v != nullptr && std::strcmp(v, "0") != 0) {
    Number(getenv_fn, "SIGHTLINE_FLIGHT_RECORDER_S", 1, 3600, &c.flight_recorder_s, problems);
  }
  Number(getenv_fn, "SIGHTLINE_FLIGHT_RECORDER_MB", 16, 1 << 20, &c.flight_recorder_mb, problems);
  Number(getenv_fn, "SIGHTLINE_ANOMALY_COOLDOWN_S", 0, 86400, &c.cooldown_s, problems);
  Number(getenv_fn, "SIGHTLINE_ANOMALY_P", 1e-12, 0.1, &c.step.p_value, problems);
  if (const char* v = Get(getenv_fn, "SIGHTLINE_ANOMALY_MAD_K");
      v != nullptr && *v != '\0' && problems != nullptr) {
    problems->push_back(
        "SIGHTLINE_ANOMALY_MAD_K (--anomaly-mad-k) is no longer used: the step detector is a "
        "sign test now; SIGHTLINE_ANOMALY_P (--anomaly-p) sets its false-alarm chance");
  }
  double min_pct = c.step.min_rel_increase * 100;
  Number(getenv_fn, "SIGHTLINE_ANOMALY_MIN_PCT", 0, 10000, &min_pct, problems);
  c.step.min_rel_increase = min_pct / 100;
  // 1..3 too: the detector raises a group too small to ever fire.
  Number(getenv_fn, "SIGHTLINE_ANOMALY_STEPS", 1, 1000, &c.step.consecutive, problems);
  Number(getenv_fn, "SIGHTLINE_ANOMALY_WARMUP", 3, 100000, &c.step.warmup, problems);
  if (c.step.window < c.step.warmup) c.step.window = c.step.warmup;
  if (const char* v = Get(getenv_fn, "SIGHTLINE_JOB"); v != nullptr) c.job = v;
  if (c.job.empty()) c.job = ProgramName();
  for (const char* var : {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    if (const char* v = Get(getenv_fn, var); v != nullptr) {
      c.rank = v;
      break;
    }
  }
  if (const char* v = Get(getenv_fn, "SIGHTLINE_MONITOR_EVENTS"); v != nullptr) c.events_path = v;
  if (const char* v = Get(getenv_fn, "SIGHTLINE_MONITOR_DEVICES"); v != nullptr) c.devices = v;
  if (const char* v = Get(getenv_fn, "CUDA_VISIBLE_DEVICES"); v != nullptr) c.visible_devices = v;
  if (const char* v = Get(getenv_fn, "SIGHTLINE_NVML_LIB"); v != nullptr) c.nvml_library = v;
  if (const char* b = Get(getenv_fn, "SIGHTLINE_BASELINE_CAPTURE"); b != nullptr) {
    if (!trace::ParseBoolValue(b, &c.baseline_capture) && problems != nullptr) {
      problems->push_back(std::string("SIGHTLINE_BASELINE_CAPTURE: '") + b +
                          "' is not a boolean (" + trace::BoolValueWords() + ")");
    }
  }
  if (const char* q = Get(getenv_fn, "SIGHTLINE_QUIET"); q != nullptr) {
    if (!trace::ParseBoolValue(q, &c.quiet) && problems != nullptr) {
      problems->push_back(std::string("SIGHTLINE_QUIET: '") + q + "' is not a boolean (" +
                          trace::BoolValueWords() + ")");
    }
  }
  return c;
}

bool MatchesStepName(const std::vector<std::string>& patterns, const char* name) {
  if (name == nullptr) return false;
  for (const std::string& p : patterns) {
    if (!p.empty() && p.back() == '*') {
      if (std::strncmp(name, p.data(), p.size() - 1) == 0) return true;
    } else if (p == name) {
      return true;
    }
  }
  return false;
}

}  // namespace sightline::monitor
