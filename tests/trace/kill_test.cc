// A real writer process killed with SIGKILL after N flushed chunks: the reader
// recovers exactly those N chunks and reports what was lost.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace::testing {
namespace {

using ::testing::HasSubstr;

class KillTest : public ::testing::TestWithParam<std::tuple<int, const char*>> {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { RemoveTree(dir_); }

  // Runs the helper until it reports `chunks` flushed chunks (+ "done"),
  // then SIGKILLs it.
  void RunAndKill(const std::string& path, int chunks, int per_chunk, const char* mode) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      std::string fd = std::to_string(fds[1]);
      std::string n = std::to_string(chunks), k = std::to_string(per_chunk);
      execl(SIGHTLINE_KILL_HELPER, SIGHTLINE_KILL_HELPER, path.c_str(), n.c_str(), k.c_str(),
            mode, fd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    int flushed = 0;
    char byte;
    while (read(fds[0], &byte, 1) == 1) {
      if (byte == 'c') ++flushed;
      if (byte == 'd') break;
    }
    close(fds[0]);
    ASSERT_EQ(flushed, chunks) << "helper did not report its chunks";
    usleep(20000);  // let it buffer (unflushed) events
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
  }

  std::string dir_;
};

TEST_P(KillTest, ReaderRecoversExactlyTheFlushedChunks) {
  const auto [chunks, mode] = GetParam();
  const int per_chunk = 250;
  std::string path = dir_ + "/killed.sltrace";
  RunAndKill(path, chunks, per_chunk, mode);

  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().tool_version, "kill-helper");
  RecordingVisitor visitor;
  ASSERT_TRUE((*reader)->ReadAll(visitor).ok());
  const Integrity& in = (*reader)->integrity();
  EXPECT_EQ(in.chunks_read, static_cast<uint64_t>(chunks));
  ASSERT_EQ(visitor.events.size(), static_cast<size_t>(chunks * per_chunk));
  for (size_t i = 0; i < visitor.events.size(); ++i) {
    ASSERT_EQ(visitor.events[i].kind, EventKind::kKernel);
    ASSERT_EQ(visitor.events[i].kernel.correlation_id, i);
    ASSERT_EQ(visitor.events[i].kernel.start_ns, 1000 + 1000 * i);
    ASSERT_EQ((*reader)->strings().Get(visitor.events[i].kernel.name_id), "killed_kernel");
  }
  EXPECT_FALSE(in.complete);
  EXPECT_FALSE(in.footer.has_value());
  EXPECT_THAT(in.reason, HasSubstr("no footer: the writer did not finish"));
  EXPECT_EQ(in.chunks_damaged, 0u);
  if (std::string(mode) == "partial") {
    EXPECT_TRUE(in.truncated);
    EXPECT_THAT(in.reason, HasSubstr("truncated at byte " + std::to_string(in.bytes_accepted)));
    EXPECT_THAT(in.reason, HasSubstr("1016 bytes, only 316 present"));
    EXPECT_EQ(in.bytes_skipped, 316u);
  } else {
    EXPECT_FALSE(in.truncated);
    EXPECT_EQ(in.bytes_accepted, in.file_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Chunks, KillTest,
                         ::testing::Combine(::testing::Values(0, 1, 3, 17),
                                            ::testing::Values("buffered", "partial")));

}  // namespace
}  // namespace sightline::trace::testing
