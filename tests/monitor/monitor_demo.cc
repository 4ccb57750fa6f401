// A CPU-only "training loop" under the monitor agent, for the Prometheus test:
//   sightline_monitor_demo STEP_MS SLOW_MS FLAG_FILE SECONDS
// One step every STEP_MS (SLOW_MS while FLAG_FILE exists), for SECONDS.
// Monitor settings from SIGHTLINE_* as in the injected library; captures go
// to a fake control that only logs (no CUDA here).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "lib/monitor/monitor_agent.h"

int main(int argc, char** argv) {
  using namespace sightline::monitor;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s STEP_MS SLOW_MS FLAG_FILE SECONDS\n", argv[0]);
    return 2;
  }
  double step_ms = std::atof(argv[1]), slow_ms = std::atof(argv[2]);
  const char* flag = argv[3];
  double seconds = std::atof(argv[4]);
  std::vector<std::string> problems;
  MonitorConfig config = MonitorConfigFromEnvironment(nullptr, &problems);
  for (const std::string& p : problems) std::fprintf(stderr, "demo: %s\n", p.c_str());
  CaptureControl control;
  control.start = []() -> uint32_t { return 1; };
  control.stop_and_flush = [] { return true; };
  control.trace_path = "(demo: no trace)";
  auto agent = MonitorAgent::Start(config, control);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto next = std::chrono::steady_clock::now();
  uint64_t steps = 0;
  while (std::chrono::steady_clock::now() < end) {
    agent->OnStepBegin(MonitorAgent::NowNs());
    // What the Python hook marks after an optimizer step (sitecustomize.py).
    ++steps;
    char marker[160];
    std::snprintf(marker, sizeof(marker),
                  "sightline.torch_memory device=0 allocated=%llu max_allocated=%llu reserved=%llu",
                  static_cast<unsigned long long>(steps << 20),
                  static_cast<unsigned long long>(steps << 20),
                  static_cast<unsigned long long>(1ull << 32));
    agent->OnRangeOpened(marker, MonitorAgent::NowNs());
    struct stat st;
    double ms = stat(flag, &st) == 0 ? slow_ms : step_ms;
    next += std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
    std::this_thread::sleep_until(next);
  }
  agent->Stop();
  return 0;
}
