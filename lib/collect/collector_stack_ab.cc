// lib/collect/collector_stack_ab.cc — benchmarks only: what Python stacks
// cost, measured in one process (bench/overhead/ab.sh, case
// WORKLOAD:-:sightline-stacks).
//
// SIGHTLINE_AB_STACKS_MS=P switches off and on, every P ms, exactly the CUPTI
// callbacks that Python stacks and driver-launch records add to the default
// (what SIGHTLINE_PYTHON_BACKTRACE=off leaves out: the launch, copy, memset
// and memory calls' callbacks; the synchronizing and allocating calls keep
// theirs, which native backtraces use in both), and writes each switch to
// SIGHTLINE_AB_LOG as "ab T0 T1 S" (CLOCK_MONOTONIC ns before and after it,
// S = 1 when the callbacks are on after it). The process starts with them on;
// with SIGHTLINE_AB_GO=PATH the switching starts once PATH exists. Steps
// between switches then alternate between the two modes on the same machine
// state, which between-process rounds on the H200 (±15 %) cannot resolve.
// A trace made so is not complete (calls made while the callbacks are off
// have no Python stack; a launch whose exit came after a switch off left its
// thread's runtime depth one too high until that thread's next call, which
// resets it: ab_generation_). Time with it; do not analyse it.
// SIGHTLINE_AB_STACKS_PART=python switches only what Python stacks add to
// the default with SIGHTLINE_PYTHON_BACKTRACE=off: the callbacks only they
// enable (copies, memsets) and the stack walk in the launch callbacks, which
// driver-launch records keep in both modes. The default (all) switches the
// launch callbacks too (runs AA, AB, AE, AP).
// Only for a whole-run capture with Python stacks on (else a warning and
// nothing switched).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "lib/collect/ab_log.h"
#include "lib/collect/collector_impl.h"
#include "lib/collect/self_cost.h"

namespace sightline::collect {

void CollectorImpl::StartStackAb() {
  const char* ms_env = std::getenv("SIGHTLINE_AB_STACKS_MS");
  if (ms_env == nullptr || *ms_env == '\0') return;
  const int ms = std::atoi(ms_env);
  if (ms <= 0 || ms > 60000 || subscriber_ == nullptr || !config_.trace_python ||
      config_.capture != CaptureMode::kWholeRun || config_.trace_driver_api ||
      config_.backtrace_threshold_us >= 0 || detach_ || monitor_config_.enabled ||
      !config_.metric_set.empty()) {
    Warn("SIGHTLINE_AB_STACKS_MS needs 1..60000 ms, a whole-run capture with Python stacks, "
         "and no -t cuda-driver, SIGHTLINE_BACKTRACE_US, detach, monitor mode or metrics; "
         "nothing switched");
    return;
  }
  const int fd = OpenAbLog();
  const char* part_env = std::getenv("SIGHTLINE_AB_STACKS_PART");
  const std::string part = part_env != nullptr && *part_env != '\0' ? part_env : "all";
  if (part != "all" && part != "python") {
    Warn("SIGHTLINE_AB_STACKS_PART must be all or python; nothing switched");
    if (fd >= 0) close(fd);
    return;
  }
  const bool walk_only = part == "python";
  const auto* cbids = walk_only ? &ab_py_cbids_ : &ab_cbids_;  // members: outlive the thread
  const char* go_env = std::getenv("SIGHTLINE_AB_GO");
  const std::string go = go_env != nullptr ? go_env : "";
  std::fprintf(stderr, "sightline: A/B: %zu stack callbacks%s switched every %d ms%s\n",
               cbids->size(), walk_only ? " and the Python stack walk" : "", ms,
               go.empty() ? "" : " once the go file exists");
  // Detached and never joined: it sleeps outside ab_mu_, and StopStackAb
  // (the exit path) makes it return at its next wake-up without a CUPTI call.
  std::thread([this, ms, fd, go, walk_only, cbids] {
    bool on = true;
    bool waiting = !go.empty();
    for (;;) {
      const int sleep_ms = waiting ? 10 : ms;  // the go file is polled every 10 ms
      const timespec pause{sleep_ms / 1000, static_cast<long>(sleep_ms % 1000) * 1000000L};
      nanosleep(&pause, nullptr);
      if (waiting) {
        if (access(go.c_str(), F_OK) != 0) {
          MutexLock lock(ab_mu_);
          if (ab_stop_) return;
          continue;
        }
        waiting = false;
      }
      MutexLock lock(ab_mu_);
      if (ab_stop_) return;
      on = !on;
      const uint64_t t0 = SelfCost::NowNs();
      if (CuptiCall cupti(this); cupti.ok()) {
        for (const auto& [domain, cbid] : *cbids) {
          cuptiEnableCallback(on ? 1 : 0, subscriber_, domain, cbid);
        }
      }
      if (walk_only) python_walk_on_.store(on, std::memory_order_relaxed);
      ab_generation_.fetch_add(1, std::memory_order_relaxed);
      WriteAbSwitch(fd, t0, SelfCost::NowNs(), on);
    }
  }).detach();
}

void CollectorImpl::StopStackAb() {
  MutexLock lock(ab_mu_);
  ab_stop_ = true;
}

}  // namespace sightline::collect
