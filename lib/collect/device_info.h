// lib/collect/device_info.h — process and device facts for the trace header,
// read through the CUDA driver API (looked up with dlsym in the already loaded
// libcuda, so nothing here links the driver) and /proc.
#ifndef SIGHTLINE_LIB_COLLECT_DEVICE_INFO_H_
#define SIGHTLINE_LIB_COLLECT_DEVICE_INFO_H_

#include <string>
#include <vector>

#include "sightline/trace_header.h"

namespace sightline::collect {

// pid, host, command line (/proc/self/cmdline), rank/world size/local rank from
// the usual launcher variables.
ProcessInfo ReadProcessInfo();

// Every visible device, or an empty list when the driver is not initialised.
// Errors (a missing entry point) are appended to *problems.
std::vector<DeviceInfo> ReadDeviceInfo(std::vector<std::string>* problems);

// cuDriverGetVersion / cudaRuntimeGetVersion when available, else 0.
uint32_t DriverVersion();
uint32_t RuntimeVersion();

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_DEVICE_INFO_H_
