// lib/collect/metric_sets.h — named hardware-metric sets and the per-chip table
// of which metrics exist. Plain C++ (no CUDA, no CUPTI): unit-tested on any
// machine; the range profiler resolves `--metrics` / SIGHTLINE_METRICS here.
//
// Sets (ncu metric names, see shared/ANCHORS.md):
//   occupancy  achieved occupancy, SM activity spread (imbalance / tail)
//   memory     DRAM / memory-pipe / L1 / L2 speed of light, DRAM bytes, global
//              load/store sectors per request, shared-memory bank conflicts
//              and wavefronts
//   compute    SM speed of light, issue activity, instructions and elapsed
//              cycles (IPC), divergence, tensor pipe
//   full       the union
// Every set also carries gpu__time_duration.sum (the replayed duration, so a
// range's values can be weighed without the distorted timeline duration).
//
// A spec is a set name or a comma-separated list mixing set names and metric
// names ("memory,sm__cycles_active.max"). Metric names listed in the chip
// table are checked against it ("does not exist on GA100"); other well-formed
// names are passed through for the CUPTI host API to accept or reject at
// configuration time (the range profiler reports that as "unknown metric").
//
// Chip tables: GA100 (A100, cc 8.0) and GH100 (H100/H200, cc 9.0). Every
// entry was checked against CUPTI 13.0's host metric database
// (cuptiProfilerHostGetMetricProperties); tests/gpu_metrics repeats that check.
#ifndef SIGHTLINE_LIB_COLLECT_METRIC_SETS_H_
#define SIGHTLINE_LIB_COLLECT_METRIC_SETS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sightline::collect {

enum MetricSetBit : uint32_t {
  kMetricSetOccupancy = 1u << 0,
  kMetricSetMemory = 1u << 1,
  kMetricSetCompute = 1u << 2,
};

enum ChipBit : uint32_t {
  kChipGA100 = 1u << 0,
  kChipGH100 = 1u << 1,
};

struct MetricDefinition {
  const char* name;
  uint32_t sets;   // MetricSetBit mask
  uint32_t chips;  // ChipBit mask: where the metric exists
  const char* meaning;
};

// The whole table (static storage).
const std::vector<MetricDefinition>& MetricTable();

// Chips with a table ("GA100", "GH100").
std::vector<std::string> SupportedChips();
// ChipBit of a CUPTI chip name; 0 when unknown.
uint32_t ChipBitOf(std::string_view chip);

// Names of the sets: "occupancy", "memory", "compute", "full".
std::vector<std::string> MetricSetNames();

struct MetricSelection {
  std::string spec;                  // as given
  std::vector<std::string> metrics;  // ordered, unique
  // Metrics not in our table (left for CUPTI to validate).
  std::vector<std::string> unchecked;
};

// Resolves `spec` for `chip`. Returns false with a one-line *error naming the
// offending part: empty spec, unknown chip (lists the supported ones), a
// malformed metric name, or a table metric absent on the chip.
bool ResolveMetricSelection(std::string_view spec, std::string_view chip,
                            MetricSelection* selection, std::string* error);

// True when `name` looks like a metric name (lower-case unit__counter with
// optional .rollup/.submetric parts, [a-z0-9_.]).
bool IsWellFormedMetricName(std::string_view name);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_METRIC_SETS_H_
