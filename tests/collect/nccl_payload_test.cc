// NCCL's NVTX payloads: decoding (layouts exactly as NCCL 2.28 builds them,
// the older layouts, sizes that must be refused) and the join of decoded
// payloads to NCCL's NVTX ranges in the record converter, from both sources
// (NVTX callback, CUPTI MARKER_DATA record), and the trip through a trace file.
#include "lib/collect/nccl_payload.h"

#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstdlib>
#include <cstring>

#include "gtest/gtest.h"
#include "lib/collect/activity_drain.h"
#include "lib/collect/event_sink.h"
#include "lib/collect/record_converter.h"
#include "lib/trace/reader.h"
#include "lib/trace/sink.h"
#include "lib/trace/writer.h"
#include "tests/collect/fake_event_sink.h"
#include "tests/collect/synthetic_records.h"

namespace sightline::collect {
namespace {

using testing::Marker;

// The structs NCCL 2.28 fills (src/include/nvtx_payload_schemas.h), as the
// C compiler lays them out.
struct AllReduce228 {  // NcclNvtxParamsAllReduce
  uint64_t comm;
  size_t bytes;
  int op;  // ncclRedOp_t
};
struct SendRecv228 {  // NcclNvtxParamsSendRecv
  uint64_t comm;
  size_t bytes;
  int peer;
};
struct AllGather228 {  // NcclNvtxParamsAllGather
  uint64_t comm;
  size_t bytes;
};
struct CommInitRank228 {  // NcclNvtxParamsCommInitRank (also CommDestroy/Abort)
  uint64_t newcomm;
  int nranks;
  int myrank;
  int cudaDev;
};
struct AllReduceOld {  // NCCL 2.19-era: src/collectives.cc NvtxParamsAllReduce
  size_t bytes;
  int op;
};
struct CommInitRankOld {  // NCCL 2.19-era: {rank, nranks, cudaDev}
  int rank;
  int nranks;
  int cudaDev;
};
static_assert(sizeof(AllReduce228) == 24 && sizeof(SendRecv228) == 24 &&
                  sizeof(AllGather228) == 16 && sizeof(CommInitRank228) == 24 &&
                  sizeof(AllReduceOld) == 16 && sizeof(CommInitRankOld) == 12,
              "LP64 layouts");
static_assert(sizeof(NvtxPayloadData) == sizeof(nvtxPayloadData_t) &&
                  offsetof(nvtxPayloadData_t, payload) == offsetof(NvtxPayloadData, payload),
              "our mirror of nvtxPayloadData_t");

constexpr uint64_t kComm = 0x9e3779b97f4a7c15ull;
constexpr uint64_t Sid(NcclSchema s) {
  return kNvtxSchemaIdStaticStart + static_cast<uint64_t>(s);
}

TEST(NcclPayloadDecodeTest, AllReduceAsNccl228LaysItOut) {
  AllReduce228 p{kComm, size_t{16} << 20, 0 /* ncclSum */};
  NcclPayload out;
  ASSERT_TRUE(DecodeNcclPayload(Sid(NcclSchema::kAllReduce), &p, sizeof(p), &out));
  EXPECT_EQ(out.kind, NcclPayload::Kind::kCollective);
  EXPECT_EQ(out.op, NcclOp::kAllReduce);
  EXPECT_TRUE(out.has_comm);
  EXPECT_EQ(out.comm_id, kComm);
  EXPECT_EQ(out.bytes, size_t{16} << 20);
  EXPECT_EQ(out.reduce_op, 0);
}

TEST(NcclPayloadDecodeTest, OtherCollectivesAndCommunicators) {
  SendRecv228 s{kComm, 4096, 1};
  NcclPayload out;
  ASSERT_TRUE(DecodeNcclPayload(Sid(NcclSchema::kRecv), &s, sizeof(s), &out));
  EXPECT_EQ(out.op, NcclOp::kRecv);
  EXPECT_EQ(out.root_or_peer, 1);
  AllGather228 g{kComm, 1024};
  ASSERT_TRUE(DecodeNcclPayload(Sid(NcclSchema::kAllGather), &g, sizeof(g), &out));
  EXPECT_EQ(out.op, NcclOp::kAllGather);
  EXPECT_EQ(out.bytes, 1024u);
  CommInitRank228 c{kComm, 2, 1, 1};
  ASSERT_TRUE(DecodeNcclPayload(Sid(NcclSchema::kCommDestroy), &c, sizeof(c), &out));
  EXPECT_EQ(out.kind, NcclPayload::Kind::kCommunicator);
  EXPECT_EQ(out.comm_id, kComm);
  EXPECT_EQ(out.rank, 1);
  EXPECT_EQ(out.nranks, 2);
  EXPECT_EQ(out.cuda_device, 1);
}

TEST(NcclPayloadDecodeTest, OlderLayoutsDecodeWithoutCommunicator) {
  AllReduceOld p{256, 2};
  NcclPayload out;
  ASSERT_TRUE(DecodeNcclPayload(Sid(NcclSchema::kAllReduce), &p, sizeof(p), &out));
  EXPECT_FALSE(out.has_comm);
  EXPECT_EQ(out.bytes, 256u);
  EXPECT_EQ(out.reduce_op, 2);
  CommInitRankOld c{0, 8, 0};
  ASSERT_TRUE(DecodeNcclPayload(Sid(NcclSchema::kCommInitRank), &c, sizeof(c), &out));
  EXPECT_EQ(out.rank, 0);
  EXPECT_EQ(out.nranks, 8);
  EXPECT_FALSE(out.has_comm);
}

TEST(NcclPayloadDecodeTest, UnknownSizesSchemasAndNonsenseAreRefused) {
  uint8_t bytes[64] = {};
  NcclPayload out;
  out.bytes = 77;
  // A size no NCCL version uses for AllReduce: never decoded, never read past.
  EXPECT_FALSE(DecodeNcclPayload(Sid(NcclSchema::kAllReduce), bytes, 20, &out));
  EXPECT_FALSE(DecodeNcclPayload(Sid(NcclSchema::kAllReduce), bytes, 32, &out));
  EXPECT_FALSE(DecodeNcclPayload(Sid(NcclSchema::kAllReduce), bytes, 0, &out));
  EXPECT_FALSE(DecodeNcclPayload(Sid(NcclSchema::kAllReduce), nullptr, 24, &out));
  EXPECT_FALSE(DecodeNcclPayload(5, bytes, 24, &out));                      // predefined type
  EXPECT_FALSE(DecodeNcclPayload(kNvtxSchemaIdStaticStart + 99, bytes, 24, &out));
  EXPECT_FALSE(DecodeNcclPayload(Sid(NcclSchema::kCommGrow), bytes, 24, &out));
  CommInitRank228 bad{kComm, 2, 7, 0};  // rank outside [0, nranks)
  EXPECT_FALSE(DecodeNcclPayload(Sid(NcclSchema::kCommDestroy), &bad, sizeof(bad), &out));
  EXPECT_EQ(out.bytes, 77u);  // untouched
}

TEST(NcclPayloadDecodeTest, EventAttributesCarryAnArrayOfPayloadData) {
  AllReduce228 p{kComm, 64, 0};
  nvtxPayloadData_t entries[1] = {{Sid(NcclSchema::kAllReduce), sizeof(p), &p}};
  nvtxEventAttributes_t a;
  std::memset(&a, 0, sizeof(a));
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.payloadType = static_cast<int32_t>(0xDFBD0009u);  // NVTX_PAYLOAD_TYPE_EXT
  a.payload.ullValue = reinterpret_cast<uintptr_t>(entries);
  a.reserved0 = 1;
  NcclPayload out;
  ASSERT_TRUE(DecodeNcclEventPayload(a.payloadType, a.payload.ullValue, a.reserved0, &out));
  EXPECT_EQ(out.bytes, 64u);
  EXPECT_FALSE(DecodeNcclEventPayload(NVTX_PAYLOAD_TYPE_INT64, a.payload.ullValue, 1, &out));
  EXPECT_FALSE(DecodeNcclEventPayload(a.payloadType, a.payload.ullValue, 0, &out));
  EXPECT_FALSE(DecodeNcclEventPayload(a.payloadType, 0, 1, &out));
}

TEST(NcclPayloadDecodeTest, RangeNamesMatchTheirSchemaOnly) {
  EXPECT_TRUE(NcclRangeMatchesSchema("ncclAllReduce", NcclSchema::kAllReduce));
  EXPECT_TRUE(NcclRangeMatchesSchema("ncclAllReduce_impl", NcclSchema::kAllReduce));
  EXPECT_FALSE(NcclRangeMatchesSchema("ncclAllGather", NcclSchema::kAllReduce));
  EXPECT_FALSE(NcclRangeMatchesSchema("ncclCommInitRankConfig", NcclSchema::kCommInitRank));
  EXPECT_TRUE(NcclRangeMatchesSchema("ncclCommInitRankConfig", NcclSchema::kCommInitRankConfig));
  EXPECT_FALSE(NcclRangeMatchesSchema("AllReduce", NcclSchema::kAllReduce));
}

// --- join in the converter -------------------------------------------------

NcclPayload Decoded(NcclSchema s, const void* p, size_t size) {
  NcclPayload out;
  EXPECT_TRUE(DecodeNcclPayload(Sid(s), p, size, &out));
  return out;
}

class NcclJoinTest : public ::testing::Test {
 protected:
  NcclJoinTest() : converter_(&sink_, ConverterOptions(), nullptr) {}
  void Convert(const void* record) {
    converter_.Convert(static_cast<const CUpti_Activity*>(record));
  }
  void Range(uint32_t id, uint64_t start, uint64_t end, const char* name, uint32_t thread,
             const char* domain = "NCCL") {
    auto s = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, id, start, name, domain, thread);
    auto e = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, id, end, nullptr, nullptr, thread);
    Convert(&s);
    Convert(&e);
  }
  FakeEventSink sink_;
  RecordConverter converter_;
};

TEST_F(NcclJoinTest, CallbackPayloadsJoinTheirRangesOnTheSameThread) {
  const uint32_t t0 = 0x2056a000u, t1 = 0x91650000u;
  AllReduce228 a{kComm, 16u << 20, 0};
  AllGather228 g{kComm, 4096};
  AllReduce228 wrong_size{kComm, 99, 0};
  converter_.AddNcclPayload(t0, 1000 + 3, Decoded(NcclSchema::kAllReduce, &a, sizeof(a)));
  converter_.AddNcclPayload(t1, 1000 + 1, Decoded(NcclSchema::kAllGather, &g, sizeof(g)));
  // A 20-byte payload is not decodable: the collector's callback never queues it.
  NcclPayload ignored;
  EXPECT_FALSE(DecodeNcclPayload(Sid(NcclSchema::kAllReduce), &wrong_size, 20, &ignored));
  Range(1, 1000, 1100, "ncclAllReduce", t0);
  Range(2, 1000, 1200, "ncclAllGather", t1);
  Range(3, 5000, 5100, "ncclAllReduce", t0);  // its payload had the wrong size
  ASSERT_EQ(sink_.nccls.size(), 3u);
  EXPECT_EQ(sink_.nccls[0].op, NcclOp::kAllReduce);
  EXPECT_EQ(sink_.nccls[0].bytes, 16u << 20);
  EXPECT_EQ(sink_.nccls[0].comm_id, kComm);
  EXPECT_EQ(sink_.nccls[0].source, NcclSource::kHostNvtx);
  EXPECT_EQ(sink_.nccls[1].op, NcclOp::kAllGather);
  EXPECT_EQ(sink_.nccls[1].bytes, 4096u);
  EXPECT_EQ(sink_.nccls[1].thread_id, t1);
  EXPECT_EQ(sink_.nccls[2].bytes, 0u);
  EXPECT_EQ(sink_.nccls[2].comm_id, 0u);
  const NcclJoinStats& s = converter_.stats().nccl;
  EXPECT_EQ(s.ranges, 3u);
  EXPECT_EQ(s.from_callback, 2u);
  EXPECT_EQ(s.without_payload, 1u);
  EXPECT_EQ(s.callback_unmatched, 0u);
}

TEST_F(NcclJoinTest, NoGuessingAcrossThreadsNamesOrDistance) {
  AllReduce228 a{kComm, 128, 0};
  NcclPayload p = Decoded(NcclSchema::kAllReduce, &a, sizeof(a));
  converter_.AddNcclPayload(7, 500000, p);   // other thread
  converter_.AddNcclPayload(8, 1000, p);     // offered to a Broadcast and a non-NCCL range
  converter_.AddNcclPayload(8, 900000, p);   // right thread and call, too far
  Range(1, 500000, 500100, "ncclAllReduce", 8);
  Range(2, 1000, 1100, "ncclBroadcast", 8, "NCCL");
  Range(3, 1000, 1100, "ncclAllReduce", 8, "myapp");  // not NCCL's domain
  ASSERT_EQ(sink_.nccls.size(), 2u);
  for (const NcclEvent& n : sink_.nccls) EXPECT_EQ(n.bytes, 0u);
  converter_.CloseOpenRanges(2000000);
  EXPECT_EQ(converter_.stats().nccl.callback_unmatched, 3u);
  EXPECT_EQ(converter_.stats().nccl.without_payload, 2u);
}

TEST_F(NcclJoinTest, CommunicatorPayloadGivesRankToLaterEventsAndIsWritten) {
  CommInitRank228 c{kComm, 2, 1, 1};
  AllReduce228 a{kComm, 256, 0};
  AllReduce228 other{kComm + 1, 256, 0};
  converter_.AddNcclPayload(4, 100, Decoded(NcclSchema::kCommDestroy, &c, sizeof(c)));
  converter_.AddNcclPayload(4, 1000, Decoded(NcclSchema::kAllReduce, &a, sizeof(a)));
  converter_.AddNcclPayload(4, 2000, Decoded(NcclSchema::kAllReduce, &other, sizeof(other)));
  Range(1, 100, 200, "ncclCommDestroy", 4);
  Range(2, 1000, 1100, "ncclAllReduce", 4);
  Range(3, 2000, 2100, "ncclAllReduce", 4);
  ASSERT_EQ(sink_.nccls.size(), 3u);
  const NcclEvent& comm = sink_.nccls[0];
  EXPECT_EQ(comm.source, NcclSource::kCommunicatorInfo);
  EXPECT_EQ(comm.op, NcclOp::kUnknown);
  EXPECT_EQ(comm.comm_id, kComm);
  EXPECT_EQ(comm.rank, 1);
  EXPECT_EQ(comm.nranks, 2);
  EXPECT_EQ(sink_.Str(comm.name_id), "ncclCommDestroy");
  EXPECT_EQ(sink_.nccls[1].rank, 1);
  EXPECT_EQ(sink_.nccls[1].nranks, 2);
  EXPECT_EQ(sink_.nccls[2].rank, -1);  // another communicator: unknown
  EXPECT_EQ(sink_.nccls[2].nranks, 0);
  EXPECT_EQ(converter_.stats().nccl.comm_events, 1u);
}

// CUPTI 13 MARKER_DATA carrying NCCL's extended payload: a CUPTI-allocated
// copy of the nvtxPayloadData_t and of the payload, which the converter frees.
CUpti_ActivityMarkerData2 ExtPayloadData(uint32_t id, uint64_t schema, const void* p,
                                         size_t size) {
  void* copy = std::malloc(size);
  std::memcpy(copy, p, size);
  auto* data = static_cast<nvtxPayloadData_t*>(std::malloc(sizeof(nvtxPayloadData_t)));
  data->schemaId = schema;
  data->size = size;
  data->payload = copy;
  CUpti_ActivityMarkerData2 d;
  std::memset(&d, 0, sizeof(d));
  d.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  d.id = id;
  d.payloadKind = CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD;
  d.payload.metricValueNvtxExtendedPayload = reinterpret_cast<uintptr_t>(data);
  return d;
}

TEST_F(NcclJoinTest, MarkerDataPayloadJoinsByMarkerIdAndWinsOverTheCallback) {
  AllReduce228 a{kComm, 1u << 20, 0};
  AllReduce228 wrong{kComm, 5, 0};
  auto start = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 11, 1000, "ncclAllReduce", "NCCL", 2);
  auto data = ExtPayloadData(11, Sid(NcclSchema::kAllReduce), &a, sizeof(a));
  auto end = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 11, 1100, nullptr, nullptr, 2);
  // The same push seen by the callback: consumed, not reported as unmatched.
  converter_.AddNcclPayload(2, 1001, Decoded(NcclSchema::kAllReduce, &a, sizeof(a)));
  Convert(&start);
  Convert(&data);
  Convert(&end);
  auto start2 = Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 12, 2000, "ncclAllReduce", "NCCL", 2);
  auto data2 = ExtPayloadData(12, Sid(NcclSchema::kAllReduce), &wrong, 20);  // bad size
  auto end2 = Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 12, 2100, nullptr, nullptr, 2);
  Convert(&data2);  // data may precede its marker
  Convert(&start2);
  Convert(&end2);
  ASSERT_EQ(sink_.nccls.size(), 2u);
  EXPECT_EQ(sink_.nccls[0].bytes, 1u << 20);
  EXPECT_EQ(sink_.nccls[0].comm_id, kComm);
  EXPECT_EQ(sink_.nccls[1].bytes, 0u);
  const NcclJoinStats& s = converter_.stats().nccl;
  EXPECT_EQ(s.from_activity, 1u);
  EXPECT_EQ(s.from_callback, 0u);
  EXPECT_EQ(s.undecoded, 1u);
  converter_.CloseOpenRanges(5000);
  EXPECT_EQ(converter_.stats().nccl.callback_unmatched, 0u);
}

// --- through a trace file ----------------------------------------------------

struct Collect : trace::EventVisitor {
  std::vector<NcclEvent> nccl;
  void OnNccl(const NcclEvent& e) override { nccl.push_back(e); }
};

TEST(NcclPayloadTraceTest, FieldsSurviveTheTraceFile) {
  std::string bytes;
  {
    trace::TraceWriter writer(trace::OpenMemorySink(&bytes));
    ASSERT_TRUE(writer.Begin(TraceHeaderData()));
    TraceWriterEventSink sink(&writer);
    RecordConverter converter(&sink, {}, nullptr);
    CommInitRank228 c{kComm, 2, 0, 0};
    AllReduce228 a{kComm, 16u << 20, 0};
    converter.AddNcclPayload(9, 100, Decoded(NcclSchema::kCommDestroy, &c, sizeof(c)));
    converter.AddNcclPayload(9, 1000, Decoded(NcclSchema::kAllReduce, &a, sizeof(a)));
    testing::PackedBuffer buffer;
    buffer.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100, "ncclCommDestroy", "NCCL", 9));
    buffer.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 150, nullptr, nullptr, 9));
    buffer.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 1000, "ncclAllReduce", "NCCL", 9));
    buffer.Append(Marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 1500, nullptr, nullptr, 9));
    CompletedBuffer cb{buffer.data(), buffer.size(), 0};
    DrainActivityBuffer(cb, &testing::PackedBuffer::Next, &converter);
    ASSERT_TRUE(writer.Finish("exit"));
  }
  auto reader = trace::TraceReader::FromBuffer("nccl", bytes);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Collect seen;
  ASSERT_TRUE((*reader)->ReadAll(seen).ok());
  ASSERT_EQ(seen.nccl.size(), 2u);
  const NcclEvent& ar = seen.nccl[0].source == NcclSource::kHostNvtx ? seen.nccl[0] : seen.nccl[1];
  const NcclEvent& comm = seen.nccl[0].source == NcclSource::kCommunicatorInfo ? seen.nccl[0] : seen.nccl[1];
  EXPECT_EQ(ar.op, NcclOp::kAllReduce);
  EXPECT_EQ(ar.bytes, 16u << 20);
  EXPECT_EQ(ar.comm_id, kComm);
  EXPECT_EQ(ar.rank, 0);
  EXPECT_EQ(ar.nranks, 2);
  EXPECT_EQ(comm.source, NcclSource::kCommunicatorInfo);
  EXPECT_EQ(comm.comm_id, kComm);
  EXPECT_EQ(comm.nranks, 2);
}

}  // namespace
}  // namespace sightline::collect
