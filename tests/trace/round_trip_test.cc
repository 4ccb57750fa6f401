// Round trip: TraceWriter → bytes → TraceReader gives back exactly what was
// written, for every event kind (every field set, and all defaults), across
// chunk boundaries, with strings and call stacks interned per trace.
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/trace/crc32c.h"
#include "lib/trace/format.h"
#include "lib/trace/proto_wire.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace::testing {
namespace {

using ::testing::HasSubstr;

void ExpectSameEvents(const std::vector<AnyEvent>& want, const std::vector<AnyEvent>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(want[i] == got[i]) << "event " << i << ": want " << Describe(want[i]) << ", got "
                                   << Describe(got[i]);
  }
}

void ExpectSameHeader(const TraceHeaderData& a, const TraceHeaderData& b) {
  EXPECT_EQ(b.format_version, kFormatVersion);
  EXPECT_EQ(a.tool_version, b.tool_version);
  EXPECT_EQ(a.process.pid, b.process.pid);
  EXPECT_EQ(a.process.host, b.process.host);
  EXPECT_EQ(a.process.command_line, b.process.command_line);
  EXPECT_EQ(a.process.rank, b.process.rank);
  EXPECT_EQ(a.process.world_size, b.process.world_size);
  EXPECT_EQ(a.process.local_rank, b.process.local_rank);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const DeviceInfo& x = a.devices[i];
    const DeviceInfo& y = b.devices[i];
    EXPECT_EQ(std::tie(x.id, x.name, x.uuid, x.cc_major, x.cc_minor, x.sm_count,
                       x.max_warps_per_sm, x.max_blocks_per_sm, x.max_threads_per_block,
                       x.registers_per_sm, x.registers_per_block, x.shared_memory_per_sm,
                       x.shared_memory_per_block, x.shared_memory_per_block_optin,
                       x.reserved_shared_memory_per_block, x.warp_size, x.core_clock_khz,
                       x.memory_clock_khz, x.memory_bus_width_bits, x.global_memory_bytes,
                       x.l2_cache_bytes, x.memory_bandwidth_gbps, x.chip_name, x.pci_bus_id,
                       x.async_engine_count),
              std::tie(y.id, y.name, y.uuid, y.cc_major, y.cc_minor, y.sm_count,
                       y.max_warps_per_sm, y.max_blocks_per_sm, y.max_threads_per_block,
                       y.registers_per_sm, y.registers_per_block, y.shared_memory_per_sm,
                       y.shared_memory_per_block, y.shared_memory_per_block_optin,
                       y.reserved_shared_memory_per_block, y.warp_size, y.core_clock_khz,
                       y.memory_clock_khz, y.memory_bus_width_bits, y.global_memory_bytes,
                       y.l2_cache_bytes, y.memory_bandwidth_gbps, y.chip_name, y.pci_bus_id,
                       y.async_engine_count))
        << "device " << i;
  }
  EXPECT_EQ(a.cupti_api_version, b.cupti_api_version);
  EXPECT_EQ(a.cuda_driver_version, b.cuda_driver_version);
  EXPECT_EQ(a.cuda_runtime_version, b.cuda_runtime_version);
  EXPECT_EQ(a.clock.trace_ns, b.clock.trace_ns);
  EXPECT_EQ(a.clock.realtime_ns, b.clock.realtime_ns);
  EXPECT_EQ(a.start_realtime_ns, b.start_realtime_ns);
  EXPECT_EQ(a.enabled, b.enabled);
  EXPECT_EQ(a.metric_set, b.metric_set);
  EXPECT_EQ(a.capture_range, b.capture_range);
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 B.4: 32 bytes of zeros / of 0xff.
  std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<char>(i);
  EXPECT_EQ(Crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
}

TEST(Crc32cTest, HardwareAndPortableAgreeAndExtendComposes) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 131 + 7));
  for (size_t len : {0, 1, 7, 8, 9, 63, 64, 65, 999, 1000}) {
    uint32_t full = Crc32c(data.data(), len);
    EXPECT_EQ(full, internal::Crc32cExtendPortable(0, data.data(), len)) << len;
    size_t half = len / 3;
    EXPECT_EQ(full, Crc32cExtend(Crc32c(data.data(), half), data.data() + half, len - half));
  }
}

TEST(ProtoWireTest, VarintsAndZigZag) {
  uint8_t buf[16];
  for (uint64_t v : std::vector<uint64_t>{0, 1, 127, 128, 300, 16383, 16384, 1ull << 35,
                                          UINT64_MAX}) {
    uint8_t* end = wire::WriteVarint(v, buf);
    EXPECT_EQ(static_cast<size_t>(end - buf), wire::VarintSize(v)) << v;
    wire::WireReader r(buf, end);
    uint64_t back = 0;
    ASSERT_TRUE(r.ReadVarint(&back));
    EXPECT_EQ(back, v);
    EXPECT_TRUE(r.done());
  }
  for (int64_t v : std::vector<int64_t>{0, -1, 1, -64, 63, INT64_MIN, INT64_MAX}) {
    EXPECT_EQ(wire::UnZigZag64(wire::ZigZag64(v)), v);
  }
  for (int32_t v : {0, -1, 1, INT32_MIN, INT32_MAX}) {
    EXPECT_EQ(wire::UnZigZag32(wire::ZigZag32(v)), v);
  }
  EXPECT_EQ(wire::ZigZag64(-1), 1u);
  EXPECT_EQ(wire::ZigZag64(1), 2u);
  // An 11-byte varint and a truncated one are rejected.
  uint8_t too_long[11];
  std::memset(too_long, 0x80, sizeof(too_long));
  wire::WireReader r1(too_long, too_long + 11);
  uint64_t v;
  EXPECT_FALSE(r1.ReadVarint(&v));
  wire::WireReader r2(too_long, too_long + 3);
  EXPECT_FALSE(r2.ReadVarint(&v));
}

TEST(RoundTripTest, EveryKindWithEveryFieldSet) {
  std::string bytes;
  std::vector<AnyEvent> written;
  {
    TraceWriter writer(OpenMemorySink(&bytes));
    ASSERT_TRUE(writer.Begin(SampleHeader()));
    written = EveryKindFullySet(&writer, 1700000000000000000ull);
    for (const AnyEvent& e : written) AddTo(writer, e);
    ASSERT_TRUE(writer.Finish("exit"));
    EXPECT_EQ(writer.bytes_written(), bytes.size());
    EXPECT_EQ(writer.totals().events, written.size());
    EXPECT_EQ(writer.totals().chunks, 1u);
  }
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ExpectSameEvents(written, visitor.events);
  ExpectSameHeader(SampleHeader(), (*reader)->header());
  const StringTable& strings = (*reader)->strings();
  EXPECT_EQ(strings.Get(written[0].kernel.name_id),
            "void gemm_kernel<float, 128>(float const*, float*)");
  EXPECT_EQ(strings.Get(written[5].nvtx_range.name_id), "train_step \xE2\x9C\x93 \"quoted\"");
  EXPECT_EQ(strings.Get(0), "");
  EXPECT_EQ(strings.Get(999), "<unknown string 999>");
  // Interning: the same text gets the same id.
  EXPECT_EQ(written[0].kernel.name_id, written[8].metric_range.range_name_id);
  EXPECT_EQ(written[5].nvtx_range.domain_id, written[6].nvtx_marker.domain_id);

  const Integrity& in = (*reader)->integrity();
  EXPECT_TRUE(in.complete) << in.reason;
  EXPECT_EQ(in.events_read, written.size());
  EXPECT_EQ(in.chunks_read, 1u);
  EXPECT_EQ(in.bytes_accepted, bytes.size());
  EXPECT_EQ(in.file_bytes, bytes.size());
  for (int k = 1; k < kNumEventKinds; ++k) EXPECT_EQ(in.counts[k], 1u) << k;
  ASSERT_TRUE(in.footer.has_value());
  EXPECT_EQ(in.footer->events, written.size());
  EXPECT_EQ(in.footer->end_reason, "exit");
  EXPECT_EQ(in.footer->counts[static_cast<int>(EventKind::kKernel)], 1u);
  EXPECT_EQ(in.footer->first_ns, 1700000000000000000ull);
  EXPECT_EQ(in.footer->last_ns, 1700000000000000000ull + 99999999);
  EXPECT_EQ(in.first_ns, in.footer->first_ns);
  EXPECT_EQ(in.last_ns, in.footer->last_ns);
  // The footer's losses are the last LossReport.
  EXPECT_EQ(in.losses.stacks_dropped, 8u);
  EXPECT_EQ(in.losses.cupti_dropped_records, 1u);
  EXPECT_TRUE(in.problems.empty());
}

TEST(RoundTripTest, EveryKindWithDefaults) {
  std::vector<AnyEvent> written = EveryKindDefault();
  std::string bytes = WriteTrace(written, 1 << 20, TraceHeaderData());
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ExpectSameEvents(written, visitor.events);
  // Defaults that differ from proto3's zero survive: grid/block y,z = 1,
  // SyncEvent.stream_id = kNoStream, NcclEvent.rank = -1.
  EXPECT_EQ(visitor.events[0].kernel.grid_y, 1u);
  EXPECT_EQ(visitor.events[0].kernel.block_z, 1u);
  EXPECT_EQ(visitor.events[3].sync.stream_id, kNoStream);
  EXPECT_EQ(visitor.events[7].nccl.rank, -1);
  EXPECT_EQ(visitor.events[7].nccl.peer, -1);
  EXPECT_EQ((*reader)->header().process.rank, -1);
  EXPECT_EQ((*reader)->header().process.local_rank, -1);
  EXPECT_TRUE((*reader)->integrity().complete);
  // All-default events cost only their envelope.
  EXPECT_LT(bytes.size(), 400u);
}

TEST(RoundTripTest, ManyChunksStreamedWhileWriting) {
  std::vector<AnyEvent> written = RealisticMix(20000);
  std::string bytes;
  WriterOptions options;
  options.chunk_bytes = 4096;
  TraceWriter writer(OpenMemorySink(&bytes), options);
  ASSERT_TRUE(writer.Begin(SampleHeader()));
  size_t after_begin = bytes.size();
  for (size_t i = 0; i < written.size(); ++i) {
    AnyEvent e = written[i];
    // Intern real names so definitions are spread over many chunks.
    if (e.kind == EventKind::kKernel) {
      e.kernel.name_id = writer.Intern("kernel_" + std::to_string(e.kernel.name_id));
    }
    written[i] = e;
    AddTo(writer, e);
    if (i == written.size() / 2) {
      // Streaming: chunks reach the sink long before Finish.
      EXPECT_GT(bytes.size(), after_begin + 100000);
    }
  }
  ASSERT_TRUE(writer.Finish("exit"));
  EXPECT_GT(writer.totals().chunks, 50u);

  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ExpectSameEvents(written, visitor.events);
  const Integrity& in = (*reader)->integrity();
  EXPECT_TRUE(in.complete) << in.reason;
  EXPECT_EQ(in.chunks_read, writer.totals().chunks);
  for (const AnyEvent& e : visitor.events) {
    if (e.kind != EventKind::kKernel) continue;
    EXPECT_THAT(std::string((*reader)->strings().Get(e.kernel.name_id)), HasSubstr("kernel_"));
  }
}

TEST(RoundTripTest, NextChunkIteratesOneChunkAtATime) {
  std::vector<AnyEvent> written = RealisticMix(3000);
  std::string bytes = WriteTrace(written, 2048);
  auto reader = TraceReader::FromBuffer("t", bytes);
  ASSERT_TRUE(reader.ok());
  RecordingVisitor visitor;
  size_t chunks = 0, last = 0;
  while (true) {
    auto more = (*reader)->NextChunk(visitor);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    ++chunks;
    EXPECT_GT(visitor.events.size(), last);  // each chunk delivers events
    EXPECT_LE(visitor.events.size(), written.size());
    last = visitor.events.size();
    EXPECT_LE((*reader)->position(), bytes.size());
  }
  EXPECT_EQ(visitor.events.size(), written.size());
  EXPECT_EQ(chunks, (*reader)->integrity().chunks_read);
  EXPECT_GT(chunks, 10u);
}

TEST(RoundTripTest, EndBeforeStartAndExtremeTimesRoundTrip) {
  std::vector<AnyEvent> written(4);
  for (auto& e : written) e.kind = EventKind::kKernel;
  written[0].kernel.start_ns = 1000;
  written[0].kernel.end_ns = 10;  // invalid: end < start
  written[1].kernel.start_ns = UINT64_MAX - 5;
  written[1].kernel.end_ns = UINT64_MAX;
  written[2].kernel.start_ns = 0;
  written[2].kernel.end_ns = 0;
  written[3].kernel.start_ns = 1;
  written[3].kernel.end_ns = UINT64_MAX;
  std::string bytes = WriteTrace(written, 1 << 20);
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok());
  ExpectSameEvents(written, visitor.events);
  EXPECT_EQ((*reader)->integrity().invalid_events, 1u);
}

TEST(RoundTripTest, CallStacksAreInternedAndReadBack) {
  std::string bytes;
  TraceWriter writer(OpenMemorySink(&bytes));
  ASSERT_TRUE(writer.Begin(SampleHeader()));
  CallStack stack;
  stack.frames = {{writer.Intern("main"), writer.Intern("/usr/bin/app"), 0x1234, 0x401234},
                  {writer.Intern("train"), writer.Intern("/usr/lib/libtorch.so"), 0x99, 0}};
  uint32_t id = writer.InternStack(stack);
  EXPECT_GE(id, 1u);
  EXPECT_EQ(writer.InternStack(stack), id);
  CallStack other = stack;
  other.frames.pop_back();
  uint32_t other_id = writer.InternStack(other);
  EXPECT_NE(other_id, id);
  EXPECT_EQ(writer.InternStack(CallStack()), 0u);
  ApiEvent api;
  api.start_ns = 5;
  api.end_ns = 6;
  api.stack_id = id;
  writer.Add(api);
  ASSERT_TRUE(writer.Finish("exit"));

  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok());
  const CallStack* back = (*reader)->stack(id);
  ASSERT_NE(back, nullptr);
  ASSERT_EQ(back->frames.size(), 2u);
  EXPECT_EQ((*reader)->strings().Get(back->frames[0].function_id), "main");
  EXPECT_EQ((*reader)->strings().Get(back->frames[1].module_id), "/usr/lib/libtorch.so");
  EXPECT_EQ(back->frames[0].offset, 0x1234u);
  EXPECT_EQ(back->frames[0].address, 0x401234u);
  ASSERT_NE((*reader)->stack(other_id), nullptr);
  EXPECT_EQ((*reader)->stack(other_id)->frames.size(), 1u);
  EXPECT_EQ((*reader)->stack(12345), nullptr);
}

TEST(RoundTripTest, PythonStacksKeepKindAndLines) {
  std::string bytes;
  TraceWriter writer(OpenMemorySink(&bytes));
  ASSERT_TRUE(writer.Begin(SampleHeader()));
  CallStack py;
  py.kind = StackKind::kPython;
  StackFrame leaf;
  leaf.function_id = writer.Intern("Model.forward");
  leaf.module_id = writer.Intern("/home/u/train.py");
  leaf.line = 42;
  StackFrame outer;
  outer.function_id = writer.Intern("<module>");
  outer.module_id = leaf.module_id;
  outer.line = 7;
  py.frames = {leaf, outer};
  uint32_t py_id = writer.InternStack(py);
  // The same frames as a native stack are a different stack.
  CallStack native = py;
  native.kind = StackKind::kNative;
  uint32_t native_id = writer.InternStack(native);
  EXPECT_NE(py_id, native_id);
  EXPECT_EQ(writer.InternStack(py), py_id);
  // A different line is a different stack.
  CallStack moved = py;
  moved.frames[0].line = 43;
  EXPECT_NE(writer.InternStack(moved), py_id);
  ApiEvent api;
  api.start_ns = 5;
  api.end_ns = 6;
  api.python_stack_id = py_id;
  writer.Add(api);
  ASSERT_TRUE(writer.Finish("exit"));

  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(bytes, &visitor);
  ASSERT_TRUE(reader.ok());
  const CallStack* back = (*reader)->stack(py_id);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->kind, StackKind::kPython);
  ASSERT_EQ(back->frames.size(), 2u);
  EXPECT_EQ(back->frames[0].line, 42u);
  EXPECT_EQ(back->frames[1].line, 7u);
  EXPECT_EQ((*reader)->strings().Get(back->frames[0].function_id), "Model.forward");
  EXPECT_EQ((*reader)->stack(native_id)->kind, StackKind::kNative);
  ASSERT_EQ(visitor.events.size(), 1u);
}

TEST(RoundTripTest, FailedSinkCountsLostEventsAndDoesNotCrash) {
  class FailingSink : public Sink {
   public:
    explicit FailingSink(int fail_from) : fail_from_(fail_from) {}
    bool Write(const void*, size_t) override { return ++writes_ < fail_from_; }
    bool Close() override { return true; }
    std::string Describe() const override { return "failing"; }
    std::string last_error() const override { return "failing: disk full"; }
    int writes_ = 0;
    int fail_from_;
  };
  TraceWriter writer(std::make_unique<FailingSink>(2));  // header ok, then fails
  ASSERT_TRUE(writer.Begin(SampleHeader()));
  KernelEvent k;
  k.start_ns = 1;
  k.end_ns = 2;
  for (int i = 0; i < 10; ++i) writer.Add(k);
  EXPECT_FALSE(writer.Flush());
  EXPECT_FALSE(writer.ok());
  EXPECT_THAT(writer.error(), HasSubstr("disk full"));
  EXPECT_EQ(writer.totals().events, 0u);
  EXPECT_FALSE(writer.Finish("exit"));
  EXPECT_EQ(writer.totals().losses.write_errors, 10u);
}

TEST(StringTableTest, DenseSparseAndRedefinition) {
  StringTable table;
  EXPECT_TRUE(table.Has(0));
  EXPECT_EQ(table.Get(0), "");
  table.Set(0, "ignored");
  EXPECT_EQ(table.Get(0), "");
  for (uint32_t id = 1; id <= 100; ++id) table.Set(id, "s" + std::to_string(id));
  EXPECT_EQ(table.Get(57), "s57");
  EXPECT_EQ(table.defined_count(), 100u);
  // A hostile id is stored sparsely: no 4e9-entry vector.
  table.Set(4000000000u, "far");
  EXPECT_EQ(table.Get(4000000000u), "far");
  EXPECT_LT(table.size(), 2000u);
  // An id just past the dense end after a gap (a lost chunk's ids) is dense.
  table.Set(1500, "sparse first");  // beyond 2*101+1024: sparse
  EXPECT_TRUE(table.Has(1500));
  table.Set(1200, "gap");  // dense growth to 1201
  EXPECT_FALSE(table.Has(1100));
  EXPECT_EQ(table.Get(1100), "<unknown string 1100>");
  for (uint32_t id = 101; id <= 1400; ++id) table.Set(id, "t" + std::to_string(id));
  table.Set(1600, "grow");  // dense growth over 1500: moved from sparse
  EXPECT_EQ(table.Get(1500), "sparse first");
  table.Set(1500, "redefined");
  EXPECT_EQ(table.Get(1500), "redefined");
  EXPECT_EQ(table.Get(4000000000u), "far");
  EXPECT_EQ(table.defined_count(), 1400u + 3);
}

// The analyzer fuzzer's heap-use-after-free: the Chrome exporter held the API
// name of an unknown id while the call stack's unknown ids were resolved;
// each Get used to overwrite the one text every unknown-id view pointed at.
TEST(StringTableTest, UnknownIdViewsStayValidAcrossLaterGets) {
  StringTable table;
  table.Set(1, "known");
  std::string_view a = table.Get(7);
  std::string_view b = table.Get(8);
  std::string_view c = table.Get(4000000000u);
  EXPECT_EQ(a, "<unknown string 7>");
  EXPECT_EQ(b, "<unknown string 8>");
  EXPECT_EQ(c, "<unknown string 4000000000>");
  EXPECT_EQ(table.Get(7).data(), a.data());  // the same text, not a copy per call
  // Bounded: past 4096 distinct unknown ids, one shared text.
  for (uint32_t id = 100; id < 100 + 5000; ++id) (void)table.Get(id);
  EXPECT_EQ(table.Get(900000), "<unknown string>");
  EXPECT_EQ(a, "<unknown string 7>");
  EXPECT_EQ(table.Get(1), "known");
}

}  // namespace
}  // namespace sightline::trace::testing
