// SIGTERM/SIGINT/SIGHUP/SIGABRT flush path: the writer is asked to flush, the handler waits
// for it, then the app's own handler runs or the process dies of the signal.
// Each case runs in a forked child so the test process keeps its handlers.
#include "lib/collect/signal_flush.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "gtest/gtest.h"

namespace sightline::collect {
namespace {

int g_wake[2];
std::atomic<bool> g_finish_seen{false};
volatile sig_atomic_t g_app_handler_ran = 0;

void Request(int, bool finish, void*) {
  if (finish) g_finish_seen = true;
  char b = 1;
  ssize_t n = write(g_wake[1], &b, 1);
  (void)n;
}

// The "writer thread": waits for the wake-up, writes a marker byte to `out_fd`
// (the flushed data), acknowledges.
void Writer(int out_fd) {
  BlockFlushSignalsInThisThread();
  pollfd p = {g_wake[0], POLLIN, 0};
  poll(&p, 1, 5000);
  char b;
  ssize_t n = read(g_wake[0], &b, 1);
  char marker = g_finish_seen ? 'F' : 'f';
  n = write(out_fd, &marker, 1);
  (void)n;
  SignalFlushDone();
}

// In the child: the app's disposition of `sig` (installed before us, as
// Python's are), our flush handler over it, and the writer thread.
void StartFlushingChild(int out_fd, int sig, void (*app)(int)) {
  if (pipe(g_wake) != 0) _exit(3);
  signal(sig, app);
  InstallSignalFlush(&Request, nullptr, 3000);
  std::thread writer(Writer, out_fd);
  writer.detach();
}

void AppHandler(int) { g_app_handler_ran = 1; }

// Runs `body` in a child; returns the child's wait status and what the
// writer wrote.
int RunChild(void (*body)(int out_fd), std::string* written) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    body(out[1]);
    _exit(0);
  }
  close(out[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  char buf[16];
  ssize_t n = read(out[0], buf, sizeof(buf));
  written->assign(buf, n > 0 ? n : 0);
  close(out[0]);
  return status;
}

TEST(SignalFlushTest, DefaultActionFlushesFinishesAndDiesOfTheSignal) {
  std::string written;
  int status = RunChild(
      [](int out_fd) {
        StartFlushingChild(out_fd, SIGTERM, SIG_DFL);
        raise(SIGTERM);
        _exit(4);  // not reached: the process dies of SIGTERM
      },
      &written);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(written, "F");  // flushed, with finish = true
}

// abort() (std::terminate): the trace is finished before the process dies of
// SIGABRT, as for SIGTERM; glibc's abort() ends the process even if a
// handler returns.
TEST(SignalFlushTest, AbortFlushesFinishesAndDiesOfSigabrt) {
  std::string written;
  int status = RunChild(
      [](int out_fd) {
        StartFlushingChild(out_fd, SIGABRT, SIG_DFL);
        std::abort();
      },
      &written);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  EXPECT_EQ(written, "F");
}

TEST(SignalFlushTest, AppHandlerIsChainedAfterTheFlush) {
  std::string written;
  int status = RunChild(
      [](int out_fd) {
        StartFlushingChild(out_fd, SIGINT, &AppHandler);  // installed before us, like Python's
        raise(SIGINT);
        _exit(g_app_handler_ran ? 0 : 5);
      },
      &written);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);  // app handler ran, app carried on
  EXPECT_EQ(written, "f");            // flushed, not finished
}

TEST(SignalFlushTest, IgnoredSignalStaysIgnored) {
  std::string written;
  int status = RunChild(
      [](int out_fd) {
        StartFlushingChild(out_fd, SIGTERM, SIG_IGN);
        struct sigaction now = {};
        sigaction(SIGTERM, nullptr, &now);
        if (now.sa_handler != SIG_IGN) _exit(7);  // left alone: inherited by exec'd children
        raise(SIGTERM);
        _exit(SignalFlushCount() == 0 ? 0 : 6);
      },
      &written);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(written, "");  // nothing to flush for: the process lives on
}

// An abort() on the writer thread itself (abort unblocks SIGABRT) or after
// the writer finished does not wait for an answer that cannot come.
TEST(SignalFlushTest, AbortWithNoWriterToAnswerDoesNotWait) {
  std::string written;
  auto start = std::chrono::steady_clock::now();
  int status = RunChild(
      [](int) {
        if (pipe(g_wake) != 0) _exit(3);
        signal(SIGABRT, SIG_DFL);
        InstallSignalFlush(&Request, nullptr, 3000);
        BlockFlushSignalsInThisThread();  // this thread is "the writer"
        std::abort();
      },
      &written);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  status = RunChild(
      [](int) {
        if (pipe(g_wake) != 0) _exit(3);
        signal(SIGABRT, SIG_DFL);
        InstallSignalFlush(&Request, nullptr, 3000);
        SignalFlushWriterGone();
        std::abort();
      },
      &written);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

// With the app's own SIGABRT handler (Python's faulthandler) the trace is
// still finished: abort() ends the process after the handlers return.
TEST(SignalFlushTest, AbortWithAnAppHandlerStillFinishes) {
  std::string written;
  int status = RunChild(
      [](int out_fd) {
        StartFlushingChild(out_fd, SIGABRT, &AppHandler);
        std::abort();
      },
      &written);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  EXPECT_EQ(written, "F");
}

TEST(SignalFlushTest, AStuckWriterOnlyDelaysDeathByTheTimeout) {
  std::string written;
  auto start = std::chrono::steady_clock::now();
  int status = RunChild(
      [](int) {
        if (pipe(g_wake) != 0) _exit(3);
        signal(SIGTERM, SIG_DFL);
        InstallSignalFlush(&Request, nullptr, 200);  // nobody acknowledges
        raise(SIGTERM);
        _exit(4);
      },
      &written);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_GE(waited, 0.15);
  EXPECT_LT(waited, 3.0);
}

TEST(SignalFlushTest, ForkedChildOnlyChains) {
  std::string written;
  int status = RunChild(
      [](int out_fd) {
        if (pipe(g_wake) != 0) _exit(3);
        signal(SIGTERM, SIG_DFL);
        InstallSignalFlush(&Request, nullptr, 3000);
        pid_t grandchild = fork();
        if (grandchild == 0) {
          raise(SIGTERM);  // must not wait for a writer that is not there
          _exit(4);
        }
        int s = 0;
        waitpid(grandchild, &s, 0);
        char marker = (WIFSIGNALED(s) && WTERMSIG(s) == SIGTERM && SignalFlushCount() == 0) ? 'c' : 'x';
        ssize_t n = write(out_fd, &marker, 1);
        (void)n;
        _exit(0);
      },
      &written);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(written, "c");
}

}  // namespace
}  // namespace sightline::collect
