// lib/collect/record_converter.cc — see record_converter.h.
#include "lib/collect/record_converter.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "lib/collect/nccl_names.h"

namespace sightline::collect {
namespace {

MemoryKind ToMemoryKind(uint32_t k) {
  return k <= static_cast<uint32_t>(MemoryKind::kManagedStatic) ? static_cast<MemoryKind>(k)
                                                                : MemoryKind::kUnknown;
}

CopyKind ToCopyKind(uint32_t k) {
  return k <= static_cast<uint32_t>(CopyKind::kPtoP) ? static_cast<CopyKind>(k)
                                                     : CopyKind::kUnknown;
}

SyncKind ToSyncKind(uint32_t k) {
  return k <= static_cast<uint32_t>(SyncKind::kContextSynchronize) ? static_cast<SyncKind>(k)
                                                                    : SyncKind::kUnknown;
}

uint32_t ThreadOf(CUpti_ActivityObjectKind kind, const CUpti_ActivityObjectKindId& id) {
  return kind == CUPTI_ACTIVITY_OBJECT_THREAD || kind == CUPTI_ACTIVITY_OBJECT_PROCESS
             ? id.pt.threadId
             : 0;
}

}  // namespace

RecordConverter::RecordConverter(EventSink* sink, ConverterOptions options, ApiNameFn api_name)
    : sink_(sink), options_(std::move(options)), api_name_(std::move(api_name)) {
  api_skip_set_.insert(options_.api_skip.begin(), options_.api_skip.end());
}

bool RecordConverter::ValidSpan(uint64_t start, uint64_t end) {
  if (start == 0 || end == 0 || end < start) {
    ++stats_.invalid_timestamps;
    return false;
  }
  return true;
}

void RecordConverter::Convert(const CUpti_Activity* record) {
  ++stats_.records;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      ConvertKernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      ConvertMemcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      ConvertPeerMemcpy(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      ConvertMemset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      ConvertSync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      ConvertApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), ApiDomain::kRuntime);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      ConvertApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), ApiDomain::kDriver);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      ConvertMarker(*reinterpret_cast<const CUpti_ActivityMarker2*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:
      ConvertMarkerData(*reinterpret_cast<const CUpti_ActivityMarkerData2*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      ConvertOverhead(*reinterpret_cast<const CUpti_ActivityOverhead3*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      ConvertGraph(*reinterpret_cast<const CUpti_ActivityGraphTrace2*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      ConvertMemory(*reinterpret_cast<const CUpti_ActivityMemory4*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
      ConvertMemoryPool(*reinterpret_cast<const CUpti_ActivityMemoryPool3*>(record));
      break;
    default:
      ++stats_.unsupported_records;
      break;
  }
}

void RecordConverter::ConvertKernel(const CUpti_ActivityKernel10& k) {
  // Kernels profiled with the range profiler's kernel replay arrive with
  // zero timestamps (seen on the H200, CUPTI 13.0): keep them, marked
  // replayed, for their launch configuration and metrics.
  const bool replayed = replayed_fn_ && replayed_fn_(k.correlationId);
  const bool untimed =
      !replayed && options_.keep_untimed_kernels && k.start == 0 && k.end == 0;
  if (!replayed && !untimed && !ValidSpan(k.start, k.end)) return;
  if (untimed) ++stats_.untimed_kernels_kept;
  context_device_[k.contextId] = k.deviceId;
  KernelEvent e;
  e.start_ns = k.start;
  e.end_ns = k.end;
  e.device_id = k.deviceId;
  e.context_id = k.contextId;
  e.stream_id = k.streamId;
  e.correlation_id = k.correlationId;
  const char* name = k.name != nullptr ? k.name : "";
  e.name_id = sink_->Intern(name);
  e.grid_x = static_cast<uint32_t>(k.gridX);
  e.grid_y = static_cast<uint32_t>(k.gridY);
  e.grid_z = static_cast<uint32_t>(k.gridZ);
  e.block_x = static_cast<uint32_t>(k.blockX);
  e.block_y = static_cast<uint32_t>(k.blockY);
  e.block_z = static_cast<uint32_t>(k.blockZ);
  e.registers_per_thread = k.registersPerThread;
  e.static_shared_bytes = static_cast<uint32_t>(k.staticSharedMemory);
  e.dynamic_shared_bytes = static_cast<uint32_t>(k.dynamicSharedMemory);
  e.local_bytes_per_thread = k.localMemoryPerThread;
  e.shared_memory_config_bytes = k.sharedMemoryExecuted;
  e.graph_id = k.graphId;
  e.graph_node_id = k.graphNodeId;
  e.launch_type = k.launchType;
  e.cluster_x = k.clusterX;
  e.cluster_y = k.clusterY;
  e.cluster_z = k.clusterZ;
  e.cache_config_requested = k.cacheConfig.config.requested;
  e.cache_config_executed = k.cacheConfig.config.executed;
  e.replayed = replayed;
  e.untraced = untimed;
  sink_->Add(e);
  Count(EventKind::kKernel);
  if (options_.untraced_kernels && !replayed) RememberTraced(e);

  NcclKernelInfo info;
  if (options_.nccl && ParseNcclKernelName(name, &info)) {
    NcclEvent n;
    n.start_ns = k.start;
    n.end_ns = k.end;
    n.device_id = k.deviceId;
    n.stream_id = k.streamId;
    n.correlation_id = k.correlationId;
    n.op = info.op;
    n.datatype_id = info.datatype.empty() ? 0 : sink_->Intern(info.datatype);
    n.name_id = e.name_id;
    n.source = NcclSource::kGpuKernel;
    sink_->Add(n);
    Count(EventKind::kNccl);
  }
}

void RecordConverter::RememberTraced(const KernelEvent& e) {
  const ConfigKey key = KeyOf(e);
  auto it = traced_configs_.find(key);
  if (it == traced_configs_.end() && traced_configs_.size() < kMaxTracedConfigs) {
    it = traced_configs_.emplace(key, TracedFields{}).first;
  }
  if (it != traced_configs_.end()) {
    TracedFields& f = it->second;
    f.registers_per_thread = e.registers_per_thread;
    f.static_shared_bytes = e.static_shared_bytes;
    f.local_bytes_per_thread = e.local_bytes_per_thread;
    f.shared_memory_config_bytes = e.shared_memory_config_bytes;
    f.launch_type = e.launch_type;
    f.cluster_x = e.cluster_x;
    f.cluster_y = e.cluster_y;
    f.cluster_z = e.cluster_z;
    f.cache_config_requested = e.cache_config_requested;
    f.cache_config_executed = e.cache_config_executed;
    f.context_id = e.context_id;
  }
  // A kernel written "maybe traced" has its record after all.
  if (!maybe_traced_.empty() && maybe_traced_.erase(e.correlation_id) != 0) {
    ++stats_.untraced_duplicates_dropped;
  }
  if (recent_traced_.insert(e.correlation_id).second) {
    recent_traced_order_.push_back(e.correlation_id);
    if (recent_traced_order_.size() > kRecentTraced) {
      recent_traced_.erase(recent_traced_order_.front());
      recent_traced_order_.pop_front();
    }
  }
}

void RecordConverter::AddUntracedKernel(KernelEvent e, std::string_view name,
                                        bool maybe_traced) {
  e.name_id = sink_->Intern(name);
  e.start_ns = e.end_ns = 0;
  e.untraced = true;
  e.replayed = false;
  if (maybe_traced) {
    if (recent_traced_.count(e.correlation_id) != 0) {
      ++stats_.untraced_duplicates_dropped;  // its record came first
    } else {
      maybe_traced_[e.correlation_id] = e;  // decided at the end
    }
    return;
  }
  auto it = traced_configs_.find(KeyOf(e));
  if (it != traced_configs_.end()) {
    WriteUntraced(e, &it->second);
  } else {
    untraced_waiting_.push_back(e);
  }
}

void RecordConverter::FlushUntracedKernels(bool final) {
  if (final) {
    // No record came for these by the last drain: they were not traced.
    for (auto& [corr, e] : maybe_traced_) untraced_waiting_.push_back(e);
    maybe_traced_.clear();
  }
  size_t kept = 0;
  for (KernelEvent& e : untraced_waiting_) {
    auto it = traced_configs_.find(KeyOf(e));
    if (it != traced_configs_.end()) {
      WriteUntraced(e, &it->second);
    } else if (final) {
      ++stats_.untraced_without_template;
      WriteUntraced(e, nullptr);
    } else {
      untraced_waiting_[kept++] = e;
    }
  }
  untraced_waiting_.resize(kept);
}

void RecordConverter::WriteUntraced(KernelEvent e, const TracedFields* traced) {
  if (traced != nullptr) {
    // What a launch call does not carry: the function's and the launch's
    // resources as CUPTI recorded them for a traced launch.
    e.registers_per_thread = traced->registers_per_thread;
    e.static_shared_bytes = traced->static_shared_bytes;
    e.local_bytes_per_thread = traced->local_bytes_per_thread;
    e.shared_memory_config_bytes = traced->shared_memory_config_bytes;
    e.launch_type = traced->launch_type;
    e.cluster_x = traced->cluster_x;
    e.cluster_y = traced->cluster_y;
    e.cluster_z = traced->cluster_z;
    e.cache_config_requested = traced->cache_config_requested;
    e.cache_config_executed = traced->cache_config_executed;
    if (e.context_id == 0) e.context_id = traced->context_id;
  }
  sink_->Add(e);
  Count(EventKind::kKernel);
}

namespace {
// Fields that CUPTI's memcpy and peer-to-peer memcpy records share.
template <typename Record>
MemcpyEvent CommonMemcpyFields(const Record& m) {
  MemcpyEvent e;
  e.start_ns = m.start;
  e.end_ns = m.end;
  e.device_id = m.deviceId;
  e.context_id = m.contextId;
  e.stream_id = m.streamId;
  e.correlation_id = m.correlationId;
  e.bytes = m.bytes;
  e.copy_kind = ToCopyKind(m.copyKind);
  e.src_kind = ToMemoryKind(m.srcKind);
  e.dst_kind = ToMemoryKind(m.dstKind);
  e.async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  e.graph_node_id = m.graphNodeId;
  return e;
}
}  // namespace

void RecordConverter::ConvertMemcpy(const CUpti_ActivityMemcpy6& m) {
  if (!ValidSpan(m.start, m.end)) return;
  MemcpyEvent e = CommonMemcpyFields(m);
  e.src_device_id = m.deviceId;
  e.dst_device_id = m.deviceId;
  sink_->Add(e);
  Count(EventKind::kMemcpy);
}

void RecordConverter::ConvertPeerMemcpy(const CUpti_ActivityMemcpyPtoP4& m) {
  if (!ValidSpan(m.start, m.end)) return;
  MemcpyEvent e = CommonMemcpyFields(m);
  e.src_device_id = m.srcDeviceId;
  e.dst_device_id = m.dstDeviceId;
  sink_->Add(e);
  Count(EventKind::kMemcpy);
}

void RecordConverter::ConvertMemset(const CUpti_ActivityMemset4& m) {
  // Memsets inside sequence passes came with no timestamps (H100, CUDA 13.0:
  // 44 in the corpus CNN's run AV): kept untraced, as kernels are.
  const bool untimed = options_.keep_untimed_kernels && m.start == 0 && m.end == 0;
  if (!untimed && !ValidSpan(m.start, m.end)) return;
  if (untimed) ++stats_.untimed_memsets_kept;
  MemsetEvent e;
  e.untraced = untimed;
  e.start_ns = m.start;
  e.end_ns = m.end;
  e.device_id = m.deviceId;
  e.context_id = m.contextId;
  e.stream_id = m.streamId;
  e.correlation_id = m.correlationId;
  e.bytes = m.bytes;
  e.value = m.value;
  e.memory_kind = ToMemoryKind(m.memoryKind);
  e.async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0;
  e.graph_node_id = m.graphNodeId;
  sink_->Add(e);
  Count(EventKind::kMemset);
}

void RecordConverter::ConvertMemory(const CUpti_ActivityMemory4& m) {
  if (!ValidSpan(m.timestamp, m.timestamp)) return;
  MemoryEvent e;
  e.timestamp_ns = m.timestamp;
  e.device_id = m.deviceId;
  e.context_id = m.contextId;
  e.stream_id = m.streamId;
  e.correlation_id = m.correlationId;
  switch (m.memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
      e.operation = MemoryOperation::kAllocation;
      break;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
      e.operation = MemoryOperation::kRelease;
      break;
    default:
      e.operation = MemoryOperation::kUnknown;
      break;
  }
  e.memory_kind = ToMemoryKind(m.memoryKind);
  e.address = m.address;
  e.bytes = m.bytes;
  e.async = m.isAsync != 0;
  const auto& pool = m.memoryPoolConfig;
  if (pool.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL ||
      pool.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED) {
    e.pool_address = pool.address;
    e.pool_type = static_cast<uint32_t>(pool.memoryPoolType);
    if (pool.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
      e.pool_size = pool.pool.size;
      e.pool_used = pool.utilizedSize;
      e.pool_release_threshold = pool.releaseThreshold;
    }
  }
  e.source_id = m.source != nullptr && *m.source != '\0' ? sink_->Intern(m.source) : 0;
  e.pc = m.PC;
  sink_->Add(e);
  Count(EventKind::kMemory);
}

void RecordConverter::ConvertMemoryPool(const CUpti_ActivityMemoryPool3& m) {
  if (!ValidSpan(m.timestamp, m.timestamp)) return;
  MemoryEvent e;
  e.timestamp_ns = m.timestamp;
  e.device_id = m.deviceId;
  e.correlation_id = m.correlationId;
  switch (m.memoryPoolOperationType) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
      e.operation = MemoryOperation::kPoolCreated;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
      e.operation = MemoryOperation::kPoolDestroyed;
      break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
      e.operation = MemoryOperation::kPoolTrimmed;
      break;
    default:
      e.operation = MemoryOperation::kUnknown;
      break;
  }
  e.memory_kind = m.isManagedPool != 0 ? MemoryKind::kManaged : MemoryKind::kDevice;
  e.address = m.address;
  e.bytes = m.size;
  e.pool_address = m.address;
  e.pool_type = static_cast<uint32_t>(m.memoryPoolType);
  e.pool_size = m.size;
  e.pool_used = m.utilizedSize;
  e.pool_release_threshold = m.releaseThreshold;
  sink_->Add(e);
  Count(EventKind::kMemory);
}

void RecordConverter::ConvertSync(const CUpti_ActivitySynchronization2& s) {
  if (!ValidSpan(s.start, s.end)) return;
  SyncEvent e;
  e.start_ns = s.start;
  e.end_ns = s.end;
  e.context_id = s.contextId;
  e.stream_id = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? kNoStream : s.streamId;
  e.correlation_id = s.correlationId;
  e.sync_kind = ToSyncKind(s.type);
  e.cuda_event_id = s.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s.cudaEventId;
  auto it = context_device_.find(s.contextId);
  e.device_id = it != context_device_.end() ? it->second : 0;
  sink_->Add(e);
  Count(EventKind::kSync);
}

uint32_t RecordConverter::ApiNameId(ApiDomain domain, uint32_t cbid, bool* skip) {
  uint64_t key = (uint64_t{static_cast<uint8_t>(domain)} << 32) | cbid;
  auto it = api_names_.find(key);
  if (it == api_names_.end()) {
    const char* name = api_name_ ? api_name_(domain, cbid) : nullptr;
    std::string text = name != nullptr ? name : "";
    if (text.empty()) {
      text = (domain == ApiDomain::kDriver ? "driver_cbid_" : "runtime_cbid_") +
             std::to_string(cbid);
    }
    bool skipped = api_skip_set_.count(text) > 0;
    // Runtime names come with a version suffix ("cudaGetDevice_v3020").
    size_t v = text.rfind("_v");
    if (!skipped && v != std::string::npos && v + 2 < text.size() &&
        text.find_first_not_of("0123456789", v + 2) == std::string::npos) {
      skipped = api_skip_set_.count(text.substr(0, v)) > 0;
    }
    uint32_t id = skipped ? 0 : sink_->Intern(text);
    it = api_names_.emplace(key, std::make_pair(uint8_t{skipped ? uint8_t{2} : uint8_t{1}}, id))
             .first;
  }
  *skip = it->second.first == 2;
  return it->second.second;
}

void RecordConverter::ConvertApi(const CUpti_ActivityAPI& a, ApiDomain domain) {
  bool skip = false;
  uint32_t name_id = ApiNameId(domain, a.cbid, &skip);
  if (skip) {
    ++stats_.skipped_api_records;
    return;
  }
  if (!ValidSpan(a.start, a.end)) return;
  ApiEvent e;
  e.start_ns = a.start;
  e.end_ns = a.end;
  e.domain = domain;
  e.cbid = a.cbid;
  e.name_id = name_id;
  e.correlation_id = a.correlationId;
  e.thread_id = a.threadId;
  e.return_value = a.returnValue;
  if (!stacks_.empty()) {
    auto it = stacks_.find(a.correlationId);
    if (it != stacks_.end()) {
      e.stack_id = it->second;
      stacks_.erase(it);
    }
  }
  if (!python_stacks_.empty()) {
    auto it = python_stacks_.find(a.correlationId);
    if (it != python_stacks_.end()) {
      e.python_stack_id = it->second;
      python_stacks_.erase(it);
    }
  }
  sink_->Add(e);
  Count(EventKind::kApi);
}

void RecordConverter::AddCallbackApi(ApiDomain domain, uint32_t cbid, uint64_t start_ns,
                                     uint64_t end_ns, uint32_t correlation_id,
                                     uint32_t thread_id) {
  CUpti_ActivityAPI a{};
  a.kind = domain == ApiDomain::kDriver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = start_ns;
  a.end = end_ns;
  a.correlationId = correlation_id;
  a.threadId = thread_id;
  ConvertApi(a, domain);
}

void RecordConverter::AttachStack(uint32_t correlation_id, uint32_t stack_id) {
  stacks_[correlation_id] = stack_id;
}

void RecordConverter::AttachPythonStack(uint32_t correlation_id, uint32_t stack_id) {
  if (python_stacks_.size() >= kMaxPendingPythonStacks) {
    stats_.python_stacks_unmatched += python_stacks_.size();
    python_stacks_.clear();
  }
  python_stacks_[correlation_id] = stack_id;
}

void RecordConverter::ConvertMarker(const CUpti_ActivityMarker2& m) {
  uint32_t thread = ThreadOf(m.objectKind, m.objectId);
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    PendingRange r;
    r.start_ns = m.timestamp;
    const char* name = m.name != nullptr ? m.name : "";
    r.name_id = sink_->Intern(name);
    r.domain_id = m.domain != nullptr ? sink_->Intern(m.domain) : 0;
    r.thread_id = thread;
    if (options_.nccl && m.domain != nullptr && std::strcmp(m.domain, "NCCL") == 0) {
      r.is_nccl_domain = true;
      r.nccl_name = name;
      r.is_nccl = ParseNcclApiName(name, &r.nccl_op);
    }
    open_ranges_[m.id] = r;
    return;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(m.id);
    if (it == open_ranges_.end()) {
      ++stats_.unmatched_range_ends;
      return;
    }
    PendingRange r = it->second;
    open_ranges_.erase(it);
    EmitRange(r, m.timestamp, thread, m.id);
    return;
  }
  // Instantaneous marker (flag 1) or sync markers: a point in time.
  NvtxMarkerEvent e;
  e.timestamp_ns = m.timestamp;
  e.name_id = sink_->Intern(m.name != nullptr ? m.name : "");
  e.domain_id = m.domain != nullptr ? sink_->Intern(m.domain) : 0;
  e.thread_id = thread;
  pending_instants_.emplace_back(e, m.id);
}

void RecordConverter::ConvertMarkerData(const CUpti_ActivityMarkerData2& d) {
  MarkerData data;
  data.color = d.color;
  data.category = d.category;
  switch (d.payloadKind) {
    case CUPTI_METRIC_VALUE_KIND_INT64:
      data.payload_kind = PayloadKind::kInt64;
      data.payload_int = d.payload.metricValueInt64;
      break;
    case CUPTI_METRIC_VALUE_KIND_UINT64:
      data.payload_kind = PayloadKind::kUint64;
      data.payload_int = static_cast<int64_t>(d.payload.metricValueUint64);
      break;
    case CUPTI_METRIC_VALUE_KIND_DOUBLE:
      data.payload_kind = PayloadKind::kDouble;
      data.payload_double = d.payload.metricValueDouble;
      break;
    case CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD: {
      // A CUPTI-allocated copy of the event's nvtxPayloadData_t (see
      // nccl_payload.cc). Decoded now (only NCCL's schemas, by exact size)
      // and freed; whether it belongs to NCCL is decided by the range's
      // domain when the range ends.
      auto* pd = reinterpret_cast<NvtxPayloadData*>(
          static_cast<uintptr_t>(d.payload.metricValueNvtxExtendedPayload));
      if (pd != nullptr) {
        if (options_.nccl) {
          data.has_nccl = DecodeNcclPayload(pd->schema_id, pd->payload, pd->size, &data.nccl);
          data.ext_undecoded = !data.has_nccl;
        }
        if (options_.free_ext_payloads) {
          std::free(const_cast<void*>(pd->payload));
          std::free(pd);
        }
      }
      break;
    }
    default: break;
  }
  marker_data_[d.id] = data;
}

void RecordConverter::EmitRange(const PendingRange& r, uint64_t end_ns, uint32_t end_thread,
                                uint32_t marker_id) {
  if (end_ns < r.start_ns || r.start_ns == 0) {
    ++stats_.invalid_timestamps;
    marker_data_.erase(marker_id);
    return;
  }
  NvtxRangeEvent e;
  e.start_ns = r.start_ns;
  e.end_ns = end_ns;
  e.domain_id = r.domain_id;
  e.name_id = r.name_id;
  e.thread_id = r.thread_id;
  e.end_thread_id = end_thread;
  // CUPTI does not say push/pop vs start/end; a range closed on the thread
  // that opened it is reported as push/pop.
  e.push_pop = end_thread == r.thread_id;
  auto d = marker_data_.find(marker_id);
  MarkerData data;
  bool have_data = d != marker_data_.end();
  if (have_data) {
    data = d->second;
    e.color = data.color;
    e.category = data.category;
    e.payload_kind = data.payload_kind;
    e.payload_int = data.payload_int;
    e.payload_double = data.payload_double;
    marker_data_.erase(d);
  }
  sink_->Add(e);
  Count(EventKind::kNvtxRange);
  if (r.is_nccl_domain) EmitNccl(r, end_ns, have_data ? &data : nullptr);
}

void RecordConverter::AddNcclPayload(uint32_t thread_id, uint64_t timestamp_ns,
                                     const NcclPayload& payload) {
  if (!options_.nccl) return;
  // Bounded: a process whose NCCL ranges never reach us (MARKER off, records
  // dropped) must not grow this without limit.
  if (nccl_callback_pending_ >= 65536) {
    stats_.nccl.callback_unmatched += nccl_callback_pending_;
    nccl_callback_payloads_.clear();
    nccl_callback_pending_ = 0;
  }
  nccl_callback_payloads_[thread_id].push_back({timestamp_ns, payload});
  ++nccl_callback_pending_;
}

bool RecordConverter::TakeCallbackPayload(const PendingRange& r, NcclPayload* out) {
  auto it = nccl_callback_payloads_.find(r.thread_id);
  if (it == nccl_callback_payloads_.end() || it->second.empty()) return false;
  std::deque<CallbackPayload>& q = it->second;
  size_t best = q.size();
  uint64_t best_distance = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    uint64_t t = q[i].timestamp_ns;
    uint64_t distance = t > r.start_ns ? t - r.start_ns : r.start_ns - t;
    if (distance > options_.nccl_join_tolerance_ns) continue;
    if (!r.nccl_name.empty() && !NcclRangeMatchesSchema(r.nccl_name, q[i].payload.schema)) continue;
    if (best == q.size() || distance < best_distance) {
      best = i;
      best_distance = distance;
    }
  }
  if (best == q.size()) return false;
  *out = q[best].payload;
  q.erase(q.begin() + static_cast<std::ptrdiff_t>(best));
  --nccl_callback_pending_;
  // Payloads pushed well before this range's start on the same thread had
  // their chance: their ranges ended already (NCCL ranges do not outlive
  // the call) or never reached us.
  uint64_t horizon = r.start_ns > 1000000000ull ? r.start_ns - 1000000000ull : 0;
  DropStaleCallbackPayloads(r.thread_id, horizon);
  return true;
}

void RecordConverter::DropStaleCallbackPayloads(uint32_t thread, uint64_t before_ns) {
  auto it = nccl_callback_payloads_.find(thread);
  if (it == nccl_callback_payloads_.end()) return;
  std::deque<CallbackPayload>& q = it->second;
  while (!q.empty() && q.front().timestamp_ns < before_ns) {
    q.pop_front();
    --nccl_callback_pending_;
    ++stats_.nccl.callback_unmatched;
  }
}

void RecordConverter::EmitNccl(const PendingRange& r, uint64_t end_ns, const MarkerData* data) {
  ++stats_.nccl.ranges;
  NcclPayload p;
  bool have = false;
  NcclPayload from_callback;
  // Always claim the callback's copy so it is not left over as unmatched.
  bool callback = TakeCallbackPayload(r, &from_callback);
  if (data != nullptr && data->has_nccl &&
      (r.nccl_name.empty() || NcclRangeMatchesSchema(r.nccl_name, data->nccl.schema))) {
    p = data->nccl;
    have = true;
    ++stats_.nccl.from_activity;
  } else if (callback) {
    p = from_callback;
    have = true;
    ++stats_.nccl.from_callback;
  } else if (data != nullptr && data->ext_undecoded) {
    ++stats_.nccl.undecoded;
  }

  if (have && p.kind == NcclPayload::Kind::kCommunicator) {
    if (p.has_comm && p.nranks > 0) nccl_comms_[p.comm_id] = {p.rank, p.nranks};
    NcclEvent c;
    c.start_ns = r.start_ns;
    c.end_ns = end_ns;
    c.op = NcclOp::kUnknown;
    c.comm_id = p.comm_id;
    c.rank = p.nranks > 0 ? p.rank : -1;
    c.nranks = p.nranks;
    c.device_id = p.cuda_device >= 0 ? static_cast<uint32_t>(p.cuda_device) : 0;
    c.name_id = r.name_id;
    c.source = NcclSource::kCommunicatorInfo;
    c.thread_id = r.thread_id;
    c.stream_id = kNoStream;
    sink_->Add(c);
    Count(EventKind::kNccl);
    ++stats_.nccl.comm_events;
    return;
  }
  bool collective = have && p.kind == NcclPayload::Kind::kCollective;
  if (!r.is_nccl && !collective) return;  // ncclGroupEnd, ncclCommCount, ...
  NcclEvent n;
  n.start_ns = r.start_ns;
  n.end_ns = end_ns;
  n.op = r.nccl_op != NcclOp::kUnknown ? r.nccl_op : (collective ? p.op : NcclOp::kUnknown);
  n.name_id = r.name_id;
  n.source = NcclSource::kHostNvtx;
  n.thread_id = r.thread_id;
  n.stream_id = kNoStream;
  if (collective) {
    if (p.has_bytes) n.bytes = p.bytes;
    // Send/Recv pair across ranks by peer (lib/analysis/cross_rank.h).
    if ((n.op == NcclOp::kSend || n.op == NcclOp::kRecv) && p.root_or_peer >= 0) {
      n.peer = p.root_or_peer;
    }
    if (p.has_comm) {
      n.comm_id = p.comm_id;
      auto c = nccl_comms_.find(p.comm_id);
      if (c != nccl_comms_.end()) {
        n.rank = c->second.first;
        n.nranks = c->second.second;
      }
    }
  } else {
    ++stats_.nccl.without_payload;
  }
  sink_->Add(n);
  Count(EventKind::kNccl);
}

void RecordConverter::EndBuffer() {
  for (auto& [event, id] : pending_instants_) {
    auto d = marker_data_.find(id);
    if (d != marker_data_.end()) {
      event.color = d->second.color;
      event.category = d->second.category;
      event.payload_kind = d->second.payload_kind;
      event.payload_int = d->second.payload_int;
      event.payload_double = d->second.payload_double;
      marker_data_.erase(d);
    }
    sink_->Add(event);
    Count(EventKind::kNvtxMarker);
  }
  pending_instants_.clear();
  // Marker data whose marker never came (or came in an earlier buffer) must not
  // accumulate without bound.
  if (marker_data_.size() > 65536) marker_data_.clear();
}

void RecordConverter::ConvertOverhead(const CUpti_ActivityOverhead3& o) {
  if (!ValidSpan(o.start, o.end)) return;
  OverheadEvent e;
  e.start_ns = o.start;
  e.end_ns = o.end;
  e.overhead_kind = static_cast<uint32_t>(o.overheadKind);
  if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    e.thread_id = o.objectId.pt.threadId;
    e.device_id = kHostOverheadDevice;  // host-side: never GPU busy time
  } else if (o.objectKind == CUPTI_ACTIVITY_OBJECT_DEVICE ||
             o.objectKind == CUPTI_ACTIVITY_OBJECT_CONTEXT ||
             o.objectKind == CUPTI_ACTIVITY_OBJECT_STREAM) {
    e.device_id = o.objectId.dcs.deviceId;
  }
  sink_->Add(e);
  Count(EventKind::kOverhead);
}

void RecordConverter::ConvertGraph(const CUpti_ActivityGraphTrace2& g) {
  if (!ValidSpan(g.start, g.end)) return;
  KernelEvent e;
  e.start_ns = g.start;
  e.end_ns = g.end;
  e.device_id = g.deviceId;
  e.context_id = g.contextId;
  e.stream_id = g.streamId;
  e.correlation_id = g.correlationId;
  e.graph_id = g.graphId;
  e.name_id = sink_->Intern("[CUDA graph " + std::to_string(g.graphId) + "]");
  sink_->Add(e);
  Count(EventKind::kKernel);
}

void RecordConverter::CloseOpenRanges(uint64_t end_ns) {
  EndBuffer();
  for (auto& [id, r] : open_ranges_) {
    ++stats_.open_ranges_at_end;
    EmitRange(r, end_ns > r.start_ns ? end_ns : r.start_ns, r.thread_id, id);
  }
  open_ranges_.clear();
  stats_.nccl.callback_unmatched += nccl_callback_pending_;
  nccl_callback_payloads_.clear();
  nccl_callback_pending_ = 0;
}

}  // namespace sightline::collect
