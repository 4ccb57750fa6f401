// Wire compatibility with the generated protobuf classes of trace.proto, both
// ways: payloads of our hand-rolled writer parse with the generated classes,
// payloads encoded by the generated classes read back with our reader, and
// unknown fields added by a "newer writer" are skipped.
#include "gmock/gmock.h"
#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "lib/trace/format.h"
#include "sightline/v1/trace.pb.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace::testing {
namespace {

namespace v1 = ::sightline::v1;

TEST(WireCompatTest, OurPayloadsParseWithGeneratedClasses) {
  std::string bytes;
  std::vector<AnyEvent> written;
  {
    TraceWriter writer(OpenMemorySink(&bytes));
    ASSERT_TRUE(writer.Begin(SampleHeader()));
    written = EveryKindFullySet(&writer, 1700000000000000000ull);
    for (const AnyEvent& e : written) AddTo(writer, e);
    KernelEvent plain;  // 1-D launch: y/z must be absent on the wire
    plain.start_ns = 1700000000000000000ull + 42;
    plain.end_ns = plain.start_ns + 7;
    plain.grid_x = 80;
    plain.block_x = 256;
    writer.Add(plain);
    ASSERT_TRUE(writer.Finish("signal SIGTERM"));
  }
  std::vector<RawFrame> frames = SplitFrames(bytes);
  ASSERT_EQ(frames.size(), 3u);
  ASSERT_EQ(frames[0].type, static_cast<uint8_t>(FrameType::kHeader));
  ASSERT_EQ(frames[1].type, static_cast<uint8_t>(FrameType::kChunk));
  ASSERT_EQ(frames[2].type, static_cast<uint8_t>(FrameType::kFooter));

  v1::TraceHeader header;
  ASSERT_TRUE(header.ParseFromString(frames[0].payload));
  EXPECT_EQ(header.format_version(), kFormatVersion);
  EXPECT_EQ(header.tool_version(), "0.1.0-test");
  EXPECT_EQ(header.process().pid(), 31337u);
  EXPECT_EQ(header.process().rank(), 3);
  ASSERT_EQ(header.process().command_line_size(), 5);
  EXPECT_EQ(header.process().command_line(3), "");
  EXPECT_EQ(header.process().command_line(4), "ünïcode");
  ASSERT_EQ(header.devices_size(), 2);
  EXPECT_EQ(header.devices(0).name(), "NVIDIA H200");
  EXPECT_EQ(header.devices(0).sm_count(), 132u);
  EXPECT_EQ(header.devices(0).shared_memory_per_block_optin(), 232448u);
  EXPECT_DOUBLE_EQ(header.devices(0).memory_bandwidth_gbps(), 4800.5);
  EXPECT_EQ(header.devices(1).pci_bus_id(), 0x3bu);
  EXPECT_EQ(header.clock().realtime_ns(), 1764480000000000000ull);
  EXPECT_EQ(header.enabled_size(), 4);
  EXPECT_EQ(header.capture_range(), "nvtx:train");

  v1::Chunk chunk;
  ASSERT_TRUE(chunk.ParseFromString(frames[1].payload));
  EXPECT_EQ(chunk.sequence(), 0u);
  ASSERT_EQ(chunk.events_size(), static_cast<int>(written.size()) + 1);
  // Strings are defined in the chunk, ids dense from 1.
  ASSERT_GE(chunk.strings_size(), 10);
  EXPECT_EQ(chunk.strings(0).id(), 1u);
  EXPECT_EQ(chunk.strings(0).value(), "void gemm_kernel<float, 128>(float const*, float*)");
  // Timestamps: delta from the previous event's start, first from base time.
  uint64_t start = chunk.base_time_ns();
  for (int i = 0; i < chunk.events_size(); ++i) {
    start += static_cast<uint64_t>(chunk.events(i).start_delta_ns());
    if (i < static_cast<int>(written.size()) && written[i].kind == EventKind::kKernel) {
      EXPECT_EQ(start, written[i].kernel.start_ns);
    }
  }
  const v1::Event& kernel_event = chunk.events(0);
  ASSERT_TRUE(kernel_event.has_kernel());
  const v1::KernelEvent& k = kernel_event.kernel();
  EXPECT_EQ(kernel_event.duration_ns(), 250000u);
  EXPECT_EQ(k.device_id(), 7u);
  EXPECT_EQ(k.correlation_id(), 0xfffffff0u);
  EXPECT_EQ(k.grid_x(), 2147483647u);
  EXPECT_TRUE(k.has_grid_y());
  EXPECT_EQ(k.grid_y(), 65535u);
  EXPECT_TRUE(k.has_grid_z());  // explicit 0 is kept
  EXPECT_EQ(k.grid_z(), 0u);
  EXPECT_EQ(k.block_z(), 3u);
  EXPECT_EQ(k.graph_node_id(), UINT64_MAX);
  EXPECT_TRUE(k.replayed());
  EXPECT_EQ(k.cache_config_executed(), 2u);
  EXPECT_TRUE(k.untraced());
  // Negative delta (memcpy starts before the kernel).
  EXPECT_EQ(chunk.events(1).start_delta_ns(), -500);
  EXPECT_EQ(chunk.events(1).memcpy().src_kind(), v1::MEMORY_KIND_PAGEABLE);
  EXPECT_EQ(chunk.events(1).memcpy().copy_kind(), v1::COPY_KIND_PTOP);
  EXPECT_EQ(chunk.events(3).sync().stream_id(), kNoStream);
  EXPECT_EQ(chunk.events(3).sync().sync_kind(), v1::SYNC_KIND_CONTEXT_SYNCHRONIZE);
  EXPECT_EQ(chunk.events(4).api().domain(), v1::API_DOMAIN_DRIVER);
  EXPECT_EQ(chunk.events(5).nvtx_range().payload_int(), -1234567890123ll);
  EXPECT_DOUBLE_EQ(chunk.events(5).nvtx_range().payload_double(), -2.5e-300);
  EXPECT_EQ(chunk.events(6).duration_ns(), 0u);
  EXPECT_EQ(chunk.events(6).nvtx_marker().payload_int(), INT64_MIN);
  EXPECT_EQ(chunk.events(7).nccl().rank(), -1);
  EXPECT_EQ(chunk.events(7).nccl().op(), v1::NCCL_OP_REDUCE_SCATTER);
  ASSERT_EQ(chunk.events(8).metric_range().values_size(), 4);
  EXPECT_DOUBLE_EQ(chunk.events(8).metric_range().values(0).value(), 87.5);
  EXPECT_EQ(chunk.events(9).capture_window().trigger(), 2u);
  EXPECT_EQ(chunk.events(11).step().step(), 1ull << 50);
  EXPECT_EQ(chunk.events(12).loss().stacks_dropped(), 8u);
  const v1::MemoryEvent& memory = chunk.events(13).memory();
  EXPECT_EQ(memory.operation(), v1::MEMORY_OPERATION_RELEASE);
  EXPECT_EQ(memory.memory_kind(), v1::MEMORY_KIND_DEVICE);
  EXPECT_EQ(memory.stream_id(), kNoStream);
  EXPECT_EQ(memory.bytes(), 3ull << 33);
  EXPECT_EQ(memory.pool_release_threshold(), UINT64_MAX);
  EXPECT_EQ(chunk.events(13).duration_ns(), 0u);
  EXPECT_EQ(chunk.events(12).loss().gpu_metric_samples_dropped(), 9u);
  EXPECT_EQ(chunk.events(12).loss().untraced_kernels_lost(), 10u);
  // PM samples: packed arrays the generated parser reads as written.
  ASSERT_TRUE(chunk.events(14).has_gpu_metrics());
  const v1::GpuMetricSamplesEvent& g = chunk.events(14).gpu_metrics();
  EXPECT_EQ(g.device_id(), 3u);
  EXPECT_EQ(g.interval_ns(), 100000u);
  ASSERT_EQ(g.metric_name_ids_size(), 2);
  ASSERT_EQ(g.sample_start_offset_ns_size(), 3);
  EXPECT_EQ(g.sample_start_offset_ns(0), 0u);
  EXPECT_EQ(g.sample_start_offset_ns(1), 500000u - 11u);
  EXPECT_EQ(g.sample_duration_ns(0), 500000u - 11u);
  EXPECT_EQ(g.sample_duration_ns(2), 100000u);
  ASSERT_EQ(g.values_size(), 6);
  EXPECT_FLOAT_EQ(g.values(2), 99.75f);
  EXPECT_FLOAT_EQ(g.values(5), 42.0f);
  EXPECT_EQ(chunk.events(14).duration_ns(), 700000u - 11u);
  const v1::KernelEvent& plain = chunk.events(14 + 1).kernel();
  EXPECT_FALSE(plain.has_grid_y());
  EXPECT_FALSE(plain.has_grid_z());
  EXPECT_FALSE(plain.has_block_y());
  EXPECT_FALSE(plain.has_block_z());
  // Every byte is accounted for: re-serialising gives the same size.
  EXPECT_EQ(chunk.ByteSizeLong(), frames[1].payload.size());

  v1::Footer footer;
  ASSERT_TRUE(footer.ParseFromString(frames[2].payload));
  EXPECT_EQ(footer.chunks(), 1u);
  EXPECT_EQ(footer.events(), written.size() + 1);
  EXPECT_EQ(footer.end_reason(), "signal SIGTERM");
  EXPECT_EQ(footer.losses().write_errors(), 7u);
  bool saw_kernel_count = false;
  for (const v1::EventCount& c : footer.counts()) {
    if (c.kind() == v1::EVENT_KIND_KERNEL) {
      EXPECT_EQ(c.count(), 2u);
      saw_kernel_count = true;
    }
  }
  EXPECT_TRUE(saw_kernel_count);
}

// A chunk encoded by the generated classes: one event of every kind.
v1::Chunk GeneratedChunk() {
  v1::Chunk chunk;
  chunk.set_sequence(0);
  chunk.set_base_time_ns(5000);
  auto* s = chunk.add_strings();
  s->set_id(1);
  s->set_value("generated_kernel");
  auto* st = chunk.add_stacks();
  st->set_id(1);
  auto* fr = st->add_frames();
  fr->set_function_id(1);
  fr->set_offset(77);

  auto* e = chunk.add_events();
  e->set_start_delta_ns(0);
  e->set_duration_ns(100);
  auto* k = e->mutable_kernel();
  k->set_name_id(1);
  k->set_grid_x(10);
  k->set_grid_z(4);  // y absent → 1
  k->set_block_x(96);
  k->set_registers_per_thread(40);
  k->set_graph_id(5);

  e = chunk.add_events();
  e->set_start_delta_ns(-200);
  e->set_duration_ns(50);
  e->mutable_memcpy()->set_bytes(1 << 20);
  e->mutable_memcpy()->set_src_kind(v1::MEMORY_KIND_PAGEABLE);

  e = chunk.add_events();
  e->set_start_delta_ns(1000);
  e->mutable_nvtx_marker()->set_name_id(1);
  e->mutable_nvtx_marker()->set_payload_double(0.5);

  e = chunk.add_events();
  e->set_start_delta_ns(10);
  e->set_duration_ns(3);
  auto* n = e->mutable_nccl();
  n->set_rank(2);
  n->set_nranks(8);
  n->set_op(v1::NCCL_OP_ALL_REDUCE);

  e = chunk.add_events();
  e->set_start_delta_ns(10);
  auto* m = e->mutable_metric_range();
  m->set_correlation_id(9);
  auto* val = m->add_values();
  val->set_name_id(1);
  val->set_value(12.25);
  m->add_values()->set_value(-1);

  e = chunk.add_events();
  e->set_start_delta_ns(1);
  e->mutable_sync()->set_sync_kind(v1::SYNC_KIND_STREAM_SYNCHRONIZE);  // stream_id 0

  e = chunk.add_events();
  e->mutable_loss()->set_cupti_dropped_records(17);

  e = chunk.add_events();
  e->set_start_delta_ns(3);
  auto* mem = e->mutable_memory();
  mem->set_operation(v1::MEMORY_OPERATION_ALLOCATION);
  mem->set_memory_kind(v1::MEMORY_KIND_DEVICE);
  mem->set_address(0x7f0000200000ull);
  mem->set_bytes(2 << 20);  // stream_id absent: 0 on the wire
  return chunk;
}

std::string GeneratedFile(const v1::Chunk& chunk, const v1::Footer* footer) {
  v1::TraceHeader header;
  header.set_format_version(1);
  header.set_tool_version("other-writer 9.9");
  header.mutable_process()->set_pid(4);
  header.mutable_process()->set_rank(-1);
  header.add_devices()->set_name("Test GPU");
  std::string file = Preamble();
  file += Frame(1, header.SerializeAsString());
  file += Frame(2, chunk.SerializeAsString());
  if (footer) file += Frame(3, footer->SerializeAsString());
  return file;
}

TEST(WireCompatTest, GeneratedPayloadsReadWithOurReader) {
  v1::Footer footer;
  footer.set_chunks(1);
  footer.set_events(8);
  footer.set_end_reason("exit");
  footer.mutable_losses()->set_cupti_dropped_records(17);
  std::string file = GeneratedFile(GeneratedChunk(), &footer);

  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(file, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().tool_version, "other-writer 9.9");
  EXPECT_EQ((*reader)->header().process.rank, -1);
  ASSERT_EQ((*reader)->header().devices.size(), 1u);
  EXPECT_EQ((*reader)->header().devices[0].name, "Test GPU");
  EXPECT_EQ((*reader)->header().devices[0].warp_size, 0u);  // absent on the wire
  ASSERT_EQ(visitor.events.size(), 8u);

  const KernelEvent& k = visitor.events[0].kernel;
  EXPECT_EQ(k.start_ns, 5000u);
  EXPECT_EQ(k.end_ns, 5100u);
  EXPECT_EQ((*reader)->strings().Get(k.name_id), "generated_kernel");
  EXPECT_EQ(k.grid_x, 10u);
  EXPECT_EQ(k.grid_y, 1u);
  EXPECT_EQ(k.grid_z, 4u);
  EXPECT_EQ(k.block_y, 1u);
  EXPECT_EQ(k.registers_per_thread, 40u);
  EXPECT_EQ(k.graph_id, 5u);
  const MemcpyEvent& m = visitor.events[1].memcpy;
  EXPECT_EQ(m.start_ns, 4800u);
  EXPECT_EQ(m.end_ns, 4850u);
  EXPECT_EQ(m.src_kind, MemoryKind::kPageable);
  EXPECT_EQ(visitor.events[2].nvtx_marker.timestamp_ns, 5800u);
  EXPECT_EQ(visitor.events[2].nvtx_marker.payload_double, 0.5);
  EXPECT_EQ(visitor.events[3].nccl.rank, 2);
  EXPECT_EQ(visitor.events[3].nccl.op, NcclOp::kAllReduce);
  ASSERT_EQ(visitor.events[4].metric_range.values.size(), 2u);
  EXPECT_EQ(visitor.events[4].metric_range.values[0].value, 12.25);
  EXPECT_EQ(visitor.events[4].metric_range.values[1].value, -1);
  EXPECT_EQ(visitor.events[5].sync.stream_id, 0u);
  EXPECT_EQ(visitor.events[6].loss.cupti_dropped_records, 17u);
  const MemoryEvent& mem = visitor.events[7].memory;
  EXPECT_EQ(mem.operation, MemoryOperation::kAllocation);
  EXPECT_EQ(mem.bytes, 2u << 20);
  EXPECT_EQ(mem.stream_id, 0u);
  const CallStack* stack = (*reader)->stack(1);
  ASSERT_NE(stack, nullptr);
  EXPECT_EQ(stack->frames[0].offset, 77u);
  const Integrity& in = (*reader)->integrity();
  EXPECT_TRUE(in.complete) << in.reason;
  EXPECT_EQ(in.losses.cupti_dropped_records, 17u);
}

// PM samples from another writer: packed arrays (ours) and unpacked ones (a
// protobuf writer may emit either) read alike; arrays that disagree (a
// duration or a value missing) make the event invalid: counted, not visited.
TEST(WireCompatTest, GpuMetricSamplesPackedUnpackedAndInconsistent) {
  v1::Chunk chunk;
  chunk.set_sequence(0);
  chunk.add_strings()->set_value("sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
  chunk.mutable_strings(0)->set_id(1);
  auto add = [&](uint64_t start_delta, int samples, int durations, int values) {
    v1::Event* e = chunk.add_events();
    e->set_start_delta_ns(start_delta);
    e->set_duration_ns(300);
    v1::GpuMetricSamplesEvent* g = e->mutable_gpu_metrics();
    g->set_device_id(2);
    g->set_interval_ns(100);
    g->add_metric_name_ids(1);
    for (int i = 0; i < samples; ++i) g->add_sample_start_offset_ns(100 * i);
    for (int i = 0; i < durations; ++i) g->add_sample_duration_ns(100);
    for (int i = 0; i < values; ++i) g->add_values(10.0f * i);
    return g;
  };
  add(1000, 3, 3, 3);
  add(1000, 3, 2, 3);  // a duration missing
  add(1000, 3, 3, 4);  // a value too many
  add(1000, 2, 2, 2);
  std::string file = GeneratedFile(chunk, nullptr);
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(file, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(visitor.events.size(), 2u);
  const GpuMetricSamplesEvent& g = visitor.events[0].gpu_metrics;
  EXPECT_EQ(g.device_id, 2u);
  EXPECT_EQ(g.interval_ns, 100u);
  ASSERT_EQ(g.num_samples(), 3u);
  EXPECT_EQ(g.sample_start_ns[0], 1000u);
  EXPECT_EQ(g.sample_end_ns[2], 1300u);
  EXPECT_EQ(g.value(2, 0), 20.0f);
  EXPECT_EQ((*reader)->strings().Get(g.metric_name_ids[0]),
            "sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(visitor.events[1].gpu_metrics.sample_start_ns[0], 4000u);  // deltas still count
  EXPECT_EQ((*reader)->integrity().invalid_events, 2u);

  // Unpacked repeated varints (one tag per element) read as packed ones.
  v1::Chunk unpacked;
  unpacked.set_sequence(0);
  v1::Event* e = unpacked.add_events();
  e->set_start_delta_ns(50);
  e->set_duration_ns(200);
  google::protobuf::UnknownFieldSet* u =
      e->mutable_gpu_metrics()->GetReflection()->MutableUnknownFields(e->mutable_gpu_metrics());
  u->AddVarint(1, 0);   // device_id
  u->AddVarint(3, 0);   // sample_start_offset_ns, unpacked
  u->AddVarint(3, 100);
  u->AddVarint(4, 100);  // sample_duration_ns, unpacked
  u->AddVarint(4, 100);
  u->AddLengthDelimited(5, "");  // an empty packed `values`: nothing to copy (once UB: memcpy to null)
  RecordingVisitor v2;
  auto r2 = ReadAllFromBuffer(GeneratedFile(unpacked, nullptr), &v2);
  ASSERT_TRUE(r2.ok()) << r2.status();
  ASSERT_EQ(v2.events.size(), 1u);
  EXPECT_EQ(v2.events[0].gpu_metrics.num_samples(), 2u);  // no metrics: no values
  EXPECT_EQ(v2.events[0].gpu_metrics.sample_end_ns[1], 250u);
  EXPECT_EQ((*r2)->integrity().invalid_events, 0u);
}

// Adds one unknown field of every wire type to `message`.
void AddUnknownFields(google::protobuf::Message* message, int base) {
  google::protobuf::UnknownFieldSet* unknown =
      message->GetReflection()->MutableUnknownFields(message);
  unknown->AddVarint(base + 1, 0xffffffffffull);
  unknown->AddFixed32(base + 2, 7);
  unknown->AddFixed64(base + 3, 9);
  unknown->AddLengthDelimited(base + 4, "future payload bytes");
  google::protobuf::UnknownFieldSet* group = unknown->AddGroup(base + 5);
  group->AddVarint(1, 3);
  group->AddGroup(2)->AddLengthDelimited(3, "nested");
}

TEST(WireCompatTest, UnknownFieldsFromANewerWriterAreSkipped) {
  v1::Chunk chunk = GeneratedChunk();
  AddUnknownFields(&chunk, 100);
  for (v1::Event& e : *chunk.mutable_events()) AddUnknownFields(&e, 200);
  AddUnknownFields(chunk.mutable_events(0)->mutable_kernel(), 300);
  AddUnknownFields(chunk.mutable_events(4)->mutable_metric_range()->mutable_values(0), 400);
  AddUnknownFields(chunk.mutable_strings(0), 500);
  // An event whose payload is a kind this reader does not know (oneof field
  // 40): skipped, but its start delta still counts for the next event.
  v1::Event future;
  future.set_start_delta_ns(1000000);
  future.GetReflection()->MutableUnknownFields(&future)->AddLengthDelimited(40, "new kind");
  v1::Event after;
  after.set_start_delta_ns(5);
  after.set_duration_ns(1);
  after.mutable_kernel()->set_grid_x(1);
  *chunk.add_events() = future;
  *chunk.add_events() = after;

  v1::Footer footer;
  footer.set_chunks(1);
  footer.set_events(9);
  AddUnknownFields(&footer, 600);
  std::string file = GeneratedFile(chunk, &footer);

  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(file, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(visitor.events.size(), 9u);
  EXPECT_EQ(visitor.events[0].kernel.grid_x, 10u);
  EXPECT_EQ(visitor.events[0].kernel.registers_per_thread, 40u);
  EXPECT_EQ(visitor.events[4].metric_range.values[0].value, 12.25);
  EXPECT_EQ((*reader)->strings().Get(1), "generated_kernel");
  // Start of the last event: 5000 -200 +1000 +10 +10 +1 +0 (loss) +3 (memory) +1e6 +5.
  EXPECT_EQ(visitor.events[8].kernel.start_ns,
            5000u - 200 + 1000 + 10 + 10 + 1 + 3 + 1000000 + 5);
  EXPECT_EQ((*reader)->integrity().footer->events, 9u);
  EXPECT_TRUE((*reader)->integrity().complete) << (*reader)->integrity().reason;
}

TEST(WireCompatTest, BadWireTypesAreRejectedCleanly) {
  // Field 5 (events) with wire type 7 (invalid) inside a CRC-valid chunk.
  std::string chunk_payload = "\x08\x00\x2f";
  std::string file = Preamble() + Frame(1, "") + Frame(2, chunk_payload) + Frame(3, "");
  RecordingVisitor visitor;
  auto reader = ReadAllFromBuffer(file, &visitor);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const Integrity& in = (*reader)->integrity();
  EXPECT_FALSE(in.complete);
  EXPECT_EQ(in.chunks_damaged, 1u);
  EXPECT_THAT(in.reason, ::testing::HasSubstr("undecodable chunk at byte 28"));
  // Unmatched end-group, and a length running past the end, inside an event.
  for (std::string event : {std::string("\x2a\x01\x0c", 3), std::string("\x2a\x03\x52\x05\x08", 5)}) {
    file = Preamble() + Frame(1, "") + Frame(2, event);
    RecordingVisitor v2;
    auto r2 = ReadAllFromBuffer(file, &v2);
    ASSERT_TRUE(r2.ok());
    EXPECT_EQ((*r2)->integrity().chunks_damaged, 1u);
    EXPECT_TRUE(v2.events.empty());
  }
}

}  // namespace
}  // namespace sightline::trace::testing
