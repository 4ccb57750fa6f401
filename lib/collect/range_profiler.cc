// lib/collect/range_profiler.cc — see range_profiler.h. Setup (profiler,
// host object, per-context enable), the kernel-replay path and capture end;
// spread replay is in range_profiler_spread_target.cc, kernel selection in
// range_profiler_select.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "lib/collect/metric_sets.h"
#include "lib/collect/range_profiler_impl.h"

namespace sightline::collect {
namespace internal {

thread_local bool t_holding_launch = false;
thread_local bool t_in_hook = false;

bool RangeProfiler::Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  MutexLock lock(error_mu_);
  last_error_ = std::string(what) + ": " + ResultString(r);
  return false;
}

std::string RangeProfiler::last_error() const {
  MutexLock lock(error_mu_);
  return last_error_;
}

void RangeProfiler::TurnOff(const std::string& why) {
  if (off_.exchange(true)) return;
  {
    MutexLock lock(error_mu_);
    last_error_ = why;
  }
  pending_.error = why;
  NoteInPlace();  // kernels traced concurrently again
  std::fprintf(stderr,
               "sightline: warning: hardware counters unavailable (%s); per-kernel metrics are "
               "off, tracing continues\n",
               why.c_str());
}

void RangeProfiler::DestroyHostObject(CUpti_Profiler_Host_Object** host) {
  if (*host == nullptr) return;
  auto p = MakeParams<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
  p.pHostObject = *host;
  Check(cuptiProfilerHostDeinitialize(&p), "cuptiProfilerHostDeinitialize");
  *host = nullptr;
}

void RangeProfiler::DestroyHost() {
  DestroyHostObject(&host_);
  DestroyHostObject(&replay_host_);
}

bool RangeProfiler::BuildHostObject(const std::vector<const char*>& names, const uint8_t* availability,
                                    CUpti_Profiler_Host_Object** host, std::vector<uint8_t>* image,
                                    uint32_t* passes, std::string* error) {
  auto ip = MakeParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  ip.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  ip.pChipName = chip_.c_str();
  ip.pCounterAvailabilityImage = availability;
  if (!Check(cuptiProfilerHostInitialize(&ip), "cuptiProfilerHostInitialize")) {
    *error = "metrics: cannot initialise the CUPTI host API for " + chip_ + ": " + last_error();
    return false;
  }
  *host = ip.pHostObject;
  // Each name on its own first, so an unknown one is named in the error.
  for (const char* name : names) {
    auto mp = MakeParams<CUpti_Profiler_Host_GetMetricProperties_Params>(CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
    mp.pHostObject = *host;
    mp.pMetricName = name;
    if (cuptiProfilerHostGetMetricProperties(&mp) != CUPTI_SUCCESS) {
      *error = "metrics: unknown metric '" + std::string(name) + "' on " + chip_;
      return false;
    }
  }
  auto ap = MakeParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  ap.pHostObject = *host;
  ap.ppMetricNames = const_cast<const char**>(names.data());
  ap.numMetrics = names.size();
  if (!Check(cuptiProfilerHostConfigAddMetrics(&ap), "cuptiProfilerHostConfigAddMetrics")) {
    *error = "metrics: cannot schedule the metrics on " + chip_ + ": " + last_error();
    return false;
  }
  auto sp = MakeParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  sp.pHostObject = *host;
  if (!Check(cuptiProfilerHostGetConfigImageSize(&sp), "cuptiProfilerHostGetConfigImageSize")) {
    *error = "metrics: " + last_error();
    return false;
  }
  image->assign(sp.configImageSize, 0);
  auto gp = MakeParams<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  gp.pHostObject = *host;
  gp.configImageSize = image->size();
  gp.pConfigImage = image->data();
  if (!Check(cuptiProfilerHostGetConfigImage(&gp), "cuptiProfilerHostGetConfigImage")) {
    *error = "metrics: " + last_error();
    return false;
  }
  auto np = MakeParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  np.configImageSize = image->size();
  np.pConfigImage = image->data();
  if (!Check(cuptiProfilerHostGetNumOfPasses(&np), "cuptiProfilerHostGetNumOfPasses")) {
    *error = "metrics: " + last_error();
    return false;
  }
  *passes = static_cast<uint32_t>(np.numOfPasses);
  return true;
}

bool RangeProfiler::BuildHost(const uint8_t* availability, std::string* error) {
  DestroyHost();
  host_has_availability_ = availability != nullptr;
  uint32_t passes = 0;
  if (!BuildHostObject(metric_ptrs_, availability, &host_, &config_image_, &passes, error)) {
    return false;
  }
  passes_.store(passes);
  if (spread_ != nullptr) spread_->set_num_passes(passes);
  if (sequence_ != nullptr) sequence_->set_num_passes(passes);
  if (top_ != nullptr && !replay_metric_ptrs_.empty()) {
    std::string replay_error;
    if (!BuildHostObject(replay_metric_ptrs_, availability, &replay_host_, &replay_config_image_,
                         &replay_passes_, &replay_error)) {
      // The replays then use the whole list (more passes), as before.
      DestroyHostObject(&replay_host_);
      if (!config_.quiet) {
        std::fprintf(stderr,
                     "sightline: warning: --metrics-replay-top: the DRAM metrics alone could not "
                     "be scheduled (%s); the replays measure the whole list\n",
                     replay_error.c_str());
      }
    }
  }
  return true;
}

bool RangeProfiler::Init(std::string* error) {
  graph_mode_ = config_.range_nvtx.empty() && config_.range_graph;
  user_mode_ = !config_.range_nvtx.empty() || graph_mode_;
  if (!config_.range_nvtx.empty()) {
    user_ = std::make_unique<UserRangeSets>(static_cast<UserRangeTarget*>(this), config_.range_nvtx, 1);
  }
  image_per_launch_ = config_.image_per_launch;
  batch_sessions_ = config_.batch_sessions && !image_per_launch_;
  if (!selector_.Init(SelectorOptionsFromConfig(config_), error)) return false;
  if (config_.replay == MetricsReplay::kSequence) {
    sequence_ = std::make_unique<SequenceSpread>(static_cast<SequenceTarget*>(this), 1);
    sequence_->set_debug(config_.debug);
    sequence_->set_sequences_per_step(config_.sequences_per_step);
  }
  spread_on_ = config_.replay == MetricsReplay::kSpread || config_.replay == MetricsReplay::kAuto;
  if (spread_on_) {
    // Which CUPTI replay mode carries the explicit pass index: application
    // replay (the header: "set passIndex to the output of EndPass() for
    // application replay") unless SIGHTLINE_METRICS_SPREAD_REPLAY=user.
    spread_replay_ = config_.spread_user_replay ? CUPTI_UserReplay : CUPTI_ApplicationReplay;
    // One configuration at a time: CUPTI's pass counter is per object
    // (range_profiler_spread.h).
    spread_ = std::make_unique<SpreadScheduler>(static_cast<SpreadTarget*>(this), 1,
                                                /*max_in_flight=*/1);
  }
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
  if (sequence_ != nullptr && config_.replay_top > 0) {
    bool dram = false;
    for (const std::string& m : metrics_) dram = dram || IsDramMetric(m);
    top_weight_ = TopWeightIndices(metrics_);
    if (dram) {
      top_ = std::make_unique<ReplayTopChooser>(config_.replay_top, config_.sequences_per_step);
      replay_metrics_ = ReplayMetrics(metrics_);
      replay_metric_ptrs_.clear();
      for (const std::string& m : replay_metrics_) replay_metric_ptrs_.push_back(m.c_str());
    } else if (!config_.quiet) {
      std::fprintf(stderr,
                   "sightline: warning: --metrics-replay-top %u does nothing: the metrics '%s' "
                   "have no dram__ metric (it replays kernels for their DRAM counters)\n",
                   config_.replay_top, config_.metric_set.c_str());
    }
  }
  // Host-side validation and pass count now (no context needed); the
  // counter-availability image of the first context refines it later.
  if (!BuildHost(nullptr, error)) return false;
  profiler_ready_ = true;
  return true;
}

RangeProfiler::~RangeProfiler() {
  MutexLock lock(mu_);
  if (spread_ != nullptr) spread_->DropAll();
  for (auto& state : contexts_) Flush(state.get());
  DisableAll();
  DestroyHost();
}

void RangeProfiler::OnContextCreated(CUcontext context, uint32_t device_id) {
  if (off_.load() || t_in_hook) return;
  MutexLock lock(mu_);
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
  // A top replay's object measures replay_metrics_ only; it is
  // disabled after the replay, so the next enable sizes for the whole list.
  const std::vector<const char*>& names = DramReplayActive() ? replay_metric_ptrs_ : metric_ptrs_;
  sp.pMetricNames = const_cast<const char**>(names.data());
  sp.numMetrics = names.size();
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
  const std::vector<uint8_t>& image = DramReplayActive() ? replay_config_image_ : config_image_;
  cp.configSize = image.size();
  cp.pConfig = image.data();
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
  if (user_mode_ || off_.load() || t_in_hook || t_holding_launch) return;
  t_in_hook = true;
  mu_.Lock();
  if (!window_open_) {  // entered just as the last window closed
    mu_.Unlock();
    t_in_hook = false;
    return;
  }
  if (CaptureInProgress()) {  // began after the collector looked (stream_capture.h)
    mu_.Unlock();
    t_in_hook = false;
    return;
  }
  bool keep_lock = false;
  if (!profiler_ready_) {
    std::string error;
    if (!InitProfiler(&error)) TurnOff(error);
  }
  const char* name = launch.kernel_name != nullptr ? launch.kernel_name : "";
  if (!off_.load()) {
    ContextState* state = StateFor(launch.context, launch.device_id);
    const SpreadRoute route = sequence_ != nullptr ? EnterSequence(state, launch, name)
                              : spread_on_         ? EnterSpread(state, launch, name)
                                                   : SpreadRoute::kNotSpread;
    if (route == SpreadRoute::kProfiled) {
      keep_lock = true;
    } else if (route == SpreadRoute::kNotSpread) {
      keep_lock = EnterKernelReplay(state, launch, name);
      if (!keep_lock && top_replay_active_) {  // not replayed: counted, the object reset
        top_replay_active_ = false;
        top_->NoteFailed();
        DisableObject(state);
      }
    } else if (state->started) {
      Flush(state);  // an unprofiled kernel must not run inside an open session
    }
  }
  if (keep_lock) {
    t_holding_launch = true;
  } else {
    mu_.Unlock();
  }
  t_in_hook = false;
}

bool RangeProfiler::EnterKernelReplay(ContextState* state, const KernelLaunchInfo& launch,
                                      const char* name) {
  // In progress when spreading failed, or a sequence's heaviest
  // configuration (TakeTopReplay): replayed once, the selector not asked.
  bool rescued = top_replay_active_;
  if (!rescued && !rescue_keys_.empty()) {
    rescued = rescue_keys_.erase(SpreadKey(launch.context, name, launch.grid_x, launch.grid_y,
                                           launch.grid_z, launch.block_x, launch.block_y,
                                           launch.block_z, launch.dynamic_shared_bytes)) != 0;
  }
  const SelectDecision decision =
      rescued ? SelectDecision::kProfile
              : selector_.Decide(name, launch.grid_x, launch.grid_y, launch.grid_z, launch.block_x,
                                 launch.block_y, launch.block_z, launch.dynamic_shared_bytes);
  if (decision != SelectDecision::kProfile) {
    // An unprofiled kernel must not run inside an open session.
    if (state->started) Flush(state);
    return false;
  }
  if (!Ready(state)) {
    if (!off_.load() && !state->failed) ++pending_.ranges_dropped;  // image/config failure: this launch only
    return false;
  }
  CUptiResult r = CUPTI_SUCCESS;
  if (!state->started) {
    auto sp = MakeParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    sp.pRangeProfilerObject = state->object;
    StageTimer t(stage_s_[kStageStart]);
    r = cuptiRangeProfilerStart(&sp);
  }
  if (r != CUPTI_SUCCESS) {
    TurnOff(std::string("cuptiRangeProfilerStart: ") + ResultString(r));
    return false;
  }
  state->started = true;
  state->undecoded.push_back(
      ProfiledLaunch{launch.correlation_id, launch.device_id, name, DramReplayActive()});
  launch_started_ = NowSeconds();
  ++launches_profiled_;
  active_ = state;
  return true;
}

void RangeProfiler::OnLaunchExit(const KernelLaunchInfo& /*launch*/) {
  if (!t_holding_launch) return;
  t_in_hook = true;
  if (active_sequence_) {  // submitted inside the pass, in order: nothing else to do
    active_sequence_ = false;
    active_ = nullptr;
    t_holding_launch = false;
    mu_.Unlock();
    t_in_hook = false;
    return;
  }
  if (active_spread_) {
    ExitSpread();
    active_ = nullptr;
    t_holding_launch = false;
    mu_.Unlock();
    t_in_hook = false;
    return;
  }
  ContextState* state = active_;
  active_ = nullptr;
  {
    const double d = NowSeconds() - launch_started_;
    stage_s_[kStageLaunch][0] += d;
    if (d > stage_s_[kStageLaunch][1]) stage_s_[kStageLaunch][1] = d;
  }
  if (!state->undecoded.empty()) {
    MutexLock lock(replayed_mu_);
    replayed_.insert(state->undecoded.back().correlation_id);
  }
  if (top_replay_active_) {
    // Back to a fresh object before the next sequence's application-replay
    // passes (the converse of spread_probe F2/F3 was never tried).
    top_replay_active_ = false;
    Flush(state);
    DisableObject(state);
  } else if (!batch_sessions_ || state->undecoded.size() >= kBatchLimit) {
    Flush(state);
  }
  t_holding_launch = false;
  mu_.Unlock();
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
  // A top replay's range: its own host object and metric list.
  const bool dram = launch.dram_replay && replay_host_ != nullptr;
  const std::vector<const char*>& names = dram ? replay_metric_ptrs_ : metric_ptrs_;
  std::vector<double> values(names.size(), 0.0);
  auto ev = MakeParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
      CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
  ev.pHostObject = dram ? replay_host_ : host_;
  ev.pCounterDataImage = state->counter_data.data();
  ev.counterDataImageSize = state->counter_data.size();
  ev.rangeIndex = range;
  ev.ppMetricNames = const_cast<const char**>(names.data());
  ev.numMetrics = names.size();
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
  if (range_name.empty() || (first_range_name_.empty() && config_.debug)) {
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
  event.num_passes = dram ? replay_passes_ : passes_.load();
  SetValues(&event, values);
  MetricRangeSpan span;
  span.first_correlation_id = launch.correlation_id;
  span.passes_collected = event.num_passes;
  AppendRange(std::move(event), std::move(range_name), span, dram ? &replay_metrics_ : nullptr);
}

void RangeProfiler::AppendRange(MetricRangeEvent event, std::string name, const MetricRangeSpan& span,
                                const std::vector<std::string>* names) {
  event.range_index = static_cast<uint32_t>(range_index_++);
  const bool has_values = !event.values.empty();
  pending_.ranges.push_back(std::move(event));
  pending_.range_names.push_back(std::move(name));
  pending_.metric_names.push_back(has_values ? (names != nullptr ? *names : metrics_)
                                             : std::vector<std::string>());
  pending_.spans.push_back(span);
}

void RangeProfiler::DisableObject(ContextState* state) {
  if (state->object == nullptr) return;
  auto p = MakeParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
  p.pRangeProfilerObject = state->object;
  Check(cuptiRangeProfilerDisable(&p), "cuptiRangeProfilerDisable");
  state->object = nullptr;
  state->configured = false;
}

void RangeProfiler::DisableAll() {
  for (auto& s : contexts_) DisableObject(s.get());
}

void RangeProfiler::OnContextDestroy(CUcontext context) {
  if (t_in_hook) return;
  MutexLock lock(mu_);
  for (auto it = contexts_.begin(); it != contexts_.end(); ++it) {
    if ((*it)->context != context) continue;
    if (spread_ != nullptr) CollectSpread(spread_->FinishIncomplete(it->get()));
    if (sequence_ != nullptr) {
      CollectSpread(sequence_->FinishIncomplete(it->get()));
      CollectSpread(sequence_->TakeCompleted());  // a last pass that ended with the context
      ReportUnseen();
      NoteInPlace();
    }
    if (user_ != nullptr) {
      DebugUser("context destroyed");
      uint64_t now = 0;
      cuptiGetTimestamp(&now);
      user_->FinishIncomplete(now, it->get(), /*reset_passes=*/false);
      if (!user_->open()) user_open_thread_.store(0);
      CollectUser();
      NoteInPlace();
    }
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

void RangeProfiler::OnCaptureStart() {
  MutexLock lock(mu_);
  window_open_ = true;
}

void RangeProfiler::OnUnhookedWork(bool stream_capture) {
  if (off_.load() || t_in_hook || t_holding_launch) return;
  if (user_mode_) {
    // Per-range mode measures whole user ranges, a graph's kernels
    // included; only a capture (whose Start/Stop would invalidate it) cuts
    // an open instance: its set is reported incomplete.
    if (stream_capture) {
      t_in_hook = true;
      {
        MutexLock lock(mu_);
        if (user_ != nullptr && user_->open()) {
          uint64_t now = 0;
          cuptiGetTimestamp(&now);
          user_->FinishIncomplete(now, nullptr, /*reset_passes=*/true);
          user_open_thread_.store(0);
          ++user_cut_by_capture_;
          CollectUser();
          NoteInPlace();
        }
      }
      t_in_hook = false;
    }
    return;
  }
  t_in_hook = true;
  {
    MutexLock lock(mu_);
    if (sequence_ != nullptr) {
      sequence_->Interrupt(sequence_->context(),
                           stream_capture ? "a stream capture" : "a CUDA graph or cooperative launch");
      if (SettleSequence()) NoteInPlace();
    }
    for (auto& s : contexts_) {
      if (s->started) Flush(s.get());  // a kernel-replay session must not hold foreign work
    }
  }
  t_in_hook = false;
}

MetricCaptureResult RangeProfiler::OnCaptureEnd() {
  MutexLock lock(mu_);
  window_open_ = false;
  for (auto& state : contexts_) Flush(state.get());
  std::string user_line;
  if (user_ == nullptr && graph_mode_) user_line = UserRangeLine();
  if (user_ != nullptr) {
    DebugUser("capture end");
    uint64_t now = 0;
    cuptiGetTimestamp(&now);
    user_->FinishIncomplete(now, nullptr, /*reset_passes=*/true);
    DebugUser("capture end, sets finished");
    user_open_thread_.store(0);
    CollectUser();
    NoteInPlace();
    user_line = UserRangeLine();
  }
  std::string spread_line;
  if (spread_ != nullptr) {
    std::vector<SpreadCollection> left = spread_->FinishIncomplete();
    if (config_.replay == MetricsReplay::kAuto) {
      for (const SpreadCollection& c : left) kernel_keys_.insert(c.key);
    }
    CollectSpread(std::move(left));
    const SpreadStats& s = spread_->stats();
    pending_.spread_completed = s.completed - spread_reported_.completed;
    pending_.spread_incomplete = s.incomplete - spread_reported_.incomplete;
    pending_.spread_discarded = s.discarded - spread_reported_.discarded;
    spread_reported_ = s;
    spread_line = "; spread replay (" + std::string(MetricsReplayName(config_.replay)) + ", " +
                  (spread_replay_ == CUPTI_UserReplay ? "user" : "application") + " replay" +
                  (spread_on_ ? "" : ", fell back to kernel replay") + "): " +
                  std::to_string(s.completed) + " sets complete from " + std::to_string(s.passes) +
                  " launches, " + std::to_string(s.incomplete) + " incomplete, " +
                  std::to_string(s.discarded) + " discarded (another kernel inside a pass), " +
                  std::to_string(s.abandoned) + " configurations abandoned, " +
                  std::to_string(s.slots_full) + " not started (slots full); Stop reports " +
                  (s.stop_index_is_next > 0 ? "the next" : "the current") + " pass index";
  }
  if (sequence_ != nullptr || (!sequence_failed_.empty() && !sequence_failure_reported_)) {
    if (sequence_ != nullptr) {
      CollectSpread(sequence_->FinishIncomplete());
      CollectSpread(sequence_->TakeCompleted());  // a last pass that ended with the window
      sequence_->NewWindow();
      ReportUnseen();
      NoteInPlace();
    } else {
      sequence_failure_reported_ = true;  // said once, in the window it stopped
    }
    const SequenceStats s = sequence_ != nullptr ? sequence_->stats() : sequence_final_;
    pending_.spread_completed = s.completed - sequence_reported_.completed;
    pending_.spread_incomplete = s.incomplete - sequence_reported_.incomplete;
    pending_.spread_discarded = s.discarded - sequence_reported_.discarded;
    sequence_reported_ = s;
    spread_line = "; sequence replay (application replay" +
                  (sequence_failed_.empty() ? std::string() : ", stopped: " + sequence_failed_) +
                  "): " + std::to_string(s.sequences) + " sequences, " + std::to_string(s.completed) +
                  " kernel sets complete from " + std::to_string(s.passes) + " passes (one per step" +
                  (s.period > 0 ? " of " + std::to_string(s.period) + " launches" : std::string()) +
                  "), " + std::to_string(s.incomplete) + " incomplete, " + std::to_string(s.discarded) +
                  " restarts (a step differed from the learned one" +
                  (s.range_mismatch > 0 ? "; " + std::to_string(s.range_mismatch) +
                                              " times CUPTI counted other ranges than launches, e.g. "
                                              "kernels inside CUDA graphs"
                                        : std::string()) +
                  (s.interrupted > 0 ? "; " + std::to_string(s.interrupted) +
                                           " by a CUDA graph or cooperative launch or a stream "
                                           "capture inside the step"
                                     : std::string()) +
                  ")" +
                  (s.paused > 0 ? "; " + std::to_string(s.paused) +
                                      " passes ended at a CUDA graph or cooperative launch or a "
                                      "stream capture after the step's launches (its kernels "
                                      "run outside the passes, without metrics)"
                                : std::string()) +
                  TopReplayLine();
  }
  if (config_.debug) {
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
  if (!user_line.empty() && !config_.quiet) {
    std::fprintf(stderr, "sightline: metrics '%s' on %s: %s\n", config_.metric_set.c_str(),
                 chip_.empty() ? "?" : chip_.c_str(), user_line.c_str());
  }
  if (!user_mode_ && (launches_profiled_ > 0 || off_.load() || !spread_line.empty())) {
    if (!config_.quiet) {
      // Top replays (--metrics-replay-top) measure the DRAM metrics alone (and the duration).
      const uint64_t dram_replays = replay_host_ != nullptr ? top_->replayed() : 0;
      auto passes = [](uint32_t n) { return std::to_string(n) + (n == 1 ? " pass" : " passes"); };
      std::string kr_passes = passes(passes_.load());
      if (dram_replays > 0 && dram_replays >= launches_profiled_) {
        kr_passes = passes(replay_passes_);
      } else if (dram_replays > 0) {
        kr_passes += " (the top replays " + passes(replay_passes_) + ")";
      }
      std::fprintf(stderr,
                   "sightline: metrics '%s' on %s: %llu launches profiled by kernel replay, %s each, "
                   "%llu ranges dropped; skipped %llu NCCL, %llu by name, %llu not every-Nth, "
                   "%llu over the per-kernel quota, %llu over the budget%s\n",
                   config_.metric_set.c_str(), chip_.empty() ? "?" : chip_.c_str(),
                   static_cast<unsigned long long>(launches_profiled_), kr_passes.c_str(),
                   static_cast<unsigned long long>(pending_.ranges_dropped),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipNccl)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipName)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipNth)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipQuota)),
                   static_cast<unsigned long long>(selector_.skipped(SelectDecision::kSkipBudget)),
                   spread_line.c_str());
    }
  }
  MetricCaptureResult out = std::move(pending_);
  pending_ = MetricCaptureResult();
  if (out.error.empty() && off_.load()) out.error = last_error();
  return out;
}

bool RangeProfiler::IsReplayedCorrelation(uint32_t correlation_id) const {
  MutexLock lock(replayed_mu_);
  return replayed_.count(correlation_id) != 0;
}

}  // namespace internal

std::unique_ptr<KernelLaunchHook> CreateKernelLaunchHook(const KernelLaunchHookConfig& config,
                                                         std::string* error) {
  std::string local_error;
  std::string* err = error != nullptr ? error : &local_error;
  if (config.metric_set.empty() || config.metric_set == "none") {
    *err = "metrics: none requested";
    return nullptr;
  }
  auto hook = std::make_unique<internal::RangeProfiler>(config);
  if (!hook->Init(err)) return nullptr;
  return hook;
}

}  // namespace sightline::collect
