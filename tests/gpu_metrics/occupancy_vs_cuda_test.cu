// tests/gpu_metrics/occupancy_vs_cuda_test.cu — on a real GPU, the occupancy
// calculator (lib/analysis/occupancy.h) must equal CUDA's own
// cudaOccupancyMaxActiveBlocksPerMultiprocessor for kernels with different
// register, shared-memory and block-size pressure, over a grid of block sizes
// and dynamic shared-memory sizes. Device limits come from
// cudaGetDeviceProperties exactly as the collector records them.
//
// Every compared case is printed as
//   OCC_CASE cc=9.0 regs=R static=S dynamic=D block=B blocks=N
// so the CPU table in tests/kernel/occupancy_test.cc can quote the H200's answers.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "examples/metrics/metrics_kernels.cuh"
#include "gtest/gtest.h"
#include "lib/analysis/occupancy.h"

namespace sightline::analysis {
namespace {

using namespace sightline_examples;

struct KernelUnderTest {
  std::string name;
  const void* func;
};

template <int N>
__global__ void static_shared_kernel(float* out) {
  __shared__ float buf[N];
  buf[threadIdx.x % N] = threadIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = buf[(threadIdx.x * 7) % N];
}

__global__ void tiny_kernel(float* out) { out[threadIdx.x] = 1.f; }

DeviceInfo DeviceInfoFromRuntime(int dev) {
  cudaDeviceProp p{};
  EXPECT_EQ(cudaGetDeviceProperties(&p, dev), cudaSuccess);
  DeviceInfo d;
  d.id = dev;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.max_warps_per_sm = p.maxThreadsPerMultiProcessor / p.warpSize;
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.registers_per_sm = p.regsPerMultiprocessor;
  d.registers_per_block = p.regsPerBlock;
  d.shared_memory_per_sm = p.sharedMemPerMultiprocessor;
  d.shared_memory_per_block = p.sharedMemPerBlock;
  d.shared_memory_per_block_optin = p.sharedMemPerBlockOptin;
  d.reserved_shared_memory_per_block = p.reservedSharedMemPerBlock;
  d.warp_size = p.warpSize;
  return d;
}

TEST(OccupancyVsCuda, MatchesCudaOccupancyApi) {
  int dev = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  const DeviceInfo device = DeviceInfoFromRuntime(dev);
  std::printf("device %s cc %u.%u, %u SMs, smem/SM %llu, optin/block %llu, reserved %llu\n",
              device.name.c_str(), device.cc_major, device.cc_minor, device.sm_count,
              (unsigned long long)device.shared_memory_per_sm,
              (unsigned long long)device.shared_memory_per_block_optin,
              (unsigned long long)device.reserved_shared_memory_per_block);
  absl::StatusOr<ArchitectureLimits> arch = LimitsForDevice(device);
  ASSERT_TRUE(arch.ok()) << arch.status();

  const std::vector<KernelUnderTest> kernels = {
      {"tiny_kernel", reinterpret_cast<const void*>(&tiny_kernel)},
      {"matmul_naive", reinterpret_cast<const void*>(&matmul_naive)},
      {"matmul_tiled", reinterpret_cast<const void*>(&matmul_tiled)},
      {"transpose_shared<0>", reinterpret_cast<const void*>(&transpose_shared<0>)},
      {"register_heavy<16>", reinterpret_cast<const void*>(&register_heavy<16>)},
      {"register_heavy<40>", reinterpret_cast<const void*>(&register_heavy<40>)},
      {"register_heavy<64>", reinterpret_cast<const void*>(&register_heavy<64>)},
      {"register_heavy<96>", reinterpret_cast<const void*>(&register_heavy<96>)},
      {"register_heavy<160>", reinterpret_cast<const void*>(&register_heavy<160>)},
      {"static_shared<3000>", reinterpret_cast<const void*>(&static_shared_kernel<3000>)},
      {"static_shared<10000>", reinterpret_cast<const void*>(&static_shared_kernel<10000>)},
      {"shared_heavy", reinterpret_cast<const void*>(&shared_heavy)},
      {"divergent_branch", reinterpret_cast<const void*>(&divergent_branch)},
  };
  const int block_sizes[] = {32, 64, 96, 100, 128, 160, 192, 256, 288, 384, 512, 640, 768, 1000, 1024};
  const size_t dynamic_sizes[] = {0, 1000, 8 * 1024, 20 * 1024, 48 * 1024, 64 * 1024 + 100,
                                  100 * 1024, 150 * 1024, 200 * 1024, 227 * 1024};
  int compared = 0, mismatches = 0;
  std::vector<std::string> distinct_limiters;
  for (const KernelUnderTest& k : kernels) {
    cudaFuncAttributes attr{};
    ASSERT_EQ(cudaFuncGetAttributes(&attr, k.func), cudaSuccess) << k.name;
    // Allow the largest dynamic shared memory so large sizes are valid launches.
    const int max_dynamic = static_cast<int>(device.shared_memory_per_block_optin) - static_cast<int>(attr.sharedSizeBytes);
    ASSERT_EQ(cudaFuncSetAttribute(k.func, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic), cudaSuccess)
        << k.name;
    std::printf("kernel %-22s regs %3d static %6zu local %zu maxThreads %d\n", k.name.c_str(), attr.numRegs,
                attr.sharedSizeBytes, attr.localSizeBytes, attr.maxThreadsPerBlock);
    for (int block : block_sizes) {
      if (block > attr.maxThreadsPerBlock) continue;
      for (size_t dynamic : dynamic_sizes) {
        if (static_cast<long>(dynamic) > max_dynamic) continue;
        int expected = -1;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&expected, k.func, block, dynamic) != cudaSuccess) {
          cudaGetLastError();
          continue;
        }
        LaunchResources launch;
        launch.threads_per_block = block;
        launch.registers_per_thread = attr.numRegs;
        launch.static_shared_bytes = attr.sharedSizeBytes;
        launch.dynamic_shared_bytes = dynamic;
        absl::StatusOr<OccupancyResult> ours = ComputeOccupancy(*arch, launch);
        ASSERT_TRUE(ours.ok()) << ours.status();
        ++compared;
        if (static_cast<int>(ours->active_blocks_per_sm) != expected) {
          ++mismatches;
          ADD_FAILURE() << k.name << " block " << block << " dynamic " << dynamic << ": ours "
                        << ours->active_blocks_per_sm << " (" << OccupancyLimiterName(ours->limiter)
                        << ") vs CUDA " << expected;
        }
        std::printf("OCC_CASE cc=%u.%u regs=%d static=%zu dynamic=%zu block=%d blocks=%d limiter=%s\n",
                    device.cc_major, device.cc_minor, attr.numRegs, attr.sharedSizeBytes, dynamic, block,
                    expected, OccupancyLimiterName(ours->limiter));
        const std::string lim = OccupancyLimiterName(ours->limiter);
        bool seen = false;
        for (const auto& s : distinct_limiters) seen |= s == lim;
        if (!seen) distinct_limiters.push_back(lim);
      }
    }
  }
  std::printf("compared %d cases over %zu kernels, %d mismatches, limiters seen:", compared, kernels.size(),
              mismatches);
  for (const auto& s : distinct_limiters) std::printf(" %s", s.c_str());
  std::printf("\n");
  EXPECT_GE(compared, 100);
  EXPECT_GE(distinct_limiters.size(), 3u);  // registers, shared memory, warps/blocks all exercised
}

}  // namespace
}  // namespace sightline::analysis
