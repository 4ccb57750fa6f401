// lib/trace/thread_annotations.h — thread ownership the compiler checks.
//
// Clang's -Wthread-safety analysis (https://clang.llvm.org/docs/
// ThreadSafetyAnalysis.html) proves at compile time that a field marked
// SL_GUARDED_BY(mu_) is only touched with mu_ held, that a function marked
// SL_REQUIRES(mu_) is only called with it held, and that scoped guards pair
// every acquire with a release. The macros expand to nothing on other
// compilers (GCC builds the product; CI builds once with clang and
// -Werror=thread-safety, scripts/test.sh stage 5).
//
// Mutex, MutexLock and CondVar are std::mutex, std::lock_guard and
// std::condition_variable with the annotations the analysis needs (the
// standard library's are not annotated). Header-only, libc++/libstdc++ only:
// usable inside the injected library (lib/collect) as well as lib/monitor.
// Lives in lib/trace, the room every other library depends on.
#ifndef SIGHTLINE_LIB_TRACE_THREAD_ANNOTATIONS_H_
#define SIGHTLINE_LIB_TRACE_THREAD_ANNOTATIONS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define SL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SL_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (Mutex) / a scoped guard of one (MutexLock).
#define SL_CAPABILITY(name) SL_THREAD_ANNOTATION(capability(name))
#define SL_SCOPED_CAPABILITY SL_THREAD_ANNOTATION(scoped_lockable)
// A field read and written only with `mu` held (or the pointee, PT_).
#define SL_GUARDED_BY(mu) SL_THREAD_ANNOTATION(guarded_by(mu))
#define SL_PT_GUARDED_BY(mu) SL_THREAD_ANNOTATION(pt_guarded_by(mu))
// A function called only with these held / not held.
#define SL_REQUIRES(...) SL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define SL_EXCLUDES(...) SL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function that takes / gives back a lock (the caller's view).
#define SL_ACQUIRE(...) SL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define SL_RELEASE(...) SL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define SL_TRY_ACQUIRE(...) SL_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// Lock order: this lock is taken after / before those.
#define SL_ACQUIRED_AFTER(...) SL_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define SL_ACQUIRED_BEFORE(...) SL_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
// Escape hatch for code the analysis cannot follow; say why next to it.
#define SL_NO_THREAD_SAFETY_ANALYSIS SL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace sightline {

class SL_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() SL_ACQUIRE() { mu_.lock(); }
  void Unlock() SL_RELEASE() { mu_.unlock(); }
  bool TryLock() SL_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// std::lock_guard for Mutex.
class SL_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) SL_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() SL_RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// std::condition_variable for Mutex: the caller holds `mu` (a MutexLock) and
// re-checks its condition in a loop, or passes a predicate that reads only
// atomics or unguarded state (the analysis does not see into lambdas).
class CondVar {
 public:
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

  void Wait(Mutex& mu) SL_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's MutexLock releases it
  }
  // False when `deadline` passed (the caller re-checks its condition).
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<Clock, Duration> deadline) SL_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    bool ok = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return ok;
  }
  // False on timeout with `pred` still false.
  template <typename Rep, typename Period, typename Pred>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout, Pred pred)
      SL_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    bool ok = cv_.wait_for(lock, timeout, pred);
    lock.release();
    return ok;
  }

 private:
  std::condition_variable cv_;
};

}  // namespace sightline

#endif  // SIGHTLINE_LIB_TRACE_THREAD_ANNOTATIONS_H_
