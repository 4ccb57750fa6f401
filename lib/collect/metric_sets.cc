// lib/collect/metric_sets.cc — the metric table and spec resolution.
#include "lib/collect/metric_sets.h"

#include <algorithm>

namespace sightline::collect {
namespace {

constexpr uint32_t kBoth = kChipGA100 | kChipGH100;
constexpr uint32_t kAllSets = kMetricSetOccupancy | kMetricSetMemory | kMetricSetCompute;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

uint32_t SetBitOf(std::string_view name) {
  if (name == "occupancy") return kMetricSetOccupancy;
  if (name == "memory") return kMetricSetMemory;
  if (name == "compute") return kMetricSetCompute;
  if (name == "full") return kAllSets;
  return 0;
}

void AddUnique(std::vector<std::string>* list, std::string_view name) {
  if (std::find(list->begin(), list->end(), name) == list->end()) list->emplace_back(name);
}

}  // namespace

const std::vector<MetricDefinition>& MetricTable() {
  static const std::vector<MetricDefinition>* table = new std::vector<MetricDefinition>{
      {"gpu__time_duration.sum", kAllSets, kBoth, "kernel duration under replay, ns"},
      // occupancy
      {"sm__warps_active.avg.pct_of_peak_sustained_active", kMetricSetOccupancy, kBoth,
       "achieved occupancy, %"},
      {"sm__cycles_active.avg", kMetricSetOccupancy, kBoth, "cycles with a warp resident, mean over SMs"},
      {"sm__cycles_active.max", kMetricSetOccupancy, kBoth, "cycles with a warp resident, busiest SM"},
      // memory
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed", kMetricSetMemory, kBoth,
       "DRAM speed of light, %"},
      {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", kMetricSetMemory, kBoth,
       "memory pipelines speed of light (L1/L2/DRAM), %"},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", kMetricSetMemory, kBoth,
       "global load sectors"},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", kMetricSetMemory, kBoth,
       "global load requests"},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", kMetricSetMemory, kBoth,
       "global store sectors"},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", kMetricSetMemory, kBoth,
       "global store requests"},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", kMetricSetMemory, kBoth,
       "shared-memory bank conflicts"},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", kMetricSetMemory, kBoth,
       "shared-memory wavefronts"},
      // compute
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", kMetricSetCompute, kBoth,
       "SM speed of light, %"},
      {"smsp__issue_active.avg.pct_of_peak_sustained_active", kMetricSetCompute, kBoth,
       "cycles issuing an instruction, %"},
      {"smsp__inst_executed.sum", kMetricSetCompute, kBoth, "warp instructions executed"},
      {"smsp__thread_inst_executed_per_inst_executed.ratio", kMetricSetCompute, kBoth,
       "active threads per warp instruction (32 = no divergence)"},
      {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", kMetricSetCompute,
       kBoth, "tensor pipe active, %"},
      {"sm__inst_executed_pipe_tensor_op_gmma.sum", kMetricSetCompute, kChipGH100,
       "warpgroup MMA (HGMMA) instructions (Hopper)"},
      // Outside the named sets; listed so explicit lists are checked per chip.
      {"sm__cycles_elapsed.avg", kMetricSetCompute, kBoth, "cycles elapsed per SM"},
      {"smsp__warps_active.avg.pct_of_peak_sustained_active", 0, kBoth,
       "achieved occupancy per SM sub-partition, %"},
      {"l1tex__throughput.avg.pct_of_peak_sustained_active", kMetricSetMemory, kBoth, "L1TEX speed of light, %"},
      {"lts__throughput.avg.pct_of_peak_sustained_elapsed", kMetricSetMemory, kBoth, "L2 speed of light, %"},
      {"dram__bytes.sum", kMetricSetMemory, kBoth, "DRAM bytes"},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 0, kBoth,
       "shared-memory bank conflicts, loads"},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0, kBoth,
       "shared-memory bank conflicts, stores"},
      {"smsp__average_thread_inst_executed_per_inst_executed.ratio", 0, kBoth,
       "active threads per warp instruction"},
      {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 0, kBoth,
       "any tensor pipe active, %"},
      {"sm__inst_executed_pipe_tensor.sum", 0, kBoth, "tensor pipe warp instructions"},
  };
  return *table;
}

std::vector<std::string> SupportedChips() { return {"GA100", "GH100"}; }

uint32_t ChipBitOf(std::string_view chip) {
  if (chip == "GA100") return kChipGA100;
  if (chip == "GH100") return kChipGH100;
  return 0;
}

std::vector<std::string> MetricSetNames() { return {"occupancy", "memory", "compute", "full"}; }

bool IsWellFormedMetricName(std::string_view name) {
  if (name.size() < 4 || name.find("__") == std::string_view::npos) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok) return false;
  }
  return name.front() != '.' && name.back() != '.' && name.front() != '_';
}

bool ResolveMetricSelection(std::string_view spec, std::string_view chip,
                            MetricSelection* selection, std::string* error) {
  *selection = MetricSelection();
  selection->spec = std::string(spec);
  const uint32_t chip_bit = ChipBitOf(chip);
  if (chip_bit == 0) {
    *error = "metrics: no metric table for chip '" + std::string(chip) +
             "' (supported: GA100, GH100)";
    return false;
  }
  if (Trim(spec).empty()) {
    *error = "metrics: empty metric spec (use occupancy, memory, compute, full or a list of names)";
    return false;
  }
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = Trim(spec.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    if (const uint32_t bits = SetBitOf(item); bits != 0) {
      for (const MetricDefinition& def : MetricTable()) {
        if ((def.sets & bits) != 0 && (def.chips & chip_bit) != 0) {
          AddUnique(&selection->metrics, def.name);
        }
      }
      continue;
    }
    if (!IsWellFormedMetricName(item)) {
      *error = "metrics: '" + std::string(item) +
               "' is neither a metric set (occupancy, memory, compute, full) nor a metric name";
      return false;
    }
    const auto& table = MetricTable();
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const MetricDefinition& d) { return item == d.name; });
    if (it != table.end() && (it->chips & chip_bit) == 0) {
      *error = "metrics: metric '" + std::string(item) + "' does not exist on " + std::string(chip);
      return false;
    }
    if (it == table.end()) AddUnique(&selection->unchecked, item);
    AddUnique(&selection->metrics, item);
  }
  if (selection->metrics.empty()) {
    *error = "metrics: metric spec '" + std::string(spec) + "' names no metric";
    return false;
  }
  return true;
}

}  // namespace sightline::collect
