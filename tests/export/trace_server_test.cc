// `sightline serve` core: frame reassembly from arbitrary pieces, 8 concurrent
// clients of which one dies mid-frame, strangers refused, files 0600 and
// readable up to the last complete frame.
#include "lib/export/serve/trace_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/export/serve/frame_assembler.h"
#include "lib/trace/reader.h"
#include "tests/export/synthetic_trace.h"

namespace sightline::exporter {
namespace {

std::string MakeTempDir() {
  std::string tmpl = ::testing::TempDir() + "/serve-XXXXXX";
  char* d = mkdtemp(tmpl.data());
  EXPECT_NE(d, nullptr);
  return tmpl;
}

std::string SyntheticBytes(const testing::SyntheticOptions& o) {
  std::string bytes, error;
  EXPECT_TRUE(testing::WriteSyntheticTrace(trace::OpenMemorySink(&bytes), o, &error)) << error;
  return bytes;
}

class CountingVisitor : public trace::EventVisitor {
 public:
  uint64_t kernels = 0;
  void OnKernel(const KernelEvent&) override { ++kernels; }
};

TEST(FrameAssemblerTest, ReassemblesOneByteAtATime) {
  testing::SyntheticOptions o;
  o.steps = 3;
  std::string bytes = SyntheticBytes(o);
  FrameAssembler a;
  std::string rebuilt;
  int headers = 0, chunks = 0, footers = 0;
  for (char c : bytes) {
    ASSERT_TRUE(a.Feed(&c, 1, [&](const Frame& f) {
      if (rebuilt.empty()) rebuilt.assign(a.preamble());
      rebuilt.append(f.bytes.data(), f.bytes.size());
      headers += f.type == trace::FrameType::kHeader;
      chunks += f.type == trace::FrameType::kChunk;
      footers += f.type == trace::FrameType::kFooter;
    })) << a.error();
  }
  EXPECT_EQ(rebuilt, bytes);
  EXPECT_EQ(headers, 1);
  EXPECT_EQ(footers, 1);
  EXPECT_GE(chunks, 1);
  EXPECT_EQ(a.partial_bytes(), 0u);
}

TEST(FrameAssemblerTest, RejectsStrangersCorruptionAndOversizedFrames) {
  FrameAssembler http;
  EXPECT_FALSE(http.Feed("GET / HTTP/1.1\r\n", 16, [](const Frame&) {}));
  EXPECT_NE(http.error().find("bad magic"), std::string::npos);

  testing::SyntheticOptions o;
  o.steps = 2;
  std::string bytes = SyntheticBytes(o);
  bytes[bytes.size() / 2] ^= 0x55;
  FrameAssembler corrupt;
  EXPECT_FALSE(corrupt.Feed(bytes.data(), bytes.size(), [](const Frame&) {}));
  EXPECT_FALSE(corrupt.error().empty());

  std::string huge(trace::kFileMagic, 8);
  huge += std::string("\x01\x00\x00\x00", 4);
  huge += std::string("SLFR\x02\x00\x00\x00\xff\xff\xff\x7f\x00\x00\x00\x00", 16);
  FrameAssembler oversized;
  EXPECT_FALSE(oversized.Feed(huge.data(), huge.size(), [](const Frame&) {}));
  EXPECT_NE(oversized.error().find("exceeds"), std::string::npos);
}

int ConnectTo(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(TraceServerTest, EightClientsOneDiesMidFrame) {
  std::string dir = MakeTempDir();
  ServeOptions options;
  options.socket_path = dir + "/s.sock";
  options.out_dir = dir;
  options.status_interval_s = 0.05;
  options.max_connections = 9;  // 8 trace clients + 1 stranger
  FILE* log = tmpfile();
  options.log = log;
  auto server = TraceServer::Listen(options);
  ASSERT_TRUE(server.ok()) << server.status();
  struct stat st;
  ASSERT_EQ(stat(options.socket_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  std::thread serving([&] { ASSERT_TRUE((*server)->Run().ok()); });
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      testing::SyntheticOptions o;
      o.pid = 1000 + i;
      o.rank = i;
      o.steps = 30 + i;
      o.chunk_bytes = 8192;
      if (i != 3) {
        std::string error;
        EXPECT_TRUE(testing::WriteSyntheticTraceTo("unix:" + options.socket_path, o, &error))
            << error;
        return;
      }
      // Client 3 "dies" after sending 60% of its stream: the cut falls inside
      // a frame, the connection closes without a footer.
      std::string bytes = SyntheticBytes(o);
      int fd = ConnectTo(options.socket_path);
      ASSERT_GE(fd, 0);
      size_t cut = bytes.size() * 6 / 10;
      for (size_t off = 0; off < cut;) {
        ssize_t n = write(fd, bytes.data() + off, std::min<size_t>(cut - off, 3000));
        ASSERT_GT(n, 0);
        off += static_cast<size_t>(n);
        usleep(200);
      }
      close(fd);
    });
  }
  // A stranger speaking another protocol is dropped without creating a file.
  int stranger = ConnectTo(options.socket_path);
  ASSERT_GE(stranger, 0);
  ASSERT_EQ(write(stranger, "hello there!", 12), 12);
  for (auto& c : clients) c.join();
  usleep(100000);
  close(stranger);
  serving.join();

  const auto& results = (*server)->results();
  ASSERT_EQ(results.size(), 9u);
  std::map<uint32_t, ConnectionResult> by_pid;
  int refused = 0;
  for (const ConnectionResult& r : results) {
    if (r.refused) {
      ++refused;
      EXPECT_TRUE(r.file.empty());
      continue;
    }
    by_pid[r.pid] = r;
  }
  EXPECT_EQ(refused, 1);
  ASSERT_EQ(by_pid.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const ConnectionResult& r = by_pid[1000 + i];
    ASSERT_FALSE(r.file.empty());
    EXPECT_NE(r.file.find("synthetic-host-pid" + std::to_string(1000 + i) + "-rank" +
                          std::to_string(i)),
              std::string::npos);
    ASSERT_EQ(stat(r.file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto reader = trace::TraceReader::Open(r.file);
    ASSERT_TRUE(reader.ok()) << reader.status();
    CountingVisitor v;
    ASSERT_TRUE((*reader)->ReadAll(v).ok());
    testing::SyntheticOptions o;
    o.steps = 30 + i;
    o.kernels_per_step = 20;
    if (i == 3) {
      EXPECT_FALSE(r.footer);
      EXPECT_GT(r.partial_bytes, 0u);
      EXPECT_FALSE((*reader)->integrity().complete);
      EXPECT_EQ((*reader)->integrity().chunks_damaged, 0u) << "only whole frames written";
      EXPECT_GT(v.kernels, 0u);
      EXPECT_LT(v.kernels, testing::ExpectedCounts(o).kernels);
    } else {
      EXPECT_TRUE(r.footer);
      EXPECT_TRUE((*reader)->integrity().complete) << (*reader)->integrity().reason;
      EXPECT_EQ(v.kernels, testing::ExpectedCounts(o).kernels);
    }
  }
  // The socket is removed on exit; the status log mentions events/s.
  EXPECT_NE(access(options.socket_path.c_str(), F_OK), 0);
  rewind(log);
  std::string text(1 << 16, '\0');
  text.resize(fread(text.data(), 1, text.size(), log));
  fclose(log);
  EXPECT_NE(text.find("disconnected mid-frame"), std::string::npos) << text;
  EXPECT_NE(text.find("not a sightline trace stream"), std::string::npos) << text;
}

TEST(TraceServerTest, RefusesSecondServerAndNonSocketPath) {
  std::string dir = MakeTempDir();
  ServeOptions options;
  options.socket_path = dir + "/s.sock";
  options.out_dir = dir;
  auto first = TraceServer::Listen(options);
  ASSERT_TRUE(first.ok());
  auto second = TraceServer::Listen(options);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("already listening"), absl::string_view::npos);

  options.socket_path = dir + "/plainfile";
  FILE* f = fopen(options.socket_path.c_str(), "w");
  fclose(f);
  auto third = TraceServer::Listen(options);
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.status().message().find("not a socket"), absl::string_view::npos);

  options.socket_path = dir + "/t.sock";
  options.out_dir = dir + "/missing";
  auto fourth = TraceServer::Listen(options);
  ASSERT_FALSE(fourth.ok());
  EXPECT_NE(fourth.status().message().find("missing"), absl::string_view::npos);
}

}  // namespace
}  // namespace sightline::exporter
