// lib/collect/kernel_kind_switch.h — which CUPTI kernel activity kind traces
// kernels: CONCURRENT_KERNEL normally, the serialized KERNEL kind while the
// range profiler measures the application's own launches in place
// (kernel_launch_hook.h on_in_place). Concurrent-kernel tracing instruments
// kernel code (GH100: +8 instructions a warp) and counters measured in place
// count that code; the KERNEL kind does not instrument (spread_probe
// --trace, bench/metrics/README.md). CUPTI allows one of the two at a time.
//
// The in-place kind may also be none (CUPTI_ACTIVITY_KIND_INVALID; sequence
// passes by default, SIGHTLINE_METRICS_INPLACE_TRACE): kernels launched
// while measured in place are then not traced at all — the KERNEL kind
// lengthens each in-place kernel's measured duration by ~1 us
// (bench/metrics/README.md) — and the collector writes them from their
// launch calls (KernelEvent::untraced).
//
// Pure bookkeeping around a toggle function (cuptiActivityEnable/Disable in
// the collector, a fake in tests/collect/kernel_kind_switch_test.cc); the
// caller serialises calls and passes whether activity recording is on now
// (off: only the kind to enable later changes).
#ifndef SIGHTLINE_LIB_COLLECT_KERNEL_KIND_SWITCH_H_
#define SIGHTLINE_LIB_COLLECT_KERNEL_KIND_SWITCH_H_

#include <cupti_activity.h>

#include <cstdint>
#include <functional>

namespace sightline::collect {

class KernelKindSwitch {
 public:
  // enable (true) or disable (false) one activity kind.
  using Toggle = std::function<CUptiResult(CUpti_ActivityKind kind, bool enable)>;
  enum class Outcome {
    kUnchanged,  // already the wanted kind
    kDeferred,   // recording is off: the kind SetActivities enables next changed
    kSwitched,   // the old kind disabled, the new one enabled
    kFailed,     // the new kind could not be enabled: the old one is back on
                 // (or, should that fail too, none: last_error() says which)
    kGivenUp,    // an earlier switch failed: no more switching this run
  };

  explicit KernelKindSwitch(Toggle toggle,
                            CUpti_ActivityKind in_place_kind = CUPTI_ACTIVITY_KIND_KERNEL)
      : toggle_(std::move(toggle)), in_place_kind_(in_place_kind) {}

  // The kind in-place passes use from now on (KERNEL, or INVALID: none);
  // set before the first pass.
  void set_in_place_kind(CUpti_ActivityKind kind) { in_place_kind_ = kind; }
  // No kernel kind is (or will be, when recording is next on) enabled.
  bool untraced() const { return kind_ == CUPTI_ACTIVITY_KIND_INVALID; }

  // The kernel kind recording uses now (or will, when next enabled);
  // INVALID: none.
  CUpti_ActivityKind kind() const { return kind_; }
  uint32_t switches() const { return switches_; }
  CUptiResult last_error() const { return last_error_; }
  // After kFailed: whether a kernel kind is on (the old one, or KERNEL when
  // leaving none failed); false: none is, kind() is INVALID.
  bool back_on() const { return back_on_; }

  Outcome SetInPlace(bool in_place, bool recording) {
    if (given_up_) return Outcome::kGivenUp;
    const CUpti_ActivityKind want =
        in_place ? in_place_kind_ : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    if (want == kind_) return Outcome::kUnchanged;
    const CUpti_ActivityKind was = kind_;
    kind_ = want;
    if (!recording) return Outcome::kDeferred;
    const CUptiResult off = Apply(was, false);
    if (off != CUPTI_SUCCESS) {
      // The old kind may still be on (CUPTI then refuses another kernel
      // kind): it stays, and no later pass tries again.
      kind_ = was;
      given_up_ = true;
      last_error_ = off;
      return Outcome::kFailed;
    }
    const CUptiResult on = Apply(want, true);
    if (on != CUPTI_SUCCESS) {
      // Kernels stay traced with the kind that was on (in-place counters
      // then include the instrumentation, as before the switch existed), and
      // no later pass tries again (one warning, not one a pass). Leaving
      // "none", any kernel kind beats none: the KERNEL kind is tried.
      given_up_ = true;
      last_error_ = on;
      const CUpti_ActivityKind back_kind =
          was == CUPTI_ACTIVITY_KIND_INVALID ? CUPTI_ACTIVITY_KIND_KERNEL : was;
      const CUptiResult back = back_kind == want ? on : Apply(back_kind, true);
      if (back == CUPTI_SUCCESS) {
        kind_ = back_kind;
      } else {
        kind_ = CUPTI_ACTIVITY_KIND_INVALID;  // nothing traces kernels now
        last_error_ = back;
        back_on_ = false;
      }
      return Outcome::kFailed;
    }
    ++switches_;
    return Outcome::kSwitched;
  }

 private:
  // No call for "none".
  CUptiResult Apply(CUpti_ActivityKind kind, bool enable) {
    return kind == CUPTI_ACTIVITY_KIND_INVALID ? CUPTI_SUCCESS : toggle_(kind, enable);
  }

  Toggle toggle_;
  CUpti_ActivityKind in_place_kind_;
  CUpti_ActivityKind kind_ = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  uint32_t switches_ = 0;
  CUptiResult last_error_ = CUPTI_SUCCESS;
  bool given_up_ = false;
  bool back_on_ = true;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_KERNEL_KIND_SWITCH_H_
