// Files that shrink or change while being read (a trace being rewritten, a
// file truncated by another process, a network filesystem): the reader reads
// files with pread(), so this is damage to report, never a SIGBUS. The result
// must be that of a file truncated where it ended, plus one problem naming
// the file, the offsets and the shrink.
//
// Also: reading a file (through the pread window, with blocks much smaller
// than a frame) gives exactly what reading the same bytes from memory gives,
// for every truncation and for damaged files.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/trace/format.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The outcome of reading one input, for comparisons.
struct Outcome {
  absl::Status open_status;
  absl::Status read_status;
  std::vector<AnyEvent> events;
  Integrity integrity;
};

Outcome ReadWith(absl::StatusOr<std::unique_ptr<TraceReader>> reader) {
  Outcome out;
  if (!reader.ok()) {
    out.open_status = reader.status();
    return out;
  }
  RecordingVisitor visitor;
  out.read_status = (*reader)->ReadAll(visitor);
  out.events = std::move(visitor.events);
  out.integrity = (*reader)->integrity();
  return out;
}

// Same events, same accounting, same problems (messages with the file's name
// compared without it).
void ExpectSameOutcome(const Outcome& file, const Outcome& memory, const std::string& path) {
  ASSERT_EQ(file.open_status.ok(), memory.open_status.ok()) << file.open_status;
  if (!file.open_status.ok()) {
    EXPECT_EQ(file.open_status.code(), memory.open_status.code());
    std::string f(file.open_status.message()), m(memory.open_status.message());
    ASSERT_EQ(f.rfind(path + ": ", 0), 0u) << f;
    ASSERT_EQ(m.rfind("memory: ", 0), 0u) << m;
    EXPECT_EQ(f.substr(path.size()), m.substr(6));
    return;
  }
  EXPECT_EQ(file.read_status.code(), memory.read_status.code());
  ASSERT_EQ(file.events.size(), memory.events.size());
  for (size_t i = 0; i < file.events.size(); ++i) {
    ASSERT_TRUE(file.events[i] == memory.events[i]) << i;
  }
  const Integrity& a = file.integrity;
  const Integrity& b = memory.integrity;
  EXPECT_EQ(a.complete, b.complete);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.problems, b.problems);
  EXPECT_EQ(a.file_bytes, b.file_bytes);
  EXPECT_EQ(a.bytes_accepted, b.bytes_accepted);
  EXPECT_EQ(a.bytes_skipped, b.bytes_skipped);
  EXPECT_EQ(a.chunks_read, b.chunks_read);
  EXPECT_EQ(a.chunks_damaged, b.chunks_damaged);
  EXPECT_EQ(a.chunks_missing, b.chunks_missing);
  EXPECT_EQ(a.truncated, b.truncated);
  EXPECT_FALSE(a.shrank);
}

class ShrinkTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { RemoveTree(dir_); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  std::string dir_;
};

ReaderOptions SmallBlocks(size_t block_bytes, bool resync = true) {
  ReaderOptions options;
  options.resync = resync;
  options.read_block_bytes = block_bytes;
  return options;
}

TEST_F(ShrinkTest, FileReadEqualsMemoryReadAtEveryTruncation) {
  ChunkedTrace t = MakeChunkedTrace(60, 300, 11);
  ASSERT_GE(t.events_after.size(), 4u);
  const std::string path = Path("cut.sltrace");
  for (size_t len = 0; len <= t.bytes.size(); ++len) {
    SCOPED_TRACE("truncated to " + std::to_string(len) + " bytes");
    std::string_view prefix(t.bytes.data(), len);
    WriteFile(path, prefix);
    for (bool resync : {true, false}) {
      Outcome memory = ReadWith(TraceReader::FromBuffer("memory", prefix, SmallBlocks(64, resync)));
      if (len == 0) {  // Open refuses an empty file before reading it
        EXPECT_THAT(std::string(TraceReader::Open(path).status().message()),
                    AllOf(HasSubstr(path + ": "), HasSubstr("empty file")));
        continue;
      }
      // Blocks smaller than a frame (every frame straddles reads), and the
      // default (the whole file in one read).
      for (size_t block : {size_t{64}, size_t{100}, size_t{4} << 20}) {
        ExpectSameOutcome(ReadWith(TraceReader::Open(path, SmallBlocks(block, resync))), memory,
                          path);
      }
    }
  }
}

TEST_F(ShrinkTest, FileReadEqualsMemoryReadForDamagedFiles) {
  ChunkedTrace t = MakeChunkedTrace(120, 400, 11);
  const std::string path = Path("damaged.sltrace");
  std::mt19937 rng(5);
  for (int round = 0; round < 400; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::string bytes = t.bytes;
    switch (round % 4) {
      case 0:  // bit flips (lengths, magics, CRCs, payloads)
        for (int i = 0; i < 3; ++i) bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1: {  // garbage, longer than a block, between or inside frames
        std::string garbage(50 + rng() % 300, '\0');
        for (char& c : garbage) c = static_cast<char>(rng());
        bytes.insert(t.header_end + rng() % (bytes.size() - t.header_end), garbage);
        break;
      }
      case 2: {  // a hostile length in some frame header
        auto it = t.events_after.begin();
        std::advance(it, rng() % (t.events_after.size() - 1));
        uint32_t length = static_cast<uint32_t>(rng());
        if (rng() % 2) length %= 100000;
        std::memcpy(&bytes[it->first + 8], &length, 4);
        break;
      }
      case 3:  // a frame magic split by a cut: cut then truncate
        bytes.erase(t.header_end + rng() % (bytes.size() - t.header_end), 1 + rng() % 40);
        break;
    }
    WriteFile(path, bytes);
    for (bool resync : {true, false}) {
      Outcome memory = ReadWith(TraceReader::FromBuffer("memory", bytes, SmallBlocks(64, resync)));
      for (size_t block : {size_t{64}, size_t{257}, size_t{4} << 20}) {
        ExpectSameOutcome(ReadWith(TraceReader::Open(path, SmallBlocks(block, resync))), memory,
                          path);
      }
    }
  }
}

// Truncates the file between NextChunk calls, in the middle of a later chunk
// frame: the reader returns the chunks before it and reports the shrink and
// the cut frame, exactly like a file truncated there.
TEST_F(ShrinkTest, TruncatedBetweenChunks) {
  ChunkedTrace t = MakeChunkedTrace(200, 300, 11);
  ASSERT_GE(t.events_after.size(), 8u);
  std::vector<std::pair<size_t, size_t>> ends(t.events_after.begin(), t.events_after.end());
  const std::string path = Path("shrinking.sltrace");
  WriteFile(path, t.bytes);
  // Cut 10 bytes into the frame that follows the 5th chunk.
  const size_t cut = ends[4].first + 10;

  auto reader = TraceReader::Open(path, SmallBlocks(64));
  ASSERT_TRUE(reader.ok()) << reader.status();
  RecordingVisitor visitor;
  for (int i = 0; i < 3; ++i) {
    auto more = (*reader)->NextChunk(visitor);
    ASSERT_TRUE(more.ok() && *more);
  }
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(cut)), 0);
  absl::Status status = (*reader)->ReadAll(visitor);
  ASSERT_TRUE(status.ok()) << status;

  ASSERT_EQ(visitor.events.size(), ends[4].second);
  for (size_t i = 0; i < visitor.events.size(); ++i) ASSERT_TRUE(visitor.events[i] == t.events[i]);
  const Integrity& in = (*reader)->integrity();
  EXPECT_FALSE(in.complete);
  EXPECT_TRUE(in.shrank);
  EXPECT_TRUE(in.truncated);
  EXPECT_EQ(in.file_bytes, cut);
  EXPECT_EQ(in.bytes_accepted, ends[4].first);
  EXPECT_EQ(in.bytes_accepted + in.bytes_skipped, cut);
  EXPECT_EQ(in.chunks_read, 5u);
  ASSERT_GE(in.problems.size(), 2u);
  EXPECT_THAT(in.problems[0],
              AllOf(HasSubstr(path + " shrank while being read"),
                    HasSubstr(std::to_string(t.bytes.size()) + " bytes when opened"),
                    HasSubstr("ended at byte " + std::to_string(cut)),
                    HasSubstr("reading the frame at byte " + std::to_string(ends[4].first))));
  EXPECT_THAT(in.reason, AllOf(HasSubstr("shrank while being read"), HasSubstr("no footer")));

  // Apart from the shrink, exactly what a file truncated there gives.
  Outcome truncated =
      ReadWith(TraceReader::FromBuffer("memory", std::string_view(t.bytes.data(), cut)));
  ASSERT_TRUE(truncated.open_status.ok());
  std::vector<std::string> rest(in.problems.begin() + 1, in.problems.end());
  EXPECT_EQ(rest, truncated.integrity.problems);
  EXPECT_EQ(in.bytes_skipped, truncated.integrity.bytes_skipped);
  EXPECT_EQ(in.events_read, truncated.integrity.events_read);
  EXPECT_THAT(in.problems, ::testing::Contains(HasSubstr(
                               "truncated at byte " + std::to_string(ends[4].first))));
}

// Without resync a shrink that cuts a frame stops the read with DataLoss,
// like a truncated file; the Status names the file.
TEST_F(ShrinkTest, TruncatedBetweenChunksWithoutResync) {
  ChunkedTrace t = MakeChunkedTrace(200, 300, 11);
  std::vector<std::pair<size_t, size_t>> ends(t.events_after.begin(), t.events_after.end());
  const std::string path = Path("strict.sltrace");
  WriteFile(path, t.bytes);
  auto reader = TraceReader::Open(path, SmallBlocks(64, /*resync=*/false));
  ASSERT_TRUE(reader.ok());
  RecordingVisitor visitor;
  ASSERT_TRUE(*(*reader)->NextChunk(visitor));
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(ends[2].first + 3)), 0);
  absl::Status status = (*reader)->ReadAll(visitor);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr(path + ": "), HasSubstr("truncated at byte")));
  EXPECT_EQ(visitor.events.size(), ends[2].second);
  EXPECT_TRUE((*reader)->integrity().shrank);
}

// The file is truncated from inside a visitor callback, i.e. while a chunk
// is being decoded: the chunk in hand is finished (its bytes were read and
// CRC-checked before decoding), then the shrink is noticed.
class TruncatingVisitor : public RecordingVisitor {
 public:
  TruncatingVisitor(std::string path, size_t at_event, off_t to)
      : path_(std::move(path)), at_event_(at_event), to_(to) {}
  void OnKernel(const KernelEvent& e) override {
    RecordingVisitor::OnKernel(e);
    if (events.size() >= at_event_ && !done_) {
      done_ = true;
      EXPECT_EQ(::truncate(path_.c_str(), to_), 0);
    }
  }

 private:
  std::string path_;
  size_t at_event_;
  off_t to_;
  bool done_ = false;
};

TEST_F(ShrinkTest, TruncatedWhileAChunkIsDecoded) {
  ChunkedTrace t = MakeChunkedTrace(300, 500, 11);
  std::vector<std::pair<size_t, size_t>> ends(t.events_after.begin(), t.events_after.end());
  ASSERT_GE(ends.size(), 6u);
  const std::string path = Path("mid_chunk.sltrace");
  struct Case {
    off_t to;
    size_t events;         // expected events read
    bool truncated_frame;  // the new end cuts a frame
  };
  // While the 3rd chunk is decoded: to a frame boundary (the end of the 4th
  // chunk), into the 5th chunk, and to nothing at all.
  size_t during = ends[1].second + 2;
  for (const Case& c : {Case{static_cast<off_t>(ends[3].first), ends[3].second, false},
                        Case{static_cast<off_t>(ends[4].first - 7), ends[3].second, true},
                        Case{0, ends[2].second, false}}) {
    SCOPED_TRACE("truncated to " + std::to_string(c.to));
    WriteFile(path, t.bytes);
    auto reader = TraceReader::Open(path, SmallBlocks(128));
    ASSERT_TRUE(reader.ok());
    TruncatingVisitor visitor(path, during, c.to);
    ASSERT_TRUE((*reader)->ReadAll(visitor).ok());
    EXPECT_EQ(visitor.events.size(), c.events);
    ASSERT_TRUE(IsSubsequence(visitor.events, t.events));
    const Integrity& in = (*reader)->integrity();
    EXPECT_FALSE(in.complete);
    EXPECT_TRUE(in.shrank);
    EXPECT_EQ(in.truncated, c.truncated_frame);
    EXPECT_LE(in.bytes_accepted + in.bytes_skipped, in.file_bytes);
    EXPECT_THAT(in.reason, AllOf(HasSubstr(path), HasSubstr("shrank while being read"),
                                 HasSubstr(std::to_string(t.bytes.size()) + " bytes when opened")));
  }
}

// Another process rewrites the file in place (truncate, write it again) over
// and over while this one reads it: every read ends with a reader Status or
// a valid subsequence of the events, and a shrink it saw is reported.
TEST_F(ShrinkTest, ConcurrentRewritesNeverCrashTheReader) {
  ChunkedTrace t = MakeChunkedTrace(20000, 4096, 3);
  const std::string path = Path("rewritten.sltrace");
  WriteFile(path, t.bytes);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(go[1]);
    int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) _exit(2);
    fcntl(go[0], F_SETFL, O_NONBLOCK);
    std::mt19937 rng(9);
    char byte;
    while (read(go[0], &byte, 1) != 0) {  // until the parent closes the pipe
      off_t cut = static_cast<off_t>(rng() % t.bytes.size());
      if (ftruncate(fd, cut) != 0) _exit(3);
      usleep(rng() % 300);
      size_t done = static_cast<size_t>(cut);
      while (done < t.bytes.size()) {
        ssize_t n = pwrite(fd, t.bytes.data() + done, t.bytes.size() - done, static_cast<off_t>(done));
        if (n <= 0) _exit(4);
        done += static_cast<size_t>(n);
      }
      usleep(rng() % 300);
    }
    _exit(0);
  }
  close(go[0]);
  int reads = 0, shrank = 0, short_reads = 0, refused = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline || reads < 20) {
    ++reads;
    for (size_t block : {size_t{4096}, size_t{4} << 20}) {
      auto reader = TraceReader::Open(path, SmallBlocks(block));
      if (!reader.ok()) {  // caught while (nearly) empty or cut inside the header
        ++refused;
        EXPECT_THAT(std::string(reader.status().message()), HasSubstr(path + ": "));
        continue;
      }
      // (EXPECT, not ASSERT: the child runs until the pipe is closed below.)
      RecordingVisitor visitor;
      absl::Status status = (*reader)->ReadAll(visitor);
      EXPECT_TRUE(status.ok()) << status;
      EXPECT_TRUE(IsSubsequence(visitor.events, t.events));
      const Integrity& in = (*reader)->integrity();
      EXPECT_LE(in.bytes_accepted + in.bytes_skipped, in.file_bytes);
      if (in.shrank) {
        ++shrank;
        EXPECT_THAT(in.problems, ::testing::Contains(HasSubstr(path + " shrank while being read")));
      }
      if (visitor.events.size() < t.events.size()) {
        ++short_reads;
        EXPECT_FALSE(in.complete);
        EXPECT_FALSE(in.reason.empty());
      }
    }
  }
  close(go[1]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
  // The race must actually have been exercised.
  EXPECT_GT(short_reads, 0);
  std::printf("%d reads, %d refused at open, %d short, %d saw the file shrink\n", 2 * reads,
              refused, short_reads, shrank);
}

}  // namespace
}  // namespace sightline::trace::testing
