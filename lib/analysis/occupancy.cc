// lib/analysis/occupancy.cc — see occupancy.h for the rules implemented here.
#include "lib/analysis/occupancy.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sightline::analysis {
namespace {

uint64_t RoundUp(uint64_t x, uint64_t unit) { return unit == 0 ? x : (x + unit - 1) / unit * unit; }
uint64_t DivUp(uint64_t x, uint64_t d) { return d == 0 ? 0 : (x + d - 1) / d; }

ArchitectureLimits Ampere100() {  // GA100 (A100); also cc 8.7 (Orin)
  ArchitectureLimits a;
  a.cc_major = 8;
  a.cc_minor = 0;
  a.max_warps_per_sm = 64;
  a.max_blocks_per_sm = 32;
  a.max_shared_per_sm = 164 * 1024;
  a.max_shared_per_block = 163 * 1024;
  a.carveouts_kib = {0, 8, 16, 32, 64, 100, 132, 164};
  return a;
}

ArchitectureLimits Ampere10x(uint32_t minor) {  // GA10x (cc 8.6), AD10x (cc 8.9)
  ArchitectureLimits a;
  a.cc_major = 8;
  a.cc_minor = minor;
  a.max_warps_per_sm = 48;
  a.max_blocks_per_sm = minor == 9 ? 24 : 16;
  a.max_shared_per_sm = 100 * 1024;
  a.max_shared_per_block = 99 * 1024;
  a.carveouts_kib = {0, 8, 16, 32, 64, 100};
  return a;
}

ArchitectureLimits Hopper() {  // GH100 (H100, H200)
  ArchitectureLimits a;
  a.cc_major = 9;
  a.cc_minor = 0;
  a.max_warps_per_sm = 64;
  a.max_blocks_per_sm = 32;
  a.max_shared_per_sm = 228 * 1024;
  a.max_shared_per_block = 227 * 1024;
  a.carveouts_kib = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
  return a;
}

// Smallest supported carveout holding `bytes`; 0 when none does.
uint64_t AlignUpToCarveout(const ArchitectureLimits& arch, uint64_t bytes) {
  for (uint32_t kib : arch.carveouts_kib) {
    if (uint64_t{kib} * 1024 >= bytes) return uint64_t{kib} * 1024;
  }
  return 0;
}

uint32_t RegisterLimit(const ArchitectureLimits& arch, uint32_t regs_per_thread,
                       uint32_t warps_per_block, uint32_t* regs_per_warp_out) {
  const uint64_t regs_per_warp =
      RoundUp(uint64_t{regs_per_thread} * arch.warp_size, arch.register_allocation_unit);
  if (regs_per_warp_out != nullptr) *regs_per_warp_out = static_cast<uint32_t>(regs_per_warp);
  if (regs_per_thread > arch.max_registers_per_thread) return 0;
  const uint32_t parts = std::max<uint32_t>(1, arch.register_sub_partitions);
  // The hardware checks the per-block register file as if every
  // sub-partition received the same number of warps.
  const uint64_t assumed = regs_per_warp * RoundUp(warps_per_block, parts);
  if (assumed > arch.max_registers_per_block ||
      regs_per_warp * warps_per_block > arch.max_registers_per_block) {
    return 0;
  }
  if (regs_per_warp == 0) return UINT_MAX;
  const uint64_t warps_per_part = (arch.registers_per_sm / parts) / regs_per_warp;
  return static_cast<uint32_t>(warps_per_part * parts / warps_per_block);
}

// Blocks allowed by shared memory; fills the allocation and the carveout used.
uint32_t SharedLimit(const ArchitectureLimits& arch, const LaunchResources& launch,
                     uint64_t* allocated_out, uint64_t* carveout_out, std::string* why) {
  const uint64_t demand =
      launch.static_shared_bytes + launch.dynamic_shared_bytes + arch.reserved_shared_per_block;
  const uint64_t allocated = RoundUp(demand, arch.shared_allocation_unit);
  *allocated_out = allocated;
  // The per-block limit includes the reservation (cuda_occupancy.h semantics).
  if (allocated > arch.max_shared_per_block + arch.reserved_shared_per_block) {
    *carveout_out = arch.max_shared_per_sm;
    *why = absl::StrCat("shared memory per block ", allocated, " B exceeds the maximum ",
                        arch.max_shared_per_block + arch.reserved_shared_per_block, " B");
    return 0;
  }
  uint64_t carveout = arch.max_shared_per_sm;
  if (launch.shared_config_bytes > 0) {
    carveout = launch.shared_config_bytes >= allocated
                   ? std::min<uint64_t>(launch.shared_config_bytes, arch.max_shared_per_sm)
                   : AlignUpToCarveout(arch, allocated);
    if (carveout == 0) carveout = arch.max_shared_per_sm;
  }
  *carveout_out = carveout;
  if (allocated == 0) return UINT_MAX;
  return static_cast<uint32_t>(carveout / allocated);
}

}  // namespace

const char* OccupancyLimiterName(OccupancyLimiter limiter) {
  switch (limiter) {
    case OccupancyLimiter::kRegisters: return "registers";
    case OccupancyLimiter::kSharedMemory: return "shared_memory";
    case OccupancyLimiter::kWarps: return "warps";
    case OccupancyLimiter::kBlocks: return "blocks";
    case OccupancyLimiter::kNone: break;
  }
  return "none";
}

absl::StatusOr<ArchitectureLimits> LimitsForComputeCapability(uint32_t major, uint32_t minor) {
  if (major == 8 && (minor == 0 || minor == 7)) {
    ArchitectureLimits a = Ampere100();
    a.cc_minor = minor;
    return a;
  }
  if (major == 8 && (minor == 6 || minor == 9)) return Ampere10x(minor);
  if (major == 9 && minor == 0) return Hopper();
  return absl::NotFoundError(absl::StrCat("no occupancy rules for compute capability ", major,
                                          ".", minor, " (known: 8.0, 8.6, 8.7, 8.9, 9.0)"));
}

absl::StatusOr<ArchitectureLimits> LimitsForDevice(const DeviceInfo& device) {
  absl::StatusOr<ArchitectureLimits> table =
      LimitsForComputeCapability(device.cc_major, device.cc_minor);
  if (!table.ok()) return table.status();
  ArchitectureLimits a = *table;
  if (device.warp_size > 0) a.warp_size = device.warp_size;
  if (device.max_warps_per_sm > 0) a.max_warps_per_sm = device.max_warps_per_sm;
  if (device.max_blocks_per_sm > 0) a.max_blocks_per_sm = device.max_blocks_per_sm;
  if (device.max_threads_per_block > 0) a.max_threads_per_block = device.max_threads_per_block;
  if (device.registers_per_sm > 0) a.registers_per_sm = device.registers_per_sm;
  if (device.registers_per_block > 0) a.max_registers_per_block = device.registers_per_block;
  if (device.shared_memory_per_sm > 0) a.max_shared_per_sm = device.shared_memory_per_sm;
  if (device.shared_memory_per_block_optin > 0) {
    a.max_shared_per_block = device.shared_memory_per_block_optin;
  }
  if (device.reserved_shared_memory_per_block > 0) {
    a.reserved_shared_per_block = device.reserved_shared_memory_per_block;
  }
  return a;
}

LaunchResources LaunchResourcesOf(const KernelEvent& kernel) {
  LaunchResources r;
  r.threads_per_block = static_cast<uint32_t>(std::min<uint64_t>(kernel.threads_per_block(), UINT_MAX));
  r.registers_per_thread = kernel.registers_per_thread;
  r.static_shared_bytes = kernel.static_shared_bytes;
  r.dynamic_shared_bytes = kernel.dynamic_shared_bytes;
  r.shared_config_bytes = kernel.shared_memory_config_bytes;
  r.cluster_launch = kernel.launch_type == 3 || kernel.cluster_x > 1 || kernel.cluster_y > 1 ||
                     kernel.cluster_z > 1;
  return r;
}

absl::StatusOr<OccupancyResult> ComputeOccupancy(const ArchitectureLimits& arch,
                                                 const LaunchResources& launch) {
  if (launch.threads_per_block == 0) {
    return absl::InvalidArgumentError("occupancy: block size is 0 (launch configuration unknown)");
  }
  if (arch.warp_size == 0 || arch.max_warps_per_sm == 0) {
    return absl::InvalidArgumentError("occupancy: architecture limits are empty");
  }
  OccupancyResult r;
  r.max_warps_per_sm = arch.max_warps_per_sm;
  r.warps_per_block = static_cast<uint32_t>(DivUp(launch.threads_per_block, arch.warp_size));

  if (launch.threads_per_block > arch.max_threads_per_block) {
    r.invalid_reason = absl::StrCat("block of ", launch.threads_per_block,
                                    " threads exceeds the maximum ", arch.max_threads_per_block);
    r.block_limit_warps = 0;
  } else {
    r.block_limit_warps = arch.max_warps_per_sm / r.warps_per_block;
  }
  r.block_limit_blocks = arch.max_blocks_per_sm;
  r.block_limit_registers = RegisterLimit(arch, launch.registers_per_thread, r.warps_per_block,
                                          &r.registers_per_warp_allocated);
  if (r.block_limit_registers == 0 && r.invalid_reason.empty()) {
    r.invalid_reason = absl::StrCat(launch.registers_per_thread, " registers per thread × ",
                                    launch.threads_per_block,
                                    " threads exceed the register file available to a block");
  }
  std::string shared_why;
  r.block_limit_shared_memory = SharedLimit(arch, launch, &r.shared_per_block_allocated,
                                            &r.shared_carveout_bytes, &shared_why);
  if (r.block_limit_shared_memory == 0 && r.invalid_reason.empty()) r.invalid_reason = shared_why;

  const uint32_t blocks = std::min({r.block_limit_registers, r.block_limit_shared_memory,
                                    r.block_limit_warps, r.block_limit_blocks});
  r.active_blocks_per_sm = blocks;
  r.active_warps_per_sm = blocks * r.warps_per_block;
  r.theoretical_occupancy_pct = 100.0 * r.active_warps_per_sm / arch.max_warps_per_sm;
  if (blocks > 0) {
    // Primary limiter on ties: warps first (the SM's warp slots are the
    // ceiling for this block size), then registers, shared memory, the
    // block cap. limiter_mask keeps every tied limit.
    const std::pair<OccupancyLimiter, uint32_t> order[] = {
        {OccupancyLimiter::kWarps, r.block_limit_warps},
        {OccupancyLimiter::kRegisters, r.block_limit_registers},
        {OccupancyLimiter::kSharedMemory, r.block_limit_shared_memory},
        {OccupancyLimiter::kBlocks, r.block_limit_blocks},
    };
    for (const auto& [limiter, limit] : order) {
      if (limit != blocks) continue;
      r.limiter_mask |= 1u << static_cast<uint32_t>(limiter);
      if (r.limiter == OccupancyLimiter::kNone) r.limiter = limiter;
    }
  }
  if (launch.cluster_launch) {
    r.note = "cluster launch: cluster scheduling may keep fewer blocks resident than computed";
  }
  return r;
}

absl::StatusOr<OccupancyResult> ComputeKernelOccupancy(const DeviceInfo& device,
                                                       const KernelEvent& kernel) {
  absl::StatusOr<ArchitectureLimits> arch = LimitsForDevice(device);
  if (!arch.ok()) return arch.status();
  return ComputeOccupancy(*arch, LaunchResourcesOf(kernel));
}

OccupancyStep NextOccupancyStep(const ArchitectureLimits& arch, const LaunchResources& launch,
                                const OccupancyResult& current) {
  OccupancyStep step;
  if (current.warps_per_block == 0 || arch.max_warps_per_sm == 0) return step;
  const uint32_t target = current.active_blocks_per_sm + 1;
  // A higher block count only helps if the warp and block caps allow it.
  if (target <= current.block_limit_warps && target <= current.block_limit_blocks) {
    step.target_blocks_per_sm = target;
    step.target_occupancy_pct = 100.0 * target * current.warps_per_block / arch.max_warps_per_sm;
    // Registers: the largest per-thread count (granularity = unit / warp)
    // whose per-warp allocation still fits `target` blocks.
    if (current.block_limit_registers < target && current.block_limit_shared_memory >= target) {
      // RegisterLimit is non-increasing in the count, so the first count
      // from the top that fits is the answer (always a multiple of
      // allocation unit / warp size, i.e. 8).
      for (uint32_t regs = std::min(launch.registers_per_thread, arch.max_registers_per_thread + 1);
           regs-- > 1;) {
        if (RegisterLimit(arch, regs, current.warps_per_block, nullptr) >= target) {
          step.registers_per_thread = regs;
          break;
        }
      }
    }
    // Shared memory: the largest static + dynamic size whose allocation fits
    // `target` blocks in the largest carveout.
    if (current.block_limit_shared_memory < target && current.block_limit_registers >= target) {
      const uint64_t per_block = arch.max_shared_per_sm / target;
      const uint64_t aligned = per_block / arch.shared_allocation_unit * arch.shared_allocation_unit;
      const uint64_t used = launch.static_shared_bytes + launch.dynamic_shared_bytes;
      if (aligned > arch.reserved_shared_per_block) {
        const uint64_t usable = aligned - arch.reserved_shared_per_block;
        if (usable < used) step.shared_bytes_per_block = usable;
      }
    }
  }
  // Block size: best occupancy over multiples of the warp size.
  double best = current.theoretical_occupancy_pct;
  for (uint32_t size = arch.warp_size; size <= arch.max_threads_per_block; size += arch.warp_size) {
    LaunchResources alt = launch;
    alt.threads_per_block = size;
    absl::StatusOr<OccupancyResult> r = ComputeOccupancy(arch, alt);
    if (!r.ok() || r->active_blocks_per_sm == 0) continue;
    const double pct = r->theoretical_occupancy_pct;
    const bool better = pct > best + 1e-9;
    const bool tie_nearer = step.block_size != 0 && std::fabs(pct - best) < 1e-9 &&
                            std::llabs(int64_t{size} - launch.threads_per_block) <
                                std::llabs(int64_t{step.block_size} - launch.threads_per_block);
    if (better || tie_nearer) {
      best = pct;
      step.block_size = size;
      step.block_size_occupancy_pct = pct;
    }
  }
  return step;
}

}  // namespace sightline::analysis
