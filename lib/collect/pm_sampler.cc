// lib/collect/pm_sampler.cc — see pm_sampler.h. The CUPTI call sequence
// follows bench/metrics/pm_probe.cu, which established it on the H200.
#include "lib/collect/pm_sampler.h"

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <dlfcn.h>

#include <errno.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

#include "lib/collect/ab_log.h"
#include "lib/collect/cupti_params.h"
#include "lib/collect/pm_config.h"
#include "lib/trace/events.h"
#include "lib/trace/pm_quantities.h"

namespace sightline::collect {
namespace {

#define SL_PARAMS(T) MakeParams<T>(T##_STRUCT_SIZE)

// The poll thread decodes every 100 samples (at least every 10 ms, at most
// every 100 ms): each decode call has a fixed cost besides its samples'.
constexpr uint64_t kPollSamples = 100;
constexpr uint64_t kMinPollMs = 10;
constexpr uint64_t kMaxPollMs = 100;
// The counter-data image: ~21 KB a sample with the default quantities on the
// H200, sized for 2 s of samples (at most 4096: 87 MB at 10 kHz, 43 MB at
// 1 kHz). It is re-initialised once half of it is harvested, never when
// full: a decode that filled the image lost the rest of the hardware records
// it had read (gaps of 15-27 ms at every image boundary, H200).
constexpr uint64_t kImageSeconds = 2;
constexpr uint64_t kMinImageSamples = 512;
constexpr uint64_t kMaxImageSamples = 4096;
constexpr size_t kHardwareBufferBytes = size_t{32} << 20;

// Tuning knobs for measurements (bench/metrics/README.md, "PM sampling"):
// SIGHTLINE_PM_IMAGE_SAMPLES (counter-data image, samples), SIGHTLINE_PM_HW_BUFFER_MB
// (hardware buffer), SIGHTLINE_PM_QUANTITIES (comma-separated quantity keys,
// pm_quantities.h: sample only those). Not part of the CLI.
uint64_t EnvU64(const char* name, uint64_t fallback, uint64_t lo, uint64_t hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return end != nullptr && *end == '\0' && n >= lo && n <= hi ? n : fallback;
}
bool QuantityWanted(const char* key) {
  const char* v = std::getenv("SIGHTLINE_PM_QUANTITIES");
  if (v == nullptr || *v == '\0') return true;
  const std::string list = std::string(",") + v + ",";
  return list.find(std::string(",") + key + ",") != std::string::npos;
}

// SIGHTLINE_GPU_METRICS_DEBUG=1: each CUPTI step on stderr, before it runs.
bool DebugOn() {
  static const bool on = [] {
    const char* v = std::getenv("SIGHTLINE_GPU_METRICS_DEBUG");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}
uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }
uint64_t ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }

void Debug(const char* step, const std::string& detail = std::string()) {
  if (!DebugOn()) return;
  static const uint64_t t0 = MonotonicNs();
  std::fprintf(stderr, "sightline: pm: %9.3f ms %s %s\n",
               static_cast<double>(MonotonicNs() - t0) / 1e6, step, detail.c_str());
}

std::string Error(const char* call, CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) s = "unknown CUPTI error";
  return std::string(call) + ": " + s;
}

struct Device {
  uint32_t ordinal = 0;
  CUcontext context = nullptr;
  bool running = false;
  bool done = false;  // stopped or failed: never again in this process
  HostObject host;    // evaluates the samples
  CUpti_PmSampling_Object* object = nullptr;
  std::vector<const char*> metrics;  // static strings of pm_quantities.cc
  std::shared_ptr<const std::vector<std::string>> names;
  // CUPTI keeps pointing at the config image after SetConfig (decoding read
  // the freed copy and crashed): it lives as long as the sampling.
  std::vector<uint8_t> config;
  std::vector<uint8_t> image;
  size_t harvested = 0;  // samples of `image` already emitted
  size_t image_samples = 0;  // its capacity
  RecordingSpans::GapState gaps;
  bool clock_checked = false;
  uint32_t polls = 0;  // the first few are traced with SIGHTLINE_GPU_METRICS_DEBUG
  // Where the poll thread's time goes (SIGHTLINE_GPU_METRICS_DEBUG's summary).
  uint64_t decode_ns = 0, info_ns = 0, evaluate_ns = 0, skipped = 0;
  uint32_t interval_ns = 0;
  bool overflow_warned = false;
  bool paused = false;  // SIGHTLINE_AB_PM_MS: stopped between two stretches
};

// The process's exit must stop sampling (its last decode and evaluation use
// libnvperf_host) before libnvperf_host's function-local statics are
// destroyed, and those are registered with atexit when first used — after
// the collector's own handler, so they would be destroyed first. So the
// sampler registers a handler of its own after each point where new statics
// appear (set-up, first evaluation): handlers run in reverse order.
std::atomic<PmSampler*> g_sampler{nullptr};
void StopAtExit() {
  if (PmSampler* s = g_sampler.load()) s->Stop();
}
void RegisterExitStop() { std::atexit(&StopAtExit); }

// libcupti dlopens "libnvperf_host.so" by name, so with LD_LIBRARY_PATH
// pointing at another CUDA install it gets a libnvperf_host of another
// version (PyTorch wheels ship their own libcupti): decoding then crashed on
// the H200. Load the one beside the libcupti in use first (a loaded soname
// is reused); refuse if a different one is loaded already.
std::string LoadMatchingNvperf() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) == 0 || info.dli_fname == nullptr) {
    return std::string();  // cannot tell: leave it to CUPTI
  }
  std::string cupti = info.dli_fname;
  const size_t slash = cupti.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : cupti.substr(0, slash);
  auto dir_of_loaded = []() -> std::string {
    void* h = dlopen("libnvperf_host.so", RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) return std::string();
    void* sym = dlsym(h, "NVPW_InitializeHost");
    Dl_info i{};
    std::string path = sym != nullptr && dladdr(sym, &i) != 0 && i.dli_fname != nullptr
                           ? i.dli_fname : std::string();
    dlclose(h);
    const size_t sl = path.rfind('/');
    return sl == std::string::npos ? std::string() : path.substr(0, sl);
  };
  std::string loaded = dir_of_loaded();
  if (loaded.empty()) {
    const std::string beside = dir + "/libnvperf_host.so";
    if (access(beside.c_str(), R_OK) == 0) dlopen(beside.c_str(), RTLD_NOW | RTLD_GLOBAL);
    loaded = dir_of_loaded();
  }
  char a[PATH_MAX], b[PATH_MAX];
  if (!loaded.empty() && realpath(loaded.c_str(), a) != nullptr &&
      realpath(dir.c_str(), b) != nullptr && std::strcmp(a, b) != 0) {
    return "libcupti (" + dir + ") and libnvperf_host (" + loaded +
           ") come from different CUDA installs; put the directory of the libcupti in use first "
           "on LD_LIBRARY_PATH";
  }
  Debug("nvperf", loaded.empty() ? "(not loaded yet)" : loaded);
  return std::string();
}

class PmSamplerImpl final : public PmSampler {
 public:
  PmSamplerImpl(const PmSamplerConfig& config, EmitFn emit, WarnFn warn)
      : config_(config), emit_(std::move(emit)), warn_(std::move(warn)) {
    thread_ = std::thread([this] { Run(); });
    g_sampler.store(this);
  }
  ~PmSamplerImpl() override {
    if (getpid() != owner_pid_) return;  // a forked child: see Stop
    Stop();
    PmSampler* self = this;
    g_sampler.compare_exchange_strong(self, nullptr);
  }

  // Set-up runs here, on the application's thread inside the context's
  // creation callback: a set-up on our own thread raced the process's exit
  // (libnvperf_host's statics destroyed under it: SIGSEGV on the H200 when
  // a short program ended during set-up).
  void OnContextCreated(CUcontext context) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    const uint64_t t0 = MonotonicNs();
    StartOn(context);
    stats_.setup_ns += MonotonicNs() - t0;
    if (stats_.devices_sampled > 0 && started_ns_ == 0) started_ns_ = MonotonicNs();
  }

  void SetRecording(bool on, uint64_t now_ns) override {
    if (on) {
      spans_.Open(now_ns);
    } else {
      spans_.Close(now_ns);
    }
  }

  void OnContextDestroying(CUcontext context) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& d : devices_) {
      if (d->context == context && d->running) StopDevice(d.get());
    }
  }

  void Stop() override {
    // A forked child inherits the exit handler but not the poll thread: its
    // mutex may have been held by that thread at the fork, and there is no
    // thread to join. The parent's sampling is the parent's to stop.
    if (getpid() != owner_pid_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t cpu0 = ThreadCpuNs();
    for (auto& d : devices_) {
      if (d->running) StopDevice(d.get());
    }
    stats_.poll_cpu_ns += ThreadCpuNs() - cpu0;
    if (started_ns_ != 0) stats_.sampling_wall_ns = MonotonicNs() - started_ns_;
    if (!config_.quiet && stats_.devices_sampled > 0) {
      // The sampler's cost, for the ≤ 1 % budget (bench/metrics/README.md).
      const double wall_s = static_cast<double>(stats_.sampling_wall_ns) / 1e9;
      char line[320];
      std::snprintf(line, sizeof(line),
                    "sightline: GPU metrics: %llu samples kept, %llu missing; set-up %.1f ms on "
                    "the application's thread, sampler CPU %.1f ms over %.1f s (%.2f %% of one "
                    "core)\n",
                    static_cast<unsigned long long>(stats_.samples),
                    static_cast<unsigned long long>(stats_.samples_dropped),
                    static_cast<double>(stats_.setup_ns) / 1e6,
                    static_cast<double>(stats_.poll_cpu_ns) / 1e6, wall_s,
                    wall_s > 0 ? static_cast<double>(stats_.poll_cpu_ns) / 1e7 / wall_s : 0.0);
      std::fputs(line, stderr);
    }
    for (auto& d : devices_) {
      Debug("cost", "device " + std::to_string(d->ordinal) + ": decode " +
                        std::to_string(d->decode_ns / 1000000) + " ms, sample info " +
                        std::to_string(d->info_ns / 1000000) + " ms, evaluate " +
                        std::to_string(d->evaluate_ns / 1000000) + " ms; " +
                        std::to_string(d->skipped) + " samples outside the capture windows");
    }
  }

  PmSamplerStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  void Run() {
    // Below the application's threads (nice +10, this thread only): where
    // cores are short the training step goes first; the samples wait in the
    // hardware buffer, and an overflow is counted.
    const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, tid);
    if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(19, nice + 10));
    std::unique_lock<std::mutex> lock(mu_);
    struct CpuAccount {  // this thread's CPU time into stats_ (under mu_) at exit
      PmSamplerImpl* self;
      ~CpuAccount() { self->stats_.poll_cpu_ns += ThreadCpuNs(); }
    } account{this};
    AbSwitch ab;
    while (!stopped_) {
      cv_.wait_for(lock, std::chrono::milliseconds(ab.Wait(poll_ms_)));
      if (stopped_) break;
      ab.MaybeSwitch(this);
      for (auto& d : devices_) {
        if (!d->running || d->paused) continue;
        if (std::string error = Poll(d.get(), false); !error.empty()) {
          StopDevice(d.get());
          Fail(d.get(), error);
        }
      }
    }
  }

  // Benchmarks only (bench/overhead/ab.sh, case WORKLOAD:-:sightline-pm):
  // SIGHTLINE_AB_PM_MS=P stops every device's sampling and starts it again,
  // alternately, every P ms (the poll thread does both; the final decode of
  // each stop runs inside the switch), and writes each switch to
  // SIGHTLINE_AB_LOG as "ab T0 T1 S" (CLOCK_MONOTONIC ns before and after
  // it, S = 1 when sampling is on after it), the format of
  // collector_stack_ab.cc. Steps between switches then alternate between
  // sampling and not on the same machine state, which rounds of separate
  // processes (±15 % on the launch-bound LM) could not resolve. The trace
  // of such a run has gaps where sampling was stopped (not counted as
  // missing): time with it, do not analyse it. A device whose restart
  // fails is left off with a warning and counted in the summary line
  // ("restarts failed"); the switches logged after that price nothing.
  // The switching begins once a device samples. Benchmarks on one GPU.
  class AbSwitch {
   public:
    AbSwitch() {
      const char* ms_env = std::getenv("SIGHTLINE_AB_PM_MS");
      if (ms_env == nullptr || *ms_env == '\0') return;
      const long ms = std::strtol(ms_env, nullptr, 10);
      if (ms < 10 || ms > 60000) {
        std::fprintf(stderr, "sightline: warning: SIGHTLINE_AB_PM_MS needs 10..60000 ms; "
                             "nothing switched\n");
        return;
      }
      period_ns_ = static_cast<uint64_t>(ms) * 1000000u;
      next_ns_ = MonotonicNs() + period_ns_;
      fd_ = OpenAbLog();
      std::fprintf(stderr, "sightline: A/B: GPU metrics sampling stopped and started every %ld ms\n",
                   ms);
    }
    ~AbSwitch() {
      if (fd_ >= 0) close(fd_);
      if (period_ns_ != 0) {
        std::fprintf(stderr, "sightline: A/B: %llu switches, %llu restarts failed\n",
                     static_cast<unsigned long long>(switches_),
                     static_cast<unsigned long long>(failed_));
      }
    }
    // How long the poll thread may sleep: its poll interval, cut to the next switch.
    uint64_t Wait(uint64_t poll_ms) const {
      if (period_ns_ == 0) return poll_ms;
      const uint64_t now = MonotonicNs();
      const uint64_t left_ms = next_ns_ > now ? (next_ns_ - now + 999999) / 1000000 : 0;
      return std::min(poll_ms, std::max<uint64_t>(left_ms, 1));
    }
    // Under mu_, on the poll thread.
    void MaybeSwitch(PmSamplerImpl* s) {
      if (period_ns_ == 0) return;
      const uint64_t t0 = MonotonicNs();
      if (t0 < next_ns_) return;
      next_ns_ = t0 + period_ns_;
      // Nothing to switch before a device samples: a switch then would
      // leave the log's state opposite to the sampling's from the device's
      // start on. (A device that starts during an off stretch samples in it:
      // for one-GPU runs only.)
      const bool any = std::any_of(s->devices_.begin(), s->devices_.end(),
                                   [](const auto& d) { return d->running; });
      if (!any) return;
      on_ = !on_;
      for (auto& d : s->devices_) {
        if (!d->running) continue;
        if (!on_) {
          auto sp = SL_PARAMS(CUpti_PmSampling_Stop_Params);
          sp.pPmSamplingObject = d->object;
          if (cuptiPmSamplingStop(&sp) != CUPTI_SUCCESS) continue;
          if (std::string error = s->Poll(d.get(), true); !error.empty()) {
            s->warn_("GPU metrics: " + error);
          }
          d->paused = true;
        } else if (d->paused) {
          d->paused = false;
          d->gaps = RecordingSpans::GapState();  // the stopped stretch is no loss
          CUptiResult r = s->InitImage(d.get());
          if (r == CUPTI_SUCCESS) {
            auto st = SL_PARAMS(CUpti_PmSampling_Start_Params);
            st.pPmSamplingObject = d->object;
            r = cuptiPmSamplingStart(&st);
          }
          if (r != CUPTI_SUCCESS) {
            ++failed_;
            s->FailAndDisable(d.get(), Error("cuptiPmSamplingStart (A/B restart)", r));
          }
        }
      }
      ++switches_;
      WriteAbSwitch(fd_, t0, MonotonicNs(), on_);
    }

   private:
    uint64_t period_ns_ = 0;
    uint64_t next_ns_ = 0;
    bool on_ = true;
    int fd_ = -1;
    uint64_t switches_ = 0;
    uint64_t failed_ = 0;
  };

  bool Wanted(uint32_t ordinal) const {
    return config_.devices.empty() ||
           std::find(config_.devices.begin(), config_.devices.end(), ordinal) !=
               config_.devices.end();
  }

  void Fail(Device* d, const std::string& what) {
    d->done = true;
    d->running = false;
    ++stats_.devices_failed;
    warn_("GPU metrics (PM sampling) unavailable on device " + std::to_string(d->ordinal) + ": " +
          what + "; tracing continues without them");
  }

  void FailAndDisable(Device* d, const std::string& what) {
    DisableObject(d);
    Fail(d, what);
  }

  // The sampler thread, once per device.
  void StartOn(CUcontext context) {
    uint32_t ordinal = 0;
    if (CUptiResult r = cuptiGetDeviceId(context, &ordinal); r != CUPTI_SUCCESS) {
      warn_("GPU metrics: " + Error("cuptiGetDeviceId", r));
      return;
    }
    if (!Wanted(ordinal)) return;
    for (const auto& d : devices_) {
      if (d->ordinal == ordinal) return;  // a second context on a sampled device
    }
    devices_.push_back(std::make_unique<Device>());
    Device* d = devices_.back().get();
    d->ordinal = ordinal;
    d->context = context;
    if (std::string mismatch = LoadMatchingNvperf(); !mismatch.empty()) return Fail(d, mismatch);
    if (!profiler_initialized_) {
      Debug("profiler_initialize");
      auto ip = SL_PARAMS(CUpti_Profiler_Initialize_Params);
      if (CUptiResult r = cuptiProfilerInitialize(&ip); r != CUPTI_SUCCESS) {
        return Fail(d, Error("cuptiProfilerInitialize", r));
      }
      profiler_initialized_ = true;
    }
    Debug("chip_name");
    auto cp = SL_PARAMS(CUpti_Device_GetChipName_Params);
    cp.deviceIndex = ordinal;
    if (CUptiResult r = cuptiDeviceGetChipName(&cp);
        r != CUPTI_SUCCESS || cp.pChipName == nullptr) {
      return Fail(d, Error("cuptiDeviceGetChipName", r));
    }
    const std::string chip = cp.pChipName;
    Debug("availability", chip);
    std::vector<uint8_t> availability;
    auto pa = SL_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
    pa.deviceIndex = ordinal;
    CUptiResult r = cuptiPmSamplingGetCounterAvailability(&pa);
    if (r == CUPTI_SUCCESS) {
      availability.assign(pa.counterAvailabilityImageSize, 0);
      pa.pCounterAvailabilityImage = availability.data();
      r = cuptiPmSamplingGetCounterAvailability(&pa);
    }
    if (r != CUPTI_SUCCESS) {
      return Fail(d, Error("cuptiPmSamplingGetCounterAvailability", r) +
                         " (profiling permissions: NVreg_RestrictProfilingToAdminUsers, or "
                         "another profiler holds the counters)");
    }
    PmMetricChoice choice;
    if (std::string error =
            ChoosePmMetrics(chip, availability, &QuantityWanted, &d->host, &choice);
        !error.empty()) {
      return Fail(d, error);
    }
    std::vector<const char*>& chosen = choice.metrics;
    const std::vector<std::string>& missing = choice.missing;
    d->config = std::move(choice.config);
    Debug("enable");
    auto en = SL_PARAMS(CUpti_PmSampling_Enable_Params);
    en.deviceIndex = ordinal;
    if ((r = cuptiPmSamplingEnable(&en)) != CUPTI_SUCCESS) {
      return Fail(d, Error("cuptiPmSamplingEnable", r));
    }
    d->object = en.pPmSamplingObject;
    // GPU_TIME_INTERVAL counts nanoseconds; GA100 and Turing lack it, and
    // SYSCLK_INTERVAL counts SYS clock cycles (~1-1.7 per ns): the trace's
    // sample times say what the rate really was.
    Debug("set_config");
    bool configured = false;
    for (int mode = 0; mode < 2 && !configured; ++mode) {
      auto sc = SL_PARAMS(CUpti_PmSampling_SetConfig_Params);
      sc.pPmSamplingObject = d->object;
      sc.configSize = d->config.size();
      sc.pConfig = d->config.data();
      sc.hardwareBufferSize =
          EnvU64("SIGHTLINE_PM_HW_BUFFER_MB", kHardwareBufferBytes >> 20, 4, 4096) << 20;
      sc.samplingInterval = config_.interval_ns;
      sc.triggerMode = mode == 0 ? CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL
                                 : CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL;
      sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
      r = cuptiPmSamplingSetConfig(&sc);
      configured = r == CUPTI_SUCCESS;
    }
    if (!configured) return FailAndDisable(d, Error("cuptiPmSamplingSetConfig", r));
    Debug("counter_data_size");
    auto ds = SL_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
    ds.pPmSamplingObject = d->object;
    ds.pMetricNames = chosen.data();
    ds.numMetrics = chosen.size();
    const uint64_t rate_hz = 1000000000u / std::max<uint32_t>(config_.interval_ns, 1);
    d->image_samples = EnvU64(
        "SIGHTLINE_PM_IMAGE_SAMPLES",
        std::clamp(rate_hz * kImageSeconds, kMinImageSamples, kMaxImageSamples), 64, 1u << 20);
    ds.maxSamples = static_cast<uint32_t>(d->image_samples);
    if ((r = cuptiPmSamplingGetCounterDataSize(&ds)) != CUPTI_SUCCESS) {
      return FailAndDisable(d, Error("cuptiPmSamplingGetCounterDataSize", r));
    }
    Debug("image", std::to_string(ds.counterDataSize));
    d->image.assign(ds.counterDataSize, 0);
    if ((r = InitImage(d)) != CUPTI_SUCCESS) {
      return FailAndDisable(d, Error("cuptiPmSamplingCounterDataImageInitialize", r));
    }
    Debug("start");
    auto st = SL_PARAMS(CUpti_PmSampling_Start_Params);
    st.pPmSamplingObject = d->object;
    if ((r = cuptiPmSamplingStart(&st)) != CUPTI_SUCCESS) {
      return FailAndDisable(d, Error("cuptiPmSamplingStart", r));
    }
    d->metrics = chosen;
    auto names = std::make_shared<std::vector<std::string>>();
    for (const char* m : chosen) names->push_back(m);
    d->names = std::move(names);
    d->interval_ns = config_.interval_ns;
    d->running = true;
    ++stats_.devices_sampled;
    RegisterExitStop();
    if (!config_.quiet) {
      std::string line = "sightline: GPU metrics on device " + std::to_string(ordinal) + " (" +
                         chip + "): " + std::to_string(chosen.size()) + " metrics every " +
                         std::to_string(config_.interval_ns / 1000) + " us";
      if (!missing.empty()) {
        line += "; not available:";
        for (const std::string& m : missing) line += " " + m;
      }
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  CUptiResult InitImage(Device* d) {
    auto p = SL_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
    p.pPmSamplingObject = d->object;
    p.counterDataSize = d->image.size();
    p.pCounterData = d->image.data();
    d->harvested = 0;
    return cuptiPmSamplingCounterDataImageInitialize(&p);
  }

  void DisableObject(Device* d) {
    if (d->object == nullptr) return;
    auto p = SL_PARAMS(CUpti_PmSampling_Disable_Params);
    p.pPmSamplingObject = d->object;
    cuptiPmSamplingDisable(&p);
    d->object = nullptr;
  }

  // Decodes what the hardware buffer holds (`final`: until its end) and
  // emits the completed samples; an error string when CUPTI failed.
  std::string Poll(Device* d, bool final) {
    for (int round = 0; round < (final ? 64 : 8); ++round) {
      auto p = SL_PARAMS(CUpti_PmSampling_DecodeData_Params);
      p.pPmSamplingObject = d->object;
      p.pCounterDataImage = d->image.data();
      p.counterDataImageSize = d->image.size();
      if (d->polls < 3) Debug("decode");
      const uint64_t t0 = MonotonicNs();
      CUptiResult r = cuptiPmSamplingDecodeData(&p);
      d->decode_ns += MonotonicNs() - t0;
      if (r != CUPTI_SUCCESS) {
        Harvest(d);
        return Error("cuptiPmSamplingDecodeData", r);
      }
      if (p.overflow && !d->overflow_warned) {
        d->overflow_warned = true;
        warn_("GPU metrics: the hardware sample buffer of device " + std::to_string(d->ordinal) +
              " overflowed; the samples lost are counted in the trace");
      }
      Harvest(d);
      const bool full =
          p.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
      if (full || d->harvested >= d->image_samples / 2) {
        if ((r = InitImage(d)) != CUPTI_SUCCESS) {
          return Error("cuptiPmSamplingCounterDataImageInitialize", r);
        }
      }
      if (!full) break;
    }
    return std::string();
  }

  // Emits the samples completed since the last harvest.
  void Harvest(Device* d) {
    auto ip = SL_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
    ip.pCounterDataImage = d->image.data();
    ip.counterDataImageSize = d->image.size();
    const bool trace = d->polls++ < 3;
    if (trace) Debug("data_info");
    if (cuptiPmSamplingGetCounterDataInfo(&ip) != CUPTI_SUCCESS) return;
    if (trace) {
      Debug("samples", std::to_string(d->harvested) + ".." +
                           std::to_string(ip.numCompletedSamples));
    }
    const size_t metrics = d->metrics.size();
    std::vector<double> values(metrics);
    PmSampleBatch batch;
    auto flush = [&] {
      if (batch.event.sample_start_ns.empty()) return;
      if (DebugOn() && !d->clock_checked) {
        // The spans are in cuptiGetTimestamp's clock: the newest sample
        // ends within a poll interval of it when both clocks agree.
        d->clock_checked = true;
        uint64_t now = 0;
        cuptiGetTimestamp(&now);
        Debug("clock", "cuptiGetTimestamp " + std::to_string(now) + " newest sample end " +
                           std::to_string(batch.event.sample_end_ns.back()));
      }
      batch.event.device_id = d->ordinal;
      batch.event.interval_ns = d->interval_ns;
      batch.metric_names = d->names;
      stats_.samples_dropped += spans_.Filter(&batch, &d->gaps);
      if (batch.event.sample_start_ns.empty()) return;
      stats_.samples += batch.event.sample_start_ns.size();
      emit_(std::move(batch));
      batch = PmSampleBatch();
    };
    for (size_t i = d->harvested; i < ip.numCompletedSamples; ++i) {
      auto sp = SL_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
      sp.pPmSamplingObject = d->object;
      sp.pCounterDataImage = d->image.data();
      sp.counterDataImageSize = d->image.size();
      sp.sampleIndex = i;
      const uint64_t t0 = MonotonicNs();
      const CUptiResult info = cuptiPmSamplingCounterDataGetSampleInfo(&sp);
      d->info_ns += MonotonicNs() - t0;
      if (info != CUPTI_SUCCESS || sp.endTimestamp <= sp.startTimestamp) {
        ++stats_.samples_dropped;
        continue;
      }
      // Evaluation is the costly part (tens of us a sample): only samples a
      // capture window keeps are evaluated.
      if (!spans_.Overlaps(sp.startTimestamp, sp.endTimestamp)) {
        ++d->skipped;
        continue;
      }
      if (trace && batch.event.sample_start_ns.empty()) Debug("evaluate", std::to_string(i));
      const uint64_t t1 = MonotonicNs();
      auto ev = SL_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
      ev.pHostObject = d->host.get();
      ev.pCounterDataImage = d->image.data();
      ev.counterDataImageSize = d->image.size();
      ev.rangeIndex = i;
      ev.ppMetricNames = d->metrics.data();
      ev.numMetrics = metrics;
      ev.pMetricValues = values.data();
      if (cuptiProfilerHostEvaluateToGpuValues(&ev) != CUPTI_SUCCESS) {
        std::fill(values.begin(), values.end(), std::nan(""));
      }
      d->evaluate_ns += MonotonicNs() - t1;
      if (!evaluated_once_) {
        evaluated_once_ = true;
        RegisterExitStop();  // after the statics the first evaluation created
      }
      batch.event.sample_start_ns.push_back(sp.startTimestamp);
      batch.event.sample_end_ns.push_back(sp.endTimestamp);
      for (double v : values) batch.event.values.push_back(static_cast<float>(v));
      if (batch.event.sample_start_ns.size() == kMaxGpuMetricSamples) flush();
    }
    d->harvested = std::max(d->harvested, static_cast<size_t>(ip.numCompletedSamples));
    flush();
  }

  // Stops sampling, emits the rest, disables the object.
  void StopDevice(Device* d) {
    if (!d->running) return;
    d->running = false;
    d->done = true;
    if (d->paused) {  // SIGHTLINE_AB_PM_MS: stopped and decoded at its switch
      DisableObject(d);
      return;
    }
    Debug("stop");
    auto sp = SL_PARAMS(CUpti_PmSampling_Stop_Params);
    sp.pPmSamplingObject = d->object;
    if (cuptiPmSamplingStop(&sp) == CUPTI_SUCCESS) {
      if (std::string error = Poll(d, true); !error.empty()) warn_("GPU metrics: " + error);
    }
    DisableObject(d);
  }

  const PmSamplerConfig config_;
  const pid_t owner_pid_ = getpid();
  EmitFn emit_;
  WarnFn warn_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  bool profiler_initialized_ = false;
  bool evaluated_once_ = false;
  uint64_t started_ns_ = 0;  // first device started (MonotonicNs)
  const uint64_t poll_ms_ = std::clamp<uint64_t>(
      config_.interval_ns * kPollSamples / 1000000, kMinPollMs, kMaxPollMs);
  std::vector<std::unique_ptr<Device>> devices_;
  RecordingSpans spans_;
  PmSamplerStats stats_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<PmSampler> PmSampler::Create(const PmSamplerConfig& config, EmitFn emit,
                                             WarnFn warn) {
  return std::make_unique<PmSamplerImpl>(config, std::move(emit), std::move(warn));
}

}  // namespace sightline::collect
