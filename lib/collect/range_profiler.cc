// lib/collect/range_profiler.cc — see range_profiler.h.
#include "lib/collect/range_profiler.h"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "lib/collect/metric_sets.h"

namespace sightline::collect {

// ---- KernelSelector ---------------------------------------------------------

KernelSelector::~KernelSelector() {
  if (has_regex_) regfree(&regex_);
}

bool KernelSelector::Init(const KernelSelectorOptions& options, std::string* error) {
  options_ = options;
  if (options_.every_nth == 0) options_.every_nth = 1;
  if (!options_.name_regex.empty()) {
    const int rc = regcomp(&regex_, options_.name_regex.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char buf[256];
      regerror(rc, &regex_, buf, sizeof(buf));
      *error = "metrics: bad kernel-name regex '" + options_.name_regex + "': " + buf;
      return false;
    }
    has_regex_ = true;
  }
  return true;
}

std::string DemangleKernelName(std::string_view name) {
  if (name.size() < 3 || name.substr(0, 2) != "_Z") return std::string(name);
  std::string mangled(name);
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string result = (status == 0 && out != nullptr) ? std::string(out) : mangled;
  std::free(out);
  return result;
}

namespace {
// FNV-1a; launch keys and name-match results are cached by hash so the
// per-launch decision allocates nothing (a 64-bit collision would only merge
// two kernels' quotas).
uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
uint64_t MixU32(uint64_t h, uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}
bool ContainsNcclCaseInsensitive(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    if ((name[i] | 0x20) == 'n' && (name[i + 1] | 0x20) == 'c' && (name[i + 2] | 0x20) == 'c' &&
        (name[i + 3] | 0x20) == 'l') {
      return true;
    }
  }
  return false;
}
}  // namespace

bool KernelSelector::NameMatches(std::string_view name) {
  if (!has_regex_) return true;
  const uint64_t key = Fnv1a(name);
  auto it = name_match_cache_.find(key);
  if (it != name_match_cache_.end()) return it->second;
  const std::string text(name);
  bool match = regexec(&regex_, text.c_str(), 0, nullptr, 0) == 0;
  if (!match) {
    const std::string demangled = DemangleKernelName(name);
    match = demangled != text && regexec(&regex_, demangled.c_str(), 0, nullptr, 0) == 0;
  }
  name_match_cache_.emplace(key, match);
  return match;
}

SelectDecision KernelSelector::Decide(std::string_view name, uint32_t gx, uint32_t gy, uint32_t gz,
                                      uint32_t bx, uint32_t by, uint32_t bz) {
  auto skip = [this](SelectDecision d) {
    ++skipped_[static_cast<int>(d)];
    return d;
  };
  if (options_.exclude_nccl && ContainsNcclCaseInsensitive(name)) return skip(SelectDecision::kSkipNccl);
  if (!NameMatches(name)) return skip(SelectDecision::kSkipName);
  uint64_t key = Fnv1a(name);
  for (uint32_t d : {gx, gy, gz, bx, by, bz}) key = MixU32(key, d);
  const uint64_t index = launches_by_key_[key]++;
  if (index % options_.every_nth != 0) return skip(SelectDecision::kSkipNth);
  if (options_.launches_per_kernel != 0 && index / options_.every_nth >= options_.launches_per_kernel) {
    return skip(SelectDecision::kSkipQuota);
  }
  if (profiled_ >= options_.max_ranges) return skip(SelectDecision::kSkipBudget);
  ++profiled_;
  return SelectDecision::kProfile;
}

KernelSelectorOptions SelectorOptionsFromConfig(const KernelLaunchHookConfig& config) {
  KernelSelectorOptions o;
  o.name_regex = config.kernel_filter;
  o.launches_per_kernel = config.launches_per_kernel;
  o.every_nth = config.every_nth == 0 ? 1 : config.every_nth;
  o.max_ranges = config.max_ranges == 0 ? 2000 : config.max_ranges;
  o.exclude_nccl = config.exclude_nccl;
  auto env_u32 = [](const char* var, uint32_t* out) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') return;
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (end != v && *end == '\0' && n <= 0xffffffffUL) *out = static_cast<uint32_t>(n);
  };
  if (o.launches_per_kernel == 0) env_u32("SIGHTLINE_METRICS_LAUNCHES", &o.launches_per_kernel);
  if (o.every_nth == 1) env_u32("SIGHTLINE_METRICS_EVERY", &o.every_nth);
  if (o.every_nth == 0) o.every_nth = 1;
  return o;
}

// ---- RangeProfiler ------------------------------------------------------------

namespace {

// Ranges one counter-data image holds. The image is re-initialised for every
// profiled launch (one launch = one range), so a few slots are enough; extra
// ranges of one launch (should not happen) are counted as dropped.
constexpr size_t kRangesPerImage = 4;
constexpr size_t kRangesPerSharedImage = 256;
// Launches decoded together at most in a batched session.
constexpr size_t kBatchLimit = 64;

// A zeroed CUPTI parameter struct with its structSize set.
template <typename Params>
Params MakeParams(size_t struct_size) {
  Params p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = struct_size;
  return p;
}

// Wall time per profiler stage, printed at capture end when
// SIGHTLINE_METRICS_DEBUG is set (how the in-process cost splits up).
enum Stage {
  kStageAvailability, kStageBuildHost, kStageEnable, kStageImageInit, kStageSetConfig,
  kStageStart, kStageLaunch, kStageStop, kStageDecode, kStageEvaluate, kNumStages
};
const char* const kStageNames[kNumStages] = {"availability", "build_host", "enable", "image_init",
                                             "set_config", "start", "launch", "stop", "decode",
                                             "evaluate"};
double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// Adds the scope's duration to slot[0] (total) and keeps slot[1] (max).
class StageTimer {
 public:
  explicit StageTimer(double* slot) : slot_(slot), start_(NowSeconds()) {}
  ~StageTimer() {
    const double d = NowSeconds() - start_;
    slot_[0] += d;
    if (d > slot_[1]) slot_[1] = d;
  }
 private:
  double* slot_;
  double start_;
};

thread_local bool t_holding_launch = false;  // this thread holds mu_ for a profiled launch
thread_local bool t_in_hook = false;         // re-entrancy guard

const char* ResultString(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) return "unknown CUPTI error";
  return s;
}

class RangeProfiler final : public KernelLaunchHook {
 public:
  RangeProfiler(const KernelLaunchHookConfig& config) : config_(config) {}
  ~RangeProfiler() override;

  // Validates the configuration; initialises the profiler now when CUPTI
  // allows it, else at the first launch (InitProfiler).
  bool Init(std::string* error);

  void OnContextCreated(CUcontext context, uint32_t device_id) override;
  void OnLaunchEnter(const KernelLaunchInfo& launch) override;
  void OnLaunchExit(const KernelLaunchInfo& launch) override;
  void OnContextDestroy(CUcontext context) override;
  MetricCaptureResult OnCaptureEnd() override;
  bool IsReplayedCorrelation(uint32_t correlation_id) const override;
  uint32_t num_passes() const override { return passes_.load(); }
  std::string last_error() const override;

 private:
  struct ProfiledLaunch {
    uint32_t correlation_id = 0;
    uint32_t device_id = 0;
    std::string name;
  };
  struct ContextState {
    CUcontext context = nullptr;
    uint32_t device_id = 0;
    CUpti_RangeProfiler_Object* object = nullptr;
    std::vector<uint8_t> counter_data;
    size_t capacity = 0;   // ranges the counter-data image holds
    size_t evaluated = 0;  // ranges of the image already turned into events
    bool configured = false;
    bool failed = false;
    bool started = false;  // between cuptiRangeProfilerStart and Stop
    std::vector<ProfiledLaunch> undecoded;  // launches of the open session, in order
  };

  // Checked CUPTI call: records the error (with `what`) and returns false.
  bool Check(CUptiResult r, const char* what);
  bool InitProfiler(std::string* error);  // chip, metric set, host object
  bool BuildHost(const uint8_t* availability, std::string* error);
  void DestroyHost();
  ContextState* StateFor(CUcontext context, uint32_t device_id);  // mu_ held
  bool EnableOn(ContextState* state);                              // mu_ held
  bool PrepareImage(ContextState* state);                          // mu_ held
  bool Ready(ContextState* state);                                 // mu_ held
  void Flush(ContextState* state);                                 // mu_ held: stop + decode
  void EvaluateRange(ContextState* state, size_t range, const ProfiledLaunch& launch);
  void DisableAll();                                               // mu_ held
  void TurnOff(const std::string& why);                            // mu_ held

  KernelLaunchHookConfig config_;
  KernelSelector selector_;
  std::string chip_;
  std::vector<std::string> metrics_;
  std::vector<const char*> metric_ptrs_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  bool host_has_availability_ = false;
  std::vector<uint8_t> config_image_;
  std::atomic<uint32_t> passes_{0};
  std::atomic<bool> off_{false};
  bool profiler_ready_ = false;  // InitProfiler succeeded (mu_ held after Init)
  // false (default): one counter-data image per context, decoded after every
  // launch and re-initialised only when full; true
  // (SIGHTLINE_METRICS_IMAGE=per_launch): a fresh image + SetConfig for every
  // profiled launch. Both agree with ncu; the shared image is cheaper.
  bool image_per_launch_ = false;

  std::mutex mu_;  // held from enter to exit of a profiled launch
  std::vector<std::unique_ptr<ContextState>> contexts_;
  ContextState* active_ = nullptr;  // context of the launch holding mu_
  // Keep one session open across consecutive profiled launches of a context
  // (SIGHTLINE_METRICS_SESSION=batch) instead of Start/Stop around each.
  bool batch_sessions_ = false;
  MetricCaptureResult pending_;
  uint64_t range_index_ = 0;

  mutable std::mutex replayed_mu_;
  std::unordered_set<uint32_t> replayed_;

  mutable std::mutex error_mu_;
  std::string last_error_;

  double stage_s_[kNumStages][2] = {};  // total, max  // mu_ held (launch: between enter and exit)
  double launch_started_ = 0;
  uint64_t launches_profiled_ = 0;
  std::string first_range_name_;  // CUPTI's name of the first decoded range (debug)
};

bool RangeProfiler::Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  std::lock_guard<std::mutex> lock(error_mu_);
  last_error_ = std::string(what) + ": " + ResultString(r);
  return false;
}

std::string RangeProfiler::last_error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

void RangeProfiler::TurnOff(const std::string& why) {
  if (off_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = why;
  }
  pending_.error = why;
  std::fprintf(stderr,
               "sightline: warning: hardware counters unavailable (%s); per-kernel metrics are "
               "off, tracing continues\n",
               why.c_str());
}

void RangeProfiler::DestroyHost() {
  if (host_ == nullptr) return;
  auto p = MakeParams<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
  p.pHostObject = host_;
  Check(cuptiProfilerHostDeinitialize(&p), "cuptiProfilerHostDeinitialize");
  host_ = nullptr;
}

bool RangeProfiler::BuildHost(const uint8_t* availability, std::string* error) {
  DestroyHost();
  auto ip = MakeParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  ip.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  ip.pChipName = chip_.c_str();
  ip.pCounterAvailabilityImage = availability;
  if (!Check(cuptiProfilerHostInitialize(&ip), "cuptiProfilerHostInitialize")) {
    *error = "metrics: cannot initialise the CUPTI host API for " + chip_ + ": " + last_error();
    return false;
  }
  host_ = ip.pHostObject;
  host_has_availability_ = availability != nullptr;
  // Each name on its own first, so an unknown one is named in the error.
  for (const std::string& name : metrics_) {
    auto mp = MakeParams<CUpti_Profiler_Host_GetMetricProperties_Params>(CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
    mp.pHostObject = host_;
    mp.pMetricName = name.c_str();
    if (cuptiProfilerHostGetMetricProperties(&mp) != CUPTI_SUCCESS) {
      *error = "metrics: unknown metric '" + name + "' on " + chip_;
      return false;
    }
  }
  auto ap = MakeParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  ap.pHostObject = host_;
  ap.ppMetricNames = metric_ptrs_.data();
  ap.numMetrics = metric_ptrs_.size();
  if (!Check(cuptiProfilerHostConfigAddMetrics(&ap), "cuptiProfilerHostConfigAddMetrics")) {
    *error = "metrics: cannot schedule the metrics on " + chip_ + ": " + last_error();
    return false;
  }
  auto sp = MakeParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  sp.pHostObject = host_;
  if (!Check(cuptiProfilerHostGetConfigImageSize(&sp), "cuptiProfilerHostGetConfigImageSize")) {
    *error = "metrics: " + last_error();
    return false;
  }
  config_image_.assign(sp.configImageSize, 0);
  auto gp = MakeParams<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  gp.pHostObject = host_;
  gp.configImageSize = config_image_.size();
  gp.pConfigImage = config_image_.data();
  if (!Check(cuptiProfilerHostGetConfigImage(&gp), "cuptiProfilerHostGetConfigImage")) {
    *error = "metrics: " + last_error();
    return false;
  }
  auto np = MakeParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  np.configImageSize = config_image_.size();
  np.pConfigImage = config_image_.data();
  if (!Check(cuptiProfilerHostGetNumOfPasses(&np), "cuptiProfilerHostGetNumOfPasses")) {
    *error = "metrics: " + last_error();
    return false;
  }
  passes_.store(static_cast<uint32_t>(np.numOfPasses));
  return true;
}

bool RangeProfiler::Init(std::string* error) {
  if (const char* mode = std::getenv("SIGHTLINE_METRICS_IMAGE"); mode != nullptr) {
    image_per_launch_ = std::strcmp(mode, "per_launch") == 0;
  }
  if (const char* mode = std::getenv("SIGHTLINE_METRICS_SESSION"); mode != nullptr) {
    batch_sessions_ = std::strcmp(mode, "batch") == 0 && !image_per_launch_;
  }
  if (!selector_.Init(SelectorOptionsFromConfig(config_), error)) return false;
  // Spec syntax now, for every chip we know (the device's chip may not be
  // readable yet): one that resolves on no chip is an error at start-up.
  std::string first_error;
  bool resolves = false;
  for (const std::string& chip : SupportedChips()) {
    MetricSelection selection;
    std::string e;
    if (ResolveMetricSelection(config_.metric_set, chip, &selection, &e)) resolves = true;
    else if (first_error.empty()) first_error = e;
  }
  if (!resolves) {
    *error = first_error;
    return false;
  }
  // Inside InitializeInjection (cuInit) the profiler cannot initialise yet:
  // then the rest waits for the first kernel launch.
  auto pi = MakeParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  if (cuptiProfilerInitialize(&pi) != CUPTI_SUCCESS) return true;
  return InitProfiler(error);
}

bool RangeProfiler::InitProfiler(std::string* error) {
  auto pi = MakeParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  if (!Check(cuptiProfilerInitialize(&pi), "cuptiProfilerInitialize")) {
    *error = "metrics: " + last_error();
    return false;
  }
  auto cp = MakeParams<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  cp.deviceIndex = config_.device_id;
  if (!Check(cuptiDeviceGetChipName(&cp), "cuptiDeviceGetChipName") || cp.pChipName == nullptr) {
    *error = "metrics: cannot read the chip name of device " + std::to_string(config_.device_id) +
             ": " + last_error();
    return false;
  }
  chip_ = cp.pChipName;
  MetricSelection selection;
  if (!ResolveMetricSelection(config_.metric_set, chip_, &selection, error)) return false;
  metrics_ = selection.metrics;
  metric_ptrs_.clear();
  for (const std::string& m : metrics_) metric_ptrs_.push_back(m.c_str());
  // Host-side validation and pass count now (no context needed); the
  // counter-availability image of the first context refines it later.
  if (!BuildHost(nullptr, error)) return false;
  profiler_ready_ = true;
  return true;
}

RangeProfiler::~RangeProfiler() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& state : contexts_) Flush(state.get());
  DisableAll();
  DestroyHost();
}

void RangeProfiler::OnContextCreated(CUcontext context, uint32_t device_id) {
  if (off_.load() || t_in_hook) return;
  std::lock_guard<std::mutex> lock(mu_);
  StateFor(context, device_id);  // enabling is deferred to the first profiled launch
}

RangeProfiler::ContextState* RangeProfiler::StateFor(CUcontext context, uint32_t device_id) {
  for (auto& s : contexts_) {
    if (s->context == context) return s.get();
  }
  auto state = std::make_unique<ContextState>();
  state->context = context;
  state->device_id = device_id;
  contexts_.push_back(std::move(state));
  return contexts_.back().get();
}

bool RangeProfiler::EnableOn(ContextState* state) {
  if (state->object != nullptr) return true;
  if (state->failed) return false;
  // Counter availability: also the earliest place where missing permissions
  // or a busy counter unit show.
  auto ap = MakeParams<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  ap.ctx = state->context;
  CUptiResult r;
  {
    StageTimer t(stage_s_[kStageAvailability]);
    r = cuptiProfilerGetCounterAvailability(&ap);
  }
  if (r != CUPTI_SUCCESS) {
    state->failed = true;
    TurnOff(std::string("cuptiProfilerGetCounterAvailability: ") + ResultString(r));
    return false;
  }
  std::vector<uint8_t> availability(ap.counterAvailabilityImageSize);
  ap.pCounterAvailabilityImage = availability.data();
  {
    StageTimer t(stage_s_[kStageAvailability]);
    r = cuptiProfilerGetCounterAvailability(&ap);
  }
  if (r != CUPTI_SUCCESS) {
    state->failed = true;
    TurnOff(std::string("cuptiProfilerGetCounterAvailability: ") + ResultString(r));
    return false;
  }
  if (!host_has_availability_) {
    std::string error;
    StageTimer t(stage_s_[kStageBuildHost]);
    if (!BuildHost(availability.data(), &error)) {
      state->failed = true;
      TurnOff(error);
      return false;
    }
  }
  auto ep = MakeParams<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
  ep.ctx = state->context;
  {
    StageTimer t(stage_s_[kStageEnable]);
    r = cuptiRangeProfilerEnable(&ep);
  }
  if (r != CUPTI_SUCCESS) {
    state->failed = true;
    TurnOff(std::string("cuptiRangeProfilerEnable: ") + ResultString(r));
    return false;
  }
  state->object = ep.pRangeProfilerObject;
  auto sp = MakeParams<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  sp.pRangeProfilerObject = state->object;
  sp.pMetricNames = metric_ptrs_.data();
  sp.numMetrics = metric_ptrs_.size();
  state->capacity = image_per_launch_ ? kRangesPerImage : kRangesPerSharedImage;
  sp.maxNumOfRanges = state->capacity;
  sp.maxNumRangeTreeNodes = static_cast<uint32_t>(state->capacity);
  if (!Check(cuptiRangeProfilerGetCounterDataSize(&sp), "cuptiRangeProfilerGetCounterDataSize")) {
    state->failed = true;
    TurnOff(last_error());
    return false;
  }
  state->counter_data.assign(sp.counterDataSize, 0);
  return true;
}

bool RangeProfiler::PrepareImage(ContextState* state) {
  auto ip = MakeParams<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  ip.pRangeProfilerObject = state->object;
  ip.counterDataSize = state->counter_data.size();
  ip.pCounterData = state->counter_data.data();
  {
    StageTimer t(stage_s_[kStageImageInit]);
    if (!Check(cuptiRangeProfilerCounterDataImageInitialize(&ip),
               "cuptiRangeProfilerCounterDataImageInitialize")) {
      return false;
    }
  }
  auto cp = MakeParams<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  cp.pRangeProfilerObject = state->object;
  cp.configSize = config_image_.size();
  cp.pConfig = config_image_.data();
  cp.counterDataImageSize = state->counter_data.size();
  cp.pCounterDataImage = state->counter_data.data();
  cp.range = CUPTI_AutoRange;
  cp.replayMode = CUPTI_KernelReplay;
  cp.maxRangesPerPass = state->capacity;
  cp.numNestingLevels = 1;
  cp.minNestingLevel = 1;
  cp.passIndex = 0;
  cp.targetNestingLevel = 1;
  {
    StageTimer t(stage_s_[kStageSetConfig]);
    if (!Check(cuptiRangeProfilerSetConfig(&cp), "cuptiRangeProfilerSetConfig")) return false;
  }
  state->configured = true;
  state->evaluated = 0;
  return true;
}

bool RangeProfiler::Ready(ContextState* state) {
  if (!EnableOn(state)) return false;
  const size_t in_image = state->evaluated + state->undecoded.size();
  if (state->started && in_image + 1 > state->capacity) Flush(state);
  if (state->started) return true;
  if (image_per_launch_ || !state->configured || state->evaluated + 1 > state->capacity) {
    return PrepareImage(state);
  }
  return true;
}

void RangeProfiler::OnLaunchEnter(const KernelLaunchInfo& launch) {
  if (off_.load() || t_in_hook || t_holding_launch) return;
  t_in_hook = true;
  mu_.lock();
  bool keep_lock = false;
  if (!profiler_ready_) {
    std::string error;
    if (!InitProfiler(&error)) TurnOff(error);
  }
  const char* name = launch.kernel_name != nullptr ? launch.kernel_name : "";
  if (!off_.load()) {
    ContextState* state = StateFor(launch.context, launch.device_id);
    const SelectDecision decision = selector_.Decide(name, launch.grid_x, launch.grid_y, launch.grid_z,
                                                     launch.block_x, launch.block_y, launch.block_z);
    if (decision != SelectDecision::kProfile) {
      // An unprofiled kernel must not run inside an open session.
      if (state->started) Flush(state);
    } else if (Ready(state)) {
      CUptiResult r = CUPTI_SUCCESS;
      if (!state->started) {
        auto sp = MakeParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
        sp.pRangeProfilerObject = state->object;
        StageTimer t(stage_s_[kStageStart]);
        r = cuptiRangeProfilerStart(&sp);
      }
      if (r == CUPTI_SUCCESS) {
        state->started = true;
        state->undecoded.push_back(ProfiledLaunch{launch.correlation_id, launch.device_id, name});
        launch_started_ = NowSeconds();
        ++launches_profiled_;
        active_ = state;
        keep_lock = true;
      } else {
        TurnOff(std::string("cuptiRangeProfilerStart: ") + ResultString(r));
      }
    } else if (!off_.load() && !state->failed) {
      ++pending_.ranges_dropped;  // image/config failure for this launch only
    }
  }
  if (keep_lock) {
    t_holding_launch = true;
  } else {
    mu_.unlock();
  }
  t_in_hook = false;
}

void RangeProfiler::OnLaunchExit(const KernelLaunchInfo& launch) {
  if (!t_holding_launch) return;
  t_in_hook = true;
  ContextState* state = active_;
  active_ = nullptr;
  {
    const double d = NowSeconds() - launch_started_;
    stage_s_[kStageLaunch][0] += d;
    if (d > stage_s_[kStageLaunch][1]) stage_s_[kStageLaunch][1] = d;
  }
  if (!state->undecoded.empty()) {
    std::lock_guard<std::mutex> lock(replayed_mu_);
    replayed_.insert(state->undecoded.back().correlation_id);
  }
  if (!batch_sessions_ || state->undecoded.size() >= kBatchLimit) Flush(state);
  t_holding_launch = false;
  mu_.unlock();
  t_in_hook = false;
}

void RangeProfiler::Flush(ContextState* state) {
  if (!state->started) return;
  state->started = false;
  std::vector<ProfiledLaunch> launches = std::move(state->undecoded);
  state->undecoded.clear();
  auto sp = MakeParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  sp.pRangeProfilerObject = state->object;
  bool ok;
  {
    StageTimer t(stage_s_[kStageStop]);
    ok = Check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop");
  }
  if (ok && !sp.isAllPassSubmitted) {
    Check(CUPTI_ERROR_UNKNOWN, "cuptiRangeProfilerStop: not all passes were submitted");
  }
  auto dp = MakeParams<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  dp.pRangeProfilerObject = state->object;
  if (ok) {
    StageTimer t(stage_s_[kStageDecode]);
    ok = Check(cuptiRangeProfilerDecodeData(&dp), "cuptiRangeProfilerDecodeData");
  }
  auto ip = MakeParams<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  ip.pCounterDataImage = state->counter_data.data();
  ip.counterDataImageSize = state->counter_data.size();
  if (ok) ok = Check(cuptiRangeProfilerGetCounterDataInfo(&ip), "cuptiRangeProfilerGetCounterDataInfo");
  if (!ok) {
    pending_.ranges_dropped += launches.size();
    return;
  }
  pending_.ranges_dropped += dp.numOfRangeDropped;
  const size_t fresh = ip.numTotalRanges > state->evaluated ? ip.numTotalRanges - state->evaluated : 0;
  if (fresh == launches.size() || launches.size() == 1) {
    // Ranges come in launch order, one per kernel launch. With one launch in
    // the session, surplus ranges (a kernel launched behind our back) are
    // dropped and the first range is the launch's.
    for (size_t i = 0; i < std::min(fresh, launches.size()); ++i) {
      EvaluateRange(state, state->evaluated + i, launches[i]);
    }
    pending_.ranges_dropped += fresh > launches.size() ? fresh - launches.size() : launches.size() - fresh;
  } else {
    // Several launches and a different number of ranges: attribution would
    // be guesswork. Drop them and stop batching.
    pending_.ranges_dropped += launches.size();
    batch_sessions_ = false;
    Check(CUPTI_ERROR_UNKNOWN, ("range profiler: " + std::to_string(fresh) + " ranges for " +
                                std::to_string(launches.size()) + " launches; sessions per launch from now")
                                   .c_str());
  }
  state->evaluated = ip.numTotalRanges;
}

void RangeProfiler::EvaluateRange(ContextState* state, size_t range, const ProfiledLaunch& launch) {
  std::vector<double> values(metric_ptrs_.size(), 0.0);
  auto ev = MakeParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
      CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
  ev.pHostObject = host_;
  ev.pCounterDataImage = state->counter_data.data();
  ev.counterDataImageSize = state->counter_data.size();
  ev.rangeIndex = range;
  ev.ppMetricNames = metric_ptrs_.data();
  ev.numMetrics = metric_ptrs_.size();
  ev.pMetricValues = values.data();
  bool evaluated;
  {
    StageTimer t(stage_s_[kStageEvaluate]);
    evaluated = Check(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
  }
  if (!evaluated) {
    ++pending_.ranges_dropped;
    return;
  }
  std::string range_name = launch.name;
  if (range_name.empty() || (first_range_name_.empty() && std::getenv("SIGHTLINE_METRICS_DEBUG"))) {
    auto rp = MakeParams<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
    rp.pCounterDataImage = state->counter_data.data();
    rp.counterDataImageSize = state->counter_data.size();
    rp.rangeIndex = range;
    rp.rangeDelimiter = "/";
    if (Check(cuptiRangeProfilerCounterDataGetRangeInfo(&rp), "cuptiRangeProfilerCounterDataGetRangeInfo") &&
        rp.rangeName != nullptr) {
      if (first_range_name_.empty()) first_range_name_ = rp.rangeName;
      if (range_name.empty()) range_name = rp.rangeName;
    }
  }
  MetricRangeEvent event;
  event.device_id = launch.device_id;
  event.correlation_id = launch.correlation_id;
  event.num_passes = passes_.load();
  event.range_index = static_cast<uint32_t>(range_index_++);
  event.values.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) event.values[i].value = values[i];
  pending_.ranges.push_back(std::move(event));
  pending_.range_names.push_back(std::move(range_name));
  pending_.metric_names.push_back(metrics_);
}

void RangeProfiler::DisableAll() {
  for (auto& s : contexts_) {
    if (s->object == nullptr) continue;
    auto p = MakeParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = s->object;
    Check(cuptiRangeProfilerDisable(&p), "cuptiRangeProfilerDisable");
    s->object = nullptr;
  }
}

void RangeProfiler::OnContextDestroy(CUcontext context) {
  if (t_in_hook) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = contexts_.begin(); it != contexts_.end(); ++it) {
    if ((*it)->context != context) continue;
    Flush(it->get());
    if ((*it)->object != nullptr) {
      auto p = MakeParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      p.pRangeProfilerObject = (*it)->object;
      Check(cuptiRangeProfilerDisable(&p), "cuptiRangeProfilerDisable");
    }
    contexts_.erase(it);
    return;
  }
}

MetricCaptureResult RangeProfiler::OnCaptureEnd() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& state : contexts_) Flush(state.get());
  if (std::getenv("SIGHTLINE_METRICS_DEBUG") != nullptr) {
    std::string line = "sightline: range profiler: " + std::to_string(launches_profiled_) +
                       " launches, " + std::to_string(passes_.load()) + " passes; seconds";
    for (int i = 0; i < kNumStages; ++i) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), " %s=%.4f(max %.4f)", kStageNames[i], stage_s_[i][0],
                    stage_s_[i][1]);
      line += buf;
    }
    std::fprintf(stderr, "%s; first range name '%s'\n", line.c_str(), first_range_name_.c_str());
  }
  if (launches_profiled_ > 0 || off_.load()) {
    const char* quiet = std::getenv("SIGHTLINE_QUIET");
    if (quiet == nullptr || std::strcmp(quiet, "1") != 0) {
      std::fprintf(stderr,
                   "sightline: metrics '%s' on %s: %llu launches profiled, %u replay passes each, "
                   "%llu ranges dropped; skipped %llu NCCL, %llu by name, %llu not every-Nth, "
                   "%llu over the per-kernel quota, %llu over the budget\n",
                   config_.metric_set.c_str(), chip_.empty() ? "?" : chip_.c_str(),
                   static_cast<unsigned long long>(launches_profiled_), passes_.load(),
                   static_cast<unsigned long long>(pending_.ranges_dropped),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipNccl)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipName)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipNth)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipQuota)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipBudget)));
    }
  }
  MetricCaptureResult out = std::move(pending_);
  pending_ = MetricCaptureResult();
  if (out.error.empty() && off_.load()) out.error = last_error();
  return out;
}

bool RangeProfiler::IsReplayedCorrelation(uint32_t correlation_id) const {
  std::lock_guard<std::mutex> lock(replayed_mu_);
  return replayed_.count(correlation_id) != 0;
}

}  // namespace

std::unique_ptr<KernelLaunchHook> CreateKernelLaunchHook(const KernelLaunchHookConfig& config,
                                                         std::string* error) {
  std::string local_error;
  std::string* err = error != nullptr ? error : &local_error;
  if (config.metric_set.empty() || config.metric_set == "none") {
    *err = "metrics: none requested";
    return nullptr;
  }
  auto hook = std::make_unique<RangeProfiler>(config);
  if (!hook->Init(err)) return nullptr;
  return hook;
}

}  // namespace sightline::collect
