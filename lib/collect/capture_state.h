// lib/collect/capture_state.h — when to record: the capture-range state machine.
//
// Pure logic, no CUDA: the collector feeds it what happened (a profiler start
// or stop API call, an NVTX range opening or closing, a timer tick, the link-in
// API) and applies what it answers (start or stop a capture window). Every
// window gets an index and a label ("cudaProfilerApi#2", "nvtx:train#1",
// "whole", "api#1") written into the trace as a CaptureWindowEvent.
//
// Rules (nsys-compatible where nsys has the option):
//  * kWholeRun: one window from Begin() (+delay) to the end (or +duration).
//  * kProfilerApi: cudaProfilerStart opens a window, cudaProfilerStop closes
//    it; nested starts are ignored (as CUDA does).
//  * kNvtx: a push/pop or start/end range whose message equals the name opens a
//    window; the matching end (same thread and nesting depth for push/pop, same
//    range id for start/end) closes it. Ranges of other names are ignored.
//  * kApi: sightline_start()/sightline_stop().
//  * delay: nothing is captured before Begin()+delay (triggers that fire
//    earlier are remembered: a window open at the end of the delay starts then).
//  * duration: a window is closed at most `duration` after it opened.
//  * repeat=false: after the first window closes, the capture is over for good
//    (the collector then tears CUPTI down).
//  * skip N / count K (torch.profiler's wait and active): the first N
//    triggers open no window; after K windows the capture is over for good.
// Thread-safety: none; the collector serialises calls with its own mutex.
#ifndef SIGHTLINE_LIB_COLLECT_CAPTURE_STATE_H_
#define SIGHTLINE_LIB_COLLECT_CAPTURE_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/collect/config.h"
#include "lib/trace/events.h"

namespace sightline::collect {

enum class CaptureAction : uint8_t {
  kNone = 0,
  kStart = 1,  // open window `window_index()` labelled `label()`
  kStop = 2,   // close the current window
};

class CaptureStateMachine {
 public:
  // skip: triggers (ranges, start/stop pairs) ignored before the first
  // window; count: windows after which the capture is over (0 = no limit).
  CaptureStateMachine(CaptureMode mode, std::string nvtx_name, double delay_s, double duration_s,
                      bool repeat, uint32_t skip = 0, uint32_t count = 0);

  // Process start-up (the collector's initialisation) at time `now_ns`.
  CaptureAction Begin(uint64_t now_ns);
  CaptureAction OnProfilerStart(uint64_t now_ns);
  CaptureAction OnProfilerStop(uint64_t now_ns);
  CaptureAction OnApiStart(uint64_t now_ns);
  CaptureAction OnApiStop(uint64_t now_ns);
  // NVTX push/pop ranges: `depth` is the thread's nesting depth before the push
  // (after the pop), so a pop matches the push with the same depth.
  CaptureAction OnNvtxPush(uint64_t now_ns, std::string_view message, uint32_t thread_id,
                           uint32_t depth);
  CaptureAction OnNvtxPop(uint64_t now_ns, uint32_t thread_id, uint32_t depth);
  // NVTX start/end ranges (may end on another thread).
  CaptureAction OnNvtxRangeStart(uint64_t now_ns, std::string_view message, uint64_t range_id);
  CaptureAction OnNvtxRangeEnd(uint64_t now_ns, uint64_t range_id);
  // Delay/duration timers; call periodically.
  CaptureAction OnTick(uint64_t now_ns);
  // Process exit: closes an open window.
  CaptureAction OnExit(uint64_t now_ns);

  bool capturing() const { return capturing_; }
  // True once no further window can open (repeat=false after the first, or exit).
  bool finished() const { return finished_; }
  uint32_t window_index() const { return window_index_; }  // 1-based, of the last start
  const std::string& label() const { return label_; }
  uint64_t window_start_ns() const { return window_start_ns_; }
  CaptureTrigger trigger() const;
  // The next time OnTick can change something (0 = no timer pending).
  uint64_t next_deadline_ns() const;

 private:
  // A trigger says "should be capturing" / "should not"; delay and duration
  // decide when that becomes a window.
  CaptureAction SetWanted(uint64_t now_ns, bool wanted);
  CaptureAction Reconcile(uint64_t now_ns);

  CaptureMode mode_;
  std::string nvtx_name_;
  uint64_t delay_ns_;
  uint64_t duration_ns_;
  bool repeat_;
  uint32_t skip_ = 0, count_ = 0;
  uint32_t triggers_ = 0;  // triggers seen (skip counts them)

  uint64_t begin_ns_ = 0;
  bool begun_ = false;
  bool wanted_ = false;        // the trigger says capture
  bool expired_ = false;       // duration cut the current trigger's window short
  bool capturing_ = false;
  bool finished_ = false;
  uint32_t window_index_ = 0;
  std::string label_;
  uint64_t window_start_ns_ = 0;
  // NVTX push/pop match.
  bool nvtx_open_ = false;
  bool nvtx_is_push_pop_ = false;
  uint32_t nvtx_thread_ = 0;
  uint32_t nvtx_depth_ = 0;
  uint64_t nvtx_range_id_ = 0;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_CAPTURE_STATE_H_
