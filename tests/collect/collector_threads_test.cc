// The collector's threads, on the CPU, with synthetic CUPTI records (issue 17,
// items 3 and 4). Built and run under ThreadSanitizer by scripts/test.sh
// (-DSIGHTLINE_TSAN=ON, label `tsan`), and in the normal build.
//
// The product's data path, with the product's classes:
//   application threads (16)  — CUPTI's buffer-requested path:
//                               ActivityBufferPool::Acquire, records written
//                               into the buffer as CUPTI lays them out, the
//                               buffer-completed path: Complete (notify →
//                               one byte on the writer's wake-up pipe); the
//                               API-exit callback's stack capture
//                               (StackCollector::Push); a SIGINT handled by
//                               the signal-flush handler mid-run
//   writer thread             — poll on the pipe, TakeCompleted,
//                               DrainActivityBuffer → RecordConverter →
//                               TraceWriterEventSink → TraceWriter → file,
//                               Release, Replenish, stacks taken, signal
//                               flush answered (SignalFlushDone)
//   main thread               — reads the pool's counters concurrently (as
//                               the flush/finish path does)
// Then the trace is read back: every record CUPTI "wrote" is either in the
// trace or counted as dropped (a refused buffer) — nothing lost silently.
//
// Fault-matrix rows (docs/reliability.md): "16 threads launching
// concurrently" and "very long run: bounded memory, no timestamp drift"
// (LongRunMemoryAndTimestamps, normal build only: TSan is ~10x slower).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/collect/activity_drain.h"
#include "lib/collect/buffer_pool.h"
#include "lib/collect/call_stacks.h"
#include "lib/collect/event_sink.h"
#include "lib/collect/record_converter.h"
#include "lib/collect/signal_flush.h"
#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/collect/synthetic_records.h"

namespace sightline::collect {
namespace {

using testing::Kernel;
using testing::PackedBuffer;

int g_wake[2] = {-1, -1};
void NotifyWriter(void*) {
  char b = 1;
  ssize_t ignored = write(g_wake[1], &b, 1);
  (void)ignored;
}

std::atomic<int> g_flush_requests{0};
void OnSignalFlush(int, bool, void*) {
  g_flush_requests.fetch_add(1);
  NotifyWriter(nullptr);
}
std::atomic<int> g_app_sigint{0};
void AppSigint(int) { g_app_sigint.fetch_add(1); }

// Writes [u64 size][record] entries like PackedBuffer into a pool buffer.
size_t PutKernel(uint8_t* buffer, size_t offset, size_t capacity,
                 const CUpti_ActivityKernel10& k) {
  const size_t need = sizeof(uint64_t) + ((sizeof(k) + 7) & ~size_t{7});
  if (offset + need > capacity) return 0;
  uint64_t size = sizeof(k);
  std::memcpy(buffer + offset, &size, sizeof(size));
  std::memcpy(buffer + offset + sizeof(size), &k, sizeof(k));
  return need;
}

class KernelCounter : public trace::EventVisitor {
 public:
  uint64_t kernels = 0;
  void OnKernel(const KernelEvent&) override { ++kernels; }
};

TEST(CollectorThreadsTest, SixteenThreadsThroughPoolWriterAndSignalFlush) {
  ASSERT_EQ(pipe2(g_wake, O_CLOEXEC | O_NONBLOCK), 0);
  const std::string path = ::testing::TempDir() + "/collector-threads-" +
                           std::to_string(getpid()) + ".sltrace";
  constexpr int kThreads = 16;
  constexpr int kBuffersPerThread = 60;
  // Small pool: the threads run it dry and refusals are counted.
  ActivityBufferPool pool(16 << 10, 4, 24, &NotifyWriter, nullptr);
  StackCollector stacks(256);

  struct sigaction app = {};
  app.sa_handler = AppSigint;
  sigemptyset(&app.sa_mask);
  struct sigaction old_int;
  sigaction(SIGINT, &app, &old_int);
  ASSERT_TRUE(InstallSignalFlush(&OnSignalFlush, nullptr, 2000));

  std::atomic<bool> producers_done{false};
  std::atomic<uint64_t> records_written{0}, records_refused{0};
  uint64_t converted = 0, stacks_taken = 0;
  std::string writer_error;

  std::thread writer([&] {
    BlockFlushSignalsInThisThread();
    std::string error;
    trace::FileSinkOptions fo;
    fo.overwrite = true;
    auto sink = trace::OpenSink(path, fo, &error);
    if (!sink) {
      writer_error = error;
      return;
    }
    trace::WriterOptions wo;
    wo.chunk_bytes = 32 << 10;
    trace::TraceWriter w(std::move(sink), wo);
    TraceHeaderData h;
    h.tool_version = "threads-test";
    w.Begin(h);
    TraceWriterEventSink events(&w);
    RecordConverter converter(&events, ConverterOptions{}, [](ApiDomain, uint32_t) {
      return static_cast<const char*>(nullptr);
    });
    std::vector<CompletedBuffer> done;
    std::vector<RawStack> raw;
    int flushes_answered = 0;
    while (true) {
      pollfd p{g_wake[0], POLLIN, 0};
      poll(&p, 1, 5);
      char drain[256];
      while (read(g_wake[0], drain, sizeof(drain)) > 0) {
      }
      done.clear();
      pool.TakeCompleted(&done);
      for (const CompletedBuffer& b : done) {
        DrainResult r = DrainActivityBuffer(b, &PackedBuffer::Next, &converter);
        converted += r.records;
        pool.Release(b.data, b.valid_bytes);
      }
      pool.Replenish(2);
      raw.clear();
      stacks.Take(&raw);
      stacks_taken += raw.size();
      while (flushes_answered < g_flush_requests.load()) {
        w.Flush();
        SignalFlushDone();
        ++flushes_answered;
      }
      if (producers_done.load() && pool.stats().queued == 0 && done.empty()) break;
    }
    w.Finish("threads test end");
  });

  std::vector<std::thread> apps;
  for (int t = 0; t < kThreads; ++t) {
    apps.emplace_back([&, t] {
      uint32_t correlation = static_cast<uint32_t>(t) << 20;
      for (int i = 0; i < kBuffersPerThread; ++i) {
        if (t == 3 && i == kBuffersPerThread / 2) {
          // A signal in the middle of the run, on an application thread.
          // (ThreadSanitizer delivers it at the thread's next intercepted
          // call: wait for it, up to 5 s, so it lands while others run.)
          pthread_kill(pthread_self(), SIGINT);
          for (int w = 0; w < 5000 && g_app_sigint.load() == 0; ++w) usleep(1000);
        }
        // An API-exit stack capture per buffer.
        RawStack s;
        s.correlation_id = correlation;
        s.depth = 1;
        s.frames[0] = reinterpret_cast<void*>(&PutKernel);
        stacks.Push(s);
        uint8_t* buffer = pool.Acquire();
        const uint64_t in_buffer = 50;
        if (buffer == nullptr) {  // CUPTI would drop (and count) these records
          records_refused.fetch_add(in_buffer);
          std::this_thread::yield();
          continue;
        }
        size_t used = 0;
        for (uint64_t r = 0; r < in_buffer; ++r) {
          uint64_t start = 1'000'000 + (uint64_t(t) * kBuffersPerThread + i) * 100'000 + r * 1000;
          size_t n = PutKernel(buffer, used, pool.buffer_bytes(),
                               Kernel(start, start + 500, "threads_kernel", ++correlation));
          EXPECT_NE(n, 0u);
          used += n;
        }
        records_written.fetch_add(in_buffer);
        pool.Complete(buffer, used, 7);
        (void)pool.stats();
      }
    });
  }
  // The flush/finish path reads counters while everything runs.
  for (int i = 0; i < 200; ++i) {
    BufferPoolStats s = pool.stats();
    EXPECT_LE(s.allocated, 24u);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (std::thread& a : apps) a.join();
  producers_done.store(true);
  NotifyWriter(nullptr);
  writer.join();
  UninstallSignalFlush();
  sigaction(SIGINT, &old_int, nullptr);
  close(g_wake[0]);
  close(g_wake[1]);
  ASSERT_TRUE(writer_error.empty()) << writer_error;

  EXPECT_EQ(g_app_sigint.load(), 1) << "the app's own SIGINT handler runs after the flush";
  EXPECT_GE(g_flush_requests.load(), 1);
  const uint64_t total = uint64_t{kThreads} * kBuffersPerThread * 50;
  EXPECT_EQ(records_written.load() + records_refused.load(), total);
  EXPECT_EQ(converted, records_written.load());
  EXPECT_EQ(pool.stats().dropped_requests * 50, records_refused.load())
      << "every refused buffer is counted";
  EXPECT_EQ(stacks_taken + stacks.dropped(), uint64_t{kThreads} * kBuffersPerThread);

  auto reader = trace::TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  KernelCounter counter;
  ASSERT_TRUE((*reader)->ReadAll(counter).ok());
  EXPECT_TRUE((*reader)->integrity().complete) << (*reader)->integrity().reason;
  EXPECT_EQ(counter.kernels, records_written.load()) << "every converted record is in the trace";
  unlink(path.c_str());
}

// A sink that only counts (a long run's trace would be gigabytes).
class CountingSink : public trace::Sink {
 public:
  explicit CountingSink(uint64_t* bytes) : bytes_(bytes) {}
  bool Write(const void*, size_t size) override {
    *bytes_ += size;
    return true;
  }
  bool Sync() override { return true; }
  bool Close() override { return true; }
  std::string Describe() const override { return "counting"; }
  std::string last_error() const override { return ""; }

 private:
  uint64_t* bytes_;
};

// Checks every kernel's timestamps against the arithmetic the producer used
// (no drift, no reordering), then forwards to the writer.
class CheckingSink : public EventSink {
 public:
  CheckingSink(EventSink* next, uint64_t start, uint64_t period)
      : next_(next), start_(start), period_(period) {}
  uint32_t Intern(std::string_view s) override { return next_->Intern(s); }
  uint32_t InternStack(const CallStack& s) override { return next_->InternStack(s); }
  void Add(const KernelEvent& e) override {
    uint64_t want = start_ + kernels * period_;
    if (e.start_ns != want || e.end_ns != want + period_ / 2) ++mismatches;
    ++kernels;
    next_->Add(e);
  }
  void Add(const MemcpyEvent& e) override { next_->Add(e); }
  void Add(const MemsetEvent& e) override { next_->Add(e); }
  void Add(const MemoryEvent& e) override { next_->Add(e); }
  void Add(const SyncEvent& e) override { next_->Add(e); }
  void Add(const ApiEvent& e) override { next_->Add(e); }
  void Add(const NvtxRangeEvent& e) override { next_->Add(e); }
  void Add(const NvtxMarkerEvent& e) override { next_->Add(e); }
  void Add(const NcclEvent& e) override { next_->Add(e); }
  void Add(const MetricRangeEvent& e) override { next_->Add(e); }
  void Add(const GpuMetricSamplesEvent& e) override { next_->Add(e); }
  void Add(const CaptureWindowEvent& e) override { next_->Add(e); }
  void Add(const OverheadEvent& e) override { next_->Add(e); }
  void Add(const StepEvent& e) override { next_->Add(e); }
  void Add(const LossReport& e) override { next_->Add(e); }
  uint64_t kernels = 0, mismatches = 0;

 private:
  EventSink* next_;
  uint64_t start_, period_;
};

long PeakRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// One hour of launches at 100 k/s is 360 M records; the shape of that run —
// timestamps over an hour from a realistic epoch, one pool recycled without
// end — with 12 M records (SIGHTLINE_LONG_RUN_RECORDS to change): the pool
// never grows past its bound, memory stays flat, and every timestamp comes
// out exactly as it went in.
TEST(CollectorThreadsTest, LongRunMemoryAndTimestamps) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "long run: normal build only";
#endif
  uint64_t records = 12'000'000;
  if (const char* n = std::getenv("SIGHTLINE_LONG_RUN_RECORDS")) records = std::strtoull(n, nullptr, 10);
  const uint64_t start = 1'790'000'000'000'000'000ull;  // CUPTI ns, a 2026 epoch
  const uint64_t period = 3'600'000'000'000ull / records;  // the run spans one hour
  uint64_t bytes = 0;
  trace::TraceWriter w(std::make_unique<CountingSink>(&bytes));
  TraceHeaderData h;
  ASSERT_TRUE(w.Begin(h));
  TraceWriterEventSink events(&w);
  CheckingSink checking(&events, start, period);
  RecordConverter converter(&checking, ConverterOptions{}, [](ApiDomain, uint32_t) {
    return static_cast<const char*>(nullptr);
  });
  ActivityBufferPool pool(1 << 20, 2, 8);
  std::vector<CompletedBuffer> done;
  long rss_after_warmup = -1;
  uint64_t produced = 0, converted = 0;
  while (produced < records) {
    uint8_t* buffer = pool.Acquire();
    ASSERT_NE(buffer, nullptr);
    size_t used = 0;
    while (produced < records) {
      uint64_t t = start + produced * period;
      size_t n = PutKernel(buffer, used, pool.buffer_bytes(),
                           Kernel(t, t + period / 2, "long_run_kernel",
                                  static_cast<uint32_t>(produced + 1)));
      if (n == 0) break;
      used += n;
      ++produced;
    }
    pool.Complete(buffer, used);
    done.clear();
    pool.TakeCompleted(&done);
    for (const CompletedBuffer& b : done) {
      converted += DrainActivityBuffer(b, &PackedBuffer::Next, &converter).records;
      pool.Release(b.data, b.valid_bytes);
    }
    if (rss_after_warmup < 0 && produced > records / 10) rss_after_warmup = PeakRssKb();
  }
  ASSERT_TRUE(w.Finish("long run end"));
  const long rss_end = PeakRssKb();
  EXPECT_EQ(converted, records);
  EXPECT_EQ(checking.kernels, records);
  EXPECT_EQ(checking.mismatches, 0u) << "timestamps drifted or were reordered";
  EXPECT_LE(pool.stats().allocated, 8u);
  EXPECT_EQ(pool.stats().grown_in_callback, 0u);
  // Memory after the first tenth of the run stays flat (the interned-name
  // table, the pool and one chunk; no per-event growth).
  EXPECT_LT(rss_end - rss_after_warmup, 16 * 1024)
      << "peak RSS grew from " << rss_after_warmup << " kB to " << rss_end << " kB";
  std::printf("long run: %llu records, %.1f MB of trace, peak RSS %ld kB\n",
              static_cast<unsigned long long>(records), static_cast<double>(bytes) / 1e6,
              rss_end);
}

}  // namespace
}  // namespace sightline::collect
