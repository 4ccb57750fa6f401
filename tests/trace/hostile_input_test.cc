// Hostile inputs to the trace library (issue 17, item 2): the input-opening
// helper refuses non-regular files without blocking, the terminal escaper,
// and resync after damage bounded by the file size (work counters, not wall
// time).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/trace/format.h"
#include "lib/trace/input_file.h"
#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "lib/trace/terminal_text.h"
#include "lib/trace/writer.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/hostile-" + std::to_string(getpid()) + "-" + name;
}

TEST(InputFileTest, FifoIsRefusedWithoutBlocking) {
  std::string fifo = TempPath("in.fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Before the fix, open(O_RDONLY) on a FIFO without a writer blocked forever.
  absl::StatusOr<InputFile> in = OpenInputFile(fifo);
  ASSERT_FALSE(in.ok());
  EXPECT_THAT(std::string(in.status().message()), HasSubstr(fifo + ": not a regular file (fifo)"));
  auto reader = TraceReader::Open(fifo);
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(std::string(reader.status().message()), HasSubstr("not a regular file (fifo)"));
  unlink(fifo.c_str());
}

TEST(InputFileTest, DirectoryAndMissingFile) {
  auto dir = OpenInputFile(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(std::string(dir.status().message()), HasSubstr("is a directory"));
  auto missing = OpenInputFile(TempPath("missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
}

TEST(InputFileTest, RegularFileIsBlockingAfterOpen) {
  std::string path = TempPath("regular");
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("hello", f);
  std::fclose(f);
  auto in = OpenInputFile(path);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->size, 5u);
  EXPECT_EQ(fcntl(in->fd, F_GETFL) & O_NONBLOCK, 0);
  close(in->fd);
  auto text = ReadInputPrefix(path, 3);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hel");
  unlink(path.c_str());
}

TEST(TerminalTextTest, EscapesControlsKeepsText) {
  EXPECT_EQ(EscapeTerminalText("plain ascii"), "plain ascii");
  EXPECT_EQ(EscapeTerminalText("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(EscapeTerminalText("a\x7f" "b"), "a\\x7fb");
  EXPECT_EQ(EscapeTerminalText("line\nnext\ttab\r"), "line\\x0anext\\x09tab\\x0d");
  EXPECT_EQ(EscapeTerminalText("line\nnext\ttab\r", KeepLayout::kNewlinesAndTabs),
            "line\nnext\ttab\\x0d");
  // UTF-8 text stays; C1 controls (U+009B = CSI) are escaped.
  EXPECT_EQ(EscapeTerminalText("µs → ok"), "µs → ok");
  EXPECT_EQ(EscapeTerminalText("\xc2\x9b" "2J"), "\\u009b2J");
  // Invalid UTF-8: lone continuation, overlong, surrogate, truncated.
  EXPECT_EQ(EscapeTerminalText("\x80"), "\\x80");
  EXPECT_EQ(EscapeTerminalText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(EscapeTerminalText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(EscapeTerminalText("\xe2\x86"), "\\xe2\\x86");
  EXPECT_EQ(EscapeTerminalText(std::string("a\0b", 3)), "a\\x00b");
}

// A complete trace in memory: preamble, header, `chunks` chunk frames, footer.
std::string SmallTrace(int chunks) {
  std::string out;
  WriterOptions wo;
  wo.chunk_bytes = 1024;
  TraceWriter w(OpenMemorySink(&out), wo);
  EXPECT_TRUE(w.Begin(testing::SampleHeader()));
  uint32_t name = w.Intern("k");
  for (int i = 0; i < chunks * 40; ++i) {
    KernelEvent k;
    k.start_ns = 1000 + i * 100;
    k.end_ns = k.start_ns + 50;
    k.name_id = name;
    w.Add(k);
  }
  EXPECT_TRUE(w.Finish("end"));
  return out;
}

// Offsets of the frames of a well-formed trace.
std::vector<size_t> FrameOffsets(const std::string& t) {
  std::vector<size_t> at;
  size_t pos = kFilePreambleSize;
  while (pos + kFrameHeaderSize <= t.size()) {
    at.push_back(pos);
    uint32_t length;
    std::memcpy(&length, t.data() + pos + 8, 4);
    pos += kFrameHeaderSize + length;
  }
  return at;
}

void AppendFakeHeader(std::string* out, uint32_t length) {
  out->append("SLFR");
  out->push_back(2);  // chunk
  out->append(3, '\0');
  out->append(reinterpret_cast<const char*>(&length), 4);
  out->append(4, '\0');  // CRC 0: never right
}

struct ReadResult {
  Integrity integrity;
  uint64_t size;
};

ReadResult ReadBuffer(const std::string& data) {
  auto reader = TraceReader::FromBuffer("fake", data);
  EXPECT_TRUE(reader.ok()) << reader.status();
  EventVisitor ignore;
  absl::Status s = (*reader)->ReadAll(ignore);
  EXPECT_TRUE(s.ok()) << s;
  return {(*reader)->integrity(), data.size()};
}

// 6 MiB of fake frame headers, one every 128 bytes, each claiming a 4 MiB
// payload that overlaps the next ones. Before the fix every header cost a
// CRC over its 4 MiB (49152 x 4 MiB = 192 GiB of work; `info` on a 64 MiB
// file took 41 s). Genuine frames after the junk must still be read.
TEST(ResyncBoundTest, OverlappingFakeHeadersCostLinearWork) {
  std::string good = SmallTrace(6);
  std::vector<size_t> frames = FrameOffsets(good);
  ASSERT_GE(frames.size(), 5u);
  const size_t cut = frames[2];  // after the header and the first chunk
  std::string data = good.substr(0, cut);
  const size_t junk = size_t{6} << 20;
  while (data.size() < cut + junk) {
    AppendFakeHeader(&data, 4u << 20);
    data.append(128 - kFrameHeaderSize, 'x');
  }
  data += good.substr(cut);
  ReadResult r = ReadBuffer(data);
  EXPECT_LE(r.integrity.crc_bytes, 6 * r.size) << "resync work must be linear in the file size";
  EXPECT_GT(r.integrity.frames_unverified, 10000u);
  // Every genuine chunk (before and after the junk) and the footer are read.
  ReadResult clean = ReadBuffer(good);
  EXPECT_EQ(r.integrity.chunks_read, clean.integrity.chunks_read);
  EXPECT_TRUE(r.integrity.footer.has_value());
  EXPECT_FALSE(r.integrity.complete);
}

// The same from a file, read through the pread window in 1 MiB blocks: the
// search from one candidate to the next scans the bytes already in the
// window (before, each search refilled a whole block, moving megabytes per
// candidate).
TEST(ResyncBoundTest, FileInputReadsAndMovesLinearBytes) {
  std::string good = SmallTrace(6);
  std::vector<size_t> frames = FrameOffsets(good);
  const size_t cut = frames[2];
  std::string data = good.substr(0, cut);
  while (data.size() < cut + (size_t{16} << 20)) {
    AppendFakeHeader(&data, 4u << 20);
    data.append(128 - kFrameHeaderSize, 'x');
  }
  data += good.substr(cut);
  std::string path = TempPath("fake-headers.sltrace");
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(data.data(), 1, data.size(), f), data.size());
  std::fclose(f);
  ReaderOptions options;
  options.read_block_bytes = 1 << 20;
  auto reader = TraceReader::Open(path, options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EventVisitor ignore;
  ASSERT_TRUE((*reader)->ReadAll(ignore).ok());
  const Integrity& in = (*reader)->integrity();
  EXPECT_LE(in.input_window_bytes, 3 * data.size());
  EXPECT_LE(in.crc_bytes, 6 * data.size());
  EXPECT_TRUE(in.footer.has_value());
  unlink(path.c_str());
}

// Fake headers chained so that each one ends exactly at another one (the
// cheap "ends at a frame" test passes): the CRC budget ends the resync.
TEST(ResyncBoundTest, ChainedFakeHeadersHitTheBudget) {
  std::string good = SmallTrace(2);
  std::vector<size_t> frames = FrameOffsets(good);
  std::string data = good.substr(0, frames[2]);
  const size_t stride = 256;
  const size_t count = (size_t{8} << 20) / stride;
  const size_t base = data.size();
  for (size_t i = 0; i < count; ++i) {
    // Each claims the payload up to the last header: overlapping chains.
    size_t here = base + i * stride;
    size_t last = base + (count - 1) * stride;
    uint32_t length = i + 1 < count ? static_cast<uint32_t>(last - here - kFrameHeaderSize) : 64;
    AppendFakeHeader(&data, length);
    data.append(stride - kFrameHeaderSize, 'y');
  }
  ReadResult r = ReadBuffer(data);
  EXPECT_LE(r.integrity.crc_bytes, 4 * r.size + 3 * uint64_t{kMaxFramePayload});
  bool gave_up = false;
  for (const std::string& p : r.integrity.problems) {
    gave_up |= p.find("stopped resynchronising") != std::string::npos;
  }
  EXPECT_TRUE(gave_up);
  EXPECT_EQ(r.integrity.chunks_read, 1u);
}

// Ordinary damage (one corrupted chunk) is unaffected by the bound.
TEST(ResyncBoundTest, OneBadChunkStillSkippedAndTheRestRead) {
  std::string good = SmallTrace(6);
  std::vector<size_t> frames = FrameOffsets(good);
  std::string bad = good;
  bad[frames[3] + kFrameHeaderSize + 5] ^= 0x55;
  ReadResult clean = ReadBuffer(good);
  ReadResult r = ReadBuffer(bad);
  EXPECT_EQ(r.integrity.chunks_damaged, 1u);
  EXPECT_EQ(r.integrity.chunks_read + 1, clean.integrity.chunks_read);
  EXPECT_EQ(r.integrity.frames_unverified, 0u);
}

}  // namespace
}  // namespace sightline::trace
