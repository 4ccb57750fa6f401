// lib/collect/nccl_payload.h — decoding the binary payloads NCCL attaches to
// its NVTX ranges (message size, communicator hash, root/peer, reduction op;
// rank and rank count on communicator set-up and tear-down).
//
// How NCCL emits them (facts and sources at the top of nccl_payload.cc):
// every NCCL API call opens a push/pop range in NVTX domain "NCCL" with
// nvtxDomainRangePushEx; the event attributes carry
//   payloadType      = NVTX_PAYLOAD_TYPE_EXT (0xDFBD0009),
//   payload.ullValue = address of an array of nvtxPayloadData_t
//                      {uint64 schemaId, size_t size, const void* payload},
//   reserved0        = number of entries (NCCL: 1).
// schemaId is NVTX_PAYLOAD_SCHEMA_ID_STATIC_START (1 << 24) plus NCCL's own
// NVTX_SID_* number; `payload` points at a small C struct whose layout
// depends on the NCCL version. The decoder accepts a payload only when its
// schema id is one of NCCL's and its size equals a layout we know for that
// schema; it never reads past `size`. Anything else is left undecoded.
//
// Pure logic with no CUDA/CUPTI dependency: the collector's NVTX callback,
// the record converter (CUPTI 13 MARKER_DATA records carry a copy of the
// payload) and the CPU tests all use it.
#ifndef SIGHTLINE_LIB_COLLECT_NCCL_PAYLOAD_H_
#define SIGHTLINE_LIB_COLLECT_NCCL_PAYLOAD_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lib/trace/events.h"

namespace sightline::collect {

// NVTX payload extension constants (nvtx3/nvToolsExtPayload.h).
inline constexpr int32_t kNvtxPayloadTypeExt = static_cast<int32_t>(0xDFBD0009u);
inline constexpr uint64_t kNvtxSchemaIdStaticStart = uint64_t{1} << 24;

// The layout of nvtxPayloadData_t (checked against the NVTX header where
// both are visible, in collector_callbacks.cc).
struct NvtxPayloadData {
  uint64_t schema_id;
  size_t size;
  const void* payload;
};

// NCCL's static schema numbers (NVTX_SID_* in NCCL's src/include/nvtx.h;
// stable across versions, new ones only appended).
enum class NcclSchema : uint8_t {
  kCommInitRank = 0, kCommInitAll = 1, kCommDestroy = 2, kCommAbort = 3,
  kAllGather = 4, kAllReduce = 5, kBroadcast = 6, kReduceScatter = 7, kReduce = 8,
  kSend = 9, kRecv = 10, kCommInitRankConfig = 11, kCommInitRankScalable = 12,
  kCommSplit = 13, kCommFinalize = 14, kCommShrink = 15, kAlltoAll = 16, kGather = 17,
  kScatter = 18, kCommRevoke = 19, kCommGrow = 20,
};
inline constexpr uint32_t kNcclSchemaCount = 21;

// What one payload said. Fields a layout does not have keep their defaults.
struct NcclPayload {
  enum class Kind : uint8_t { kNone = 0, kCollective = 1, kCommunicator = 2 };
  Kind kind = Kind::kNone;
  NcclSchema schema = NcclSchema::kCommInitRank;
  NcclOp op = NcclOp::kUnknown;  // collectives (Gather/Scatter: kUnknown)
  bool has_comm = false;         // comm_id valid (NCCL ≥ 2.23-era layouts)
  bool has_bytes = false;
  uint64_t comm_id = 0;          // NCCL's communicator hash (ncclComm::commHash)
  uint64_t parent_comm_id = 0;   // CommSplit
  uint64_t bytes = 0;            // message size of one rank's buffer
  int32_t rank = -1;             // communicator payloads
  int32_t nranks = 0;
  int32_t cuda_device = -1;
  int32_t root_or_peer = -1;     // Broadcast/Reduce/Gather/Scatter root, Send/Recv peer
  int32_t reduce_op = -1;        // ncclRedOp_t
};

// Schema name as NCCL spells it after "nccl" in the API/range name
// ("AllReduce", "CommInitRank", ...); "" when unknown.
std::string_view NcclSchemaName(NcclSchema schema);

// Decodes one nvtxPayloadData_t entry. False (and *out untouched) unless the
// schema is one of NCCL's and `size` matches a known layout of it.
bool DecodeNcclPayload(uint64_t schema_id, const void* data, size_t size, NcclPayload* out);

// Decodes the payload of NVTX event attributes (payloadType, payload.ullValue,
// reserved0): the first of at most 4 entries that decodes. False when the
// payload is not an extended one or nothing in it decodes.
bool DecodeNcclEventPayload(int32_t payload_type, uint64_t payload_value, int32_t entry_count,
                            NcclPayload* out);

// Whether an NCCL range name belongs to this payload's API call: "ncclAllReduce"
// (or "ncclAllReduce_impl" and similar suffixes) for schema AllReduce.
bool NcclRangeMatchesSchema(std::string_view range_name, NcclSchema schema);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_NCCL_PAYLOAD_H_
