// Stable names of the enums of lib/trace/events.h (used in `sightline info`,
// JSON reports and exports; never change an existing name).
#include "lib/trace/events.h"

namespace sightline {

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kUnspecified: return "unspecified";
    case EventKind::kKernel: return "kernel";
    case EventKind::kMemcpy: return "memcpy";
    case EventKind::kMemset: return "memset";
    case EventKind::kSync: return "sync";
    case EventKind::kApi: return "api";
    case EventKind::kNvtxRange: return "nvtx_range";
    case EventKind::kNvtxMarker: return "nvtx_marker";
    case EventKind::kNccl: return "nccl";
    case EventKind::kMetricRange: return "metric_range";
    case EventKind::kCaptureWindow: return "capture_window";
    case EventKind::kOverhead: return "overhead";
    case EventKind::kStep: return "step";
    case EventKind::kLoss: return "loss";
    case EventKind::kMemory: return "memory";
    case EventKind::kGpuMetrics: return "gpu_metrics";
  }
  return "unknown";
}

const char* CopyKindName(CopyKind kind) {
  switch (kind) {
    case CopyKind::kUnknown: return "unknown";
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kHtoA: return "HtoA";
    case CopyKind::kAtoH: return "AtoH";
    case CopyKind::kAtoA: return "AtoA";
    case CopyKind::kAtoD: return "AtoD";
    case CopyKind::kDtoA: return "DtoA";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
  }
  return "unknown";
}

const char* MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kUnknown: return "unknown";
    case MemoryKind::kPageable: return "pageable";
    case MemoryKind::kPinned: return "pinned";
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kArray: return "array";
    case MemoryKind::kManaged: return "managed";
    case MemoryKind::kDeviceStatic: return "device_static";
    case MemoryKind::kManagedStatic: return "managed_static";
  }
  return "unknown";
}

const char* MemoryOperationName(MemoryOperation op) {
  switch (op) {
    case MemoryOperation::kUnknown: return "unknown";
    case MemoryOperation::kAllocation: return "allocation";
    case MemoryOperation::kRelease: return "release";
    case MemoryOperation::kPoolCreated: return "pool_created";
    case MemoryOperation::kPoolDestroyed: return "pool_destroyed";
    case MemoryOperation::kPoolTrimmed: return "pool_trimmed";
  }
  return "unknown";
}

const char* SyncKindName(SyncKind kind) {
  switch (kind) {
    case SyncKind::kUnknown: return "unknown";
    case SyncKind::kEventSynchronize: return "event_synchronize";
    case SyncKind::kStreamWaitEvent: return "stream_wait_event";
    case SyncKind::kStreamSynchronize: return "stream_synchronize";
    case SyncKind::kContextSynchronize: return "context_synchronize";
  }
  return "unknown";
}

const char* NcclOpName(NcclOp op) {
  switch (op) {
    case NcclOp::kUnknown: return "unknown";
    case NcclOp::kAllReduce: return "AllReduce";
    case NcclOp::kBroadcast: return "Broadcast";
    case NcclOp::kReduce: return "Reduce";
    case NcclOp::kAllGather: return "AllGather";
    case NcclOp::kReduceScatter: return "ReduceScatter";
    case NcclOp::kSend: return "Send";
    case NcclOp::kRecv: return "Recv";
    case NcclOp::kAllToAll: return "AllToAll";
    case NcclOp::kSendRecv: return "SendRecv";
  }
  return "unknown";
}

}  // namespace sightline
