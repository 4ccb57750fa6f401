// lib/monitor/metrics_text.h — the monitor's metrics and their exposition in
// the Prometheus text format (0.0.4) or OpenMetrics 1.0 (chosen by the
// scraper's Accept header).
//
// Names follow Prometheus's conventions (base units: seconds, bytes, ratio,
// hertz, watts, celsius; counters end in _total):
//   sightline_step_duration_seconds      histogram  {job, rank}
//   sightline_step_duration_median_seconds gauge    {job, rank}  rolling median
//   sightline_steps_dropped_total        counter    {job, rank}  queue overflow
//   sightline_gpu_utilization_ratio      gauge      {job, rank, device}
//   sightline_gpu_memory_used_bytes      gauge      {job, rank, device}
//   sightline_gpu_memory_total_bytes     gauge      {job, rank, device}
//   sightline_gpu_sm_clock_hertz         gauge      {job, rank, device}
//   sightline_gpu_power_watts            gauge      {job, rank, device}
//   sightline_gpu_temperature_celsius    gauge      {job, rank, device}
//   sightline_anomalies_total            counter    {job, rank, kind}
//   sightline_captures_total             counter    {job, rank}
//   sightline_nvml_up                    gauge      {job, rank}  1 when NVML answers
//   sightline_pytorch_memory_allocated_bytes     gauge {job, rank, cuda_device}
//   sightline_pytorch_memory_max_allocated_bytes gauge {job, rank, cuda_device}
//   sightline_pytorch_memory_reserved_bytes      gauge {job, rank, cuda_device}
//       PyTorch's caching allocator after the last optimizer step (the Python
//       hook's sample; cuda_device is torch's device index, in
//       CUDA_VISIBLE_DEVICES order, not NVML's); absent until a sample came
// A device's gauge is left out while NVML does not report it (no fake zeros).
#ifndef SIGHTLINE_LIB_MONITOR_METRICS_TEXT_H_
#define SIGHTLINE_LIB_MONITOR_METRICS_TEXT_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sightline::monitor {

// Fixed bucket bounds (seconds) covering 1 ms .. 60 s steps.
class StepHistogram {
 public:
  static constexpr std::array<double, 18> kBounds = {
      0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05,
      0.075, 0.1,    0.25,  0.5,    1.0,  2.5,   5.0,  10.0, 60.0};
  void Observe(double seconds);
  // Cumulative count of observations <= kBounds[i]; count() is +Inf.
  uint64_t cumulative(size_t i) const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::array<uint64_t, kBounds.size()> buckets_{};  // non-cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct DeviceSample {
  uint32_t index = 0;
  bool has_utilization = false;
  double utilization_ratio = 0;
  bool has_memory = false;
  double memory_used_bytes = 0, memory_total_bytes = 0;
  bool has_sm_clock = false;
  double sm_clock_hz = 0;
  bool has_power = false;
  double power_watts = 0;
  bool has_temperature = false;
  double temperature_celsius = 0;
};

struct TorchMemoryGauge {
  uint32_t cuda_device = 0;
  uint64_t allocated = 0, max_allocated = 0, reserved = 0;
};

inline constexpr const char* kAnomalyKinds[] = {"step_time", "utilization_drop", "memory_growth",
                                                "manual"};

struct MetricsSnapshot {
  std::string job;
  std::string rank;  // "" when the process has no rank: label value "-1"
  StepHistogram steps;
  double step_median_seconds = 0;  // 0: no baseline yet (no sample)
  uint64_t steps_dropped = 0;
  bool nvml_up = false;
  std::vector<DeviceSample> devices;
  std::vector<TorchMemoryGauge> torch_memory;  // by cuda_device, ascending
  std::map<std::string, uint64_t> anomalies;  // kind -> count
  uint64_t captures = 0;
};

// Label value escaping of the exposition formats (\\, \", \n).
std::string EscapeLabelValue(const std::string& value);

// The whole exposition; `openmetrics` selects OpenMetrics 1.0 (counter
// families without the _total suffix in TYPE lines, "# EOF" at the end).
std::string RenderMetrics(const MetricsSnapshot& snapshot, bool openmetrics);

// Content-Type header value of each format.
const char* MetricsContentType(bool openmetrics);

}  // namespace sightline::monitor

#endif  // SIGHTLINE_LIB_MONITOR_METRICS_TEXT_H_
