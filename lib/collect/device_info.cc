// lib/collect/device_info.cc — see device_info.h.
#include "lib/collect/device_info.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/trace/sink.h"

namespace sightline::collect {
namespace {

using CUresultInt = int;
using DeviceGetCountFn = CUresultInt (*)(int*);
using DeviceGetFn = CUresultInt (*)(int*, int);
using DeviceGetAttributeFn = CUresultInt (*)(int*, int, int);
using DeviceGetNameFn = CUresultInt (*)(char*, int, int);
using DeviceTotalMemFn = CUresultInt (*)(size_t*, int);
using DeviceGetUuidFn = CUresultInt (*)(unsigned char*, int);
using VersionFn = CUresultInt (*)(int*);

// Attribute numbers from cuda.h (CUdevice_attribute); spelled out so this file
// does not depend on the header's availability of every name.
enum Attribute : int {
  kMaxThreadsPerBlock = 1,
  kMaxSharedPerBlock = 8,
  kWarpSize = 10,
  kMaxRegistersPerBlock = 12,
  kClockRate = 13,
  kSmCount = 16,
  kPciBusId = 33,
  kMemoryClockRate = 36,
  kMemoryBusWidth = 37,
  kL2CacheSize = 38,
  kMaxThreadsPerSm = 39,
  kAsyncEngineCount = 40,
  kCcMajor = 75,
  kCcMinor = 76,
  kMaxSharedPerSm = 81,
  kMaxRegistersPerSm = 82,
  kMaxSharedPerBlockOptin = 97,
  kMaxBlocksPerSm = 106,
  kReservedSharedPerBlock = 111,
};

void* DriverSymbol(const char* name) {
  static void* lib = nullptr;  // set once the driver is loaded (never unloaded)
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  return dlsym(lib, name);
}

const char* FirstEnv(const char* const* names) {
  for (const char* const* n = names; *n != nullptr; ++n) {
    const char* v = std::getenv(*n);
    if (v != nullptr && *v != '\0') return v;
  }
  return nullptr;
}

}  // namespace

ProcessInfo ReadProcessInfo() {
  ProcessInfo p;
  p.pid = static_cast<uint32_t>(getpid());
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) p.host = host;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    std::string arg;
    int c;
    size_t total = 0;
    while ((c = std::fgetc(f)) != EOF && total < 65536) {
      ++total;
      if (c == '\0') {
        p.command_line.push_back(arg);
        arg.clear();
      } else {
        arg.push_back(static_cast<char>(c));
      }
    }
    if (!arg.empty()) p.command_line.push_back(arg);
    std::fclose(f);
  }
  p.rank = trace::RankFromEnvironment(nullptr);
  static const char* const kWorld[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS",
                                       "PMI_SIZE", nullptr};
  static const char* const kLocal[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "SLURM_LOCALID", "MPI_LOCALRANKID", nullptr};
  if (const char* v = FirstEnv(kWorld)) p.world_size = std::atoi(v);
  if (const char* v = FirstEnv(kLocal)) p.local_rank = std::atoi(v);
  return p;
}

std::vector<DeviceInfo> ReadDeviceInfo(std::vector<std::string>* problems) {
  std::vector<DeviceInfo> out;
  auto get_count = reinterpret_cast<DeviceGetCountFn>(DriverSymbol("cuDeviceGetCount"));
  auto get_device = reinterpret_cast<DeviceGetFn>(DriverSymbol("cuDeviceGet"));
  auto get_attr = reinterpret_cast<DeviceGetAttributeFn>(DriverSymbol("cuDeviceGetAttribute"));
  auto get_name = reinterpret_cast<DeviceGetNameFn>(DriverSymbol("cuDeviceGetName"));
  auto total_mem = reinterpret_cast<DeviceTotalMemFn>(DriverSymbol("cuDeviceTotalMem_v2"));
  auto get_uuid = reinterpret_cast<DeviceGetUuidFn>(DriverSymbol("cuDeviceGetUuid_v2"));
  if (get_count == nullptr || get_device == nullptr || get_attr == nullptr) {
    if (problems != nullptr) problems->push_back("CUDA driver entry points not found");
    return out;
  }
  int count = 0;
  if (get_count(&count) != 0) {
    if (problems != nullptr) problems->push_back("cuDeviceGetCount failed");
    return out;
  }
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (get_device(&dev, i) != 0) continue;
    auto attr = [&](int a) {
      int v = 0;
      return get_attr(&v, a, dev) == 0 && v > 0 ? static_cast<uint64_t>(v) : uint64_t{0};
    };
    DeviceInfo d;
    d.id = static_cast<uint32_t>(i);
    char name[256] = {};
    if (get_name != nullptr && get_name(name, sizeof(name) - 1, dev) == 0) d.name = name;
    if (get_uuid != nullptr) {
      unsigned char uuid[16] = {};
      if (get_uuid(uuid, dev) == 0) {
        char text[48];
        std::snprintf(text, sizeof(text),
                      "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                      uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7],
                      uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
        d.uuid = text;
      }
    }
    d.cc_major = static_cast<uint32_t>(attr(kCcMajor));
    d.cc_minor = static_cast<uint32_t>(attr(kCcMinor));
    d.chip_name = ChipNameFromComputeCapability(d.cc_major, d.cc_minor);
    d.sm_count = static_cast<uint32_t>(attr(kSmCount));
    d.warp_size = static_cast<uint32_t>(attr(kWarpSize));
    if (d.warp_size == 0) d.warp_size = 32;
    d.max_warps_per_sm = static_cast<uint32_t>(attr(kMaxThreadsPerSm) / d.warp_size);
    d.max_blocks_per_sm = static_cast<uint32_t>(attr(kMaxBlocksPerSm));
    d.max_threads_per_block = static_cast<uint32_t>(attr(kMaxThreadsPerBlock));
    d.registers_per_sm = static_cast<uint32_t>(attr(kMaxRegistersPerSm));
    d.registers_per_block = static_cast<uint32_t>(attr(kMaxRegistersPerBlock));
    d.shared_memory_per_sm = attr(kMaxSharedPerSm);
    d.shared_memory_per_block = attr(kMaxSharedPerBlock);
    d.shared_memory_per_block_optin = attr(kMaxSharedPerBlockOptin);
    d.reserved_shared_memory_per_block = attr(kReservedSharedPerBlock);
    d.core_clock_khz = static_cast<uint32_t>(attr(kClockRate));
    d.memory_clock_khz = static_cast<uint32_t>(attr(kMemoryClockRate));
    d.memory_bus_width_bits = static_cast<uint32_t>(attr(kMemoryBusWidth));
    d.l2_cache_bytes = attr(kL2CacheSize);
    d.pci_bus_id = static_cast<uint32_t>(attr(kPciBusId));
    d.async_engine_count = static_cast<uint32_t>(attr(kAsyncEngineCount));
    size_t bytes = 0;
    if (total_mem != nullptr && total_mem(&bytes, dev) == 0) d.global_memory_bytes = bytes;
    // DDR: two transfers per memory clock.
    d.memory_bandwidth_gbps =
        2.0 * d.memory_clock_khz * 1e3 * (d.memory_bus_width_bits / 8.0) / 1e9;
    out.push_back(d);
  }
  return out;
}

std::string ChipNameFromComputeCapability(uint32_t major, uint32_t minor) {
  struct Entry {
    uint32_t major, minor;
    const char* chip;
  };
  static constexpr Entry kChips[] = {
      {7, 0, "GV100"}, {7, 5, "TU10x"}, {8, 0, "GA100"}, {8, 6, "GA10x"}, {8, 7, "GA10B"},
      {8, 9, "AD10x"}, {9, 0, "GH100"}, {10, 0, "GB100"}, {10, 3, "GB110"}, {12, 0, "GB20x"},
  };
  for (const Entry& e : kChips) {
    if (e.major == major && e.minor == minor) return e.chip;
  }
  return "";
}

uint32_t DriverVersion() {
  auto fn = reinterpret_cast<VersionFn>(DriverSymbol("cuDriverGetVersion"));
  int v = 0;
  return fn != nullptr && fn(&v) == 0 ? static_cast<uint32_t>(v) : 0;
}

uint32_t RuntimeVersion() {
  auto fn = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"));
  int v = 0;
  return fn != nullptr && fn(&v) == 0 ? static_cast<uint32_t>(v) : 0;
}

}  // namespace sightline::collect
