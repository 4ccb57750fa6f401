// lib/collect/signal_flush.cc — see signal_flush.h.
#include "lib/collect/signal_flush.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace sightline::collect {
namespace {

// SIGABRT: abort() — std::terminate in a library thread at interpreter
// shutdown (PyTorch with a daemon thread still launching) — would otherwise
// cut the trace back to its last periodic flush (up to the flush period of
// events lost, the footer missing). The handler's wait is bounded, so an
// abort() from inside a lock the writer needs only delays death.
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGABRT};
constexpr int kNumSignals = 4;

struct State {
  std::atomic<bool> installed{false};
  SignalFlushRequestFn request = nullptr;
  void* arg = nullptr;
  int timeout_ms = 3000;
  pid_t owner_pid = 0;
  struct sigaction previous[kNumSignals];
  std::atomic<uint64_t> requested{0};
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> handled{0};
  // Signals left alone at install because they were ignored (SIG_IGN is
  // inherited across exec, a handler is not: `nohup`'s SIGHUP must stay
  // ignored in the app's children).
  bool skipped[kNumSignals] = {};
  std::atomic<long> writer_tid{0};       // the writer thread (BlockFlushSignalsInThisThread)
  std::atomic<bool> writer_gone{false};  // SignalFlushWriterGone: nobody will answer
};

State& GetState() {
  static State* state = new State();  // never destroyed: handlers may run at exit
  return *state;
}

int IndexOf(int signo) {
  for (int i = 0; i < kNumSignals; ++i) {
    if (kSignals[i] == signo) return i;
  }
  return -1;
}

void Handler(int signo, siginfo_t* info, void* context) {
  State& s = GetState();
  int saved_errno = errno;
  int index = IndexOf(signo);
  if (index < 0) return;
  const struct sigaction& prev = s.previous[index];
  bool prev_is_function = (prev.sa_flags & SA_SIGINFO) ? prev.sa_sigaction != nullptr
                                                        : (prev.sa_handler != SIG_DFL &&
                                                           prev.sa_handler != SIG_IGN);
  // abort() ends the process whatever a handler does (glibc re-raises with
  // SIG_DFL when it returns): the trace is finished, not only flushed.
  bool will_die = signo == SIGABRT || (!prev_is_function && prev.sa_handler == SIG_DFL);
  // No wait when no writer can answer: on the writer thread itself (abort()
  // unblocks SIGABRT there) or after it finished.
  long tid = syscall(SYS_gettid);
  bool writer_can_answer = !s.writer_gone.load() && s.writer_tid.load() != tid;
  if (getpid() == s.owner_pid && s.request != nullptr && writer_can_answer) {
    s.handled.fetch_add(1);
    uint64_t ticket = s.requested.fetch_add(1) + 1;
    s.request(signo, will_die, s.arg);
    struct timespec step = {0, 5 * 1000 * 1000};
    for (int waited = 0; waited < s.timeout_ms; waited += 5) {
      if (s.done.load() >= ticket) break;
      nanosleep(&step, nullptr);
    }
  }
  errno = saved_errno;
  if (prev_is_function) {
    if (prev.sa_flags & SA_SIGINFO) {
      prev.sa_sigaction(signo, info, context);
    } else {
      prev.sa_handler(signo);
    }
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  // Default action: die of the same signal.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signo, &dfl, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, signo);
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(signo);
}

}  // namespace

bool InstallSignalFlush(SignalFlushRequestFn request, void* arg, int timeout_ms) {
  State& s = GetState();
  if (s.installed.exchange(true)) return true;
  s.request = request;
  s.arg = arg;
  s.timeout_ms = timeout_ms;
  s.owner_pid = getpid();
  bool ok = true;
  for (int i = 0; i < kNumSignals; ++i) {
    if (sigaction(kSignals[i], nullptr, &s.previous[i]) != 0) {
      ok = false;
      s.skipped[i] = true;
      continue;
    }
    s.skipped[i] = !(s.previous[i].sa_flags & SA_SIGINFO) && s.previous[i].sa_handler == SIG_IGN;
    if (s.skipped[i]) continue;  // ignored: the process would not die of it
    struct sigaction sa = {};
    sa.sa_sigaction = &Handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kSignals[i], &sa, &s.previous[i]) != 0) ok = false;
  }
  return ok;
}

void UninstallSignalFlush() {
  State& s = GetState();
  if (!s.installed.exchange(false)) return;
  for (int i = 0; i < kNumSignals; ++i) {
    if (!s.skipped[i]) sigaction(kSignals[i], &s.previous[i], nullptr);
  }
}

void SignalFlushWriterGone() { GetState().writer_gone.store(true); }

void SignalFlushDone() {
  State& s = GetState();
  s.done.store(s.requested.load());
}

void BlockFlushSignalsInThisThread() {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : kSignals) sigaddset(&set, signo);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  GetState().writer_tid.store(syscall(SYS_gettid));
  GetState().writer_gone.store(false);
}

uint64_t SignalFlushCount() { return GetState().handled.load(); }

}  // namespace sightline::collect
