// lib/collect/nccl_payload.cc — see nccl_payload.h.
//
// What NCCL emits, read from its public sources (our own summary; no code
// copied). Repository NVIDIA/nccl unless stated otherwise.
//
// * The range: src/include/nvtx.h, macro NVTX3_FUNC_WITH_PARAMS(ID, S, P):
//   builds `nvtxPayloadData_t[] = {{NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START
//   + NVTX_SID_<ID>, sizeof(payload), &payload}}` and an nvtx3
//   `scoped_range_in<nccl_domain>` (domain name "NCCL") whose event attributes
//   carry it, i.e. nvtxDomainRangePushEx at entry, nvtxDomainRangePop at exit.
//   The NVTX3 helpers (nvtx3/nvToolsExtPayload.h, also installed under
//   /usr/local/cuda/include/nvtx3/: NVTX_PAYLOAD_EVTATTR_SET_DATA) set
//   payloadType = NVTX_PAYLOAD_TYPE_EXT = 0xDFBD0009, payload.ullValue = the
//   array's address, reserved0 = the number of entries. The static start is
//   (1 << 24) in every header version seen (NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_
//   STATIC_START in NCCL's bundled copy, NVTX_PAYLOAD_SCHEMA_ID_STATIC_START in
//   CUDA 13's).
// * Schema numbers (NVTX_SID_*, src/include/nvtx.h): CommInitRank 0,
//   CommInitAll 1, CommDestroy 2, CommAbort 3, AllGather 4, AllReduce 5,
//   Broadcast 6, ReduceScatter 7, Reduce 8, Send 9, Recv 10,
//   CommInitRankConfig 11, CommInitRankScalable 12, CommSplit 13,
//   CommFinalize 14, CommShrink 15, AlltoAll 16, Gather 17, Scatter 18 (the
//   newest copies also CommRevoke 19, CommGrow 20, and device-API signals
//   21–23, not decoded). The reduction-op enum schema takes the next free
//   number in each version (11, 14, 16, 24): it is never an event's top-level
//   schema, so the numbers above stay unambiguous.
// * Layouts, "new" (src/include/nvtx_payload_schemas.h, 2024+, NCCL
//   2.23-era onwards incl. 2.28; x86-64 sizes, C alignment):
//     AllGather, AlltoAll        {u64 comm; size_t bytes}                    16
//     AllReduce, ReduceScatter   {u64 comm; size_t bytes; ncclRedOp_t op}   24
//     Broadcast, Gather, Scatter {u64 comm; size_t bytes; int root}         24
//     Reduce                     {u64 comm; size_t bytes; int root; op}     24
//     Send, Recv                 {u64 comm; size_t bytes; int peer}         24
//     CommInitRank (+Config, Scalable, Destroy, Abort, Revoke share it)
//                                {u64 comm; int nranks; int myrank; int cudaDev} 24
//     CommSplit  {u64 newcomm; u64 parentcomm; int nranks, myrank, cudaDev,
//                 color, key}                                              40
//     CommShrink {u64 newcomm; int nranks, myrank, cudaDev, num_exclude}    24
//     CommFinalize {u64 comm}                                               8
//     CommInitAll  {u64 commhash; int ndev}                                 16
//   "comm" is ncclComm::commHash (the same value on every rank of one
//   communicator); "bytes" is count * sizeof(datatype) of one rank's buffer
//   (src/collectives.cc: "Just pass the size of one message and not the
//   total bytes sent/received").
// * Layouts, "old" (src/collectives.cc and src/init.cc before the schemas
//   header, NCCL 2.19–2.22-era): no communicator hash at all.
//     AllGather                  {size_t bytes}                              8
//     AllReduce, ReduceScatter   {size_t bytes; int op}                     16
//     Broadcast                  {size_t bytes; int root}                   16
//     Reduce                     {size_t bytes; int root; int op}           16
//     Send, Recv                 {size_t bytes; int peer}                   16
//     CommInitRank, CommDestroy, CommAbort {int rank; int nranks; int cudaDev} 12
//   Sizes differ from the new layout of the same schema, so size decides.
// * When: collectives and CommDestroy/CommAbort attach the payload at the push.
//   Since the schemas header, ncclCommInitRank/Config/Scalable/Split/Shrink
//   use NVTX3_RANGE + NVTX3_RANGE_ADD_PAYLOAD, which pushes the range with no
//   payload and attaches it at the end through nvtxRangePopPayload (src/init.cc,
//   src/include/nvtx.h class ncclNvtxRange). CUPTI 13.0 has no NVTX callback id
//   for that payload-extension call (cupti_nvtx_cbid.h ends at
//   nvtxDomainSyncUserReleasing), and traces recorded on the H200 with NCCL
//   2.28.3 show the ncclCommInitRank range never closed: with NCCL 2.28 the
//   rank/rank count of a communicator reach us only through ncclCommDestroy
//   (or Abort) at the end of the run. Consumers join them by comm id.
// * RCCL (ROCm/rccl) adds a datatype field to some layouts; where that keeps
//   the size (AllReduce: 24) the fields we read are unchanged, otherwise the
//   size check rejects it.
// * CUPTI 13 (cupti_activity.h, CUpti_ActivityMarkerData2; CUPTI sample
//   nvtx_payload_parser, openxla/xla cupti_marker_data_parser): MARKER_DATA
//   records of such events may carry payloadKind
//   CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD with
//   payload.metricValueNvtxExtendedPayload = address of a CUPTI-allocated
//   copy of the nvtxPayloadData_t whose `payload` is allocated too; the client
//   frees both with free(). See RecordConverter::ConvertMarkerData.
#include "lib/collect/nccl_payload.h"

#include <cstring>

namespace sightline::collect {
namespace {

static_assert(sizeof(NvtxPayloadData) == 24, "nvtxPayloadData_t is {u64, size_t, ptr}");
static_assert(sizeof(size_t) == 8, "layouts below are the LP64 ones");

template <typename T>
T Read(const void* data, size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(data) + offset, sizeof(T));
  return v;
}

NcclOp OpOf(NcclSchema s) {
  switch (s) {
    case NcclSchema::kAllGather: return NcclOp::kAllGather;
    case NcclSchema::kAllReduce: return NcclOp::kAllReduce;
    case NcclSchema::kBroadcast: return NcclOp::kBroadcast;
    case NcclSchema::kReduceScatter: return NcclOp::kReduceScatter;
    case NcclSchema::kReduce: return NcclOp::kReduce;
    case NcclSchema::kSend: return NcclOp::kSend;
    case NcclSchema::kRecv: return NcclOp::kRecv;
    case NcclSchema::kAlltoAll: return NcclOp::kAllToAll;
    default: return NcclOp::kUnknown;
  }
}

// Collectives: new layout {u64 comm; size_t bytes; int a; int b}, old layout
// {size_t bytes; int a; int b}. `ints` = how many int fields the schema has.
bool DecodeCollective(NcclSchema s, const void* data, size_t size, int ints, NcclPayload* p) {
  size_t new_size = ints == 0 ? 16 : 24;
  size_t old_size = ints == 0 ? 8 : 16;
  size_t base = 0;
  if (size == new_size) {
    p->has_comm = true;
    p->comm_id = Read<uint64_t>(data, 0);
    base = 8;
  } else if (size == old_size) {
    base = 0;
  } else {
    return false;
  }
  p->kind = NcclPayload::Kind::kCollective;
  p->schema = s;
  p->op = OpOf(s);
  p->has_bytes = true;
  p->bytes = Read<uint64_t>(data, base);
  size_t i0 = base + 8, i1 = base + 12;
  switch (s) {
    case NcclSchema::kAllReduce:
    case NcclSchema::kReduceScatter:
      p->reduce_op = Read<int32_t>(data, i0);
      break;
    case NcclSchema::kBroadcast:
    case NcclSchema::kGather:
    case NcclSchema::kScatter:
    case NcclSchema::kSend:
    case NcclSchema::kRecv:
      p->root_or_peer = Read<int32_t>(data, i0);
      break;
    case NcclSchema::kReduce:
      p->root_or_peer = Read<int32_t>(data, i0);
      p->reduce_op = Read<int32_t>(data, i1);
      break;
    default:
      break;
  }
  return true;
}

bool DecodeCommunicator(NcclSchema s, const void* data, size_t size, NcclPayload* p) {
  NcclPayload r;
  r.kind = NcclPayload::Kind::kCommunicator;
  r.schema = s;
  switch (s) {
    case NcclSchema::kCommInitRank:
    case NcclSchema::kCommInitRankConfig:
    case NcclSchema::kCommInitRankScalable:
    case NcclSchema::kCommDestroy:
    case NcclSchema::kCommAbort:
    case NcclSchema::kCommRevoke:
      if (size == 24) {  // {u64 comm; int nranks; int myrank; int cudaDev}
        r.has_comm = true;
        r.comm_id = Read<uint64_t>(data, 0);
        r.nranks = Read<int32_t>(data, 8);
        r.rank = Read<int32_t>(data, 12);
        r.cuda_device = Read<int32_t>(data, 16);
      } else if (size == 12 && s != NcclSchema::kCommRevoke) {  // {rank; nranks; cudaDev}
        r.rank = Read<int32_t>(data, 0);
        r.nranks = Read<int32_t>(data, 4);
        r.cuda_device = Read<int32_t>(data, 8);
      } else {
        return false;
      }
      break;
    case NcclSchema::kCommSplit:
      if (size != 40) return false;
      r.has_comm = true;
      r.comm_id = Read<uint64_t>(data, 0);
      r.parent_comm_id = Read<uint64_t>(data, 8);
      r.nranks = Read<int32_t>(data, 16);
      r.rank = Read<int32_t>(data, 20);
      r.cuda_device = Read<int32_t>(data, 24);
      break;
    case NcclSchema::kCommShrink:
      if (size != 24) return false;
      r.has_comm = true;
      r.comm_id = Read<uint64_t>(data, 0);
      r.nranks = Read<int32_t>(data, 8);
      r.rank = Read<int32_t>(data, 12);
      r.cuda_device = Read<int32_t>(data, 16);
      break;
    case NcclSchema::kCommFinalize:
      if (size != 8) return false;
      r.has_comm = true;
      r.comm_id = Read<uint64_t>(data, 0);
      break;
    default:
      return false;
  }
  // A rank outside [0, nranks) is not a layout we understand.
  if (r.nranks != 0 && (r.nranks < 0 || r.rank < 0 || r.rank >= r.nranks)) return false;
  *p = r;
  return true;
}

}  // namespace

std::string_view NcclSchemaName(NcclSchema schema) {
  static constexpr std::string_view kNames[kNcclSchemaCount] = {
      "CommInitRank", "CommInitAll", "CommDestroy", "CommAbort", "AllGather", "AllReduce",
      "Broadcast", "ReduceScatter", "Reduce", "Send", "Recv", "CommInitRankConfig",
      "CommInitRankScalable", "CommSplit", "CommFinalize", "CommShrink", "AlltoAll", "Gather",
      "Scatter", "CommRevoke", "CommGrow"};
  uint32_t i = static_cast<uint32_t>(schema);
  return i < kNcclSchemaCount ? kNames[i] : std::string_view();
}

bool DecodeNcclPayload(uint64_t schema_id, const void* data, size_t size, NcclPayload* out) {
  if (data == nullptr || out == nullptr || schema_id < kNvtxSchemaIdStaticStart) return false;
  uint64_t sid = schema_id - kNvtxSchemaIdStaticStart;
  if (sid >= kNcclSchemaCount) return false;
  auto s = static_cast<NcclSchema>(sid);
  NcclPayload p;
  switch (s) {
    case NcclSchema::kAllGather:
    case NcclSchema::kAlltoAll:
      if (!DecodeCollective(s, data, size, 0, &p)) return false;
      break;
    case NcclSchema::kAllReduce:
    case NcclSchema::kReduceScatter:
    case NcclSchema::kBroadcast:
    case NcclSchema::kReduce:
    case NcclSchema::kSend:
    case NcclSchema::kRecv:
      if (!DecodeCollective(s, data, size, 1, &p)) return false;
      break;
    case NcclSchema::kGather:
    case NcclSchema::kScatter:
      // Only in the new layout (the calls are new).
      if (size != 24 || !DecodeCollective(s, data, size, 1, &p)) return false;
      break;
    case NcclSchema::kCommInitAll:
      if (size != 16) return false;
      p.kind = NcclPayload::Kind::kCommunicator;
      p.schema = s;
      p.has_comm = true;
      p.comm_id = Read<uint64_t>(data, 0);
      break;
    case NcclSchema::kCommGrow:
      return false;  // layout not known to us
    default:
      if (!DecodeCommunicator(s, data, size, &p)) return false;
      break;
  }
  *out = p;
  return true;
}

bool DecodeNcclEventPayload(int32_t payload_type, uint64_t payload_value, int32_t entry_count,
                            NcclPayload* out) {
  if (payload_type != kNvtxPayloadTypeExt || payload_value == 0 || entry_count <= 0) return false;
  const auto* entries = reinterpret_cast<const NvtxPayloadData*>(static_cast<uintptr_t>(payload_value));
  int n = entry_count < 4 ? entry_count : 4;
  for (int i = 0; i < n; ++i) {
    const NvtxPayloadData& d = entries[i];
    if (DecodeNcclPayload(d.schema_id, d.payload, d.size, out)) return true;
  }
  return false;
}

bool NcclRangeMatchesSchema(std::string_view range_name, NcclSchema schema) {
  std::string_view name = NcclSchemaName(schema);
  if (name.empty() || range_name.size() < 4 + name.size()) return false;
  if (range_name.substr(0, 4) != "nccl" || range_name.substr(4, name.size()) != name) return false;
  // "ncclCommInitRank" must not match "ncclCommInitRankConfig": what follows
  // the name may only be a non-letter suffix ("_impl").
  if (range_name.size() == 4 + name.size()) return true;
  char next = range_name[4 + name.size()];
  return !((next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z'));
}

}  // namespace sightline::collect
