// lib/export/timeline_tracks.cc — see timeline_tracks.h.
#include "lib/export/timeline_tracks.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sightline::exporter {
namespace {

// CopyKindName's names (lib/trace/events.h), none for an unknown kind.
const char* CopyKindLabel(CopyKind k) {
  const char* name = CopyKindName(k);
  return std::string_view(name) == "unknown" ? "" : name;
}

const char* MemoryKindLabel(MemoryKind k) {
  switch (k) {
    case MemoryKind::kPageable: return "Pageable";
    case MemoryKind::kPinned: return "Pinned";
    case MemoryKind::kDevice: return "Device";
    case MemoryKind::kArray: return "Array";
    case MemoryKind::kManaged: return "Managed";
    case MemoryKind::kDeviceStatic: return "Device Static";
    case MemoryKind::kManagedStatic: return "Managed Static";
    case MemoryKind::kUnknown: break;
  }
  return "Unknown";
}

const char* NcclOpLabel(NcclOp op) {
  return op == NcclOp::kUnknown ? "Op" : NcclOpName(op);
}

}  // namespace

std::string TrackRegistry::DeviceLabel(uint32_t device) const {
  return absl::StrCat("GPU ", device);
}

const TrackInfo& TrackRegistry::Get(const TrackKey& key, bool* is_new) {
  auto it = tracks_.find(key);
  if (it != tracks_.end()) {
    *is_new = false;
    return it->second;
  }
  *is_new = true;
  TrackInfo info;
  switch (key.type) {
    case TrackType::kThread:
      info.tid = key.id;
      info.is_real_thread = true;
      info.sort_index = 1000000 + key.id % 1000000;
      info.name = absl::StrCat("CPU thread ", key.id);
      break;
    case TrackType::kNvtx:
      info.tid = next_synthetic_tid_++;
      info.sort_index = 1000000 + key.id % 1000000;
      info.name = absl::StrCat("NVTX (thread ", key.id, ")");
      break;
    case TrackType::kStream:
      info.tid = next_synthetic_tid_++;
      info.sort_index = uint64_t{key.device} * 10000 + 10 + key.id % 9000;
      info.name = absl::StrCat(DeviceLabel(key.device), " stream ", key.id);
      break;
    case TrackType::kSync:
      info.tid = next_synthetic_tid_++;
      info.sort_index = uint64_t{key.device} * 10000 + 9990;
      info.name = absl::StrCat(DeviceLabel(key.device), " synchronization");
      break;
    case TrackType::kNccl:
      info.tid = next_synthetic_tid_++;
      info.sort_index = uint64_t{key.device} * 10000 + 9980 + key.id;
      info.name = absl::StrCat(DeviceLabel(key.device), " NCCL",
                               key.id == 2 ? " (host)" : "");
      break;
    case TrackType::kMetrics:
      info.tid = next_synthetic_tid_++;
      info.sort_index = uint64_t{key.device} * 10000 + 9995;
      info.name = absl::StrCat(DeviceLabel(key.device), " metric ranges");
      break;
    case TrackType::kProfiler:
      info.tid = next_synthetic_tid_++;
      info.sort_index = 0;
      info.name = "sightline (capture, steps, overhead)";
      break;
    case TrackType::kNvtxLane:
      info.tid = next_synthetic_tid_++;
      info.sort_index = 900000 + key.id;
      info.name = absl::StrCat("NVTX start/end ranges ", key.id);
      break;
  }
  return tracks_.emplace(key, std::move(info)).first->second;
}

std::string ProcessLabel(const TraceHeaderData& header) {
  const ProcessInfo& p = header.process;
  std::string cmd;
  for (size_t i = 0; i < p.command_line.size() && i < 4; ++i) {
    if (i) cmd += ' ';
    std::string_view arg = p.command_line[i];
    if (i == 0) {
      size_t slash = arg.rfind('/');
      if (slash != std::string_view::npos) arg.remove_prefix(slash + 1);
    }
    cmd.append(arg.data(), arg.size());
  }
  if (p.command_line.size() > 4) cmd += " ...";
  if (cmd.empty()) cmd = "process";
  std::string label = absl::StrCat(cmd, " (pid ", p.pid);
  if (!p.host.empty()) absl::StrAppend(&label, ", ", p.host);
  if (p.rank >= 0) absl::StrAppend(&label, ", rank ", p.rank);
  label += ')';
  return label;
}

std::string MemcpyName(const MemcpyEvent& e) {
  const char* kind = CopyKindLabel(e.copy_kind);
  return absl::StrCat("Memcpy ", kind, *kind ? " (" : "(", MemoryKindLabel(e.src_kind), " -> ",
                      MemoryKindLabel(e.dst_kind), ")");
}

std::string MemsetName(const MemsetEvent& e) {
  return absl::StrCat("Memset (", MemoryKindLabel(e.memory_kind), ")");
}

std::string_view SyncName(SyncKind kind) {
  switch (kind) {
    case SyncKind::kEventSynchronize: return "Event Synchronize";
    case SyncKind::kStreamWaitEvent: return "Stream Wait Event";
    case SyncKind::kStreamSynchronize: return "Stream Synchronize";
    case SyncKind::kContextSynchronize: return "Context Synchronize";
    case SyncKind::kUnknown: break;
  }
  return "Synchronize";
}

std::string NcclName(const NcclEvent& e, std::string_view interned_name) {
  if (!interned_name.empty()) return std::string(interned_name);
  return absl::StrCat("nccl", NcclOpLabel(e.op));
}

std::string_view ApiDisplayName(std::string_view n) {
  size_t v = n.rfind("_v");
  if (v == std::string_view::npos || v + 2 == n.size()) return n;
  for (size_t i = v + 2; i < n.size(); ++i) {
    if (n[i] < '0' || n[i] > '9') return n;
  }
  return n.substr(0, v);
}

bool IsGpuWorkApi(std::string_view n) {
  auto has = [n](std::string_view s) { return n.find(s) != std::string_view::npos; };
  return has("Launch") || has("Memcpy") || has("Memset") || has("memcpy") ||
         has("memset") || has("launch");
}

uint32_t LaneAllocator::Assign(uint64_t start_ns, uint64_t end_ns) {
  for (size_t i = 0; i < lane_end_.size(); ++i) {
    if (lane_end_[i] <= start_ns) {
      lane_end_[i] = end_ns;
      return static_cast<uint32_t>(i);
    }
  }
  if (lane_end_.size() < max_lanes_) {
    lane_end_.push_back(end_ns);
    return static_cast<uint32_t>(lane_end_.size() - 1);
  }
  auto it = std::min_element(lane_end_.begin(), lane_end_.end());
  *it = std::max(*it, end_ns);
  return static_cast<uint32_t>(it - lane_end_.begin());
}

std::string StackLine(const trace::TraceReader& reader, uint32_t stack_id) {
  std::string text;
  const CallStack* s = reader.stack(stack_id);
  if (s == nullptr) return text;
  for (size_t i = 0; i < s->frames.size() && i < 64; ++i) {
    const StackFrame& f = s->frames[i];
    if (i > 0) text += " <- ";
    text += reader.strings().Get(f.function_id);
    text += " (";
    text += reader.strings().Get(f.module_id);
    if (s->kind == StackKind::kPython) {
      text += ":" + std::to_string(f.line);
    } else {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(f.offset));
      text += buf;
    }
    text += ")";
  }
  return text;
}

}  // namespace sightline::exporter
