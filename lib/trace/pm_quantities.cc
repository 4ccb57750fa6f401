// lib/trace/pm_quantities.cc — see pm_quantities.h.
#include "lib/trace/pm_quantities.h"

namespace sightline {
namespace {

constexpr const char* kSmActive[] = {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                                     nullptr};
constexpr const char* kSmIssue[] = {"sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
                                    "sm__inst_executed.avg.pct_of_peak_sustained_elapsed", nullptr};
constexpr const char* kTensor[] = {
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_shared_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", nullptr};
constexpr const char* kDramRead[] = {"dram__read_throughput.avg.pct_of_peak_sustained_elapsed",
                                     "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
                                     nullptr};
constexpr const char* kDramWrite[] = {"dram__write_throughput.avg.pct_of_peak_sustained_elapsed",
                                      "dramc__write_throughput.avg.pct_of_peak_sustained_elapsed",
                                      nullptr};
constexpr const char* kDramReadBytes[] = {"dram__bytes_read.sum.per_second", nullptr};
constexpr const char* kDramWriteBytes[] = {"dram__bytes_write.sum.per_second", nullptr};
constexpr const char* kPcieRead[] = {"pcie__read_bytes.sum.per_second", nullptr};
constexpr const char* kPcieWrite[] = {"pcie__write_bytes.sum.per_second", nullptr};
constexpr const char* kNvlRx[] = {"nvlrx__bytes.sum.per_second", nullptr};
constexpr const char* kNvlTx[] = {"nvltx__bytes.sum.per_second", nullptr};
constexpr const char* kClock[] = {"gpc__cycles_elapsed.avg.per_second", nullptr};

constexpr PmQuantityInfo kTable[kNumPmQuantities] = {
    {PmQuantity::kSmActive, "sm_active", "SM active", PmUnit::kPercent, kSmActive},
    {PmQuantity::kSmIssue, "sm_issue", "SM issue", PmUnit::kPercent, kSmIssue},
    {PmQuantity::kTensorActive, "tensor_active", "tensor pipe active", PmUnit::kPercent, kTensor},
    {PmQuantity::kDramRead, "dram_read", "DRAM read", PmUnit::kPercent, kDramRead},
    {PmQuantity::kDramWrite, "dram_write", "DRAM write", PmUnit::kPercent, kDramWrite},
    {PmQuantity::kDramReadBytes, "dram_read_bytes", "DRAM read", PmUnit::kBytesPerSecond,
     kDramReadBytes},
    {PmQuantity::kDramWriteBytes, "dram_write_bytes", "DRAM write", PmUnit::kBytesPerSecond,
     kDramWriteBytes},
    {PmQuantity::kPcieReadBytes, "pcie_read_bytes", "PCIe read", PmUnit::kBytesPerSecond,
     kPcieRead},
    {PmQuantity::kPcieWriteBytes, "pcie_write_bytes", "PCIe write", PmUnit::kBytesPerSecond,
     kPcieWrite},
    {PmQuantity::kNvlinkRxBytes, "nvlink_rx_bytes", "NVLink receive", PmUnit::kBytesPerSecond,
     kNvlRx},
    {PmQuantity::kNvlinkTxBytes, "nvlink_tx_bytes", "NVLink transmit", PmUnit::kBytesPerSecond,
     kNvlTx},
    {PmQuantity::kGpcClock, "gpc_clock", "SM clock", PmUnit::kHertz, kClock},
};

}  // namespace

const PmQuantityInfo* PmQuantities() { return kTable; }

const PmQuantityInfo& PmQuantityOf(PmQuantity q) { return kTable[static_cast<size_t>(q)]; }

bool PmQuantityForMetric(std::string_view metric, PmQuantity* out) {
  for (const PmQuantityInfo& info : kTable) {
    for (const char* const* c = info.candidates; *c != nullptr; ++c) {
      if (metric == *c) {
        *out = info.quantity;
        return true;
      }
    }
  }
  return false;
}

const char* PmUnitName(PmUnit unit) {
  switch (unit) {
    case PmUnit::kPercent: return "%";
    case PmUnit::kBytesPerSecond: return "B/s";
    case PmUnit::kHertz: return "Hz";
  }
  return "";
}

PmCounter PmCounterFor(std::string_view metric, uint32_t device_id) {
  PmCounter c;
  const std::string device = " (device " + std::to_string(device_id) + ")";
  PmQuantity q;
  if (!PmQuantityForMetric(metric, &q)) {
    c.name = std::string(metric) + device;
    return c;
  }
  const PmQuantityInfo& info = PmQuantityOf(q);
  const char* unit = "%";
  if (info.unit == PmUnit::kBytesPerSecond) {
    unit = "GB/s";
    c.scale = 1e-9;
  } else if (info.unit == PmUnit::kHertz) {
    unit = "MHz";
    c.scale = 1e-6;
  }
  c.name = std::string(info.label) + device + ", " + unit;
  return c;
}

}  // namespace sightline
