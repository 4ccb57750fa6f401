// Damaged input: truncation at every byte offset, random bit flips, garbage,
// wrong magic, newer versions, empty files, directories, hostile lengths and
// ids. The reader must return a clear Status (file, offset, problem) or a
// valid prefix of the events, and never crash.
#include <sys/stat.h>

#include <algorithm>
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

TEST(DamageTest, TruncationAtEveryByteOffset) {
  ChunkedTrace t = MakeChunkedTrace(60, 300, 7);
  ASSERT_GE(t.events_after.size(), 4u) << "want a multi-chunk trace";
  for (size_t len = 0; len <= t.bytes.size(); ++len) {
    SCOPED_TRACE("truncated to " + std::to_string(len) + " bytes");
    std::string_view prefix(t.bytes.data(), len);
    RecordingVisitor visitor;
    auto reader = ReadAllFromBuffer(prefix, &visitor);
    if (len < t.header_end) {
      ASSERT_FALSE(reader.ok());
      EXPECT_THAT(std::string(reader.status().message()), HasSubstr("mem.sltrace: "));
      if (len == 0) {
        EXPECT_THAT(std::string(reader.status().message()), HasSubstr("empty file"));
      } else {
        EXPECT_THAT(std::string(reader.status().message()), HasSubstr("truncated"));
        EXPECT_THAT(std::string(reader.status().message()), HasSubstr("byte"));
      }
      continue;
    }
    ASSERT_TRUE(reader.ok()) << reader.status();
    // Exactly the events of the chunks that are complete in the prefix.
    size_t expected = 0;
    for (const auto& [end, events] : t.events_after) {
      if (end <= len) expected = events;
    }
    ASSERT_EQ(visitor.events.size(), expected);
    for (size_t i = 0; i < expected; ++i) ASSERT_TRUE(visitor.events[i] == t.events[i]) << i;
    const Integrity& in = (*reader)->integrity();
    if (len == t.bytes.size()) {
      EXPECT_TRUE(in.complete);
      continue;
    }
    EXPECT_FALSE(in.complete);
    EXPECT_FALSE(in.footer.has_value());
    EXPECT_THAT(in.reason, HasSubstr("no footer"));
    bool at_boundary = len == t.header_end || t.events_after.count(len) != 0;
    EXPECT_EQ(in.truncated, !at_boundary);
    // Stopping at the first damage: DataLoss exactly when a frame is cut.
    auto strict = TraceReader::FromBuffer("strict", prefix, ReaderOptions{false});
    ASSERT_TRUE(strict.ok());
    RecordingVisitor strict_visitor;
    absl::Status strict_status = (*strict)->ReadAll(strict_visitor);
    EXPECT_EQ(strict_status.ok(), at_boundary) << strict_status;
    EXPECT_EQ(strict_visitor.events.size(), expected);
    EXPECT_FALSE((*strict)->integrity().reason.empty());
    if (!at_boundary) {
      EXPECT_THAT(in.reason, HasSubstr("truncated at byte"));
      EXPECT_EQ(in.bytes_accepted + in.bytes_skipped, len);
    } else {
      EXPECT_EQ(in.bytes_accepted, len);
    }
  }
}

TEST(DamageTest, RandomBitFlipsGiveAnErrorOrAValidSubsetNeverACrash) {
  ChunkedTrace t = MakeChunkedTrace(120, 400, 7);
  int opened = 0, rejected = 0, damaged = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    std::mt19937 rng(seed);
    std::string bytes = t.bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      size_t pos = rng() % bytes.size();
      bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (rng() % 8)));
    }
    RecordingVisitor visitor;
    auto reader = ReadAllFromBuffer(bytes, &visitor);
    if (!reader.ok()) {
      ++rejected;
      EXPECT_THAT(std::string(reader.status().message()), HasSubstr("mem.sltrace: ")) << seed;
      continue;
    }
    ++opened;
    ASSERT_TRUE(IsSubsequence(visitor.events, t.events)) << "seed " << seed;
    const Integrity& in = (*reader)->integrity();
    if (in.complete) {
      // Only bytes the format ignores (frame flags/reserved) were hit.
      EXPECT_EQ(visitor.events.size(), t.events.size()) << seed;
    } else {
      ++damaged;
      EXPECT_FALSE(in.reason.empty());
      EXPECT_THAT(in.reason, HasSubstr("byte")) << seed;
    }
  }
  EXPECT_GT(opened, 2000);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(damaged, 1500);
}

TEST(DamageTest, DamagedChunkInTheMiddleIsSkippedAndTheRestIsRead) {
  ChunkedTrace t = MakeChunkedTrace(60, 300, 7);
  // Damage the payload of the second chunk.
  auto it = t.events_after.begin();
  size_t first_end = it->first, first_events = it->second;
  ++it;
  size_t second_end = it->first, second_events = it->second;
  std::string bytes = t.bytes;
  bytes[first_end + kFrameHeaderSize + 5] ^= 0x40;
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok());
  const Integrity& in = (*reader)->integrity();
  EXPECT_FALSE(in.complete);
  EXPECT_EQ(in.chunks_damaged, 1u);
  EXPECT_EQ(in.chunks_missing, 1u);
  EXPECT_EQ(in.bytes_skipped, second_end - first_end);
  EXPECT_EQ(in.events_missing, second_events - first_events);
  EXPECT_EQ(visitor.events.size(), t.events.size() - (second_events - first_events));
  EXPECT_THAT(in.reason, HasSubstr("bad CRC at byte " + std::to_string(first_end)));
  EXPECT_THAT(in.problems, ::testing::Contains(HasSubstr("chunks 1 to 1 missing")));
  ASSERT_TRUE(in.footer.has_value());
  // Everything after the damaged chunk is intact and in order.
  EXPECT_TRUE(visitor.events.back() == t.events.back());

  // Without resync the reader stops with DataLoss at the damage.
  auto strict = TraceReader::FromBuffer("strict.sltrace", bytes, ReaderOptions{false});
  ASSERT_TRUE(strict.ok());
  RecordingVisitor v2;
  absl::Status s = (*strict)->ReadAll(v2);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("strict.sltrace: "), HasSubstr("bad CRC at byte")));
  EXPECT_EQ(v2.events.size(), first_events);
  EXPECT_THAT((*strict)->integrity().reason, HasSubstr("bad CRC at byte"));
}

TEST(DamageTest, GarbageBetweenFramesIsSkippedWithItsOffset) {
  ChunkedTrace t = MakeChunkedTrace(60, 300, 7);
  size_t first_end = t.events_after.begin()->first;
  std::string bytes = t.bytes;
  bytes.insert(first_end, "this is not a frame at all");
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok());
  const Integrity& in = (*reader)->integrity();
  EXPECT_EQ(visitor.events.size(), t.events.size());
  EXPECT_FALSE(in.complete);
  EXPECT_EQ(in.bytes_skipped, 26u);
  EXPECT_THAT(in.reason, HasSubstr("garbage at byte " + std::to_string(first_end)));
  EXPECT_EQ(in.chunks_missing, 0u);
}

TEST(DamageTest, HostileLengthsAndIdsStayBounded) {
  // A frame claiming 4 GiB.
  std::string file = Preamble() + Frame(1, "");
  std::string huge = Frame(2, "");
  uint32_t length = 0xffffffffu;
  std::memcpy(&huge[8], &length, 4);
  file += huge;
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(file, &visitor);
  ASSERT_TRUE(reader.ok());
  EXPECT_THAT((*reader)->integrity().reason, HasSubstr("exceeds"));

  // A chunk defining string id 4e9 and a length-delimited field claiming
  // more bytes than present.
  std::string chunk = "\x1a\x0a\x08\x80\x80\x80\x80\x0f\x12\x02hi";
  file = Preamble() + Frame(1, "") + Frame(2, chunk) + Frame(2, std::string("\x08\x01\x2a\xff\xff\xff\xff\x0f", 8));
  RecordingVisitor v2;
  auto r2 = ReadAllFromBuffer(file, &v2);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ((*r2)->strings().Get(0xF0000000u), "hi");
  EXPECT_LT((*r2)->strings().size(), 2000u);  // stored sparsely, not as a 4e9 vector
  EXPECT_EQ((*r2)->integrity().chunks_damaged, 1u);
  EXPECT_THAT((*r2)->integrity().problems, ::testing::Contains(HasSubstr("undecodable chunk")));

  // Repeated fields whose decoded form dwarfs their encoding are capped: 5000
  // empty DeviceInfo entries (2 bytes each) make a damaged header, 70000
  // empty metric values a damaged chunk.
  std::string devices;
  for (int i = 0; i < 5000; ++i) devices += std::string("\x22\x00", 2);
  auto r3 = TraceReader::FromBuffer("devices.sltrace", Preamble() + Frame(1, devices));
  ASSERT_FALSE(r3.ok());
  EXPECT_THAT(std::string(r3.status().message()), HasSubstr("damaged header"));
  std::string values;
  for (int i = 0; i < 70000; ++i) values += std::string("\x22\x00", 2);
  std::string metric_event = "\x92\x01" + std::string("\xe0\xc5\x08", 3) + values;  // field 18
  std::string event = "\x2a" + std::string("\xe5\xc5\x08", 3) + metric_event;
  ASSERT_EQ(metric_event.size(), 0x222e5u);
  RecordingVisitor v4;
  auto r4 = ReadAllFromBuffer(Preamble() + Frame(1, "") + Frame(2, event), &v4);
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ((*r4)->integrity().chunks_damaged, 1u);
  EXPECT_TRUE(v4.events.empty());
}

class BadFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { RemoveTree(dir_); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  std::string OpenError(const std::string& path) {
    auto reader = TraceReader::Open(path);
    EXPECT_FALSE(reader.ok()) << path;
    if (reader.ok()) return "";
    EXPECT_THAT(std::string(reader.status().message()), HasSubstr(path + ": "));
    return std::string(reader.status().message());
  }
  std::string dir_;
};

TEST_F(BadFileTest, EachBadInputGetsAClearStatus) {
  EXPECT_THAT(OpenError(Path("missing.sltrace")), HasSubstr("No such file"));
  EXPECT_EQ(TraceReader::Open(Path("missing.sltrace")).status().code(),
            absl::StatusCode::kNotFound);

  EXPECT_THAT(OpenError(dir_), HasSubstr("is a directory"));

  WriteFile(Path("empty.sltrace"), "");
  EXPECT_THAT(OpenError(Path("empty.sltrace")), HasSubstr("empty file"));

  WriteFile(Path("text.sltrace"), "{\"traceEvents\": []}\n");
  EXPECT_THAT(OpenError(Path("text.sltrace")), HasSubstr("not a sightline trace (bad magic at byte 0)"));

  std::string garbage;
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) garbage.push_back(static_cast<char>(rng()));
  WriteFile(Path("garbage.bin"), garbage);
  EXPECT_THAT(OpenError(Path("garbage.bin")), HasSubstr("not a sightline trace"));

  std::string valid = WriteTrace(RealisticMix(10), 1 << 20);
  std::string newer = valid;
  newer[8] = 2;
  WriteFile(Path("newer.sltrace"), newer);
  EXPECT_THAT(OpenError(Path("newer.sltrace")),
              AllOf(HasSubstr("format version 2"), HasSubstr("newer than this reader supports (1)")));

  std::string damaged_header = valid;
  damaged_header[kFilePreambleSize + kFrameHeaderSize + 3] ^= 1;
  WriteFile(Path("damaged_header.sltrace"), damaged_header);
  EXPECT_THAT(OpenError(Path("damaged_header.sltrace")),
              HasSubstr("damaged header at byte 12: CRC mismatch"));

  WriteFile(Path("short_header.sltrace"), valid.substr(0, 40));
  EXPECT_THAT(OpenError(Path("short_header.sltrace")), HasSubstr("truncated header at byte 12"));

  WriteFile(Path("preamble_only.sltrace"), valid.substr(0, 10));
  EXPECT_THAT(OpenError(Path("preamble_only.sltrace")), HasSubstr("truncated at byte 10"));

  // A header frame that is not first.
  std::string chunk_first = Preamble() + Frame(2, "");
  WriteFile(Path("chunk_first.sltrace"), chunk_first);
  EXPECT_THAT(OpenError(Path("chunk_first.sltrace")), HasSubstr("expected a header"));

  // Not readable.
  if (geteuid() != 0) {
    WriteFile(Path("locked.sltrace"), valid);
    chmod(Path("locked.sltrace").c_str(), 0);
    EXPECT_THAT(OpenError(Path("locked.sltrace")), HasSubstr("cannot open"));
  }

  // The valid file opens (read with pread, lib/trace/input_window.h).
  WriteFile(Path("valid.sltrace"), valid);
  auto reader = TraceReader::Open(Path("valid.sltrace"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  RecordingVisitor visitor;
  ASSERT_TRUE((*reader)->ReadAll(visitor).ok());
  EXPECT_EQ(visitor.events.size(), 10u);
  EXPECT_TRUE((*reader)->integrity().complete);
}

TEST(DamageTest, ConcatenatedTracesAndDataAfterFooterAreReported) {
  std::string a = WriteTrace(RealisticMix(5, 1), 1 << 20);
  std::string b = WriteTrace(RealisticMix(5, 2), 1 << 20);
  std::string both = a + b.substr(kFilePreambleSize);
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(both, &visitor);
  ASSERT_TRUE(reader.ok());
  const Integrity& in = (*reader)->integrity();
  EXPECT_FALSE(in.complete);
  EXPECT_THAT(in.problems, ::testing::Contains(HasSubstr("data after the footer")));
  EXPECT_THAT(in.problems, ::testing::Contains(HasSubstr("unexpected header frame")));
}

}  // namespace
}  // namespace sightline::trace::testing
