// Chrome trace-event export: counts per phase, flows matched across chunks,
// bounded flow memory, and the output file's error handling. (The JSON is
// parsed by a real JSON parser in tests/cli/export_test.sh.)
#include "lib/export/chrome_trace.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "lib/export/flow_matcher.h"
#include "lib/export/replay_placement.h"
#include "lib/export/output_file.h"
#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/export/synthetic_trace.h"

namespace sightline::exporter {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid());
}

std::string ReadFile(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  std::string s;
  if (!f) return s;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  fclose(f);
  return s;
}

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// Exports `trace_path` as Chrome JSON into TempPath(out_name) and returns
// the JSON ("" after a test failure); the output file is removed.
std::string ExportJson(const std::string& trace_path, const std::string& out_name,
                       ExportStats* stats = nullptr) {
  auto reader = trace::TraceReader::Open(trace_path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return "";
  const std::string out_path = TempPath(out_name);
  auto out = OutputFile::Open(out_path);
  EXPECT_TRUE(out.ok());
  if (!out.ok()) return "";
  absl::StatusOr<ExportStats> exported = ExportChromeTrace(**reader, **out);
  EXPECT_TRUE(exported.ok()) << exported.status();
  EXPECT_TRUE((*out)->Close().ok());
  if (exported.ok() && stats != nullptr) *stats = *exported;
  std::string json = ReadFile(out_path);
  unlink(out_path.c_str());
  return json;
}

// Writes a trace (tool "test", ended "exit") holding what `add` appends.
void WriteTrace(const std::string& path, const std::function<void(trace::TraceWriter&)>& add) {
  trace::FileSinkOptions so;
  std::string error;
  auto sink = trace::OpenFileSink(path, so, &error);
  ASSERT_NE(sink, nullptr) << error;
  trace::TraceWriter w(std::move(sink));
  TraceHeaderData h;
  h.tool_version = "test";
  ASSERT_TRUE(w.Begin(h));
  add(w);
  ASSERT_TRUE(w.Finish("exit"));
}

TEST(ChromeTraceTest, CountsAndFlowsOfSyntheticTrace) {
  testing::SyntheticOptions o;
  o.steps = 25;
  o.kernels_per_step = 11;
  o.chunk_bytes = 4096;  // many chunks: launch and kernel often in different ones
  std::string trace_path = TempPath("chrome.sltrace");
  std::string error;
  ASSERT_TRUE(testing::WriteSyntheticTraceTo(trace_path, o, &error)) << error;
  testing::SyntheticCounts want = testing::ExpectedCounts(o);

  auto reader = trace::TraceReader::Open(trace_path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_GT((*reader)->integrity().file_bytes, 4096u * 4);
  std::string out_path = TempPath("chrome.json");
  auto out = OutputFile::Open(out_path);
  ASSERT_TRUE(out.ok());
  auto stats = ExportChromeTrace(**reader, **out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_TRUE((*out)->Close().ok());
  EXPECT_EQ(stats->events_read, want.total());
  EXPECT_EQ(stats->flows, want.launches);
  EXPECT_EQ(stats->flows_unmatched, 0u);

  std::string json = ReadFile(out_path);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(Count(json, "\"ph\":\"X\""),
            want.kernels + want.memcpys + want.syncs + want.apis + want.nvtx_ranges +
                want.capture_windows);
  EXPECT_EQ(Count(json, "\"cat\":\"kernel\""), want.kernels);
  EXPECT_EQ(Count(json, "\"ph\":\"s\""), want.launches);
  EXPECT_EQ(Count(json, "\"ph\":\"f\""), want.launches);
  EXPECT_EQ(Count(json, "\"ph\":\"i\""), want.nvtx_markers + want.steps);
  EXPECT_EQ(Count(json, "\"name\":\"GPU 0 stream 7\""), 1u);
  EXPECT_EQ(Count(json, "\"name\":\"process_name\""), 1u);
  // Nanosecond precision, relative to the header's clock origin: the first
  // kernel waits for the 4 MiB pageable copy (3 us + 419.430 us).
  EXPECT_NE(json.find("\"ts\":422.430,\"dur\":50.000"), std::string::npos);
  EXPECT_NE(json.find("\"complete\":true"), std::string::npos);
}

TEST(ChromeTraceTest, ApiEventsCarryPythonAndNativeStacks) {
  std::string trace_path = TempPath("chrome-stacks.sltrace");
  std::string error;
  ASSERT_TRUE(testing::WriteStacksTraceTo(trace_path, &error)) << error;
  std::string json = ExportJson(trace_path, "chrome-stacks.json");
  EXPECT_NE(json.find("\"python_stack\":\"Model.\\\"forward\\\" (/work/train.py:42) <- "
                      "<module> (/work/train.py:7)\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"stack\":\"main (/usr/bin/app+0x40)\""), std::string::npos) << json;
  unlink(trace_path.c_str());
}

// PM samples (--gpu-metrics) become one counter per metric and device, in
// the quantity's unit (B/s → GB/s, Hz → MHz); a NaN sample is left out.
TEST(ChromeTraceTest, GpuMetricSamplesBecomeCounters) {
  std::string trace_path = TempPath("chrome-pm.sltrace");
  std::string error;
  ASSERT_TRUE(testing::WritePmSamplesTraceTo(trace_path, &error)) << error;
  std::string json = ExportJson(trace_path, "chrome-pm.json");
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("\"name\":\"SM active (device 0), %\""), 2u) << json;
  EXPECT_EQ(count("\"name\":\"DRAM read (device 0), GB/s\""), 3u) << json;
  EXPECT_EQ(count("\"name\":\"SM clock (device 0), MHz\""), 3u) << json;
  EXPECT_NE(json.find("\"value\":75}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"value\":1500}"), std::string::npos) << json;
  unlink(trace_path.c_str());
}

// Memory records become a counter of device memory in use per device: an
// allocation, a second one, a release of the first (shared accounting:
// lib/trace/memory_tracker.h).
TEST(ChromeTraceTest, MemoryRecordsBecomeACounterTrack) {
  std::string trace_path = TempPath("chrome-memory.sltrace");
  WriteTrace(trace_path, [&](trace::TraceWriter& w) {
    auto add = [&](uint64_t t, MemoryOperation op, uint64_t address, uint64_t bytes) {
      MemoryEvent e;
      e.timestamp_ns = t;
      e.device_id = 1;
      e.operation = op;
      e.memory_kind = MemoryKind::kDevice;
      e.address = address;
      e.bytes = bytes;
      w.Add(e);
    };
    add(1000, MemoryOperation::kAllocation, 0x1000, 1 << 20);
    add(2000, MemoryOperation::kAllocation, 0x200000, 3 << 20);
    add(3000, MemoryOperation::kRelease, 0x1000, 0);
  });
  if (::testing::Test::HasFatalFailure()) return;
  std::string json = ExportJson(trace_path, "chrome-memory.json");
  size_t a = json.find("\"allocated bytes\":1048576}");
  size_t b = json.find("\"allocated bytes\":4194304}");
  size_t c = json.find("\"allocated bytes\":3145728}");
  EXPECT_NE(a, std::string::npos) << json;
  EXPECT_NE(b, std::string::npos) << json;
  EXPECT_NE(c, std::string::npos) << json;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_NE(json.find("\"name\":\"GPU memory (device 1)\""), std::string::npos) << json;
  unlink(trace_path.c_str());
}

// NCCL host calls carry their communicator and, for Send/Recv, the peer
// (peer 0 included; absent for collectives).
TEST(ChromeTraceTest, NcclSendCarriesItsPeer) {
  std::string trace_path = TempPath("chrome-nccl.sltrace");
  WriteTrace(trace_path, [&](trace::TraceWriter& w) {
    NcclEvent e;
    e.start_ns = 1000;
    e.end_ns = 2000;
    e.op = NcclOp::kSend;
    e.bytes = 4096;
    e.comm_id = 77;
    e.peer = 0;
    e.source = NcclSource::kHostNvtx;
    e.name_id = w.Intern("ncclSend");
    w.Add(e);
    e.op = NcclOp::kAllReduce;
    e.peer = -1;
    e.start_ns = 3000;
    e.end_ns = 4000;
    e.name_id = w.Intern("ncclAllReduce");
    w.Add(e);
  });
  if (::testing::Test::HasFatalFailure()) return;
  std::string json = ExportJson(trace_path, "chrome-nccl.json");
  EXPECT_EQ(Count(json, "\"comm\":77"), 2u) << json;
  EXPECT_EQ(Count(json, "\"peer\":0"), 1u) << json;
  unlink(trace_path.c_str());
}

// Kernel replay (--metrics): CUPTI reports a replayed kernel without
// timestamps. It is drawn at its launch call's start for the duration its
// metric range measured, marked replayed — whatever the order of the launch,
// the kernel and the range in the trace; without a measured duration it is
// left out (counted), never drawn at time zero.
TEST(ChromeTraceTest, ReplayedKernelsAtTheirLaunchWithTheMeasuredDuration) {
  std::string trace_path = TempPath("chrome-replay.sltrace");
  std::string error;
  ASSERT_TRUE(testing::WriteReplayTraceTo(trace_path, &error)) << error;
  ExportStats stats;
  std::string json = ExportJson(trace_path, "chrome-replay.json", &stats);
  EXPECT_EQ(Count(json, "\"replayed\":true"), 2u) << json;
  EXPECT_EQ(Count(json, "\"cat\":\"kernel\""), 2u) << json;
  // Times are relative to the first event (the first launch, 5 ms).
  EXPECT_NE(json.find("\"ts\":0.000,\"dur\":12.345"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ts\":4000.000,\"dur\":2.000"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"ts\":-"), std::string::npos) << json;
  EXPECT_GE(stats.events_skipped, 1u);
  unlink(trace_path.c_str());
}

// A memset CUPTI gave without timestamps while metrics were collected
// (MemsetEvent::untraced) has no place on the timeline: not drawn (never at
// time 0), counted as skipped.
TEST(ChromeTraceTest, UntracedMemsetsAreNotDrawnAndAreCounted) {
  std::string trace_path = TempPath("chrome-untraced-memset.sltrace");
  WriteTrace(trace_path, [](trace::TraceWriter& w) {
    MemsetEvent timed;
    timed.start_ns = 5000;
    timed.end_ns = 6000;
    timed.bytes = 64;
    timed.correlation_id = 1;
    w.Add(timed);
    MemsetEvent untraced;
    untraced.untraced = true;
    untraced.bytes = 4096;
    untraced.correlation_id = 2;
    w.Add(untraced);
  });
  ExportStats stats;
  std::string json = ExportJson(trace_path, "chrome-untraced-memset.json", &stats);
  EXPECT_EQ(Count(json, "\"cat\":\"memset\""), 1u) << json;
  EXPECT_EQ(json.find("\"bytes\":4096"), std::string::npos) << json;
  EXPECT_EQ(stats.events_skipped, 1u);
  unlink(trace_path.c_str());
}

// A launch call with correlation id `corr` starting at `start`.
ApiEvent LaunchCall(uint32_t corr, uint64_t start) {
  ApiEvent a;
  a.correlation_id = corr;
  a.start_ns = start;
  a.end_ns = start + 10;
  return a;
}

// The committed sequence-metrics trace whose passes ran untraced (H100, run
// AO): every one of its 99 untraced kernels is drawn, at a real time.
TEST(ChromeTraceTest, UntracedKernelsOfARecordedTraceAreAllDrawn) {
  const char* root = std::getenv("SIGHTLINE_SOURCE_DIR");
  const std::string trace_path = std::string(root != nullptr ? root : ".") +
                                 "/tests/data/metrics/workload_sequence_untraced_h100.sltrace";
  ExportStats stats;
  std::string json = ExportJson(trace_path, "chrome-untraced.json", &stats);
  EXPECT_EQ(Count(json, "\"untraced\":true"), 99u);
  EXPECT_EQ(Count(json, "\"replayed\":true"), 0u);
  EXPECT_EQ(Count(json, "\"cat\":\"kernel\""), 144u);  // 45 traced + 99 untraced
  // No kernel before the trace's first event (CUPTI's overhead records may
  // be), and nothing skipped but the 9 metric ranges, which have no times.
  EXPECT_EQ(json.find("\"cat\":\"kernel\",\"ts\":-"), std::string::npos);
  EXPECT_EQ(stats.events_skipped, 9u);
}

// Untraced kernels (measured in place, not traced) are placed like replayed
// ones; those whose values went to another launch of their configuration
// take that configuration's mean measured duration at the end.
TEST(ReplayPlacementTest, UntracedKernelsWithoutTheirOwnDurationTakeTheirConfigurationsMean) {
  ReplayPlacement rp(16);
  auto kernel = [](uint32_t corr, uint32_t grid) {
    KernelEvent k;
    k.correlation_id = corr;
    k.grid_x = grid;
    k.untraced = true;
    return k;
  };
  for (uint32_t c = 1; c <= 4; ++c) {
    EXPECT_TRUE(rp.OnKernel(kernel(c, c <= 3 ? 8 : 16)));
    rp.OnApi(LaunchCall(c, 1000 * c));
  }
  rp.OnMeasuredDuration(2, 300);
  rp.OnMeasuredDuration(3, 500);
  std::vector<KernelEvent> ready = rp.TakeReady();
  ASSERT_EQ(ready.size(), 2u);
  rp.ResolveByConfigMean();
  ready = rp.TakeReady();
  ASSERT_EQ(ready.size(), 1u);  // kernel 1 (grid 8): the mean of 300 and 500
  EXPECT_EQ(ready[0].correlation_id, 1u);
  EXPECT_EQ(ready[0].start_ns, 1000u);
  EXPECT_EQ(ready[0].end_ns, 1400u);
  rp.Finish();
  EXPECT_EQ(rp.unplaced(), 1u);  // kernel 4 (grid 16): no measured launch of its configuration
}

// Matching as the pieces arrive, in bounded memory: a waiting kernel keeps
// its place however many API calls pass before its launch; a launch seen
// long before its kernel may be evicted (then the kernel is not drawn).
TEST(ReplayPlacementTest, MatchesAsThePiecesArriveInBoundedMemory) {
  ReplayPlacement rp(4);
  auto kernel = [](uint32_t corr) {
    KernelEvent k;
    k.correlation_id = corr;
    k.replayed = true;
    return k;
  };
  EXPECT_FALSE(rp.OnKernel(KernelEvent{}));  // not replayed: not ours
  EXPECT_TRUE(rp.OnKernel(kernel(7)));
  for (uint32_t c = 100; c < 110; ++c) rp.OnApi(LaunchCall(c, c));  // 10 others: no eviction of 7
  rp.OnMeasuredDuration(7, 500);
  EXPECT_TRUE(rp.TakeReady().empty());  // no launch yet
  rp.OnApi(LaunchCall(7, 2000));               // the driver call inside ...
  rp.OnApi(LaunchCall(7, 1990));               // ... and the runtime call around it: the earliest wins
  std::vector<KernelEvent> ready = rp.TakeReady();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].start_ns, 1990u);
  EXPECT_EQ(ready[0].end_ns, 2490u);
  // A launch and duration first, the kernel later: matched from the early maps.
  rp.OnApi(LaunchCall(8, 3000));
  rp.OnMeasuredDuration(8, 100);
  rp.OnKernel(kernel(8));
  ready = rp.TakeReady();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].start_ns, 3000u);
  // A launch evicted (more than 4 calls after it) before its kernel came.
  rp.OnApi(LaunchCall(9, 4000));
  for (uint32_t c = 200; c < 205; ++c) rp.OnApi(LaunchCall(c, c));
  rp.OnMeasuredDuration(9, 100);
  rp.OnKernel(kernel(9));
  EXPECT_TRUE(rp.TakeReady().empty());
  rp.Finish();
  EXPECT_EQ(rp.unplaced(), 1u);
}

TEST(FlowMatcherTest, PairsInEitherOrderAndKeepsLaunchForGraphs) {
  FlowMatcher m(16);
  std::vector<std::pair<FlowEndpoint, FlowEndpoint>> flows;
  m.AddGpuWork(5, {100, 50}, &flows);  // kernel before its launch
  EXPECT_TRUE(flows.empty());
  m.AddLaunch(5, {1, 10}, &flows);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].first.track, 1u);
  EXPECT_EQ(flows[0].second.time_ns, 50);
  m.AddGpuWork(5, {100, 70}, &flows);  // a second kernel of the same graph launch
  EXPECT_EQ(flows.size(), 2u);
  EXPECT_EQ(m.unmatched(), 0u);
}

TEST(FlowMatcherTest, MemoryIsBoundedAndEvictionsAreCounted) {
  FlowMatcher m(100);
  std::vector<std::pair<FlowEndpoint, FlowEndpoint>> flows;
  for (uint32_t i = 1; i <= 100000; ++i) m.AddGpuWork(i, {1, i}, &flows);
  for (uint32_t i = 1; i <= 100000; ++i) m.AddLaunch(1000000 + i, {2, i}, &flows);
  EXPECT_LE(m.waiting_held(), 100u);
  EXPECT_LE(m.launches_held(), 100u);
  EXPECT_EQ(m.unmatched(), 100000u);
  EXPECT_TRUE(flows.empty());
}

TEST(OutputFileTest, WritesAtomicallyAndReportsBadPaths) {
  std::string path = TempPath("out.txt");
  {
    auto out = OutputFile::Open(path, 4096);
    ASSERT_TRUE(out.ok());
    std::string big(10000, 'x');
    (*out)->Append(big);
    (*out)->Append('y');
    EXPECT_NE(access(path.c_str(), F_OK), 0) << "final name must appear only on Close";
    ASSERT_TRUE((*out)->Close().ok());
  }
  EXPECT_EQ(ReadFile(path).size(), 10001u);

  auto dir = OutputFile::Open(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), absl::string_view::npos);

  auto missing = OutputFile::Open("/nonexistent-dir-sightline/x.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent-dir-sightline/x.json"),
            absl::string_view::npos);

  // Abandoned (not closed) outputs leave nothing behind.
  std::string abandoned = TempPath("abandoned.txt");
  { auto out = OutputFile::Open(abandoned); ASSERT_TRUE(out.ok()); (*out)->Append("z"); }
  EXPECT_NE(access(abandoned.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace sightline::exporter
