// The run history (SQLite) and trend marking (lib/history).
#include "lib/history/history_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "lib/history/trend.h"

namespace sightline::history {
namespace {

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sl-history-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    db_ = dir_ + "/data/history.db";
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_, db_;
};

RunRecord MakeRun(double p50_ms, const std::string& commit) {
  RunRecord r;
  r.source = commit + ".sltrace";
  r.step_count = 100;
  r.step_p50_ns = p50_ms * 1e6;
  r.step_p99_ns = p50_ms * 1.2e6;
  r.step_mean_ns = p50_ms * 1e6;
  r.gpu_utilization_pct = 80;
  r.top_findings = {"sync_api: 12 synchronizing calls", "gpu_idle: 20% idle"};
  r.labels = {{"commit", commit}, {"branch", "main"}};
  return r;
}

TEST_F(HistoryTest, AddListFilterAndFilePermissions) {
  auto store = HistoryStore::Open(db_);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Add(MakeRun(10, "a")).ok());
  RunRecord other = MakeRun(20, "b");
  other.labels["branch"] = "dev";
  other.memory_peak_bytes = -1;
  ASSERT_TRUE((*store)->Add(other).ok());
  auto all = (*store)->List({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].labels.at("commit"), "a");
  EXPECT_DOUBLE_EQ((*all)[0].step_p50_ns, 10e6);
  EXPECT_EQ((*all)[0].top_findings.size(), 2u);
  EXPECT_EQ((*all)[1].memory_peak_bytes, -1) << "unknown stays unknown";
  auto dev = (*store)->List({{"branch", "dev"}});
  ASSERT_TRUE(dev.ok());
  ASSERT_EQ(dev->size(), 1u);
  EXPECT_EQ((*dev)[0].labels.at("commit"), "b");
  struct stat st;
  ASSERT_EQ(stat(db_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir_ + "/data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(HistoryTest, ConcurrentWritersLoseNothing) {
  ASSERT_TRUE(HistoryStore::Open(db_).ok());
  constexpr int kProcs = 6, kRuns = 25;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      auto store = HistoryStore::Open(db_);
      if (!store.ok()) _exit(10);
      for (int i = 0; i < kRuns; ++i) {
        if (!(*store)->Add(MakeRun(10 + i, "p" + std::to_string(p) + "-" + std::to_string(i))).ok()) {
          _exit(11);
        }
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  }
  auto store = HistoryStore::Open(db_);
  ASSERT_TRUE(store.ok());
  auto all = (*store)->List({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), static_cast<size_t>(kProcs * kRuns));
  for (const RunRecord& r : *all) EXPECT_EQ(r.labels.size(), 2u);
}

TEST_F(HistoryTest, CorruptDatabaseIsAClearErrorAndLeftUntouched) {
  mkdir((dir_ + "/data").c_str(), 0700);
  std::string junk(8192, 'x');
  std::ofstream(db_) << "this is not sqlite" << junk;
  auto store = HistoryStore::Open(db_);
  ASSERT_FALSE(store.ok());
  std::string m(store.status().message());
  EXPECT_NE(m.find(db_), std::string::npos) << m;
  EXPECT_NE(m.find("not a SQLite database or corrupt"), std::string::npos) << m;
  struct stat st;
  ASSERT_EQ(stat(db_.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(18 + junk.size())) << "nothing overwritten";
}

TEST_F(HistoryTest, DamagedPagesAreReportedOnRead) {
  {
    auto store = HistoryStore::Open(db_);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 200; ++i) ASSERT_TRUE((*store)->Add(MakeRun(10, "c" + std::to_string(i))).ok());
  }
  // Checkpoint the WAL into the main file, then smash pages after the header.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;", nullptr,
                 nullptr, nullptr);
    sqlite3_close(db);
  }
  int fd = open(db_.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  std::string garbage(4096 * 6, '\xA5');
  ASSERT_EQ(pwrite(fd, garbage.data(), garbage.size(), 4096), static_cast<ssize_t>(garbage.size()));
  close(fd);
  auto store = HistoryStore::Open(db_);
  absl::Status s = store.status();
  if (store.ok()) s = (*store)->List({}).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find(db_), std::string::npos) << s;
}

TEST_F(HistoryTest, LockedDatabaseIsAClearErrorAfterTheWait) {
  ASSERT_TRUE(HistoryStore::Open(db_).ok());
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE;", nullptr, nullptr, nullptr), SQLITE_OK);
  auto store = HistoryStore::Open(db_, /*busy_timeout_ms=*/300);
  absl::Status s = store.status();
  if (store.ok()) s = (*store)->Add(MakeRun(10, "x")).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("locked by another process"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find(db_), std::string::npos);
  sqlite3_exec(holder, "ROLLBACK;", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  auto again = HistoryStore::Open(db_);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->Add(MakeRun(10, "y")).ok()) << "works once the lock is gone";
}

TEST_F(HistoryTest, SymlinkAndNonRegularFilesAreRefused) {
  mkdir((dir_ + "/data").c_str(), 0700);
  std::string target = dir_ + "/elsewhere.db";
  ASSERT_EQ(symlink(target.c_str(), db_.c_str()), 0);
  auto store = HistoryStore::Open(db_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(std::string(store.status().message()).find("symbolic link"), std::string::npos);
  struct stat st;
  EXPECT_NE(stat(target.c_str(), &st), 0) << "nothing created through the link";
  auto dir_store = HistoryStore::Open(dir_ + "/data");
  ASSERT_FALSE(dir_store.ok());
  EXPECT_NE(std::string(dir_store.status().message()).find("not a regular file"),
            std::string::npos);
}

TEST(ParseLabel, KeyValue) {
  std::string k, v;
  EXPECT_TRUE(ParseLabel("commit=abc=1", &k, &v).ok());
  EXPECT_EQ(k, "commit");
  EXPECT_EQ(v, "abc=1");
  EXPECT_FALSE(ParseLabel("=x", &k, &v).ok());
  EXPECT_FALSE(ParseLabel("novalue", &k, &v).ok());
  EXPECT_FALSE(ParseLabel("a b=c", &k, &v).ok());
}

TEST(ParsePercent, FiniteBoundedNoNan) {
  EXPECT_EQ(*ParsePercent("--x", "10"), 10);
  EXPECT_EQ(*ParsePercent("--x", "2.5"), 2.5);
  for (const char* bad : {"nan", "NaN", "inf", "-5", "0", "", "10%x", "1e9", "abc"}) {
    auto r = ParsePercent("--fail-on-regression", bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(std::string(r.status().message()).find("--fail-on-regression"), std::string::npos);
    }
  }
}

std::vector<size_t> Regressions(const std::vector<PointMark>& m) {
  std::vector<size_t> out;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].regression) out.push_back(i);
  }
  return out;
}

TEST(MarkSeries, OneRegressedRunOfFiveIsFlagged) {
  TrendOptions o;
  // In the middle (a transient regression) ...
  EXPECT_EQ(Regressions(MarkSeries({100, 101, 130, 99, 100}, true, o)), std::vector<size_t>{2});
  // ... at the end (the newest run regressed) ...
  EXPECT_EQ(Regressions(MarkSeries({100, 101, 99, 100, 130}, true, o)), std::vector<size_t>{4});
  // ... and lower-is-worse quantities (utilization).
  EXPECT_EQ(Regressions(MarkSeries({80, 81, 79, 55, 80}, false, o)), std::vector<size_t>{3});
  // Noise within the threshold is not a regression.
  EXPECT_TRUE(Regressions(MarkSeries({100, 104, 97, 103, 99}, true, o)).empty());
  // A level shift is one change point at its first run.
  auto m = MarkSeries({100, 101, 99, 100, 125, 126, 124, 125}, true, o);
  EXPECT_EQ(Regressions(m), std::vector<size_t>{4});
  EXPECT_TRUE(m[4].change_point);
  EXPECT_NEAR(m[4].change_pct, 25, 1);
  // An improvement is marked as such.
  auto imp = MarkSeries({100, 101, 99, 80, 81, 79}, true, o);
  EXPECT_TRUE(Regressions(imp).empty());
  EXPECT_TRUE(imp[3].improvement);
  // Missing values are skipped.
  EXPECT_EQ(Regressions(MarkSeries({100, NAN, 101, 99, 100, 130}, true, o)),
            std::vector<size_t>{5});
}

TEST(CheckNewest, AgainstTheMedianOfEarlierNonOutlierRuns) {
  TrendOptions o;
  std::vector<RunRecord> runs;
  for (double v : {100.0, 101.0, 160.0, 99.0, 100.0, 120.0}) runs.push_back(MakeRun(v, "x"));
  Trend t = BuildTrend(runs, o);
  NewestCheck c = CheckNewest(t.series[0], o);
  ASSERT_TRUE(c.available);
  EXPECT_NEAR(c.baseline, 100, 1e-9) << "the 160 outlier is not in the baseline";
  EXPECT_NEAR(c.worse_pct, 20, 1e-9);
  std::string text = RenderTrendText(t);
  EXPECT_NE(text.find("REGRESSION step_p50_ms"), std::string::npos) << text;
  std::string html = RenderTrendHtml(t, "t <x>");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("class=reg"), std::string::npos);
  EXPECT_NE(html.find("t &lt;x&gt;"), std::string::npos);
}

}  // namespace
}  // namespace sightline::history
