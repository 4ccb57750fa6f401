// lib/collect/capture_state.cc — see capture_state.h.
#include "lib/collect/capture_state.h"

#include <utility>

namespace sightline::collect {
namespace {
uint64_t SecondsToNs(double s) { return s > 0 ? static_cast<uint64_t>(s * 1e9) : 0; }
}  // namespace

CaptureStateMachine::CaptureStateMachine(CaptureMode mode, std::string nvtx_name, double delay_s,
                                         double duration_s, bool repeat, uint32_t skip,
                                         uint32_t count)
    : mode_(mode),
      nvtx_name_(std::move(nvtx_name)),
      delay_ns_(SecondsToNs(delay_s)),
      duration_ns_(SecondsToNs(duration_s)),
      repeat_(repeat),
      skip_(mode == CaptureMode::kWholeRun ? 0 : skip),
      count_(mode == CaptureMode::kWholeRun ? 0 : count) {}

CaptureTrigger CaptureStateMachine::trigger() const {
  switch (mode_) {
    case CaptureMode::kWholeRun:
      return (delay_ns_ > 0 || duration_ns_ > 0) ? CaptureTrigger::kTimer
                                                 : CaptureTrigger::kWholeRun;
    case CaptureMode::kProfilerApi: return CaptureTrigger::kProfilerApi;
    case CaptureMode::kNvtx: return CaptureTrigger::kNvtx;
    case CaptureMode::kApi: return CaptureTrigger::kApi;
  }
  return CaptureTrigger::kWholeRun;
}

CaptureAction CaptureStateMachine::Begin(uint64_t now_ns) {
  if (begun_) return CaptureAction::kNone;
  begun_ = true;
  begin_ns_ = now_ns;
  if (mode_ == CaptureMode::kWholeRun) wanted_ = true;
  return Reconcile(now_ns);
}

CaptureAction CaptureStateMachine::SetWanted(uint64_t now_ns, bool wanted) {
  if (wanted_ == wanted) return CaptureAction::kNone;
  if (wanted && ++triggers_ <= skip_) return CaptureAction::kNone;  // skipped trigger
  wanted_ = wanted;
  if (!wanted) expired_ = false;  // the next trigger may open a fresh window
  return Reconcile(now_ns);
}

CaptureAction CaptureStateMachine::Reconcile(uint64_t now_ns) {
  if (!begun_ || finished_) return CaptureAction::kNone;
  bool delay_over = now_ns >= begin_ns_ + delay_ns_;
  if (capturing_) {
    bool too_long = duration_ns_ > 0 && now_ns >= window_start_ns_ + duration_ns_;
    if (!wanted_ || too_long) {
      capturing_ = false;
      if (too_long && wanted_) expired_ = true;
      if (!repeat_ || mode_ == CaptureMode::kWholeRun ||
          (count_ > 0 && window_index_ >= count_)) {
        finished_ = true;
      }
      return CaptureAction::kStop;
    }
    return CaptureAction::kNone;
  }
  if (wanted_ && delay_over && !expired_) {
    capturing_ = true;
    ++window_index_;
    window_start_ns_ = now_ns;
    switch (mode_) {
      case CaptureMode::kWholeRun: label_ = "whole"; break;
      case CaptureMode::kProfilerApi:
        label_ = "cudaProfilerApi#" + std::to_string(window_index_);
        break;
      case CaptureMode::kNvtx:
        label_ = "nvtx:" + nvtx_name_ + "#" + std::to_string(window_index_);
        break;
      case CaptureMode::kApi: label_ = "api#" + std::to_string(window_index_); break;
    }
    return CaptureAction::kStart;
  }
  return CaptureAction::kNone;
}

CaptureAction CaptureStateMachine::OnProfilerStart(uint64_t now_ns) {
  if (mode_ != CaptureMode::kProfilerApi) return CaptureAction::kNone;
  return SetWanted(now_ns, true);
}

CaptureAction CaptureStateMachine::OnProfilerStop(uint64_t now_ns) {
  if (mode_ != CaptureMode::kProfilerApi) return CaptureAction::kNone;
  return SetWanted(now_ns, false);
}

CaptureAction CaptureStateMachine::OnApiStart(uint64_t now_ns) {
  if (mode_ != CaptureMode::kApi) return CaptureAction::kNone;
  return SetWanted(now_ns, true);
}

CaptureAction CaptureStateMachine::OnApiStop(uint64_t now_ns) {
  if (mode_ != CaptureMode::kApi) return CaptureAction::kNone;
  return SetWanted(now_ns, false);
}

CaptureAction CaptureStateMachine::OnNvtxPush(uint64_t now_ns, std::string_view message,
                                              uint32_t thread_id, uint32_t depth) {
  if (mode_ != CaptureMode::kNvtx || nvtx_open_ || message != nvtx_name_) {
    return CaptureAction::kNone;
  }
  nvtx_open_ = true;
  nvtx_is_push_pop_ = true;
  nvtx_thread_ = thread_id;
  nvtx_depth_ = depth;
  return SetWanted(now_ns, true);
}

CaptureAction CaptureStateMachine::OnNvtxPop(uint64_t now_ns, uint32_t thread_id,
                                             uint32_t depth) {
  if (mode_ != CaptureMode::kNvtx || !nvtx_open_ || !nvtx_is_push_pop_ ||
      thread_id != nvtx_thread_ || depth != nvtx_depth_) {
    return CaptureAction::kNone;
  }
  nvtx_open_ = false;
  return SetWanted(now_ns, false);
}

CaptureAction CaptureStateMachine::OnNvtxRangeStart(uint64_t now_ns, std::string_view message,
                                                    uint64_t range_id) {
  if (mode_ != CaptureMode::kNvtx || nvtx_open_ || message != nvtx_name_) {
    return CaptureAction::kNone;
  }
  nvtx_open_ = true;
  nvtx_is_push_pop_ = false;
  nvtx_range_id_ = range_id;
  return SetWanted(now_ns, true);
}

CaptureAction CaptureStateMachine::OnNvtxRangeEnd(uint64_t now_ns, uint64_t range_id) {
  if (mode_ != CaptureMode::kNvtx || !nvtx_open_ || nvtx_is_push_pop_ ||
      range_id != nvtx_range_id_) {
    return CaptureAction::kNone;
  }
  nvtx_open_ = false;
  return SetWanted(now_ns, false);
}

CaptureAction CaptureStateMachine::OnTick(uint64_t now_ns) { return Reconcile(now_ns); }

CaptureAction CaptureStateMachine::OnExit(uint64_t now_ns) {
  if (finished_) return CaptureAction::kNone;
  wanted_ = false;
  CaptureAction action = capturing_ ? CaptureAction::kStop : CaptureAction::kNone;
  capturing_ = false;
  finished_ = true;
  return action;
}

uint64_t CaptureStateMachine::next_deadline_ns() const {
  if (!begun_ || finished_) return 0;
  if (capturing_) return duration_ns_ > 0 ? window_start_ns_ + duration_ns_ : 0;
  if (wanted_ && !expired_ && delay_ns_ > 0) return begin_ns_ + delay_ns_;
  return 0;
}

}  // namespace sightline::collect
