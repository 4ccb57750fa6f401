// lib/monitor/metrics_text.cc — see metrics_text.h.
#include "lib/monitor/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace sightline::monitor {
namespace {

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Shortest form that reads back exactly ("0.015", not "0.014999999999999999").
  char buf[64];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

class Writer {
 public:
  Writer(const MetricsSnapshot& s, bool om) : om_(om) {
    base_ = "job=\"" + EscapeLabelValue(s.job) + "\",rank=\"" +
            EscapeLabelValue(s.rank.empty() ? "-1" : s.rank) + "\"";
  }
  // family: name without _total for counters.
  void Family(const std::string& family, const char* type, const char* help) {
    std::string type_name = family;
    if (!om_ && std::string(type) == "counter") type_name += "_total";
    out_ += "# HELP " + type_name + " " + help + "\n";
    out_ += "# TYPE " + type_name + " " + type + "\n";
  }
  void Sample(const std::string& name, const std::string& extra_labels, double value) {
    out_ += name + "{" + base_ + (extra_labels.empty() ? "" : "," + extra_labels) + "} " +
            Number(value) + "\n";
  }
  std::string Finish() {
    if (om_) out_ += "# EOF\n";
    return std::move(out_);
  }

 private:
  bool om_;
  std::string base_;
  std::string out_;
};

std::string DeviceLabel(uint32_t index) { return "device=\"" + std::to_string(index) + "\""; }

}  // namespace

void StepHistogram::Observe(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) {
      ++buckets_[i];
      break;
    }
  }
  ++count_;
  sum_ += seconds;
}

uint64_t StepHistogram::cumulative(size_t i) const {
  uint64_t total = 0;
  for (size_t k = 0; k <= i && k < buckets_.size(); ++k) total += buckets_[k];
  return total;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

const char* MetricsContentType(bool openmetrics) {
  return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                     : "text/plain; version=0.0.4; charset=utf-8";
}

std::string RenderMetrics(const MetricsSnapshot& s, bool om) {
  Writer w(s, om);
  w.Family("sightline_step_duration_seconds", "histogram",
           "Duration of one training/inference step (start to next start).");
  for (size_t i = 0; i < StepHistogram::kBounds.size(); ++i) {
    w.Sample("sightline_step_duration_seconds_bucket",
             "le=\"" + Number(StepHistogram::kBounds[i]) + "\"",
             static_cast<double>(s.steps.cumulative(i)));
  }
  w.Sample("sightline_step_duration_seconds_bucket", "le=\"+Inf\"",
           static_cast<double>(s.steps.count()));
  w.Sample("sightline_step_duration_seconds_sum", "", s.steps.sum());
  w.Sample("sightline_step_duration_seconds_count", "", static_cast<double>(s.steps.count()));

  w.Family("sightline_step_duration_median_seconds", "gauge",
           "Rolling median of the step duration (the anomaly detector's baseline); no sample "
           "until the detector has its warm-up steps.");
  if (s.step_median_seconds > 0) {
    w.Sample("sightline_step_duration_median_seconds", "", s.step_median_seconds);
  }
  w.Family("sightline_steps_dropped", "counter",
           "Steps not counted because the monitor's step queue was full.");
  w.Sample("sightline_steps_dropped_total", "", static_cast<double>(s.steps_dropped));

  w.Family("sightline_nvml_up", "gauge", "1 when NVML answers, 0 when it is absent or failing.");
  w.Sample("sightline_nvml_up", "", s.nvml_up ? 1 : 0);

  struct Gauge {
    const char* name;
    const char* help;
    bool DeviceSample::*has;
    double DeviceSample::*value;
  };
  const Gauge gauges[] = {
      {"sightline_gpu_utilization_ratio", "Fraction of the last sample period a kernel ran (NVML).",
       &DeviceSample::has_utilization, &DeviceSample::utilization_ratio},
      {"sightline_gpu_memory_used_bytes", "GPU memory in use on the device (NVML).",
       &DeviceSample::has_memory, &DeviceSample::memory_used_bytes},
      {"sightline_gpu_memory_total_bytes", "GPU memory of the device (NVML).",
       &DeviceSample::has_memory, &DeviceSample::memory_total_bytes},
      {"sightline_gpu_sm_clock_hertz", "Current SM clock (NVML).", &DeviceSample::has_sm_clock,
       &DeviceSample::sm_clock_hz},
      {"sightline_gpu_power_watts", "Power draw (NVML).", &DeviceSample::has_power,
       &DeviceSample::power_watts},
      {"sightline_gpu_temperature_celsius", "GPU core temperature (NVML).",
       &DeviceSample::has_temperature, &DeviceSample::temperature_celsius},
  };
  for (const Gauge& g : gauges) {
    w.Family(g.name, "gauge", g.help);
    for (const DeviceSample& d : s.devices) {
      if (d.*(g.has)) w.Sample(g.name, DeviceLabel(d.index), d.*(g.value));
    }
  }

  struct TorchGauge {
    const char* name;
    const char* help;
    uint64_t TorchMemoryGauge::*value;
  };
  const TorchGauge torch_gauges[] = {
      {"sightline_pytorch_memory_allocated_bytes",
       "Bytes in PyTorch tensors after the last optimizer step (torch.cuda.memory_allocated).",
       &TorchMemoryGauge::allocated},
      {"sightline_pytorch_memory_max_allocated_bytes",
       "Peak bytes in PyTorch tensors so far (torch.cuda.max_memory_allocated).",
       &TorchMemoryGauge::max_allocated},
      {"sightline_pytorch_memory_reserved_bytes",
       "Bytes PyTorch's caching allocator holds from the GPU (torch.cuda.memory_reserved).",
       &TorchMemoryGauge::reserved},
  };
  for (const TorchGauge& g : torch_gauges) {
    w.Family(g.name, "gauge", g.help);
    for (const TorchMemoryGauge& t : s.torch_memory) {
      w.Sample(g.name, "cuda_device=\"" + std::to_string(t.cuda_device) + "\"",
               static_cast<double>(t.*(g.value)));
    }
  }

  w.Family("sightline_anomalies", "counter",
           "Anomalies detected, by kind (step_time, utilization_drop, memory_growth, manual).");
  for (const char* kind : kAnomalyKinds) {
    auto it = s.anomalies.find(kind);
    w.Sample("sightline_anomalies_total", std::string("kind=\"") + kind + "\"",
             it == s.anomalies.end() ? 0.0 : static_cast<double>(it->second));
  }
  w.Family("sightline_captures", "counter", "Captures written (anomaly or on demand).");
  w.Sample("sightline_captures_total", "", static_cast<double>(s.captures));
  return w.Finish();
}

}  // namespace sightline::monitor
