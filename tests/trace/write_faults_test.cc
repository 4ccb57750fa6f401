// Write faults of the collector's trace writer (fault matrix rows "disk full"
// and "EIO while writing", docs/reliability.md): the writing process keeps
// running, the loss is counted, and the reader says where the trace ends.
//
// Disk full without root or a full filesystem: RLIMIT_FSIZE in a child
// process (with SIGXFSZ ignored, write(2) fails with EFBIG at the limit, as
// it fails with ENOSPC on a full disk — possibly after a partial write).
// EIO: a sink that fails some writes halfway (a partial frame reaches the
// file, then the error), then works again.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kEvents = 40000;

void WriteKernels(TraceWriter& w, int events) {
  uint32_t name = w.Intern("fault_kernel");
  for (int i = 0; i < events; ++i) {
    KernelEvent k;
    k.start_ns = 1000 + 1000 * uint64_t(i);
    k.end_ns = k.start_ns + 500;
    k.correlation_id = static_cast<uint32_t>(i);
    k.name_id = name;
    w.Add(k);
  }
}

class KernelCount : public EventVisitor {
 public:
  uint64_t kernels = 0;
  void OnKernel(const KernelEvent&) override { ++kernels; }
};

TEST(WriteFaultsTest, DiskFullKeepsTheProcessRunningAndTheReaderSaysWhereItEnds) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/full.sltrace";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{200 * 1024, 200 * 1024};  // "the disk" holds 200 KiB
    setrlimit(RLIMIT_FSIZE, &limit);
    std::string error;
    FileSinkOptions fo;
    fo.overwrite = true;
    auto sink = OpenSink(path, fo, &error);
    if (!sink) _exit(10);
    WriterOptions wo;
    wo.chunk_bytes = 16 << 10;
    TraceWriter w(std::move(sink), wo);
    if (!w.Begin(SampleHeader())) _exit(11);
    WriteKernels(w, kEvents);
    bool finished = w.Finish("disk full test");
    // The "application" goes on: report what the writer knows, exit normally.
    std::string report = std::to_string(finished) + " " + std::to_string(w.ok()) + " " + w.error();
    ssize_t ignored = write(fds[1], report.data(), report.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  char buf[512] = {0};
  ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the writing process died";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_GT(n, 0);
  std::string report(buf, static_cast<size_t>(n));
  EXPECT_THAT(report, HasSubstr("0 0 "));  // Finish failed, the writer says why
  EXPECT_THAT(report, HasSubstr("File too large"));

  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  KernelCount count;
  ASSERT_TRUE((*reader)->ReadAll(count).ok());
  const Integrity& in = (*reader)->integrity();
  EXPECT_FALSE(in.complete);
  EXPECT_FALSE(in.footer.has_value());
  EXPECT_GT(in.chunks_read, 0u);
  EXPECT_LE(in.file_bytes, 200u * 1024);
  // Where it ends: every complete chunk is read; the reason gives the offset.
  EXPECT_THAT(in.reason, HasSubstr("no footer"));
  EXPECT_THAT(in.reason, HasSubstr("complete chunks read up to byte " +
                                   std::to_string(in.bytes_accepted)));
  EXPECT_GT(count.kernels, 0u);
  EXPECT_LT(count.kernels, uint64_t{kEvents});
  RemoveTree(dir);
}

// Fails writes number `first`..`first + count - 1` (counting from the
// header's), after passing half of the frame through: a partial frame, then
// EIO. Later writes succeed.
class FlakySink : public Sink {
 public:
  FlakySink(std::unique_ptr<Sink> inner, int first, int count)
      : inner_(std::move(inner)), first_(first), count_(count) {}
  bool Write(const void* data, size_t size) override {
    int n = writes_++;
    if (n >= first_ && n < first_ + count_) {
      inner_->Write(data, size / 2);
      error_ = "write failed: Input/output error";
      return false;
    }
    return inner_->Write(data, size);
  }
  bool Sync() override { return inner_->Sync(); }
  bool Close() override { return inner_->Close(); }
  std::string Describe() const override { return inner_->Describe(); }
  std::string last_error() const override { return error_; }

 private:
  std::unique_ptr<Sink> inner_;
  int first_, count_;
  int writes_ = 0;
  std::string error_;
};

TEST(WriteFaultsTest, TransientEioLosesOnlyThoseChunksAndCountsThem) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/eio.sltrace";
  std::string error;
  FileSinkOptions fo;
  fo.overwrite = true;
  auto file = OpenSink(path, fo, &error);
  ASSERT_TRUE(file) << error;
  WriterOptions wo;
  wo.chunk_bytes = 16 << 10;
  // Writes: 0 = preamble+header, then chunks. Chunks 5, 6, 7 fail.
  TraceWriter w(std::make_unique<FlakySink>(std::move(file), 5, 3), wo);
  ASSERT_TRUE(w.Begin(SampleHeader()));
  WriteKernels(w, kEvents);
  w.Finish("eio test");  // the footer gets through
  EXPECT_FALSE(w.ok());
  EXPECT_THAT(w.error(), HasSubstr("Input/output error"));

  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  KernelCount count;
  ASSERT_TRUE((*reader)->ReadAll(count).ok());
  const Integrity& in = (*reader)->integrity();
  ASSERT_TRUE(in.footer.has_value()) << in.reason;
  EXPECT_FALSE(in.complete);
  // The three lost chunks: missing from the sequence, their half-written
  // frames skipped as damage, their events counted in the footer.
  EXPECT_EQ(in.chunks_missing, 3u);
  EXPECT_GT(in.losses.write_errors, 0u);
  EXPECT_EQ(count.kernels + in.losses.write_errors, uint64_t{kEvents})
      << "every event is either read or counted as lost to write errors";
  RemoveTree(dir);
}

}  // namespace
}  // namespace sightline::trace::testing
