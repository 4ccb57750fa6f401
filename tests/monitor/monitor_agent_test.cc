// The monitor agent end to end on the CPU: steps in, endpoint scraped over
// HTTP, anomaly → capture of the next K steps through a fake CaptureControl,
// on-demand capture, NVML from a fake library or absent, unix socket rules.
#include "lib/monitor/monitor_agent.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <fstream>
#include <sstream>
#include <thread>

#include "lib/monitor/metrics_endpoint.h"

namespace sightline::monitor {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/sl-monitor-test-XXXXXX";
  return mkdtemp(tmpl);
}

// A private events file (what `sightline monitor` reads), removed at the end.
struct EventsFile {
  std::string dir = TempDir();
  std::string path = dir + "/events";
  EventsFile() { close(open(path.c_str(), O_CREAT | O_WRONLY, 0600)); }
  ~EventsFile() {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
  std::string Read() const {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
};

// GET `path` from "HOST:PORT" or "unix:PATH"; returns the whole response.
std::string Get(const std::string& address, const std::string& path,
                const std::string& accept = "") {
  int fd = -1;
  if (address.rfind("unix:", 0) == 0) {
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::string p = address.substr(5);
    std::memcpy(a.sun_path, p.c_str(), p.size());
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd);
      return "";
    }
  } else {
    size_t colon = address.rfind(':');
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::atoi(address.substr(colon + 1).c_str())));
    inet_pton(AF_INET, address.substr(0, colon).c_str(), &a.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd);
      return "";
    }
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n" +
                    (accept.empty() ? "" : "Accept: " + accept + "\r\n") + "\r\n";
  EXPECT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

template <typename Pred>
bool WaitFor(Pred pred, int ms = 5000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

MonitorConfig TestConfig() {
  MonitorConfig c;
  c.enabled = true;
  c.listen = "127.0.0.1:0";
  c.job = "unit";
  c.interval_ms = 50;
  c.device_grace_ms = 0;  // no steps in these tests: device detectors judge at once
  c.capture_steps = 5;
  c.baseline_capture = false;  // its own test below
  c.handle_sigusr2 = false;
  c.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  c.quiet = true;
  return c;
}

struct FakeCapture {
  std::atomic<int> starts{0}, stops{0};
  CaptureControl Control() {
    CaptureControl c;
    c.start = [this]() -> uint32_t { return static_cast<uint32_t>(++starts); };
    c.stop_and_flush = [this] { ++stops; return true; };
    c.trace_path = "/tmp/fake.sltrace";
    return c;
  }
};

// Steps of `seconds` each, fed with synthetic timestamps.
void FeedSteps(MonitorAgent* a, uint64_t* t, int n, double seconds) {
  for (int i = 0; i < n; ++i) {
    *t += static_cast<uint64_t>(seconds * 1e9);
    a->OnStepBegin(*t);
  }
}

TEST(MonitorAgent, ServesMetricsAndCapturesTheNextStepsAfterASlowdown) {
  EventsFile events;
  MonitorConfig c = TestConfig();
  c.events_path = events.path;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  ASSERT_TRUE(WaitFor([&] { return !agent->bound_address().empty(); }));
  std::string addr = agent->bound_address();
  EXPECT_EQ(addr.rfind("127.0.0.1:", 0), 0u) << addr;

  uint64_t t = 1000000000;
  agent->OnStepBegin(t);
  FeedSteps(agent.get(), &t, 40, 0.020);
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 40; }));
  std::string r = Get(addr, "/metrics");
  EXPECT_NE(r.find("HTTP/1.1 200 OK"), std::string::npos);
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(r.find("sightline_step_duration_seconds_count{job=\"unit\",rank=\"-1\"} 40\n"),
            std::string::npos) << r;
  EXPECT_NE(r.find("sightline_nvml_up{job=\"unit\",rank=\"-1\"} 0\n"), std::string::npos);
  EXPECT_EQ(fake.starts.load(), 0);

  // +100 %: an anomaly within the group of 8 (a baseline of 32 steps bounds
  // the chance of a slow step at 8.9 %, so it takes 7 of 8).
  FeedSteps(agent.get(), &t, 8, 0.040);
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
  EXPECT_EQ(fake.stops.load(), 0) << "the capture records the next steps";
  FeedSteps(agent.get(), &t, 5, 0.040);
  ASSERT_TRUE(WaitFor([&] { return fake.stops.load() == 1; }));
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().captures == 1; }));
  r = Get(addr, "/metrics");
  EXPECT_NE(r.find("sightline_anomalies_total{job=\"unit\",rank=\"-1\",kind=\"step_time\"} 1\n"),
            std::string::npos) << r;
  EXPECT_NE(r.find("sightline_captures_total{job=\"unit\",rank=\"-1\"} 1\n"), std::string::npos);
  // OpenMetrics when asked.
  r = Get(addr, "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
  EXPECT_NE(r.find("application/openmetrics-text; version=1.0.0"), std::string::npos);
  EXPECT_NE(r.find("# EOF\n"), std::string::npos);
  // Anything else is 404.
  EXPECT_NE(Get(addr, "/admin").find("404 Not Found"), std::string::npos);

  // The events file says what was captured, for `sightline monitor`.
  ASSERT_TRUE(WaitFor([&] { return events.Read().find("capture\t") != std::string::npos; }));
  const std::string all = events.Read();
  EXPECT_NE(all.find("anomaly\t" + std::to_string(getpid()) + "\tstep_time\t"),
            std::string::npos) << all;
  // (The steps field may read 5 or more: steps after the firing one can land
  // in the capture's first poll.)
  const size_t at = all.find("capture\t" + std::to_string(getpid()) + "\t1\tstep_time\t");
  ASSERT_NE(at, std::string::npos) << all;
  // Its last field: the window the collector opened for it (the fake's 1st).
  const std::string line = all.substr(at, all.find('\n', at) - at);
  EXPECT_EQ(line.substr(line.rfind('\t')), "\t1") << line;

  // The new level is the baseline: no second anomaly while it lasts.
  FeedSteps(agent.get(), &t, 60, 0.040);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(fake.starts.load(), 1);
  agent.reset();
}

// The steady state is captured once the detector's baseline is full (64 +
// 8 judged steps); it holds back neither the first anomaly's capture (no
// cooldown after it) nor counts in max_captures.
TEST(MonitorAgent, BaselineCaptureOnceThenAnomalyCapturesAsUsual) {
  EventsFile events;
  MonitorConfig c = TestConfig();
  c.events_path = events.path;
  c.baseline_capture = true;
  c.max_captures = 1;
  c.cooldown_s = 3600;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  uint64_t t = 1000000000;
  agent->OnStepBegin(t);
  FeedSteps(agent.get(), &t, 60, 0.020);
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 60; }));
  EXPECT_EQ(fake.starts.load(), 0) << "not before the baseline is full";
  FeedSteps(agent.get(), &t, 12, 0.020);
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
  FeedSteps(agent.get(), &t, 5, 0.020);  // the baseline capture's steps
  ASSERT_TRUE(WaitFor([&] { return fake.stops.load() == 1; }));
  FeedSteps(agent.get(), &t, 100, 0.020);  // settle, then a full detector window again
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(fake.starts.load(), 1) << "one baseline only";
  FeedSteps(agent.get(), &t, 8, 0.040);
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 2; }))
      << "the anomaly's capture: no cooldown after a baseline, not counted in max_captures";
  FeedSteps(agent.get(), &t, 5, 0.040);
  ASSERT_TRUE(WaitFor([&] { return fake.stops.load() == 2; }));
  const std::string all = events.Read();
  const std::string pid = std::to_string(getpid());
  EXPECT_NE(all.find("capture\t" + pid + "\t1\tbaseline\t"), std::string::npos) << all;
  EXPECT_NE(all.find("capture\t" + pid + "\t2\tstep_time\t"), std::string::npos) << all;
  agent.reset();
}

// After a capture the process runs slower by CUPTI's doing: the steps after
// it are a new normal, not an anomaly; a real slowdown later still fires.
TEST(MonitorAgent, StepsAfterACaptureAreANewNormal) {
  MonitorConfig c = TestConfig();
  c.baseline_capture = true;
  c.cooldown_s = 0;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  uint64_t t = 1000000000;
  agent->OnStepBegin(t);
  FeedSteps(agent.get(), &t, 72, 0.020);
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));  // the baseline capture
  FeedSteps(agent.get(), &t, 5, 0.020);
  ASSERT_TRUE(WaitFor([&] { return fake.stops.load() == 1; }));
  FeedSteps(agent.get(), &t, 150, 0.025);  // +25 % for the rest of the run
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 1 + 72 + 5 + 150 - 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(fake.starts.load(), 1) << "the profiler's after-capture cost is not an anomaly";
  EXPECT_EQ(agent->Snapshot().anomalies["step_time"], 0u);
  FeedSteps(agent.get(), &t, 8, 0.050);
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 2; })) << "a real slowdown still fires";
  agent.reset();
}

// After a manual capture the baseline is kept: a slowdown that starts with
// it (the user saw something) is still judged against the steps before.
TEST(MonitorAgent, ManualCaptureKeepsTheBaseline) {
  MonitorConfig c = TestConfig();
  c.cooldown_s = 0;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  uint64_t t = 1000000000;
  agent->OnStepBegin(t);
  FeedSteps(agent.get(), &t, 80, 0.020);
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 80; }));
  agent->RequestCapture();
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
  FeedSteps(agent.get(), &t, 5, 0.040);  // the capture's steps
  ASSERT_TRUE(WaitFor([&] { return fake.stops.load() == 1; }));
  FeedSteps(agent.get(), &t, 8 + 8, 0.040);  // settle, then a group
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().anomalies["step_time"] == 1; }))
      << "judged against the steps before the capture";
  agent.reset();
}

// An agent on `c` with a fake capture control and a private events file,
// fed synthetic steps from t = 1 s.
struct AgentRun {
  EventsFile events;
  FakeCapture fake;
  std::unique_ptr<MonitorAgent> agent;
  uint64_t t = 1000000000;
  explicit AgentRun(MonitorConfig c) {
    c.events_path = events.path;
    agent = MonitorAgent::Start(c, fake.Control());
    agent->OnStepBegin(t);
  }
  void Feed(int n, double seconds) { FeedSteps(agent.get(), &t, n, seconds); }
};

// The events file's line of capture `index`, up to its kind.
std::string CaptureEvent(uint32_t index, const std::string& kind) {
  return "capture\t" + std::to_string(getpid()) + "\t" + std::to_string(index) + "\t" + kind +
         "\t";
}

// No baseline after an anomaly while the steps stay at its level (a lasting
// slowdown is no "normal"), none with the flight recorder; an on-demand capture during the baseline
// ends it early and is taken; a baseline whose steps ran off the
// detector's level is marked rejected.
TEST(MonitorAgent, BaselineOnlyOfTheSteadyState) {
  {
    MonitorConfig c = TestConfig();
    c.baseline_capture = true;
    FakeCapture fake;
    auto agent = MonitorAgent::Start(c, fake.Control());
    uint64_t t = 1000000000;
    agent->OnStepBegin(t);
    FeedSteps(agent.get(), &t, 40, 0.020);
    FeedSteps(agent.get(), &t, 8, 0.040);  // an anomaly before the baseline is full
    ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
    FeedSteps(agent.get(), &t, 200, 0.040);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(fake.starts.load(), 1) << "no baseline at a slowdown's level";
  }
  {
    MonitorConfig c = TestConfig();
    c.baseline_capture = true;
    c.flight_recorder_s = 5;
    FakeCapture fake;
    auto agent = MonitorAgent::Start(c, fake.Control());
    uint64_t t = 1000000000;
    agent->OnStepBegin(t);
    FeedSteps(agent.get(), &t, 150, 0.020);
    ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 150; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(fake.starts.load(), 0) << "no baseline with the flight recorder";
  }
  {
    EventsFile events;
    MonitorConfig c = TestConfig();
    c.baseline_capture = true;
    c.events_path = events.path;
    c.capture_steps = 1000;  // the baseline would record long
    FakeCapture fake;
    auto agent = MonitorAgent::Start(c, fake.Control());
    uint64_t t = 1000000000;
    agent->OnStepBegin(t);
    FeedSteps(agent.get(), &t, 80, 0.020);
    ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
    FeedSteps(agent.get(), &t, 10, 0.040);  // 2x the level during the baseline: far past 1.1 x 1.35
    ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 90; }));
    agent->RequestCapture();  // on demand: ends the baseline, is taken
    ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 2 && fake.stops.load() == 1; }));
    const std::string all = events.Read();
    const std::string pid = std::to_string(getpid());
    EXPECT_NE(all.find("capture\t" + pid + "\t1\tbaseline_rejected\t"), std::string::npos) << all;
    agent.reset();
  }
  {
    // Tracing's own cost is no reason to reject: steps 14 % slower during
    // the baseline capture (the 10-minute H200 run's) keep it.
    EventsFile events;
    MonitorConfig c = TestConfig();
    c.baseline_capture = true;
    c.events_path = events.path;
    c.capture_steps = 1000;
    FakeCapture fake;
    auto agent = MonitorAgent::Start(c, fake.Control());
    uint64_t t = 1000000000;
    agent->OnStepBegin(t);
    FeedSteps(agent.get(), &t, 80, 0.020);
    ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
    FeedSteps(agent.get(), &t, 10, 0.0228);
    ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 90; }));
    agent->RequestCapture();
    ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 2 && fake.stops.load() == 1; }));
    const std::string all = events.Read();
    const std::string pid = std::to_string(getpid());
    EXPECT_NE(all.find("capture\t" + pid + "\t1\tbaseline\t"), std::string::npos) << all;
    agent.reset();
  }
}

// A rejected baseline is tried again once the detector has a full window of
// steps again, up to three times; the next one near the level is kept.
TEST(MonitorAgent, RejectedBaselineIsTriedAgain) {
  MonitorConfig c = TestConfig();
  c.baseline_capture = true;
  AgentRun run(c);
  run.Feed(72, 0.020);
  ASSERT_TRUE(WaitFor([&] { return run.fake.starts.load() == 1; }));
  run.Feed(5, 0.016);  // 20 % faster than the level: rejected
  ASSERT_TRUE(WaitFor([&] { return run.fake.stops.load() == 1; }));
  run.Feed(40, 0.020);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(run.fake.starts.load(), 1) << "not before a full detector window again";
  run.Feed(60, 0.020);
  ASSERT_TRUE(WaitFor([&] { return run.fake.starts.load() == 2; }));
  run.Feed(5, 0.020);
  ASSERT_TRUE(WaitFor([&] { return run.fake.stops.load() == 2; }));
  run.Feed(200, 0.020);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(run.fake.starts.load(), 2) << "a kept baseline is the last";
  const std::string all = run.events.Read();
  EXPECT_NE(all.find(CaptureEvent(1, "baseline_rejected")), std::string::npos) << all;
  EXPECT_NE(all.find(CaptureEvent(2, "baseline")), std::string::npos) << all;
}

// After a burst of slow steps that ended, the baseline is taken once the
// steps have been back at the level before it for a full detector window
// (a 10-minute H200 run on a noisy machine had its anomalies before any
// baseline, and then nothing to compare with).
TEST(MonitorAgent, BaselineAfterABurstThatEnded) {
  MonitorConfig c = TestConfig();
  c.baseline_capture = true;
  AgentRun run(c);
  run.Feed(40, 0.020);
  run.Feed(8, 0.040);  // a burst: anomaly, capture #1
  ASSERT_TRUE(WaitFor([&] { return run.fake.starts.load() == 1; }));
  run.Feed(5, 0.040);
  ASSERT_TRUE(WaitFor([&] { return run.fake.stops.load() == 1; }));
  run.Feed(60, 0.020);  // over
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(run.fake.starts.load(), 1) << "not before a full detector window at the old level";
  run.Feed(40, 0.020);
  ASSERT_TRUE(WaitFor([&] { return run.fake.starts.load() == 2; }));
  run.Feed(5, 0.020);
  ASSERT_TRUE(WaitFor([&] { return run.fake.stops.load() == 2; }));
  EXPECT_NE(run.events.Read().find(CaptureEvent(2, "baseline")), std::string::npos)
      << run.events.Read();
}

// Within the cooldown a repeat of the last capture's slowdown is deferred:
// captured when the cooldown ends if its steps are still slow, dropped if
// they came back (deferred, not dropped at once: a slowdown that starts
// within the cooldown is otherwise learnt as the new level and never
// captured). A slowdown worse than the last capture's is captured at once.
TEST(MonitorAgent, WithinTheCooldownARepeatIsDeferredAWorseSlowdownCapturedAtOnce) {
  enum Case { kStillSlow, kBackToNormal, kWorse };
  for (Case which : {kStillSlow, kBackToNormal, kWorse}) {
    SCOPED_TRACE(which == kStillSlow ? "still slow" : which == kBackToNormal ? "back" : "worse");
    MonitorConfig c = TestConfig();
    c.listen = "";
    c.cooldown_s = which == kWorse ? 60.0 : 1.0;
    AgentRun run(c);
    run.Feed(80, 0.020);
    run.Feed(8, 0.040);  // capture #1, for 40 ms steps
    ASSERT_TRUE(WaitFor([&] { return run.fake.starts.load() == 1; }));
    run.Feed(5, 0.040);
    ASSERT_TRUE(WaitFor([&] { return run.fake.stops.load() == 1; }));
    // Settle and level at 20 ms (the capture restarted the detector), then
    // 40 ms again (a repeat) or 80 ms (worse).
    run.Feed(16, 0.020);
    run.Feed(8, which == kWorse ? 0.080 : 0.040);
    ASSERT_TRUE(WaitFor([&] { return run.agent->Snapshot().anomalies["step_time"] == 2; }));
    if (which == kWorse) {
      ASSERT_TRUE(WaitFor([&] { return run.fake.starts.load() == 2; }, 500)) << "at once";
      continue;
    }
    EXPECT_EQ(run.fake.starts.load(), 1) << "a repeat within the cooldown";
    run.Feed(16, which == kStillSlow ? 0.040 : 0.020);
    if (which == kStillSlow) {
      ASSERT_TRUE(WaitFor([&] { return run.fake.starts.load() == 2; }, 3000));
      run.Feed(5, 0.040);
      ASSERT_TRUE(WaitFor([&] { return run.fake.stops.load() == 2; }));
      EXPECT_NE(run.events.Read().find("deferred by the cooldown"), std::string::npos)
          << run.events.Read();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      EXPECT_EQ(run.fake.starts.load(), 1) << "the steps came back: nothing to capture";
    }
  }
}

TEST(MonitorAgent, OnDemandCaptureIgnoresTheCooldownAndEndsAtTheTimeLimit) {
  MonitorConfig c = TestConfig();
  c.listen = "";
  c.capture_max_s = 0.2;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  agent->RequestCapture();
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
  ASSERT_TRUE(WaitFor([&] { return fake.stops.load() == 1; }));  // no steps: time limit
  agent->RequestCapture();
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 2; }));
  EXPECT_EQ(agent->Snapshot().anomalies["manual"], 2u);
  EXPECT_EQ(agent->thread_cpu_ns(), 0u);  // known once the thread ended
  agent->Stop();  // a capture in progress is closed
  EXPECT_EQ(fake.stops.load(), 2);
  EXPECT_GT(agent->thread_cpu_ns(), 0u);  // SIGHTLINE_SELF_COST's "monitor thread cpu"
}

TEST(MonitorAgent, Sigusr2RequestsACapture) {
  MonitorConfig c = TestConfig();
  c.listen = "";
  c.handle_sigusr2 = true;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  kill(getpid(), SIGUSR2);
  ASSERT_TRUE(WaitFor([&] { return fake.starts.load() == 1; }));
}

TEST(MonitorAgent, MaxCapturesIsRespected) {
  MonitorConfig c = TestConfig();
  c.listen = "";
  c.max_captures = 1;
  c.capture_max_s = 0.1;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  agent->RequestCapture();
  ASSERT_TRUE(WaitFor([&] { return fake.stops.load() == 1; }));
  agent->RequestCapture();
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().anomalies["manual"] == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(fake.starts.load(), 1);
}

TEST(MonitorAgent, NvmlGaugesFromAFakeLibrary) {
  const char* fake_lib = std::getenv("SIGHTLINE_FAKE_NVML");
  if (fake_lib == nullptr) GTEST_SKIP() << "SIGHTLINE_FAKE_NVML not set";
  std::string dir = TempDir();
  std::string values = dir + "/nvml";
  std::ofstream(values) << "77 2048\n";
  setenv("SIGHTLINE_FAKE_NVML_FILE", values.c_str(), 1);
  MonitorConfig c = TestConfig();
  c.nvml_library = fake_lib;
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().nvml_up; }));
  ASSERT_TRUE(WaitFor([&] { return !agent->bound_address().empty(); }));
  std::string r = Get(agent->bound_address(), "/metrics");
  const std::string base = "job=\"unit\",rank=\"-1\",device=\"0\"";
  EXPECT_NE(r.find("sightline_gpu_utilization_ratio{" + base + "} 0.77"), std::string::npos) << r;
  EXPECT_NE(r.find("sightline_gpu_memory_used_bytes{" + base + "} 2147483648\n"),
            std::string::npos);
  EXPECT_NE(r.find("sightline_gpu_sm_clock_hertz{" + base + "} 1980000000\n"), std::string::npos);
  EXPECT_NE(r.find("sightline_gpu_power_watts{" + base + "} 450\n"), std::string::npos);
  EXPECT_NE(r.find("sightline_gpu_temperature_celsius{" + base + "} 51\n"), std::string::npos);
  // A utilization drop is an anomaly (and starts a capture).
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // > warm-up of 10 samples
  std::ofstream(values) << "10 2048\n";
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().anomalies["utilization_drop"] == 1; }));
  EXPECT_EQ(fake.starts.load(), 1);
  agent.reset();
  unsetenv("SIGHTLINE_FAKE_NVML_FILE");
  unlink(values.c_str());
  rmdir(dir.c_str());
}

TEST(MonitorAgent, PythonHookAllocatorMarkersAreGaugesAndOptimizerSteps) {
  MonitorConfig c = TestConfig();
  FakeCapture fake;
  auto agent = MonitorAgent::Start(c, fake.Control());
  uint64_t t = 1000000000;
  auto mark = [&](const char* m, double after_s) {
    t += static_cast<uint64_t>(after_s * 1e9);
    agent->OnRangeOpened(m, t);
  };
  mark("sightline.torch_memory device=1 allocated=10 max_allocated=30 reserved=64", 0);
  mark("sightline.torch_memory device=0 allocated=5 max_allocated=6 reserved=8", 0.010);
  mark("sightline.torch_memory device=1 allocated=20 max_allocated=30 reserved=64", 0.010);
  mark("sightline.torch_memory device=x allocated=1", 0.010);  // malformed: neither
  agent->OnRangeOpened(nullptr, t);
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().torch_memory.size() == 2; }));
  MetricsSnapshot s = agent->Snapshot();
  EXPECT_EQ(s.torch_memory[0].cuda_device, 0u) << "by device, ascending";
  EXPECT_EQ(s.torch_memory[0].allocated, 5u);
  EXPECT_EQ(s.torch_memory[1].cuda_device, 1u);
  EXPECT_EQ(s.torch_memory[1].allocated, 20u) << "the latest sample";
  EXPECT_EQ(s.torch_memory[1].max_allocated, 30u);
  EXPECT_EQ(s.torch_memory[1].reserved, 64u);
  // Without steps of its own, each step of the first optimizer (opt=0 or no
  // opt=: earlier hooks) ends a step; a second optimizer's do not.
  mark("sightline.torch_memory device=0 allocated=5 max_allocated=6 reserved=8 opt=1", 0.004);
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(agent->Snapshot().steps.count(), 2u);
  EXPECT_NEAR(agent->Snapshot().steps.sum(), 0.020, 1e-9);
  t -= 4000000;  // the timeline below as before
  // A step mark without byte counts (the hook between allocator reads) ends
  // a step and leaves the gauges as they were.
  mark("sightline.torch_memory device=0 opt=0", 0.010);
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 3; }));
  EXPECT_NEAR(agent->Snapshot().steps.sum(), 0.040, 1e-9) << "20 ms after the last opt=0 mark";
  EXPECT_EQ(agent->Snapshot().torch_memory[0].allocated, 5u);
  t -= 10000000;
  // Once the program marks a step, only its marks count.
  t += 5000000;
  agent->OnStepBegin(t);  // starts a step, ends none
  mark("sightline.torch_memory device=0 allocated=7 max_allocated=7 reserved=8", 0.010);
  t += 20000000;
  agent->OnStepBegin(t);
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().steps.count() == 4; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s = agent->Snapshot();
  EXPECT_EQ(s.steps.count(), 4u);
  EXPECT_NEAR(s.steps.sum(), 0.040 + 0.030, 1e-9) << "the marked step: start to next start";
  // Bounded: 64 devices at most.
  for (int d = 0; d < 100; ++d) {
    std::string m = "sightline.torch_memory device=" + std::to_string(d) + " allocated=1";
    agent->OnRangeOpened(m.c_str(), t);
  }
  ASSERT_TRUE(WaitFor([&] { return agent->Snapshot().torch_memory.size() == 64; }));
}

TEST(MetricsEndpoint, UnixSocketIsUserOnlyAndNeverReplacesAFile) {
  std::string dir = TempDir();
  std::string path = dir + "/sub/metrics.sock";
  std::string error;
  auto ep = MetricsEndpoint::Listen("unix:" + path, &error);
  ASSERT_NE(ep, nullptr) << error;
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // A live socket is not taken over.
  auto second = MetricsEndpoint::Listen("unix:" + path, &error);
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(error.find("running process"), std::string::npos) << error;
  ep.reset();
  EXPECT_NE(lstat(path.c_str(), &st), 0) << "removed on close";
  // A regular file is never replaced.
  std::string file = dir + "/precious";
  std::ofstream(file) << "data";
  EXPECT_EQ(MetricsEndpoint::Listen("unix:" + file, &error), nullptr);
  EXPECT_NE(error.find("not a socket"), std::string::npos) << error;
  std::ifstream in(file);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "data");
  unlink(file.c_str());
  rmdir((dir + "/sub").c_str());
  rmdir(dir.c_str());
}

TEST(MetricsEndpoint, BadAddressesAreClearErrors) {
  std::string error;
  EXPECT_EQ(MetricsEndpoint::Listen("127.0.0.1:99999", &error), nullptr);
  EXPECT_NE(error.find("99999"), std::string::npos) << error;
  EXPECT_EQ(MetricsEndpoint::Listen("nocolon", &error), nullptr);
  EXPECT_NE(error.find("HOST:PORT"), std::string::npos) << error;
  auto ep = MetricsEndpoint::Listen(":0", &error);
  ASSERT_NE(ep, nullptr) << error;
  EXPECT_EQ(ep->bound_address().rfind("127.0.0.1:", 0), 0u) << "':PORT' is loopback";
}

TEST(MonitorConfig, FromEnvironment) {
  static std::map<std::string, std::string> env;
  env = {{"SIGHTLINE_MODE", "monitor"},
         {"SIGHTLINE_METRICS_LISTEN", "127.0.0.1:9400"},
         {"SIGHTLINE_STEP_RANGE", "iter,ProfilerStep#*"},
         {"SIGHTLINE_CAPTURE_STEPS", "7"},
         {"SIGHTLINE_ANOMALY_MIN_PCT", "nan"},
         {"SIGHTLINE_MONITOR_INTERVAL_MS", "5"},
         {"RANK", "2"},
         {"SIGHTLINE_BASELINE_CAPTURE", "on"},
         {"SIGHTLINE_ANOMALY_MAD_K", "5"},
         {"SIGHTLINE_JOB", "llm"}};
  std::vector<std::string> problems;
  MonitorConfig c = MonitorConfigFromEnvironment(
      [](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      &problems);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.listen, "127.0.0.1:9400");
  EXPECT_EQ(c.capture_steps, 7u);
  EXPECT_EQ(c.rank, "2");
  EXPECT_EQ(c.job, "llm");
  EXPECT_DOUBLE_EQ(c.step.min_rel_increase, 0.10) << "NaN refused, default kept";
  EXPECT_EQ(c.interval_ms, 1000u) << "out of range refused";
  EXPECT_TRUE(c.baseline_capture) << "asked for";
  EXPECT_FALSE(MonitorConfig().baseline_capture) << "off by default (CUPTI's cost after a capture)";
  ASSERT_EQ(problems.size(), 3u);
  bool retired = false;
  for (const std::string& p : problems) retired |= p.find("SIGHTLINE_ANOMALY_MAD_K") == 0;
  EXPECT_TRUE(retired) << "the retired variable is named";
  EXPECT_TRUE(MatchesStepName(c.step_names, "ProfilerStep#12"));
  EXPECT_TRUE(MatchesStepName(c.step_names, "iter"));
  EXPECT_FALSE(MatchesStepName(c.step_names, "iteration"));
  EXPECT_FALSE(MatchesStepName(c.step_names, nullptr));
  EXPECT_DOUBLE_EQ(c.flight_recorder_s, 0) << "off unless asked for";
}

TEST(MonitorConfig, FlightRecorderSecondsAndMemoryBound) {
  static std::map<std::string, std::string> env;
  auto get = [](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env = {{"SIGHTLINE_FLIGHT_RECORDER_S", "20"}, {"SIGHTLINE_FLIGHT_RECORDER_MB", "256"}};
  std::vector<std::string> problems;
  MonitorConfig c = MonitorConfigFromEnvironment(get, &problems);
  EXPECT_DOUBLE_EQ(c.flight_recorder_s, 20);
  EXPECT_EQ(c.flight_recorder_mb, 256u);
  EXPECT_TRUE(problems.empty());
  for (const char* bad : {"nan", "inf", "-1", "0.5", "7200", "10x"}) {
    env = {{"SIGHTLINE_FLIGHT_RECORDER_S", bad}};
    problems.clear();
    c = MonitorConfigFromEnvironment(get, &problems);
    EXPECT_DOUBLE_EQ(c.flight_recorder_s, 0) << bad;
    EXPECT_EQ(problems.size(), 1u) << bad;
  }
  env = {{"SIGHTLINE_FLIGHT_RECORDER_S", "0"}};
  problems.clear();
  EXPECT_DOUBLE_EQ(MonitorConfigFromEnvironment(get, &problems).flight_recorder_s, 0);
  EXPECT_TRUE(problems.empty());
}

}  // namespace
}  // namespace sightline::monitor
