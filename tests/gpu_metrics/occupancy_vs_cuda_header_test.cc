// tests/gpu_metrics/occupancy_vs_cuda_header_test.cc — runs without a GPU.
// CUDA ships its occupancy calculator as a header (cuda_occupancy.h, the code
// behind cudaOccupancyMaxActiveBlocksPerMultiprocessor and the spreadsheet).
// Our CUDA-free calculator must agree with it on every combination of
// registers per thread, block size, static and dynamic shared memory we sweep,
// for A100 (cc 8.0), GA10x (8.6), AD10x (8.9) and H100/H200 (9.0) with their
// published device limits. The GPU test (occupancy_vs_cuda_test) then checks
// the real API on the H200.
#include <cuda_occupancy.h>

#include <cstdio>

#include "gtest/gtest.h"
#include "lib/analysis/occupancy.h"

namespace sightline::analysis {
namespace {

struct Device {
  const char* name;
  int major, minor;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  size_t smem_per_sm, smem_per_block_optin;
};

// Published per-SM limits (CUDA C Programming Guide, compute-capability table).
constexpr Device kDevices[] = {
    {"A100", 8, 0, 2048, 32, 164 * 1024, 163 * 1024},
    {"A10/RTX30", 8, 6, 1536, 16, 100 * 1024, 99 * 1024},
    {"L4/RTX40", 8, 9, 1536, 24, 100 * 1024, 99 * 1024},
    {"H100/H200", 9, 0, 2048, 32, 228 * 1024, 227 * 1024},
};

DeviceInfo ToDeviceInfo(const Device& d) {
  DeviceInfo info;
  info.cc_major = d.major;
  info.cc_minor = d.minor;
  info.max_warps_per_sm = d.max_threads_per_sm / 32;
  info.max_blocks_per_sm = d.max_blocks_per_sm;
  info.max_threads_per_block = 1024;
  info.registers_per_sm = 65536;
  info.registers_per_block = 65536;
  info.shared_memory_per_sm = d.smem_per_sm;
  info.shared_memory_per_block = 48 * 1024;
  info.shared_memory_per_block_optin = d.smem_per_block_optin;
  info.reserved_shared_memory_per_block = 1024;
  info.warp_size = 32;
  return info;
}

cudaOccDeviceProp ToOccProp(const Device& d) {
  cudaOccDeviceProp p;
  p.computeMajor = d.major;
  p.computeMinor = d.minor;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsPerMultiprocessor = d.max_threads_per_sm;
  p.regsPerBlock = 65536;
  p.regsPerMultiprocessor = 65536;
  p.warpSize = 32;
  p.sharedMemPerBlock = 48 * 1024;
  p.sharedMemPerMultiprocessor = d.smem_per_sm;
  p.numSms = 100;
  p.sharedMemPerBlockOptin = d.smem_per_block_optin;
  p.reservedSharedMemPerBlock = 1024;
  return p;
}

TEST(OccupancyVsCudaHeader, SweepAgrees) {
  const int regs_list[] = {0, 8, 16, 24, 32, 33, 40, 48, 56, 64, 72, 80, 96, 128, 168, 200, 255};
  const int block_list[] = {1, 32, 33, 64, 96, 100, 128, 192, 256, 320, 384, 512, 640, 768, 896, 1000, 1024};
  const size_t static_list[] = {0, 100, 4096, 8320, 40000};
  const size_t dynamic_list[] = {0, 1, 1000, 8192, 20000, 49152, 65636, 100000, 150000, 190000, 230000};
  for (const Device& d : kDevices) {
    absl::StatusOr<ArchitectureLimits> arch = LimitsForDevice(ToDeviceInfo(d));
    ASSERT_TRUE(arch.ok()) << arch.status();
    const cudaOccDeviceProp prop = ToOccProp(d);
    int compared = 0;
    for (int regs : regs_list) {
      for (int block : block_list) {
        for (size_t st : static_list) {
          for (size_t dyn : dynamic_list) {
            if (st + dyn > d.smem_per_block_optin) continue;  // not launchable
            cudaOccFuncAttributes attr;
            attr.maxThreadsPerBlock = 1024;
            attr.numRegs = regs;
            attr.sharedSizeBytes = st;
            attr.partitionedGCConfig = PARTITIONED_GC_OFF;
            attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
            attr.maxDynamicSharedSizeBytes = d.smem_per_block_optin - st;
            attr.numBlockBarriers = 1;
            cudaOccDeviceState state;
            cudaOccResult expected;
            ASSERT_EQ(cudaOccMaxActiveBlocksPerMultiprocessor(&expected, &prop, &attr, &state, block, dyn),
                      CUDA_OCC_SUCCESS);
            LaunchResources launch;
            launch.threads_per_block = block;
            launch.registers_per_thread = regs;
            launch.static_shared_bytes = st;
            launch.dynamic_shared_bytes = dyn;
            absl::StatusOr<OccupancyResult> ours = ComputeOccupancy(*arch, launch);
            ASSERT_TRUE(ours.ok()) << ours.status();
            ASSERT_EQ(static_cast<int>(ours->active_blocks_per_sm), expected.activeBlocksPerMultiprocessor)
                << d.name << " regs " << regs << " block " << block << " static " << st << " dynamic " << dyn;
            if (expected.activeBlocksPerMultiprocessor > 0) {
              // Same limiter set (ignoring barriers, which never bind here).
              const unsigned theirs = expected.limitingFactors;
              EXPECT_EQ(ours->limited_by(OccupancyLimiter::kRegisters), (theirs & OCC_LIMIT_REGISTERS) != 0);
              EXPECT_EQ(ours->limited_by(OccupancyLimiter::kSharedMemory),
                        (theirs & OCC_LIMIT_SHARED_MEMORY) != 0);
              EXPECT_EQ(ours->limited_by(OccupancyLimiter::kWarps), (theirs & OCC_LIMIT_WARPS) != 0);
              EXPECT_EQ(ours->limited_by(OccupancyLimiter::kBlocks), (theirs & OCC_LIMIT_BLOCKS) != 0);
            }
            ++compared;
          }
        }
      }
    }
    std::printf("%s (cc %d.%d): %d configurations agree with cuda_occupancy.h\n", d.name, d.major, d.minor,
                compared);
    EXPECT_GT(compared, 10000);
  }
}

}  // namespace
}  // namespace sightline::analysis
