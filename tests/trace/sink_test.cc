// Sinks: file creation mode and refusal rules, unix socket, memory; output
// path patterns and rank detection.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/trace/sink.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace::testing {
namespace {

using ::testing::HasSubstr;

class SinkTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { RemoveTree(dir_); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  std::string dir_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(lstat(path.c_str(), &st), 0);
  return st.st_mode & 07777;
}

TEST_F(SinkTest, FileIsCreated0600RegardlessOfUmask) {
  for (mode_t mask : {0000, 0022, 0077, 0277}) {
    mode_t old = umask(mask);
    std::string path = Path("trace_" + std::to_string(mask) + ".sltrace");
    std::string error;
    auto sink = OpenFileSink(path, {}, &error);
    umask(old);
    ASSERT_NE(sink, nullptr) << error;
    EXPECT_EQ(ModeOf(path), 0600u) << "umask " << mask;
    EXPECT_TRUE(sink->Write("abc", 3));
    EXPECT_TRUE(sink->Sync());
    EXPECT_TRUE(sink->Close());
    EXPECT_TRUE(sink->Close());  // idempotent
    EXPECT_FALSE(sink->Write("x", 1));
    EXPECT_EQ(ReadFile(path), "abc");
    EXPECT_EQ(sink->Describe(), "file " + path);
  }
}

TEST_F(SinkTest, SymlinkAtThePathIsRefusedAndItsTargetUntouched) {
  std::string target = Path("victim");
  WriteFile(target, "precious");
  chmod(target.c_str(), 0644);
  std::string link = Path("out.sltrace");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  for (bool overwrite : {false, true}) {
    std::string error;
    FileSinkOptions options;
    options.overwrite = overwrite;
    EXPECT_EQ(OpenFileSink(link, options, &error), nullptr);
    EXPECT_THAT(error, HasSubstr("symbolic link"));
    EXPECT_THAT(error, HasSubstr(link));
  }
  EXPECT_EQ(ReadFile(target), "precious");
  EXPECT_EQ(ModeOf(target), 0644u);
  // A dangling symlink is refused too (O_EXCL|O_NOFOLLOW never creates its target).
  std::string dangling = Path("dangling.sltrace");
  ASSERT_EQ(symlink(Path("nowhere").c_str(), dangling.c_str()), 0);
  std::string error;
  EXPECT_EQ(OpenFileSink(dangling, {}, &error), nullptr);
  EXPECT_NE(access(Path("nowhere").c_str(), F_OK), 0);
}

TEST_F(SinkTest, ExistingFileRefusedUnlessOverwrite) {
  std::string path = Path("exists.sltrace");
  WriteFile(path, "old contents");
  std::string error;
  EXPECT_EQ(OpenFileSink(path, {}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("already exists"));
  EXPECT_EQ(ReadFile(path), "old contents");

  FileSinkOptions overwrite;
  overwrite.overwrite = true;
  auto sink = OpenFileSink(path, overwrite, &error);
  ASSERT_NE(sink, nullptr) << error;
  EXPECT_TRUE(sink->Write("new", 3));
  EXPECT_TRUE(sink->Close());
  EXPECT_EQ(ReadFile(path), "new");
  EXPECT_EQ(ModeOf(path), 0600u);

  // Directories and missing parents give clear errors.
  EXPECT_EQ(OpenFileSink(dir_, overwrite, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("not a regular file"));
  EXPECT_EQ(OpenFileSink(Path("no/such/dir/x.sltrace"), {}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("cannot create"));
  EXPECT_EQ(OpenFileSink("", {}, &error), nullptr);
}

// A trace a live writer holds is never replaced, even with `overwrite`: the
// second process of a run (a torch.compile worker, a DataLoader worker) is
// told the name is in use and writes its own file. Once the writer (and any
// forked copy of its descriptor) is gone, the file is an earlier run's and
// may be replaced.
TEST_F(SinkTest, LockedFileOfALiveWriterIsNeverReplaced) {
  std::string path = Path("run.sltrace");
  FileSinkOptions options;
  options.overwrite = true;
  options.lock = true;
  std::string error;
  bool in_use = true;
  auto first = OpenFileSink(path, options, &error, &in_use);
  ASSERT_NE(first, nullptr) << error;
  EXPECT_FALSE(in_use);
  EXPECT_TRUE(first->Write("first", 5));
  EXPECT_TRUE(FileLockedByWriter(path));

  auto second = OpenFileSink(path, options, &error, &in_use);
  EXPECT_EQ(second, nullptr);
  EXPECT_TRUE(in_use);
  EXPECT_THAT(error, HasSubstr("being written by another process"));
  EXPECT_EQ(ReadFile(path), "first");

  // A forked child inherits the descriptor: the lock holds while it lives.
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char b;
    close(go[1]);
    (void)!read(go[0], &b, 1);  // until the parent closed its copy
    _exit(0);
  }
  close(go[0]);
  EXPECT_TRUE(first->Close());
  EXPECT_TRUE(FileLockedByWriter(path));  // the child's copy
  close(go[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_FALSE(FileLockedByWriter(path));

  auto third = OpenFileSink(path, options, &error, &in_use);
  ASSERT_NE(third, nullptr) << error;
  EXPECT_FALSE(in_use);
  EXPECT_TRUE(third->Write("third", 5));
  EXPECT_TRUE(third->Close());
  EXPECT_EQ(ReadFile(path), "third");
  EXPECT_FALSE(FileLockedByWriter(Path("missing.sltrace")));
  EXPECT_FALSE(FileLockedByWriter(dir_));
}

TEST_F(SinkTest, WholeTraceThroughAFileSinkReadsBack) {
  std::string path = Path("whole.sltrace");
  std::string error;
  auto sink = OpenSink("file:" + path, {}, &error);
  ASSERT_NE(sink, nullptr) << error;
  std::vector<AnyEvent> events = RealisticMix(5000);
  WriterOptions options;
  options.chunk_bytes = 8192;
  TraceWriter writer(std::move(sink), options);
  ASSERT_TRUE(writer.Begin(SampleHeader()));
  for (const AnyEvent& e : events) AddTo(writer, e);
  ASSERT_TRUE(writer.Finish("exit"));
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  RecordingVisitor visitor;
  ASSERT_TRUE((*reader)->ReadAll(visitor).ok());
  EXPECT_EQ(visitor.events.size(), events.size());
  EXPECT_TRUE((*reader)->integrity().complete);
  EXPECT_EQ((*reader)->integrity().file_bytes, writer.bytes_written());
}

TEST_F(SinkTest, UnixSocketSinkStreamsTheSameFraming) {
  std::string socket_path = Path("serve.sock");
  int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  std::string received;
  std::thread server([&] {
    int conn = accept(listener, nullptr, nullptr);
    char buf[65536];
    ssize_t n;
    while ((n = read(conn, buf, sizeof(buf))) > 0) received.append(buf, static_cast<size_t>(n));
    close(conn);
  });
  std::string error;
  auto sink = OpenSink("unix:" + socket_path, {}, &error);
  ASSERT_NE(sink, nullptr) << error;
  EXPECT_EQ(sink->Describe(), "unix socket " + socket_path);
  std::vector<AnyEvent> events = RealisticMix(3000);
  {
    WriterOptions options;
    options.chunk_bytes = 4096;
    TraceWriter writer(std::move(sink), options);
    ASSERT_TRUE(writer.Begin(SampleHeader()));
    for (const AnyEvent& e : events) AddTo(writer, e);
    ASSERT_TRUE(writer.Finish("exit"));
  }
  server.join();
  close(listener);
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(received, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(visitor.events.size(), events.size());
  EXPECT_TRUE((*reader)->integrity().complete);

  // Nobody listening: a clear error, no SIGPIPE later.
  EXPECT_EQ(OpenUnixSocketSink(Path("nobody.sock"), &error), nullptr);
  EXPECT_THAT(error, HasSubstr("cannot connect"));
  EXPECT_EQ(OpenUnixSocketSink(std::string(200, 'x'), &error), nullptr);
  EXPECT_THAT(error, HasSubstr("longer than"));
}

TEST_F(SinkTest, PeerClosingTheSocketIsAWriteErrorNotASignal) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  std::string socket_path = Path("gone.sock");
  int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  std::string error;
  auto sink = OpenUnixSocketSink(socket_path, &error);
  ASSERT_NE(sink, nullptr) << error;
  int conn = accept(listener, nullptr, nullptr);
  close(conn);
  close(listener);
  std::string big(1 << 20, 'x');
  bool ok = true;
  for (int i = 0; i < 8 && ok; ++i) ok = sink->Write(big.data(), big.size());
  EXPECT_FALSE(ok);  // EPIPE reported, process still alive
  EXPECT_THAT(sink->last_error(), HasSubstr("write failed"));
  close(pair[0]);
  close(pair[1]);
}

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeGetenv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

TEST(PatternTest, ExpandsPidHostRankEnvAndPercent) {
  std::map<std::string, std::string> env = {{"SLURM_JOB_ID", "998877"}, {"EMPTY", ""}};
  g_env = &env;
  PatternContext context;
  context.pid = 4242;
  context.host = "node-7";
  context.rank = 3;
  context.getenv_fn = FakeGetenv;
  EXPECT_EQ(ExpandOutputPattern("sightline-%p.sltrace", context), "sightline-4242.sltrace");
  EXPECT_EQ(ExpandOutputPattern("/out/%h/r%r-%p.sltrace", context), "/out/node-7/r3-4242.sltrace");
  EXPECT_EQ(ExpandOutputPattern("job%q{SLURM_JOB_ID}_%q{UNSET}_%q{EMPTY}.sltrace", context),
            "job998877__.sltrace");
  EXPECT_EQ(ExpandOutputPattern("100%%-%p", context), "100%-4242");
  // Unknown and malformed sequences are kept as they are.
  EXPECT_EQ(ExpandOutputPattern("%x%q{OPEN%q%", context), "%x%q{OPEN%q%");
  EXPECT_EQ(ExpandOutputPattern("", context), "");
  context.rank = -1;
  EXPECT_EQ(ExpandOutputPattern("r%r", context), "r0");
  // Host and pid default to the real ones.
  PatternContext real;
  EXPECT_EQ(ExpandOutputPattern("%p", real), std::to_string(getpid()));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(ExpandOutputPattern("%h", real), host);
}

TEST(PatternTest, RankFromTheUsualLauncherVariables) {
  std::map<std::string, std::string> env;
  g_env = &env;
  EXPECT_EQ(RankFromEnvironment(FakeGetenv), -1);
  env["PMI_RANK"] = "5";
  EXPECT_EQ(RankFromEnvironment(FakeGetenv), 5);
  env["SLURM_PROCID"] = "4";
  EXPECT_EQ(RankFromEnvironment(FakeGetenv), 4);
  env["OMPI_COMM_WORLD_RANK"] = "2";
  EXPECT_EQ(RankFromEnvironment(FakeGetenv), 2);
  env["RANK"] = "7";
  EXPECT_EQ(RankFromEnvironment(FakeGetenv), 7);
  env["RANK"] = "not-a-number";  // ignored, next variable wins
  EXPECT_EQ(RankFromEnvironment(FakeGetenv), 2);
}

TEST(MemorySinkTest, AppendsAndRefusesAfterClose) {
  std::string out;
  auto sink = OpenMemorySink(&out);
  EXPECT_TRUE(sink->Write("ab", 2));
  EXPECT_TRUE(sink->Write("c", 1));
  EXPECT_EQ(out, "abc");
  EXPECT_TRUE(sink->Close());
  EXPECT_FALSE(sink->Write("d", 1));
  EXPECT_EQ(out, "abc");
}

}  // namespace
}  // namespace sightline::trace::testing
