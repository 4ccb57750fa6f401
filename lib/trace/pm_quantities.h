// lib/trace/pm_quantities.h — what PM sampling (--gpu-metrics) measures: the
// quantities, their units, and the CUPTI metric names that give each one on
// GH100 (H100/H200) and GA100 (A100). Plain C++, no CUDA: the collector picks
// the first candidate name CUPTI accepts for a quantity (lib/collect/pm_sampler.cc),
// the analyzer maps a trace's metric names back to quantities.
//
// Names: CUPTI's PM-sampling metric database (cupti_pmsampling.h; checked on
// the H200 with bench/metrics/pm_probe.cu, results/h200-2026-12-03-pm-probe.txt).
// The `dramc__*` spellings configure but read ~0 on the H200, so `dram__*`
// comes first. NVLink names are refused on a single H200 (no NVLink
// counters exposed): the quantity is then absent, and the report says so.
#ifndef SIGHTLINE_LIB_TRACE_PM_QUANTITIES_H_
#define SIGHTLINE_LIB_TRACE_PM_QUANTITIES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sightline {

enum class PmUnit : uint8_t { kPercent, kBytesPerSecond, kHertz };

enum class PmQuantity : uint8_t {
  kSmActive,        // share of cycles with a warp resident (sm__cycles_active)
  kSmIssue,         // warp instructions issued, % of peak
  kTensorActive,    // tensor pipe active, % of cycles
  kDramRead,        // DRAM read throughput, % of peak
  kDramWrite,       // DRAM write throughput, % of peak
  kDramReadBytes,   // DRAM bytes read per second
  kDramWriteBytes,  // DRAM bytes written per second
  kPcieReadBytes,   // PCIe bytes read per second (host → device direction seen by the GPU)
  kPcieWriteBytes,  // PCIe bytes written per second
  kNvlinkRxBytes,   // NVLink bytes received per second
  kNvlinkTxBytes,   // NVLink bytes sent per second
  kGpcClock,        // GPC (SM) clock, cycles per second
};
inline constexpr size_t kNumPmQuantities = 12;

struct PmQuantityInfo {
  PmQuantity quantity;
  const char* key;    // JSON key / short name: "sm_active", "dram_read", ...
  const char* label;  // "SM active", "DRAM read", ...
  PmUnit unit;
  // CUPTI metric names, preferred first; nullptr-terminated.
  const char* const* candidates;
};

// All quantities, in PmQuantity order (the collector's priority order when a
// set does not fit one pass: later ones are dropped first).
const PmQuantityInfo* PmQuantities();
const PmQuantityInfo& PmQuantityOf(PmQuantity q);

// The quantity a trace's metric name measures, or false for a name that is
// not one of the candidates (a newer collector's addition: shown by name).
bool PmQuantityForMetric(std::string_view metric, PmQuantity* out);

const char* PmUnitName(PmUnit unit);  // "%", "B/s", "Hz"

// A timeline counter for a sampled metric (the Chrome and Perfetto exports):
// "SM active (device 0), %", "DRAM read (device 0), GB/s"; `scale`
// multiplies the trace's value into the counter's unit (B/s → GB/s, Hz →
// MHz). Unknown metrics keep their name and value.
struct PmCounter {
  std::string name;
  double scale = 1;
};
PmCounter PmCounterFor(std::string_view metric, uint32_t device_id);

}  // namespace sightline

#endif  // SIGHTLINE_LIB_TRACE_PM_QUANTITIES_H_
