// tests/support/h200_device.h — the NVIDIA H200 that synthetic test traces
// run on: the device properties the occupancy calculator and the roofline
// read (cc 9.0, 132 SMs, limits per SM and block, 4.8 TB/s). One copy for
// the analysis, export and trace test helpers and the analyzer benchmark,
// which add what they look at (chip name, UUID, clocks).
#ifndef SIGHTLINE_TESTS_SUPPORT_H200_DEVICE_H_
#define SIGHTLINE_TESTS_SUPPORT_H200_DEVICE_H_

#include <cstdint>

#include "lib/trace/trace_header.h"

namespace sightline::test_fixtures {

inline DeviceInfo H200Device(uint32_t id = 0) {
  DeviceInfo d;
  d.id = id;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.max_warps_per_sm = 64;
  d.max_blocks_per_sm = 32;
  d.max_threads_per_block = 1024;
  d.registers_per_sm = 65536;
  d.registers_per_block = 65536;
  d.shared_memory_per_sm = 233472;
  d.shared_memory_per_block = 49152;
  d.shared_memory_per_block_optin = 232448;
  d.reserved_shared_memory_per_block = 1024;
  d.memory_bandwidth_gbps = 4800;
  return d;
}

}  // namespace sightline::test_fixtures

#endif  // SIGHTLINE_TESTS_SUPPORT_H200_DEVICE_H_
