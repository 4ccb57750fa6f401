// lib/trace/trace_header.h — plain structs for a trace's header and footer,
// mirroring TraceHeader / Footer of proto/sightline/v1/trace.proto.
//
// The collector fills TraceHeaderData and hands it to trace::TraceWriter; the
// reader gives it back. No protobuf or abseil types cross this boundary so the
// injected library can stay free of both. Internal, not installed (see
// events.h).
#ifndef SIGHTLINE_LIB_TRACE_TRACE_HEADER_H_
#define SIGHTLINE_LIB_TRACE_TRACE_HEADER_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/trace/events.h"

namespace sightline {

struct ProcessInfo {
  uint32_t pid = 0;
  std::string host;
  std::vector<std::string> command_line;
  int32_t rank = -1;        // RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID; -1 none
  int32_t world_size = 0;
  int32_t local_rank = -1;
};

struct DeviceInfo {
  uint32_t id = 0;
  std::string name;
  std::string uuid;
  uint32_t cc_major = 0;
  uint32_t cc_minor = 0;
  uint32_t sm_count = 0;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t registers_per_sm = 0;
  uint32_t registers_per_block = 0;
  uint64_t shared_memory_per_sm = 0;
  uint64_t shared_memory_per_block = 0;
  uint64_t shared_memory_per_block_optin = 0;
  uint64_t reserved_shared_memory_per_block = 0;
  uint32_t warp_size = 32;
  uint32_t core_clock_khz = 0;
  uint32_t memory_clock_khz = 0;
  uint32_t memory_bus_width_bits = 0;
  uint64_t global_memory_bytes = 0;
  uint64_t l2_cache_bytes = 0;
  double memory_bandwidth_gbps = 0;
  std::string chip_name;
  uint32_t pci_bus_id = 0;
  uint32_t async_engine_count = 0;
};

struct ClockMapping {
  uint64_t trace_ns = 0;     // collector clock (CUPTI timestamp)
  uint64_t realtime_ns = 0;  // CLOCK_REALTIME at the same instant
  // Offset to add to a trace timestamp to get CLOCK_REALTIME nanoseconds.
  int64_t offset_ns() const {
    return static_cast<int64_t>(realtime_ns) - static_cast<int64_t>(trace_ns);
  }
};

struct TraceHeaderData {
  uint32_t format_version = 0;  // filled by the writer
  std::string tool_version;
  ProcessInfo process;
  std::vector<DeviceInfo> devices;
  uint32_t cupti_api_version = 0;
  uint32_t cuda_driver_version = 0;
  uint32_t cuda_runtime_version = 0;
  ClockMapping clock;
  uint64_t start_realtime_ns = 0;
  std::vector<std::string> enabled;
  std::string metric_set;
  std::string capture_range;
};

struct FooterData {
  uint64_t chunks = 0;
  uint64_t events = 0;
  std::array<uint64_t, kNumEventKinds> counts{};  // indexed by EventKind
  LossReport losses;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint64_t end_realtime_ns = 0;
  std::string end_reason;
};

}  // namespace sightline

#endif  // SIGHTLINE_LIB_TRACE_TRACE_HEADER_H_
