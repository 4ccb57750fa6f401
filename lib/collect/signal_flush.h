// lib/collect/signal_flush.h — flush the trace on SIGTERM/SIGINT/SIGHUP/SIGABRT, then behave
// as if we were not there.
//
// The handler does only async-signal-safe work: it calls `request(signo, arg)`
// (the collector writes one byte to its writer thread's wake-up pipe) and waits,
// with nanosleep, at most `timeout_ms` for the writer to call
// SignalFlushDone(). Then it chains:
//   * the app had a handler → it is called (with the same siginfo), the app
//     decides (Python turns SIGINT into KeyboardInterrupt and exits normally,
//     where the atexit path finishes the trace);
//   * SIG_IGN → nothing more;
//   * SIG_DFL → the default action is restored and the signal re-raised, so the
//     process dies of the same signal (exit status as without us).
// `finish` tells the writer whether the process is about to die (SIG_DFL:
// write the footer) or only to flush (the app's handler runs next).
//
// The writer thread must block these signals (BlockFlushSignalsInThisThread) so
// that the handler never runs on it. A forked child inherits the handlers but
// not the writer: the handler notices the pid change and only chains.
#ifndef SIGHTLINE_LIB_COLLECT_SIGNAL_FLUSH_H_
#define SIGHTLINE_LIB_COLLECT_SIGNAL_FLUSH_H_

#include <cstdint>

namespace sightline::collect {

// request(signo, finish, arg) must be async-signal-safe.
using SignalFlushRequestFn = void (*)(int signo, bool finish, void* arg);

// Installs handlers for SIGTERM, SIGINT, SIGHUP and SIGABRT (other signals
// are left alone, and so is any of these that is ignored at install: an
// ignored signal does not end the process, and SIG_IGN, unlike a handler,
// is inherited across exec — `nohup` keeps working for the app's children).
// Idempotent. Returns false if sigaction failed.
bool InstallSignalFlush(SignalFlushRequestFn request, void* arg, int timeout_ms);
// Restores the handlers that were there before (for tests).
void UninstallSignalFlush();
// Writer side: the flush requested for a signal is complete.
void SignalFlushDone();
// The writer thread has finished: a later signal only chains, without
// waiting for an answer that will not come.
void SignalFlushWriterGone();
// Blocks those signals in the calling thread (the writer thread) and
// remembers it as the writer (a signal handled on it does not wait for
// itself: abort() unblocks SIGABRT).
void BlockFlushSignalsInThisThread();
// Number of signals handled so far (tests, diagnostics).
uint64_t SignalFlushCount();

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_SIGNAL_FLUSH_H_
