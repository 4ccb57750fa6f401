// KernelKindSwitch (lib/collect/kernel_kind_switch.h): the kernel activity
// kind around in-place metric passes, against a fake CUPTI that, like
// CUPTI, refuses a second kernel kind while one is enabled.
#include "lib/collect/kernel_kind_switch.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace sightline::collect {
namespace {

struct FakeCupti {
  std::set<CUpti_ActivityKind> enabled;
  std::vector<std::string> calls;
  CUptiResult fail_enable_of_kernel = CUPTI_SUCCESS;  // make enabling KERNEL fail
  CUptiResult fail_enable_of_concurrent = CUPTI_SUCCESS;
  CUptiResult fail_disable = CUPTI_SUCCESS;
  static bool IsKernelKind(CUpti_ActivityKind k) {
    return k == CUPTI_ACTIVITY_KIND_KERNEL || k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  }
  CUptiResult Toggle(CUpti_ActivityKind kind, bool enable) {
    EXPECT_NE(kind, CUPTI_ACTIVITY_KIND_INVALID);  // "none" is never passed on
    const char* name = kind == CUPTI_ACTIVITY_KIND_KERNEL ? "KERNEL" : "CONCURRENT";
    calls.push_back(std::string(enable ? "enable " : "disable ") + name);
    if (!enable) {
      if (fail_disable != CUPTI_SUCCESS) return fail_disable;
      enabled.erase(kind);
      return CUPTI_SUCCESS;
    }
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && fail_enable_of_concurrent != CUPTI_SUCCESS) {
      return fail_enable_of_concurrent;
    }
    if (kind == CUPTI_ACTIVITY_KIND_KERNEL && fail_enable_of_kernel != CUPTI_SUCCESS) {
      return fail_enable_of_kernel;
    }
    for (CUpti_ActivityKind k : enabled) {
      if (IsKernelKind(k) && k != kind) return CUPTI_ERROR_NOT_COMPATIBLE;
    }
    enabled.insert(kind);
    return CUPTI_SUCCESS;
  }
};

KernelKindSwitch Make(FakeCupti* f) {
  return KernelKindSwitch([f](CUpti_ActivityKind k, bool e) { return f->Toggle(k, e); });
}

TEST(KernelKindSwitch, InPlacePassesTraceWithTheUninstrumentedKind) {
  FakeCupti f;
  KernelKindSwitch s = Make(&f);
  EXPECT_EQ(s.kind(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  f.Toggle(s.kind(), true);  // SetActivities(true)
  f.calls.clear();
  EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kSwitched);
  EXPECT_EQ(f.enabled, std::set<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_KERNEL});
  EXPECT_EQ(f.calls, (std::vector<std::string>{"disable CONCURRENT", "enable KERNEL"}));
  // Told again (every launch of a pass asks): nothing to do.
  EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kUnchanged);
  EXPECT_EQ(f.calls.size(), 2u);
  EXPECT_EQ(s.SetInPlace(false, true), KernelKindSwitch::Outcome::kSwitched);
  EXPECT_EQ(f.enabled, std::set<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
  EXPECT_EQ(s.switches(), 2u);
}

TEST(KernelKindSwitch, WhileRecordingIsOffOnlyTheNextKindChanges) {
  FakeCupti f;
  KernelKindSwitch s = Make(&f);
  // A capture window closed with the passes still running: SetActivities(false)
  // disabled the kind in use (KERNEL), then the hook's capture end says "not
  // in place": nothing is enabled, the next window enables CONCURRENT_KERNEL.
  f.Toggle(s.kind(), true);
  ASSERT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kSwitched);
  f.Toggle(s.kind(), false);  // SetActivities(false)
  f.calls.clear();
  EXPECT_EQ(s.SetInPlace(false, false), KernelKindSwitch::Outcome::kDeferred);
  EXPECT_TRUE(f.calls.empty());
  EXPECT_TRUE(f.enabled.empty());
  EXPECT_EQ(s.kind(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  // And a pass that starts before recording does: KERNEL is what gets enabled.
  EXPECT_EQ(s.SetInPlace(true, false), KernelKindSwitch::Outcome::kDeferred);
  EXPECT_EQ(s.kind(), CUPTI_ACTIVITY_KIND_KERNEL);
}

TEST(KernelKindSwitch, AKindThatCannotBeEnabledLeavesKernelsTraced) {
  FakeCupti f;
  f.fail_enable_of_kernel = CUPTI_ERROR_NOT_SUPPORTED;
  KernelKindSwitch s = Make(&f);
  f.Toggle(s.kind(), true);
  EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kFailed);
  EXPECT_EQ(s.last_error(), CUPTI_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(s.kind(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  EXPECT_EQ(f.enabled, std::set<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
  EXPECT_EQ(s.switches(), 0u);
  EXPECT_TRUE(s.back_on());
  // Later passes do not try again (one warning, not one a pass).
  f.calls.clear();
  EXPECT_EQ(s.SetInPlace(false, true), KernelKindSwitch::Outcome::kGivenUp);
  EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kGivenUp);
  EXPECT_TRUE(f.calls.empty());
  EXPECT_EQ(s.kind(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

TEST(KernelKindSwitch, AFailedReenableIsReported) {
  // Neither kind can be enabled after the disable: no kernel kind is on, and
  // the error that says so is the re-enable's.
  struct Refusing {
    int enables = 0;
    CUptiResult Toggle(CUpti_ActivityKind, bool enable) {
      if (!enable) return CUPTI_SUCCESS;
      return ++enables == 1 ? CUPTI_ERROR_NOT_SUPPORTED : CUPTI_ERROR_UNKNOWN;
    }
  } r;
  KernelKindSwitch s([&r](CUpti_ActivityKind k, bool e) { return r.Toggle(k, e); });
  EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kFailed);
  EXPECT_FALSE(s.back_on());
  EXPECT_EQ(s.last_error(), CUPTI_ERROR_UNKNOWN);
}

TEST(KernelKindSwitch, InPlaceKindNoneTracesNoKernelDuringPasses) {
  FakeCupti f;
  KernelKindSwitch s = Make(&f);
  s.set_in_place_kind(CUPTI_ACTIVITY_KIND_INVALID);
  f.Toggle(s.kind(), true);
  f.calls.clear();
  EXPECT_FALSE(s.untraced());
  EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kSwitched);
  EXPECT_TRUE(s.untraced());
  EXPECT_TRUE(f.enabled.empty());
  EXPECT_EQ(f.calls, (std::vector<std::string>{"disable CONCURRENT"}));
  EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kUnchanged);
  EXPECT_EQ(s.SetInPlace(false, true), KernelKindSwitch::Outcome::kSwitched);
  EXPECT_FALSE(s.untraced());
  EXPECT_EQ(f.enabled, std::set<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL});
  EXPECT_EQ(f.calls, (std::vector<std::string>{"disable CONCURRENT", "enable CONCURRENT"}));
  // Recording off: only the kind enabled next changes (none: nothing).
  EXPECT_EQ(s.SetInPlace(true, false), KernelKindSwitch::Outcome::kDeferred);
  EXPECT_TRUE(s.untraced());
  EXPECT_EQ(f.calls.size(), 2u);
}

// Failures around "none": a kind that cannot be disabled stays (and is
// what the switch reports); leaving none when CONCURRENT_KERNEL cannot be
// enabled falls back to the KERNEL kind, and only when that fails too is
// nothing traced (back_on() false, kind() INVALID).
TEST(KernelKindSwitch, FailuresAroundNoneNeverClaimATracingThatIsNotOn) {
  {
    FakeCupti f;
    KernelKindSwitch s = Make(&f);
    s.set_in_place_kind(CUPTI_ACTIVITY_KIND_INVALID);
    f.Toggle(s.kind(), true);
    f.fail_disable = CUPTI_ERROR_UNKNOWN;
    EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kFailed);
    EXPECT_EQ(s.kind(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);  // still on, still said
    EXPECT_FALSE(s.untraced());
    EXPECT_TRUE(s.back_on());
    EXPECT_EQ(s.SetInPlace(false, true), KernelKindSwitch::Outcome::kGivenUp);
  }
  {
    FakeCupti f;
    KernelKindSwitch s = Make(&f);
    s.set_in_place_kind(CUPTI_ACTIVITY_KIND_INVALID);
    f.Toggle(s.kind(), true);
    EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kSwitched);
    f.fail_enable_of_concurrent = CUPTI_ERROR_UNKNOWN;
    EXPECT_EQ(s.SetInPlace(false, true), KernelKindSwitch::Outcome::kFailed);
    EXPECT_EQ(s.kind(), CUPTI_ACTIVITY_KIND_KERNEL);
    EXPECT_EQ(f.enabled, std::set<CUpti_ActivityKind>{CUPTI_ACTIVITY_KIND_KERNEL});
    EXPECT_TRUE(s.back_on());
    EXPECT_FALSE(s.untraced());
  }
  {
    FakeCupti f;
    KernelKindSwitch s = Make(&f);
    s.set_in_place_kind(CUPTI_ACTIVITY_KIND_INVALID);
    f.Toggle(s.kind(), true);
    EXPECT_EQ(s.SetInPlace(true, true), KernelKindSwitch::Outcome::kSwitched);
    f.fail_enable_of_concurrent = CUPTI_ERROR_UNKNOWN;
    f.fail_enable_of_kernel = CUPTI_ERROR_UNKNOWN;
    EXPECT_EQ(s.SetInPlace(false, true), KernelKindSwitch::Outcome::kFailed);
    EXPECT_TRUE(f.enabled.empty());
    EXPECT_FALSE(s.back_on());
    EXPECT_TRUE(s.untraced());  // the truth: the collector keeps writing launches
  }
}

}  // namespace
}  // namespace sightline::collect
