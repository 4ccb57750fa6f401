// lib/collect/ab_log.h: the in-process A/B switch log (benchmarks only) is
// created 0600, truncated, never through a symlink or onto a non-regular
// file, and holds one "ab T0 T1 S" line per switch, as
// bench/overhead/ab_split.py reads it.
#include "lib/collect/ab_log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace sightline::collect {
namespace {

class AbLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ab_log_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    unsetenv("SIGHTLINE_AB_LOG");
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string dir_;
};

TEST_F(AbLogTest, UnsetMeansNoLog) {
  unsetenv("SIGHTLINE_AB_LOG");
  EXPECT_EQ(OpenAbLog(), -1);
  WriteAbSwitch(-1, 1, 2, true);  // no log: nothing happens
}

TEST_F(AbLogTest, WritesOneLinePerSwitchIntoATruncatedPrivateFile) {
  const std::string path = dir_ + "/switches.ab";
  { std::ofstream(path) << "stale content from an earlier run\n"; }
  setenv("SIGHTLINE_AB_LOG", path.c_str(), 1);
  const int fd = OpenAbLog();
  ASSERT_GE(fd, 0);
  WriteAbSwitch(fd, 100, 250, false);
  WriteAbSwitch(fd, 18446744073709551000ull, 18446744073709551615ull, true);
  close(fd);
  EXPECT_EQ(Read(path), "ab 100 250 0\nab 18446744073709551000 18446744073709551615 1\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  // Created by the test's ofstream with the umask; a fresh file gets 0600:
  const std::string fresh = dir_ + "/fresh.ab";
  setenv("SIGHTLINE_AB_LOG", fresh.c_str(), 1);
  const int fd2 = OpenAbLog();
  ASSERT_GE(fd2, 0);
  close(fd2);
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(AbLogTest, RefusesASymlinkAndANonRegularFile) {
  const std::string target = dir_ + "/target";
  { std::ofstream(target) << "keep me\n"; }
  const std::string link = dir_ + "/link.ab";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  setenv("SIGHTLINE_AB_LOG", link.c_str(), 1);
  EXPECT_EQ(OpenAbLog(), -1);
  EXPECT_EQ(Read(target), "keep me\n");
  const std::string fifo = dir_ + "/fifo.ab";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  setenv("SIGHTLINE_AB_LOG", fifo.c_str(), 1);
  EXPECT_EQ(OpenAbLog(), -1);  // O_NONBLOCK: no reader, no hang
  setenv("SIGHTLINE_AB_LOG", dir_.c_str(), 1);
  EXPECT_EQ(OpenAbLog(), -1);  // a directory
}

}  // namespace
}  // namespace sightline::collect
