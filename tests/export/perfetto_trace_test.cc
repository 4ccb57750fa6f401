// Decodes `sightline export --format perfetto` output with classes generated
// from our Perfetto subset schema and checks its structure: track descriptors
// before use, every interned id defined before (or in) the packet that uses
// it, balanced slices per track, event counts and flows.
#include "lib/export/perfetto_trace.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/export/output_file.h"
#include "lib/trace/reader.h"
#include "perfetto/perfetto_trace_subset.pb.h"
#include "tests/export/synthetic_trace.h"

namespace sightline::exporter {
namespace {

namespace pp = ::sightline::perfetto_subset;

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

struct Decoded {
  pp::Trace trace;
  std::map<uint64_t, std::string> names;       // iid -> event name
  std::map<uint64_t, std::string> categories;  // iid -> category
  std::map<uint64_t, std::string> arg_names;
  std::map<uint64_t, pp::TrackDescriptor> tracks;
  std::map<std::string, int> begins_by_category;
  std::map<std::string, int> begins_by_name;
  int instants = 0, ends = 0, counters = 0;
  std::map<std::string, std::vector<double>> double_counters;  // by track name
  std::multiset<uint64_t> flow_starts, flow_ends;
};

// Walks the packets in file order like a trace processor would.
void Decode(const std::string& bytes, Decoded* d) {
  ASSERT_TRUE(d->trace.ParseFromString(bytes));
  std::map<uint64_t, int> open_slices;
  for (const pp::TracePacket& p : d->trace.packet()) {
    EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
    if (p.has_interned_data()) {
      for (const auto& n : p.interned_data().event_names()) {
        EXPECT_FALSE(d->names.count(n.iid())) << "name iid redefined: " << n.iid();
        d->names[n.iid()] = n.name();
      }
      for (const auto& c : p.interned_data().event_categories()) d->categories[c.iid()] = c.name();
      for (const auto& a : p.interned_data().debug_annotation_names()) d->arg_names[a.iid()] = a.name();
    }
    if (p.has_track_descriptor()) {
      d->tracks[p.track_descriptor().uuid()] = p.track_descriptor();
    }
    if (!p.has_track_event()) continue;
    const pp::TrackEvent& e = p.track_event();
    ASSERT_TRUE(d->tracks.count(e.track_uuid())) << "event on undescribed track";
    EXPECT_GT(p.timestamp(), 0u);
    EXPECT_EQ(p.sequence_flags(), 2u);
    for (const auto& a : e.debug_annotations()) {
      EXPECT_TRUE(d->arg_names.count(a.name_iid())) << "undefined arg iid " << a.name_iid();
    }
    switch (e.type()) {
      case pp::TrackEvent::TYPE_SLICE_BEGIN: {
        ASSERT_TRUE(d->names.count(e.name_iid())) << "undefined name iid " << e.name_iid();
        ASSERT_EQ(e.category_iids_size(), 1);
        ASSERT_TRUE(d->categories.count(e.category_iids(0)));
        ++d->begins_by_category[d->categories[e.category_iids(0)]];
        ++d->begins_by_name[d->names[e.name_iid()]];
        ++open_slices[e.track_uuid()];
        for (uint64_t id : e.flow_ids()) d->flow_starts.insert(id);
        for (uint64_t id : e.terminating_flow_ids()) d->flow_ends.insert(id);
        break;
      }
      case pp::TrackEvent::TYPE_SLICE_END:
        EXPECT_GT(open_slices[e.track_uuid()], 0);
        --open_slices[e.track_uuid()];
        ++d->ends;
        break;
      case pp::TrackEvent::TYPE_INSTANT:
        ++d->instants;
        break;
      case pp::TrackEvent::TYPE_COUNTER:
        ++d->counters;
        if (e.has_double_counter_value()) {
          d->double_counters[d->tracks[e.track_uuid()].name()].push_back(e.double_counter_value());
        }
        break;
      default:
        ADD_FAILURE() << "unexpected type " << e.type();
    }
  }
  for (const auto& [track, open] : open_slices) EXPECT_EQ(open, 0) << "track " << track;
}

// Writes a fixture trace with `write`, exports it to Perfetto and decodes the
// result into `d`; the files are removed. Fatal failures abort the caller's
// test through HasFatalFailure().
void ExportFixture(bool (*write)(const std::string&, std::string*), const std::string& name,
                   Decoded* d, ExportStats* stats = nullptr) {
  const std::string trace_path = TempPath(name + ".sltrace");
  const std::string out_path = TempPath(name + ".pftrace");
  std::string error;
  ASSERT_TRUE(write(trace_path, &error)) << error;
  auto reader = trace::TraceReader::Open(trace_path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto out = OutputFile::Open(out_path);
  ASSERT_TRUE(out.ok()) << out.status();
  auto exported = ExportPerfettoTrace(**reader, **out);
  ASSERT_TRUE(exported.ok()) << exported.status();
  ASSERT_TRUE((*out)->Close().ok());
  if (stats != nullptr) *stats = *exported;
  Decode(ReadFile(out_path), d);
  unlink(trace_path.c_str());
  unlink(out_path.c_str());
}

// Kernel replay: replayed kernels (no timestamps) are slices at their launch
// call's start for the measured duration, annotated "replayed"; one without
// a measured duration is left out (counted).
TEST(PerfettoTraceTest, ReplayedKernelsAtTheirLaunchWithTheMeasuredDuration) {
  Decoded d;
  ExportStats stats;
  ExportFixture(&testing::WriteReplayTraceTo, "replay", &d, &stats);
  if (HasFatalFailure()) return;
  EXPECT_GE(stats.events_skipped, 1u);
  EXPECT_EQ(d.begins_by_category["kernel"], 2);
  std::vector<uint64_t> starts, ends;
  uint64_t replayed_iid = 0;
  for (const auto& [iid, name] : d.arg_names) {
    if (name == "replayed") replayed_iid = iid;
  }
  ASSERT_NE(replayed_iid, 0u);
  for (const pp::TracePacket& p : d.trace.packet()) {
    if (!p.has_track_event()) continue;
    const pp::TrackEvent& e = p.track_event();
    bool replayed = false;
    for (const auto& a : e.debug_annotations()) replayed |= a.name_iid() == replayed_iid;
    if (replayed) starts.push_back(p.timestamp());
  }
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(starts, (std::vector<uint64_t>{5000000, 9000000}));
}

// API slices carry their Python and native call stacks as interned string
// annotations: each distinct stack written once, referenced by iid.
TEST(PerfettoTraceTest, ApiSlicesCarryInternedCallStacks) {
  Decoded d;
  ExportFixture(&testing::WriteStacksTraceTo, "stacks", &d);
  if (HasFatalFailure()) return;
  std::map<uint64_t, std::string> strings;  // interned annotation values
  int definitions = 0;
  for (const pp::TracePacket& p : d.trace.packet()) {
    if (!p.has_interned_data()) continue;
    for (const auto& v : p.interned_data().debug_annotation_string_values()) {
      strings[v.iid()] = v.str();
      ++definitions;
    }
  }
  EXPECT_EQ(definitions, 2);  // two stacks, each once
  std::map<std::string, std::vector<std::string>> by_arg;
  for (const pp::TracePacket& p : d.trace.packet()) {
    if (!p.has_track_event()) continue;
    for (const auto& a : p.track_event().debug_annotations()) {
      if (a.has_string_value_iid()) {
        ASSERT_TRUE(strings.count(a.string_value_iid())) << "undefined string iid";
        by_arg[d.arg_names[a.name_iid()]].push_back(strings[a.string_value_iid()]);
      }
    }
  }
  ASSERT_EQ(by_arg["python_stack"].size(), 2u);
  EXPECT_EQ(by_arg["python_stack"][0],
            "Model.\"forward\" (/work/train.py:42) <- <module> (/work/train.py:7)");
  ASSERT_EQ(by_arg["stack"].size(), 2u);
  EXPECT_EQ(by_arg["stack"][1], "main (/usr/bin/app+0x40)");
}

// PM samples (--gpu-metrics) become one counter track per metric and device,
// in the quantity's unit (B/s → GB/s); a NaN sample is left out.
TEST(PerfettoTraceTest, GpuMetricSamplesBecomeCounterTracks) {
  Decoded d;
  ExportFixture(&testing::WritePmSamplesTraceTo, "perfetto-pm", &d);
  if (HasFatalFailure()) return;
  EXPECT_EQ(d.double_counters["SM active (device 0), %"], (std::vector<double>{50, 75}));
  const std::vector<double>& dram = d.double_counters["DRAM read (device 0), GB/s"];
  ASSERT_EQ(dram.size(), 3u);
  EXPECT_NEAR(dram[0], 2000, 1e-3);  // float samples: 2e12f is not exact
  EXPECT_NEAR(dram[1], 1000, 1e-3);
  EXPECT_EQ(dram[2], 0);
}

TEST(PerfettoTraceTest, SyntheticTraceDecodesWithOurSchema) {
  testing::SyntheticOptions o;
  o.steps = 12;
  o.kernels_per_step = 9;
  std::string trace_path = TempPath("synthetic.sltrace");
  std::string error;
  ASSERT_TRUE(testing::WriteSyntheticTraceTo(trace_path, o, &error)) << error;
  testing::SyntheticCounts want = testing::ExpectedCounts(o);

  auto reader = trace::TraceReader::Open(trace_path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string out_path = TempPath("out.pftrace");
  auto out = OutputFile::Open(out_path);
  ASSERT_TRUE(out.ok()) << out.status();
  auto stats = ExportPerfettoTrace(**reader, **out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_TRUE((*out)->Close().ok());
  EXPECT_EQ(stats->events_read, want.total());

  Decoded d;
  Decode(ReadFile(out_path), &d);
  if (HasFatalFailure()) return;
  EXPECT_EQ(d.begins_by_category["kernel"], static_cast<int>(want.kernels));
  EXPECT_EQ(d.begins_by_category["memcpy"], static_cast<int>(want.memcpys));
  EXPECT_EQ(d.begins_by_category["sync"], static_cast<int>(want.syncs));
  EXPECT_EQ(d.begins_by_category["cuda_runtime"], static_cast<int>(want.apis));
  EXPECT_EQ(d.begins_by_category["nvtx"], static_cast<int>(want.nvtx_ranges));
  EXPECT_EQ(d.begins_by_category["capture"], 1);
  EXPECT_EQ(d.instants, static_cast<int>(want.nvtx_markers + want.steps));
  EXPECT_EQ(d.counters, 1);  // the loss report
  // Kernel names interned once, used by name.
  EXPECT_EQ(d.begins_by_name[testing::kKernelNames[0]], 12 * 3);
  EXPECT_EQ(d.begins_by_name["Memcpy HtoD (Pageable -> Device)"], 12);
  // Every launch (kernel + memcpy API) starts a flow that a GPU slice ends.
  EXPECT_EQ(d.flow_starts.size(), want.launches);
  EXPECT_EQ(d.flow_ends, d.flow_starts);
  // Process, thread, NVTX child, stream, sync, profiler and loss tracks.
  int processes = 0, threads = 0, named = 0;
  for (const auto& [uuid, t] : d.tracks) {
    if (t.has_process()) {
      ++processes;
      EXPECT_EQ(t.process().pid(), 4242);
      EXPECT_EQ(t.process().cmdline_size(), 3);
    }
    if (t.has_thread()) {
      ++threads;
      EXPECT_EQ(t.thread().tid(), static_cast<int>(testing::kMainThread));
    }
    if (t.has_name()) ++named;
  }
  EXPECT_EQ(processes, 1);
  EXPECT_EQ(threads, 1);
  EXPECT_GE(named, 4);
  bool have_stream = false;
  for (const auto& [uuid, t] : d.tracks) have_stream |= t.name() == "GPU 0 stream 7";
  EXPECT_TRUE(have_stream);
}

TEST(PerfettoTraceTest, TruncatedTraceExportsCompleteChunksOnly) {
  testing::SyntheticOptions o;
  o.steps = 40;
  std::string trace_path = TempPath("trunc.sltrace");
  std::string error;
  ASSERT_TRUE(testing::WriteSyntheticTraceTo(trace_path, o, &error)) << error;
  std::string bytes = ReadFile(trace_path);
  bytes.resize(bytes.size() * 2 / 3);  // writer "killed" mid-chunk
  auto reader = trace::TraceReader::FromBuffer("cut", bytes);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string out_path = TempPath("trunc.pftrace");
  auto out = OutputFile::Open(out_path);
  ASSERT_TRUE(out.ok());
  auto stats = ExportPerfettoTrace(**reader, **out);
  ASSERT_TRUE(stats.ok());
  ASSERT_TRUE((*out)->Close().ok());
  EXPECT_FALSE((*reader)->integrity().complete);
  EXPECT_GT(stats->events_read, 0u);
  EXPECT_LT(stats->events_read, testing::ExpectedCounts(o).total());
  Decoded d;
  Decode(ReadFile(out_path), &d);
}

}  // namespace
}  // namespace sightline::exporter
