// lib/collect/device_info.h — process and device facts for the trace header,
// read through the CUDA driver API (looked up with dlsym in the already loaded
// libcuda, so nothing here links the driver) and /proc.
#ifndef SIGHTLINE_LIB_COLLECT_DEVICE_INFO_H_
#define SIGHTLINE_LIB_COLLECT_DEVICE_INFO_H_

#include <string>
#include <vector>

#include "lib/trace/trace_header.h"

namespace sightline::collect {

// pid, host, command line (/proc/self/cmdline), rank/world size/local rank from
// the usual launcher variables.
ProcessInfo ReadProcessInfo();

// Every visible device, or an empty list when the driver is not initialised.
// Errors (a missing entry point) are appended to *problems.
std::vector<DeviceInfo> ReadDeviceInfo(std::vector<std::string>* problems);

// Chip family of a compute capability, as the range profiler names chips for
// the data-center parts ("GH100" for 9.0, "GA100" for 8.0); "" when unknown.
// Consumer parts of one capability share a family name ("GA10x" for 8.6).
std::string ChipNameFromComputeCapability(uint32_t major, uint32_t minor);

// cuDriverGetVersion / cudaRuntimeGetVersion when available, else 0.
uint32_t DriverVersion();
uint32_t RuntimeVersion();

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_DEVICE_INFO_H_
