// lib/monitor/nvml_poller.cc — see nvml_poller.h. The few NVML types and
// constants used are declared here (NVML's ABI is stable; no nvml.h needed).
#include "lib/monitor/nvml_poller.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace sightline::monitor {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

}  // namespace

struct NvmlPoller::Fns {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*handle)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
};

NvmlPoller::~NvmlPoller() {
  if (fns_ != nullptr && fns_->shutdown != nullptr && !handles_.empty()) fns_->shutdown();
  delete fns_;
  if (lib_ != nullptr) dlclose(lib_);
}

bool NvmlPoller::Open(const std::string& library, const std::string& devices_spec,
                      const std::string& visible, std::string* error) {
  std::string name = library.empty() ? "libnvidia-ml.so.1" : library;
  lib_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    const char* why = dlerror();
    *error = name + " could not be loaded (" + (why != nullptr ? why : "unknown reason") +
             "): no GPU utilization, memory, clock, power or temperature metrics; step times "
             "are still monitored";
    return false;
  }
  fns_ = new Fns();
  auto sym = [&](const char* s) { return dlsym(lib_, s); };
  fns_->init = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlInit_v2"));
  fns_->shutdown = reinterpret_cast<NvmlReturn (*)()>(sym("nvmlShutdown"));
  fns_->error_string = reinterpret_cast<const char* (*)(NvmlReturn)>(sym("nvmlErrorString"));
  fns_->count = reinterpret_cast<NvmlReturn (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
  fns_->handle =
      reinterpret_cast<NvmlReturn (*)(unsigned, NvmlDevice*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  fns_->utilization = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlUtilization*)>(
      sym("nvmlDeviceGetUtilizationRates"));
  fns_->memory =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlMemory*)>(sym("nvmlDeviceGetMemoryInfo"));
  fns_->clock =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
  fns_->power =
      reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
  fns_->temperature = reinterpret_cast<NvmlReturn (*)(NvmlDevice, int, unsigned*)>(
      sym("nvmlDeviceGetTemperature"));
  auto fail = [&](const std::string& why) {
    *error = name + ": " + why + "; no NVML metrics, step times are still monitored";
    delete fns_;
    fns_ = nullptr;
    dlclose(lib_);
    lib_ = nullptr;
    return false;
  };
  if (fns_->init == nullptr || fns_->count == nullptr || fns_->handle == nullptr) {
    return fail("nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2 missing");
  }
  NvmlReturn r = fns_->init();
  if (r != 0) {
    const char* text = fns_->error_string != nullptr ? fns_->error_string(r) : nullptr;
    return fail(std::string("nvmlInit failed: ") +
                (text != nullptr ? text : ("error " + std::to_string(r)).c_str()));
  }
  unsigned count = 0;
  if (fns_->count(&count) != 0 || count == 0) {
    if (fns_->shutdown != nullptr) fns_->shutdown();
    return fail("NVML reports no device");
  }
  // Which devices.
  std::string spec = devices_spec;
  if (spec.empty()) {
    bool numeric = !visible.empty();
    for (char c : visible) {
      if (!(std::isdigit(static_cast<unsigned char>(c)) || c == ',')) numeric = false;
    }
    if (numeric) spec = visible;
  }
  if (!spec.empty()) {
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      unsigned long v = std::strtoul(item.c_str(), &end, 10);
      if (!item.empty() && end != nullptr && *end == '\0' && v < count) {
        indexes_.push_back(static_cast<unsigned>(v));
      }
    }
  }
  if (indexes_.empty()) {
    for (unsigned i = 0; i < count; ++i) indexes_.push_back(i);
  }
  for (unsigned i : indexes_) {
    NvmlDevice d = nullptr;
    handles_.push_back(fns_->handle(i, &d) == 0 ? d : nullptr);
  }
  return true;
}

bool NvmlPoller::Poll(std::vector<DeviceSample>* samples) {
  samples->clear();
  if (fns_ == nullptr) return false;
  bool any = false;
  for (size_t k = 0; k < indexes_.size(); ++k) {
    NvmlDevice d = handles_[k];
    if (d == nullptr) continue;
    DeviceSample s;
    s.index = indexes_[k];
    NvmlUtilization u = {};
    if (fns_->utilization != nullptr && fns_->utilization(d, &u) == 0) {
      s.has_utilization = true;
      s.utilization_ratio = u.gpu / 100.0;
    }
    NvmlMemory m = {};
    if (fns_->memory != nullptr && fns_->memory(d, &m) == 0) {
      s.has_memory = true;
      s.memory_used_bytes = static_cast<double>(m.used);
      s.memory_total_bytes = static_cast<double>(m.total);
    }
    unsigned v = 0;
    if (fns_->clock != nullptr && fns_->clock(d, kNvmlClockSm, &v) == 0) {
      s.has_sm_clock = true;
      s.sm_clock_hz = v * 1e6;
    }
    if (fns_->power != nullptr && fns_->power(d, &v) == 0) {
      s.has_power = true;
      s.power_watts = v / 1000.0;
    }
    if (fns_->temperature != nullptr && fns_->temperature(d, kNvmlTemperatureGpu, &v) == 0) {
      s.has_temperature = true;
      s.temperature_celsius = v;
    }
    any = any || s.has_utilization || s.has_memory;
    samples->push_back(s);
  }
  return any;
}

}  // namespace sightline::monitor
