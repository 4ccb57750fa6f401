// lib/collect/range_profiler_spread_target.cc — spread replay in the range
// profiler: routing of launches (range_profiler_spread.h says what and why),
// the CUPTI calls behind SpreadTarget, and the fall-back to kernel replay.
//
// CUPTI behaviour this relies on (not testable without a GPU; checked by
// bench/metrics/gpu_spread.sh on the H200):
//   * SetConfig may be called again on an enabled context between sessions,
//     with another counter-data image (kernel replay's per-launch image mode
//     already does this on the H200).
//   * Application replay (or user replay, SIGHTLINE_METRICS_SPREAD_REPLAY=user)
//     collects the object's next pass at each Start/Stop: one pass counter per
//     range-profiler object, Stop returns the next pass index (0 with
//     isAllPassSubmitted after the last); DecodeData after Stop adds that pass
//     to the image given to SetConfig, which keeps earlier passes' data (seen
//     on the H200 with CUDA 13.0, bench/metrics/spread_probe.cu). Hence one
//     configuration at a time per object, and Disable + Enable to restart.
//   * Auto range without kernel replay gives each kernel in Start..Stop a
//     range of its own: one range per pass, range 0 in every pass.
// A failure of any of these shows as a CUPTI error or as a pass sequence the
// scheduler rejects: one warning, kernel replay for the rest of the run.
#include <cstdio>

#include "lib/collect/range_profiler_impl.h"

namespace sightline::collect::internal {

RangeProfiler::SpreadRoute RangeProfiler::EnterSpread(ContextState* state,
                                                      const KernelLaunchInfo& launch,
                                                      const char* name) {
  const uint64_t key =
      SpreadKey(launch.context, name, launch.grid_x, launch.grid_y, launch.grid_z, launch.block_x,
                launch.block_y, launch.block_z, launch.dynamic_shared_bytes);
  if (config_.replay == MetricsReplay::kAuto && kernel_keys_.count(key) != 0) {
    return SpreadRoute::kNotSpread;
  }
  if (spread_->Abandoned(key)) {
    // Not kernel replay: on an object that ran application-replay passes it
    // crashed the process (CUDA 13.0, spread_probe F2/F3).
    return SpreadRoute::kSkip;
  }
  if (!spread_->HasRoom(key)) {
    spread_->NoteWaiting(key);  // another configuration holds the pass counter
    CollectSpread(spread_->TakeCompleted());  // a preempted set, reported incomplete
    return SpreadRoute::kSkip;
  }
  if (!spread_->InProgress(key)) {
    // A new set for this configuration: the selector's quota counts sets.
    const SelectDecision d = selector_.Decide(name, launch.grid_x, launch.grid_y, launch.grid_z,
                                              launch.block_x, launch.block_y, launch.block_z,
                                              launch.dynamic_shared_bytes);
    if (d != SelectDecision::kProfile) return SpreadRoute::kSkip;
  }
  if (state->started) Flush(state);  // a batched kernel-replay session must not see this launch
  if (!EnableOn(state)) return SpreadRoute::kSkip;
  SpreadLaunch sl;
  sl.key = key;
  sl.context = state;
  sl.device_id = launch.device_id;
  sl.correlation_id = launch.correlation_id;
  sl.name = name;
  switch (spread_->Enter(sl)) {
    case SpreadEnter::kStarted:
      active_spread_ = true;
      active_ = state;
      launch_started_ = NowSeconds();
      return SpreadRoute::kProfiled;
    case SpreadEnter::kSkipped:
      return SpreadRoute::kSkip;
    case SpreadEnter::kFailed:
      break;
  }
  SpreadFallback(spread_->error() + " (" + last_error() + ")");
  rescue_keys_.insert(key);  // this selected launch: kernel replay now
  return SpreadRoute::kNotSpread;
}

void RangeProfiler::ExitSpread() {
  active_spread_ = false;
  {
    const double d = NowSeconds() - launch_started_;
    stage_s_[kStageSpreadLaunch][0] += d;
    if (d > stage_s_[kStageSpreadLaunch][1]) stage_s_[kStageSpreadLaunch][1] = d;
  }
  if (!spread_->Exit()) {
    SpreadFallback(spread_->error() + " (" + last_error() + ")");
    return;
  }
  CollectSpread(spread_->TakeCompleted());
}

void RangeProfiler::CollectSpread(std::vector<SpreadCollection> sets) {
  for (SpreadCollection& c : sets) {
    if (top_ != nullptr && !c.values.empty()) {
      top_->AddSet(c.key, TopWeight(top_weight_, c.values));
    }
    MetricRangeEvent event;
    event.device_id = c.device_id;
    event.correlation_id = c.last_correlation_id;
    event.num_passes = c.passes_needed;
    SetValues(&event, c.values);
    MetricRangeSpan span;
    span.launches = c.launches;
    span.first_correlation_id = c.first_correlation_id;
    span.passes_collected = c.passes_done;
    span.spread = true;
    AppendRange(std::move(event), std::move(c.name), span);
  }
}

void RangeProfiler::StopPassesAndDisable() {
  for (auto& s : contexts_) {
    if (s->object == nullptr) continue;
    if (s->spread_started) {
      auto sp = MakeParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
      sp.pRangeProfilerObject = s->object;
      cuptiRangeProfilerStop(&sp);  // best effort; the error that brought us here is kept
      s->spread_started = false;
    }
    // Kernel replay on an object that ran application-replay passes crashed
    // the process at the next launch on the H200 (CUDA 13.0; probe variants
    // F2/F3); after Disable + Enable it works (variant F). EnableOn enables
    // a fresh object at the next profiled launch.
    DisableObject(s.get());
  }
}

void RangeProfiler::SpreadFallback(const std::string& why) {
  if (!spread_on_) return;
  spread_on_ = false;
  active_spread_ = false;
  // Configurations half-way through get one kernel-replayed launch each.
  for (uint64_t key : spread_->InProgressKeys()) rescue_keys_.insert(key);
  spread_->DropAll();
  StopPassesAndDisable();
  {
    MutexLock lock(error_mu_);
    last_error_ = why;
  }
  std::fprintf(stderr,
               "sightline: warning: spread metric replay failed (%s); using kernel replay for the "
               "rest of the run\n",
               why.c_str());
}

// ---- SpreadTarget -------------------------------------------------------------

// One counter-data image (a spread configuration's, a sequence's): the same
// CUPTI calls with the image and its range capacity as parameters.
bool RangeProfiler::InitImageOn(ContextState* state, std::vector<uint8_t>* image, size_t max_ranges) {
  auto sp = MakeParams<CUpti_RangeProfiler_GetCounterDataSize_Params>(
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  sp.pRangeProfilerObject = state->object;
  sp.pMetricNames = metric_ptrs_.data();
  sp.numMetrics = metric_ptrs_.size();
  sp.maxNumOfRanges = max_ranges;
  sp.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
  if (!Check(cuptiRangeProfilerGetCounterDataSize(&sp), "cuptiRangeProfilerGetCounterDataSize")) {
    return false;
  }
  image->assign(sp.counterDataSize, 0);
  auto ip = MakeParams<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  ip.pRangeProfilerObject = state->object;
  ip.counterDataSize = image->size();
  ip.pCounterData = image->data();
  StageTimer t(stage_s_[kStageImageInit]);
  return Check(cuptiRangeProfilerCounterDataImageInitialize(&ip),
               "cuptiRangeProfilerCounterDataImageInitialize");
}

bool RangeProfiler::BeginPassOn(ContextState* state, std::vector<uint8_t>* image, size_t max_ranges,
                                uint32_t pass, CUpti_ProfilerRange range) {
  const bool user = range == CUPTI_UserRange;
  state->configured = false;  // the kernel-replay config is replaced
  auto cp = MakeParams<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  cp.pRangeProfilerObject = state->object;
  cp.configSize = config_image_.size();
  cp.pConfig = config_image_.data();
  cp.counterDataImageSize = image->size();
  cp.pCounterDataImage = image->data();
  cp.range = range;
  cp.replayMode = spread_replay_;
  cp.maxRangesPerPass = max_ranges;
  cp.numNestingLevels = 1;
  cp.minNestingLevel = 1;
  cp.passIndex = pass;  // CUPTI 13.0 ignores it: its own counter decides (range_profiler_spread.h)
  cp.targetNestingLevel = 1;
  {
    StageTimer t(stage_s_[kStageSetConfig]);
    if (!Check(cuptiRangeProfilerSetConfig(&cp), user ? "cuptiRangeProfilerSetConfig(user range)"
                                                      : "cuptiRangeProfilerSetConfig(spread)")) {
      return false;
    }
  }
  auto sp = MakeParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
  sp.pRangeProfilerObject = state->object;
  StageTimer t(stage_s_[kStageStart]);
  if (!Check(cuptiRangeProfilerStart(&sp), user ? "cuptiRangeProfilerStart(user range)"
                                                : "cuptiRangeProfilerStart(spread)")) {
    return false;
  }
  state->spread_started = true;
  return true;
}

bool RangeProfiler::EndPassOn(ContextState* state, std::vector<uint8_t>* image,
                              SpreadPassResult* result) {
  auto sp = MakeParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  sp.pRangeProfilerObject = state->object;
  {
    StageTimer t(stage_s_[kStageStop]);
    if (!Check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop(spread)")) return false;
  }
  state->spread_started = false;
  result->stop_pass_index = sp.passIndex;
  result->all_submitted = sp.isAllPassSubmitted != 0;
  auto dp = MakeParams<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  dp.pRangeProfilerObject = state->object;
  {
    StageTimer t(stage_s_[kStageDecode]);
    if (!Check(cuptiRangeProfilerDecodeData(&dp), "cuptiRangeProfilerDecodeData(spread)")) return false;
  }
  result->ranges_dropped = dp.numOfRangeDropped;
  auto ip = MakeParams<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  ip.pCounterDataImage = image->data();
  ip.counterDataImageSize = image->size();
  if (!Check(cuptiRangeProfilerGetCounterDataInfo(&ip), "cuptiRangeProfilerGetCounterDataInfo(spread)")) {
    return false;
  }
  result->ranges = ip.numTotalRanges;
  return true;
}

bool RangeProfiler::EvaluateImage(std::vector<uint8_t>* image, size_t range,
                                  std::vector<double>* values) {
  values->assign(metric_ptrs_.size(), 0.0);
  auto ev = MakeParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
      CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
  ev.pHostObject = host_;
  ev.pCounterDataImage = image->data();
  ev.counterDataImageSize = image->size();
  ev.rangeIndex = range;
  ev.ppMetricNames = metric_ptrs_.data();
  ev.numMetrics = metric_ptrs_.size();
  ev.pMetricValues = values->data();
  StageTimer t(stage_s_[kStageEvaluate]);
  return Check(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues(spread)");
}

bool RangeProfiler::InitImage(void* context, uint32_t slot) {
  return InitImageOn(static_cast<ContextState*>(context), &spread_images_[slot], kRangesPerSpreadImage);
}

bool RangeProfiler::BeginPass(void* context, uint32_t slot, uint32_t pass) {
  auto it = spread_images_.find(slot);
  if (it == spread_images_.end()) return Check(CUPTI_ERROR_INVALID_PARAMETER, "spread: no image");
  return BeginPassOn(static_cast<ContextState*>(context), &it->second, kRangesPerSpreadImage, pass);
}

bool RangeProfiler::EndPass(void* context, uint32_t slot, SpreadPassResult* result) {
  auto it = spread_images_.find(slot);
  if (it == spread_images_.end()) return Check(CUPTI_ERROR_INVALID_PARAMETER, "spread: no image");
  return EndPassOn(static_cast<ContextState*>(context), &it->second, result);
}

bool RangeProfiler::Evaluate(void* /*context*/, uint32_t slot, std::vector<double>* values) {
  auto it = spread_images_.find(slot);
  if (it == spread_images_.end()) return Check(CUPTI_ERROR_INVALID_PARAMETER, "spread: no image");
  return EvaluateImage(&it->second, 0, values);
}

// ---- SequenceTarget -----------------------------------------------------------

bool RangeProfiler::InitSequenceImage(void* context, size_t max_ranges) {
  sequence_ranges_ = max_ranges;
  return InitImageOn(static_cast<ContextState*>(context), &sequence_image_, max_ranges);
}

bool RangeProfiler::BeginSequencePass(void* context) {
  return BeginPassOn(static_cast<ContextState*>(context), &sequence_image_, sequence_ranges_, 0);
}

bool RangeProfiler::EndSequencePass(void* context, SpreadPassResult* result) {
  return EndPassOn(static_cast<ContextState*>(context), &sequence_image_, result);
}

bool RangeProfiler::EvaluateSequenceRange(void* /*context*/, size_t index,
                                          std::vector<double>* values) {
  return EvaluateImage(&sequence_image_, index, values);
}

bool RangeProfiler::ResetSequencePasses(void* context) { return ResetPasses(context); }

RangeProfiler::SpreadRoute RangeProfiler::EnterSequence(ContextState* state,
                                                        const KernelLaunchInfo& launch,
                                                        const char* name) {
  if (state->started) Flush(state);  // no kernel-replay session may be open
  if (!EnableOn(state)) return SpreadRoute::kSkip;
  SpreadLaunch sl;
  sl.key = SpreadKey(launch.context, name, launch.grid_x, launch.grid_y, launch.grid_z,
                     launch.block_x, launch.block_y, launch.block_z, launch.dynamic_shared_bytes);
  sl.context = state;
  sl.device_id = launch.device_id;
  sl.correlation_id = launch.correlation_id;
  sl.name = name;
  bool start_ok = false;  // the kernel selector accepts a sequence starting here
  if (sequence_->Learn(sl)) {
    start_ok = selector_.Decide(name, launch.grid_x, launch.grid_y, launch.grid_z, launch.block_x,
                                 launch.block_y, launch.block_z,
                                 launch.dynamic_shared_bytes) == SelectDecision::kProfile;
  }
  sequence_->OnLaunch(sl, start_ok);
  if (!SettleSequence()) return SpreadRoute::kSkip;
  // Before this launch runs: pass 0 begins or the last pass ended here.
  NoteInPlace();
  if (sequence_->measuring() && sequence_->context() == state) {
    // Held until the launch's exit: the pass's ranges are in submission
    // order, and with several launching threads the order we record must be
    // that order (and no thread's Stop may fall between another's enter and
    // its submission).
    active_sequence_ = true;
    active_ = state;
    return SpreadRoute::kProfiled;
  }
  if (TakeTopReplay(state, sl.key)) return SpreadRoute::kNotSpread;  // EnterKernelReplay replays it
  return SpreadRoute::kSkip;  // unprofiled (idle, or another context)
}

bool RangeProfiler::TakeTopReplay(ContextState* state, uint64_t key) {
  if (top_ == nullptr || sequence_->collecting()) return false;
  top_->Choose();
  if (!top_->TakeIfPending(key)) return false;
  DisableObject(state);  // EnterKernelReplay enables a fresh one (spread_probe variant F)
  top_replay_active_ = true;
  return true;
}

std::string RangeProfiler::TopReplayLine() {
  if (top_ == nullptr) return "";
  top_->Choose();  // sets collected at this capture end count in "not launched again"
  const std::string what =
      replay_host_ != nullptr
          ? std::to_string(replay_metrics_.size()) + " metrics: dram__ and duration, " +
                std::to_string(replay_passes_) + " pass" + (replay_passes_ == 1 ? "" : "es")
          : "the whole list: " + std::to_string(passes_.load()) + " passes";
  return "; kernel replay of the " + std::to_string(top_->top()) +
         " configurations moving the most DRAM bytes, " + std::to_string(top_->launches()) +
         " launch" + (top_->launches() == 1 ? "" : "es") + " each, for their DRAM counters (" +
         what + "): " +
         std::to_string(top_->replayed()) + " launch" + (top_->replayed() == 1 ? "" : "es") +
         " replayed" +
         (top_->failed() > 0 ? ", " + std::to_string(top_->failed()) + " failed" : std::string()) +
         (top_->pending() > 0 ? ", " + std::to_string(top_->pending()) +
                                    " configurations owed a replay not launched again"
                              : std::string());
}

bool RangeProfiler::SettleSequence() {
  ReportUnseen();
  CollectSpread(sequence_->TakeCompleted());
  if (!sequence_->failed()) return true;
  sequence_final_ = sequence_->stats();
  const std::string why = sequence_->error() + " (" + last_error() + ")";
  StopPassesAndDisable();
  sequence_failed_ = why;
  sequence_.reset();
  // Not kernel replay of every later launch: that is what the user chose
  // to avoid, and unbounded it slows a training loop tenfold.
  off_.store(true);
  pending_.error = why;
  NoteInPlace();
  std::fprintf(stderr,
               "sightline: warning: sequence metric replay stopped (%s); per-kernel metrics are "
               "off for the rest of the run (--metrics-replay kernel --metrics-launches K "
               "replays kernels instead)\n",
               why.c_str());
  return false;
}

void RangeProfiler::ReportUnseen() {
  // A pass that just ended ran kernels the hook never saw: told before
  // NoteInPlace, while the collector still traces as during the pass.
  if (sequence_ == nullptr) return;
  const uint64_t unseen = sequence_->stats().unseen_kernels;
  if (unseen <= unseen_reported_) return;
  if (config_.on_unseen_kernels) config_.on_unseen_kernels(unseen - unseen_reported_);
  unseen_reported_ = unseen;
}

void RangeProfiler::NoteInPlace() {
  // Off (TurnOff): no launch is measured any more, whatever a pass's
  // bookkeeping still says (no later launch would end it).
  const bool now = !off_.load() && ((sequence_ != nullptr && sequence_->measuring()) ||
                                    (user_ != nullptr && user_open_thread_.load() != 0));
  if (now == in_place_) return;
  in_place_ = now;
  if (config_.on_in_place) config_.on_in_place(now);
}

void RangeProfiler::ReleaseImage(uint32_t slot) { spread_images_.erase(slot); }

bool RangeProfiler::ResetPasses(void* context) {
  auto* state = static_cast<ContextState*>(context);
  DisableObject(state);
  return EnableOn(state);
}

}  // namespace sightline::collect::internal
