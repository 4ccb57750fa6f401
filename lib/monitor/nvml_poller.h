// lib/monitor/nvml_poller.h — GPU utilization, memory, SM clock, power and
// temperature from NVML, loaded at run time.
//
// The driver's libnvidia-ml.so.1 is dlopen'ed (SIGHTLINE_NVML_LIB overrides
// the name, for tests with a fake library); nothing links against it, so the
// monitor builds and runs where NVML is absent — Open() then fails with a
// message saying so, and the monitor keeps reporting step times.
// Devices: the NVML indexes listed in SIGHTLINE_MONITOR_DEVICES, else those
// of a numeric CUDA_VISIBLE_DEVICES, else every device.
// Call only from the monitor's own thread (NVML's first call takes ~100 ms
// and must never run on an application thread). Not thread-safe.
#ifndef SIGHTLINE_LIB_MONITOR_NVML_POLLER_H_
#define SIGHTLINE_LIB_MONITOR_NVML_POLLER_H_

#include <string>
#include <vector>

#include "lib/monitor/metrics_text.h"

namespace sightline::monitor {

class NvmlPoller {
 public:
  NvmlPoller() = default;
  ~NvmlPoller();
  NvmlPoller(const NvmlPoller&) = delete;
  NvmlPoller& operator=(const NvmlPoller&) = delete;

  // Loads and initialises NVML. False with *error ("libnvidia-ml.so.1 not
  // found (...): no GPU utilization/memory/clock/power metrics") otherwise.
  // `devices_spec`: "" or a comma list of NVML indexes; `visible` the value of
  // CUDA_VISIBLE_DEVICES ("" when unset).
  bool Open(const std::string& library, const std::string& devices_spec,
            const std::string& visible, std::string* error);
  bool open() const { return lib_ != nullptr; }
  // One sample of every selected device; a quantity NVML refuses is left out.
  // False when no device answered at all.
  bool Poll(std::vector<DeviceSample>* samples);

 private:
  void* lib_ = nullptr;
  struct Fns;
  Fns* fns_ = nullptr;
  std::vector<unsigned> indexes_;
  std::vector<void*> handles_;
};

}  // namespace sightline::monitor

#endif  // SIGHTLINE_LIB_MONITOR_NVML_POLLER_H_
