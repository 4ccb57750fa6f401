// lib/analysis/occupancy.h — theoretical occupancy of a kernel launch, its
// limiter, and the change that reaches the next occupancy step. No CUDA.
//
// The calculation is the one CUDA's own occupancy API performs
// (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`, documented in the CUDA
// Occupancy Calculator and in Nsight Compute's "Occupancy" section):
//
//   blocks/SM = min(limit_registers, limit_shared_memory, limit_warps,
//                   limit_blocks)
//
//   limit_warps      = max_warps_per_sm / ceil(threads_per_block / 32)
//   limit_blocks     = the architecture's resident-block cap (32 on cc 8.0 and
//                      9.0, 16 on cc 8.6, 24 on cc 8.9)
//   limit_registers  = registers are allocated per warp, rounded up to the
//                      allocation unit (256), and live in 4 SM sub-partitions:
//                      warps_per_subpartition = (regs_per_sm / 4) / regs_per_warp
//                      limit = warps_per_subpartition * 4 / warps_per_block
//                      (0 when the block exceeds the per-block register file
//                      or the per-thread maximum of 255)
//   limit_shared     = carveout / round_up(static + dynamic + reserved, 128)
//                      where `reserved` is the driver's per-block reservation
//                      (1 KiB since cc 8.0) and the carveout is the
//                      shared-memory configuration in effect: the one recorded
//                      for the launch when known and large enough for one
//                      block, otherwise the largest the SM supports — the
//                      default of CUDA's API (a recorded carveout too small
//                      for one block is raised to the next supported size,
//                      as the driver does).
//
// Theoretical occupancy = blocks/SM × warps/block ÷ max warps/SM.
//
// Architecture tables cover cc 8.0 (A100/GA100), 8.6, 8.7, 8.9 and 9.0
// (H100/H200/GH100); device values recorded in the trace header (warps, blocks,
// registers and shared memory per SM, reserved shared memory per block)
// override the table's when present, so a newer minor revision with the same
// allocation rules still computes correctly. Cluster launches (launch_type 3)
// are computed per block as for regular launches: cluster scheduling can lower
// the real number further, which the result says in `note`.
#ifndef SIGHTLINE_LIB_ANALYSIS_OCCUPANCY_H_
#define SIGHTLINE_LIB_ANALYSIS_OCCUPANCY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/trace/events.h"
#include "lib/trace/trace_header.h"

namespace sightline::analysis {

// What bounds the number of resident blocks per SM. kNone only for a launch
// that cannot run at all (see OccupancyResult::invalid_reason).
enum class OccupancyLimiter : uint8_t {
  kNone = 0,
  kRegisters = 1,
  kSharedMemory = 2,
  kWarps = 3,   // threads per block vs warps per SM
  kBlocks = 4,  // the resident-block cap per SM
};
// Stable lower-case names used in reports: "registers", "shared_memory",
// "warps", "blocks", "none".
const char* OccupancyLimiterName(OccupancyLimiter limiter);

// Per-architecture allocation rules and per-SM limits.
struct ArchitectureLimits {
  uint32_t cc_major = 0;
  uint32_t cc_minor = 0;
  uint32_t warp_size = 32;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_threads_per_block = 1024;
  uint32_t registers_per_sm = 65536;
  uint32_t max_registers_per_block = 65536;
  uint32_t max_registers_per_thread = 255;
  uint32_t register_allocation_unit = 256;   // registers, per warp
  uint32_t register_sub_partitions = 4;
  uint32_t shared_allocation_unit = 128;     // bytes
  uint64_t reserved_shared_per_block = 1024; // bytes, driver reservation
  uint64_t max_shared_per_sm = 0;            // largest carveout, bytes
  uint64_t max_shared_per_block = 0;         // opt-in maximum, bytes
  std::vector<uint32_t> carveouts_kib;       // supported carveouts, ascending
};

// The table entry for a compute capability; NotFound for one we have no
// allocation rules for (message names the capability and the known ones).
absl::StatusOr<ArchitectureLimits> LimitsForComputeCapability(uint32_t major, uint32_t minor);

// Table entry for the device, with the limits the trace header recorded for it
// taking precedence where non-zero.
absl::StatusOr<ArchitectureLimits> LimitsForDevice(const DeviceInfo& device);

// The inputs of the calculation (a KernelEvent carries all of them).
struct LaunchResources {
  uint32_t threads_per_block = 0;
  uint32_t registers_per_thread = 0;
  uint64_t static_shared_bytes = 0;
  uint64_t dynamic_shared_bytes = 0;
  uint64_t shared_config_bytes = 0;  // carveout recorded for the launch; 0 unknown
  bool cluster_launch = false;
};
LaunchResources LaunchResourcesOf(const KernelEvent& kernel);

struct OccupancyResult {
  uint32_t active_blocks_per_sm = 0;
  uint32_t active_warps_per_sm = 0;
  uint32_t max_warps_per_sm = 0;
  uint32_t warps_per_block = 0;
  double theoretical_occupancy_pct = 0;  // 0..100
  OccupancyLimiter limiter = OccupancyLimiter::kNone;  // primary limiter
  // Every limit equal to the result (ties), as a bit mask of 1 << limiter.
  uint32_t limiter_mask = 0;
  uint32_t block_limit_registers = 0;
  uint32_t block_limit_shared_memory = 0;
  uint32_t block_limit_warps = 0;
  uint32_t block_limit_blocks = 0;
  uint32_t registers_per_warp_allocated = 0;
  uint64_t shared_per_block_allocated = 0;  // incl. reservation, rounded
  uint64_t shared_carveout_bytes = 0;       // shared memory per SM used
  std::string invalid_reason;  // non-empty when the launch cannot fit an SM
  std::string note;            // caveats (cluster launch, ...)

  bool limited_by(OccupancyLimiter l) const {
    return (limiter_mask & (1u << static_cast<uint32_t>(l))) != 0;
  }
};

// The calculation. Fails (InvalidArgument) only on a zero block size; a launch
// that cannot fit returns 0 blocks with invalid_reason set.
absl::StatusOr<OccupancyResult> ComputeOccupancy(const ArchitectureLimits& arch,
                                                 const LaunchResources& launch);
// Convenience: LimitsForDevice + LaunchResourcesOf + ComputeOccupancy.
absl::StatusOr<OccupancyResult> ComputeKernelOccupancy(const DeviceInfo& device,
                                                       const KernelEvent& kernel);

// "What change reaches the next occupancy step": each single change that, with
// everything else unchanged, raises the resident blocks per SM (for the
// register and shared-memory changes) or the resident warps (for the block
// size). A field is 0 when that change alone cannot reach a higher step.
struct OccupancyStep {
  uint32_t target_blocks_per_sm = 0;     // current + 1 at this block size
  double target_occupancy_pct = 0;
  // At most this many registers per thread (a multiple of the per-thread
  // granularity) reaches target_blocks_per_sm.
  uint32_t registers_per_thread = 0;
  // At most this many bytes of static + dynamic shared memory per block.
  uint64_t shared_bytes_per_block = 0;
  // The block size (multiple of 32, same registers and shared memory per
  // block) with the highest theoretical occupancy; the smallest such size
  // nearest the current one. 0 when no block size beats the current one.
  uint32_t block_size = 0;
  double block_size_occupancy_pct = 0;
};
OccupancyStep NextOccupancyStep(const ArchitectureLimits& arch, const LaunchResources& launch,
                                const OccupancyResult& current);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_OCCUPANCY_H_
