// tests/kernel/occupancy_test.cc — the occupancy calculator against a table of
// cases (no CUDA needed):
//  * cc 9.0: values CUDA's own cudaOccupancyMaxActiveBlocksPerMultiprocessor
//    returned on the H200 (tests/gpu_metrics/occupancy_vs_cuda_test printed
//    them as OCC_CASE lines on 2026-11-30: 1745 cases, 0 mismatches);
//  * cc 8.0: worked by hand from A100's published limits (64 warps, 32
//    blocks, 64 K registers in 4 sub-partitions, 256-register warp
//    allocation unit, 164 KiB shared memory per SM in 128-byte units, 1 KiB
//    reserved per block), the working shown next to each case;
//  * the "next occupancy step" suggestions, carveouts and error paths.
#include <string>

#include "gtest/gtest.h"
#include "lib/analysis/occupancy.h"

namespace sightline::analysis {
namespace {

struct Case {
  uint32_t regs, static_smem, dynamic_smem, block;
  uint32_t expected_blocks;
  OccupancyLimiter limiter;
};

// H200 as cudaGetDeviceProperties reported it on the GPU machine.
DeviceInfo H200() {
  DeviceInfo d;
  d.cc_major = 9; d.cc_minor = 0; d.sm_count = 132;
  d.max_warps_per_sm = 64; d.max_blocks_per_sm = 32; d.max_threads_per_block = 1024;
  d.registers_per_sm = 65536; d.registers_per_block = 65536;
  d.shared_memory_per_sm = 233472; d.shared_memory_per_block = 49152;
  d.shared_memory_per_block_optin = 232448; d.reserved_shared_memory_per_block = 1024;
  return d;
}

DeviceInfo A100() {  // only the capability: the table supplies the limits
  DeviceInfo d;
  d.cc_major = 8; d.cc_minor = 0; d.sm_count = 108;
  return d;
}

OccupancyResult Compute(const DeviceInfo& device, const Case& c) {
  absl::StatusOr<ArchitectureLimits> arch = LimitsForDevice(device);
  EXPECT_TRUE(arch.ok()) << arch.status();
  LaunchResources launch;
  launch.threads_per_block = c.block;
  launch.registers_per_thread = c.regs;
  launch.static_shared_bytes = c.static_smem;
  launch.dynamic_shared_bytes = c.dynamic_smem;
  absl::StatusOr<OccupancyResult> r = ComputeOccupancy(*arch, launch);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(Occupancy, H200MatchesCudaOccupancyApi) {
  using L = OccupancyLimiter;
  const Case cases[] = {
      // regs static dynamic block → blocks (from the H200's CUDA runtime)
      {10, 0, 0, 32, 32, L::kBlocks},
      {32, 0, 1000, 32, 32, L::kBlocks},
      {10, 0, 0, 160, 12, L::kWarps},
      {10, 0, 1000, 384, 5, L::kWarps},
      {20, 0, 0, 100, 16, L::kWarps},
      {31, 4096, 0, 1000, 2, L::kWarps},
      {32, 8320, 0, 1024, 2, L::kWarps},
      {32, 0, 65636, 768, 2, L::kWarps},
      {128, 0, 1000, 100, 4, L::kRegisters},
      {255, 0, 0, 32, 8, L::kRegisters},
      {255, 0, 0, 96, 2, L::kRegisters},
      {255, 0, 0, 160, 1, L::kRegisters},
      {255, 0, 8192, 128, 2, L::kRegisters},
      {56, 0, 1000, 160, 7, L::kRegisters},
      {56, 0, 20480, 256, 4, L::kRegisters},
      {80, 0, 0, 512, 1, L::kRegisters},
      {12, 12000, 102400, 640, 2, L::kSharedMemory},
      {12, 12000, 204800, 100, 1, L::kSharedMemory},
      {12, 40000, 102400, 768, 1, L::kSharedMemory},
      {31, 4096, 102400, 288, 2, L::kSharedMemory},
      {32, 0, 232448, 384, 1, L::kSharedMemory},
      {32, 0, 49152, 192, 4, L::kSharedMemory},
      {32, 8320, 153600, 128, 1, L::kSharedMemory},
      {80, 0, 65636, 160, 3, L::kSharedMemory},
  };
  for (const Case& c : cases) {
    const OccupancyResult r = Compute(H200(), c);
    EXPECT_EQ(r.active_blocks_per_sm, c.expected_blocks)
        << "regs " << c.regs << " static " << c.static_smem << " dynamic " << c.dynamic_smem << " block "
        << c.block;
    EXPECT_TRUE(r.limited_by(c.limiter)) << "regs " << c.regs << " block " << c.block << " limiter "
                                         << OccupancyLimiterName(r.limiter);
  }
}

TEST(Occupancy, A100PublishedLimits) {
  using L = OccupancyLimiter;
  const Case cases[] = {
      // 32 regs → 1024/warp → 16 warps per sub-partition → 64 warps: 8 blocks of 8 warps, 100%.
      {32, 0, 0, 256, 8, L::kWarps},
      // 64 regs → 2048/warp → 8 per sub-partition → 32 warps → 4 blocks of 8: 50%.
      {64, 0, 0, 256, 4, L::kRegisters},
      // 48 KiB + 1 KiB reserved = 50176 B (392 units) → 167936 / 50176 = 3 blocks.
      {32, 0, 49152, 128, 3, L::kSharedMemory},
      // 100 threads = 4 warps → 64 / 4 = 16 blocks; registers allow 32.
      {16, 0, 0, 100, 16, L::kWarps},
      // 1 warp per block → the 32-block cap binds at 50% occupancy.
      {16, 0, 0, 32, 32, L::kBlocks},
      // 40 regs → 1280/warp → 12 per sub-partition → 48 warps → 2 blocks of 24 (warps also allow 2).
      {40, 0, 0, 768, 2, L::kWarps},
      // 255 regs → 8192/warp: 32 warps × 8192 > 64 K registers per block → cannot launch.
      {255, 0, 0, 1024, 0, L::kNone},
      // 163 KiB + 1 KiB = 164 KiB: exactly one block in the largest carveout.
      {32, 0, 163 * 1024, 256, 1, L::kSharedMemory},
  };
  for (const Case& c : cases) {
    const OccupancyResult r = Compute(A100(), c);
    EXPECT_EQ(r.active_blocks_per_sm, c.expected_blocks) << "regs " << c.regs << " block " << c.block;
    if (c.limiter != L::kNone) {
      EXPECT_TRUE(r.limited_by(c.limiter)) << "regs " << c.regs << " block " << c.block;
    } else {
      EXPECT_FALSE(r.invalid_reason.empty());
    }
  }
  const OccupancyResult r = Compute(A100(), {64, 0, 0, 256, 4, L::kRegisters});
  EXPECT_DOUBLE_EQ(r.theoretical_occupancy_pct, 50.0);
  EXPECT_EQ(r.limiter, L::kRegisters);
  EXPECT_EQ(r.registers_per_warp_allocated, 2048u);
  EXPECT_EQ(r.shared_per_block_allocated, 1024u);  // the reservation alone
}

TEST(Occupancy, NextStepSuggestsRegistersSharedMemoryAndBlockSize) {
  absl::StatusOr<ArchitectureLimits> arch = LimitsForComputeCapability(8, 0);
  ASSERT_TRUE(arch.ok());
  // Registers: 64 → 48 per thread lifts 4 → 5 blocks (40 warps: 10 per
  // sub-partition → 1638 registers per warp → 1536 → 48 per thread).
  LaunchResources regs{256, 64, 0, 0, 0, false};
  OccupancyResult r = *ComputeOccupancy(*arch, regs);
  OccupancyStep s = NextOccupancyStep(*arch, regs, r);
  EXPECT_EQ(s.target_blocks_per_sm, 5u);
  EXPECT_DOUBLE_EQ(s.target_occupancy_pct, 62.5);
  EXPECT_EQ(s.registers_per_thread, 48u);
  EXPECT_EQ(s.shared_bytes_per_block, 0u);
  // Shared memory: 48 KiB per block gives 3 blocks; 4 need ≤ 41984 B each,
  // minus the 1 KiB reservation = 40960 B.
  LaunchResources smem{128, 32, 0, 49152, 0, false};
  r = *ComputeOccupancy(*arch, smem);
  s = NextOccupancyStep(*arch, smem, r);
  EXPECT_EQ(s.target_blocks_per_sm, 4u);
  EXPECT_EQ(s.shared_bytes_per_block, 40960u);
  EXPECT_EQ(s.registers_per_thread, 0u);
  LaunchResources smem_next = smem;
  smem_next.dynamic_shared_bytes = s.shared_bytes_per_block;
  EXPECT_EQ(ComputeOccupancy(*arch, smem_next)->active_blocks_per_sm, 4u);
  smem_next.dynamic_shared_bytes += 1;
  EXPECT_EQ(ComputeOccupancy(*arch, smem_next)->active_blocks_per_sm, 3u);
  // Block size: 32-thread blocks hit the 32-block cap at 50%; 64 threads reach 100%.
  LaunchResources tiny{32, 16, 0, 0, 0, false};
  r = *ComputeOccupancy(*arch, tiny);
  s = NextOccupancyStep(*arch, tiny, r);
  EXPECT_EQ(s.block_size, 64u);
  EXPECT_DOUBLE_EQ(s.block_size_occupancy_pct, 100.0);
  // Already at 100%: nothing to suggest.
  LaunchResources full{256, 32, 0, 0, 0, false};
  r = *ComputeOccupancy(*arch, full);
  s = NextOccupancyStep(*arch, full, r);
  EXPECT_EQ(s.registers_per_thread, 0u);
  EXPECT_EQ(s.block_size, 0u);
}

TEST(Occupancy, RecordedCarveoutIsUsedWhenItFitsABlock) {
  absl::StatusOr<ArchitectureLimits> arch = LimitsForComputeCapability(9, 0);
  ASSERT_TRUE(arch.ok());
  LaunchResources launch{256, 32, 0, 16 * 1024, 0, false};  // 17 KiB allocated per block
  EXPECT_EQ(ComputeOccupancy(*arch, launch)->active_blocks_per_sm, 8u);  // warps bind
  launch.shared_config_bytes = 32 * 1024;  // the driver chose a 32 KiB carveout
  OccupancyResult r = *ComputeOccupancy(*arch, launch);
  EXPECT_EQ(r.active_blocks_per_sm, 1u);
  EXPECT_EQ(r.limiter, OccupancyLimiter::kSharedMemory);
  EXPECT_EQ(r.shared_carveout_bytes, 32u * 1024);
  launch.shared_config_bytes = 8 * 1024;  // too small for one block: raised to 32 KiB
  r = *ComputeOccupancy(*arch, launch);
  EXPECT_EQ(r.shared_carveout_bytes, 32u * 1024);
}

TEST(Occupancy, RecordedDeviceLimitsOverrideTheTable) {
  DeviceInfo d = A100();
  d.shared_memory_per_sm = 100 * 1024;  // e.g. a part with a smaller shared memory
  LaunchResources launch{128, 32, 0, 49152, 0, false};
  EXPECT_EQ(ComputeOccupancy(*LimitsForDevice(d), launch)->active_blocks_per_sm, 2u);
}

TEST(Occupancy, ErrorsAndNames) {
  absl::StatusOr<ArchitectureLimits> arch = LimitsForComputeCapability(7, 5);
  EXPECT_FALSE(arch.ok());
  EXPECT_EQ(arch.status().message(),
            "no occupancy rules for compute capability 7.5 (known: 8.0, 8.6, 8.7, 8.9, 9.0)");
  absl::StatusOr<OccupancyResult> r = ComputeOccupancy(*LimitsForComputeCapability(9, 0), LaunchResources{});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(std::string(OccupancyLimiterName(OccupancyLimiter::kSharedMemory)), "shared_memory");
  EXPECT_EQ(std::string(OccupancyLimiterName(OccupancyLimiter::kRegisters)), "registers");
  KernelEvent k;
  k.block_x = 1100;
  k.registers_per_thread = 16;
  DeviceInfo h = H200();
  absl::StatusOr<OccupancyResult> big = ComputeKernelOccupancy(h, k);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->active_blocks_per_sm, 0u);
  EXPECT_NE(big->invalid_reason.find("exceeds the maximum 1024"), std::string::npos);
  k.block_x = 128;
  k.launch_type = 3;
  EXPECT_FALSE(ComputeKernelOccupancy(h, k)->note.empty());
}

}  // namespace
}  // namespace sightline::analysis
