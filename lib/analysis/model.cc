// Small model helpers: names, lookups, SyntheticTrace, BuildModel.
#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "lib/analysis/text_util.h"
#include "absl/strings/str_cat.h"
#include "lib/analysis/model.h"

namespace sightline::analysis {

// The memory budget (peak RSS <= 2x the trace file) relies on these sizes.
static_assert(sizeof(GpuActivity) == 40, "GpuActivity grew: check the memory budget");
static_assert(sizeof(ApiCall) == 40, "ApiCall grew: check the memory budget");

const char* ActivityKindName(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kKernel: return "kernel";
    case ActivityKind::kMemcpy: return "memcpy";
    case ActivityKind::kMemset: return "memset";
    case ActivityKind::kNccl: return "nccl";
  }
  return "unknown";
}

const char* ActivityClassName(ActivityClass c) {
  switch (c) {
    case ActivityClass::kCompute: return "compute";
    case ActivityClass::kCommunication: return "communication";
    case ActivityClass::kMemory: return "memory";
  }
  return "unknown";
}

bool IsCommunicationKernelName(std::string_view name) {
  return ContainsIgnoreCase(name, "nccl");
}

bool LaunchConfig::operator==(const LaunchConfig& o) const {
  return grid_x == o.grid_x && grid_y == o.grid_y && grid_z == o.grid_z &&
         block_x == o.block_x && block_y == o.block_y && block_z == o.block_z &&
         registers_per_thread == o.registers_per_thread &&
         static_shared_bytes == o.static_shared_bytes &&
         dynamic_shared_bytes == o.dynamic_shared_bytes &&
         local_bytes_per_thread == o.local_bytes_per_thread &&
         shared_memory_config_bytes == o.shared_memory_config_bytes &&
         launch_type == o.launch_type && cluster_x == o.cluster_x && cluster_y == o.cluster_y &&
         cluster_z == o.cluster_z && device == o.device;
}

uint64_t TraceSource::invalid_total() const {
  uint64_t sum = 0;
  for (uint64_t n : invalid_by_kind) sum += n;
  return sum;
}

uint64_t TraceSource::lost_records() const {
  return losses.total() + integrity.events_missing;
}

double KernelAggregate::Metric(std::string_view metric_name, double fallback) const {
  for (const MetricAggregate& m : metrics) {
    if (m.name == metric_name) return m.mean;
  }
  return fallback;
}

bool KernelAggregate::HasMetric(std::string_view metric_name) const {
  for (const MetricAggregate& m : metrics) {
    if (m.name == metric_name) return true;
  }
  return false;
}

const CallStack* TimelineModel::Stack(uint16_t trace, uint32_t stack_id) const {
  if (trace >= stacks.size() || stack_id == 0) return nullptr;
  auto it = stacks[trace].find(stack_id);
  return it == stacks[trace].end() ? nullptr : &it->second;
}

const KernelAggregate* TimelineModel::FindKernel(std::string_view name) const {
  for (const KernelAggregate& k : kernels) {
    if (k.name_text == name) return &k;
  }
  return nullptr;
}

uint64_t TimelineModel::total_events() const {
  uint64_t sum = 0;
  for (const TraceSource& t : traces) {
    for (uint64_t n : t.events_by_kind) sum += n;
  }
  return sum;
}

uint32_t SyntheticTrace::Intern(std::string_view s) {
  if (s.empty()) return 0;
  for (size_t i = 1; i < strings.size(); ++i) {
    if (strings[i] == s) return static_cast<uint32_t>(i);
  }
  strings.emplace_back(s);
  return static_cast<uint32_t>(strings.size() - 1);
}

absl::StatusOr<TimelineModel> BuildModel(const std::vector<std::string>& trace_paths,
                                         const ProgressCallback& progress) {
  ModelBuilder builder;
  for (size_t i = 0; i < trace_paths.size(); ++i) {
    auto reader = trace::TraceReader::Open(trace_paths[i]);
    if (!reader.ok()) return reader.status();
    ProgressCallback wrapped;
    if (progress) {
      wrapped = [&, i](const ReadProgress& p) {
        ReadProgress q = p;
        q.trace_index = i;
        q.trace_count = trace_paths.size();
        progress(q);
      };
    }
    absl::Status s = builder.AddTrace(**reader, wrapped);
    if (!s.ok()) return s;
  }
  return builder.Finish();
}

}  // namespace sightline::analysis
