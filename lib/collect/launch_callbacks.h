// lib/collect/launch_callbacks.h — which CUPTI API callbacks are kernel
// launches, and the launch configuration a driver launch callback carries.
// Shared by the collector and the in-process metrics harness.
#ifndef SIGHTLINE_LIB_COLLECT_LAUNCH_CALLBACKS_H_
#define SIGHTLINE_LIB_COLLECT_LAUNCH_CALLBACKS_H_

#include <cupti.h>

#include "lib/collect/kernel_launch_hook.h"

namespace sightline::collect {

inline bool IsLaunchCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    // CUDA 13 reports triple-chevron launches as __cudaLaunchKernel(_ptsz)_v13000.
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
           cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
  }
  return false;
}

// A CUDA graph launch (--metrics-range graph measures these).
inline bool IsGraphLaunchCbid(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

// Driver calls that run kernels the metrics hook does not see launch by
// launch: a CUDA graph's kernels, cooperative launches. While kernels
// measured in place are not traced their kernels would have no record, so
// the collector watches these (CollectorImpl::OnUnhookedLaunchWhileUntraced).
inline bool IsUnhookedLaunchCbid(CUpti_CallbackId cbid) {
  return IsGraphLaunchCbid(cbid) ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice;
}

// Grid, block, dynamic shared memory and stream from a driver launch
// callback's parameters (cuLaunchKernel or cuLaunchKernelEx, `cbid` one of
// the driver launch ids above). A runtime launch's own parameters may carry
// none (CUDA 13's __cudaLaunchKernel); the driver call underneath always does.
inline void FillLaunchFromDriverParams(CUpti_CallbackId cbid, const void* params,
                                       KernelLaunchInfo* info) {
  if (params == nullptr) return;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
    const auto* p = static_cast<const cuLaunchKernel_params*>(params);
    info->grid_x = p->gridDimX; info->grid_y = p->gridDimY; info->grid_z = p->gridDimZ;
    info->block_x = p->blockDimX; info->block_y = p->blockDimY; info->block_z = p->blockDimZ;
    info->dynamic_shared_bytes = p->sharedMemBytes;
    info->stream = p->hStream;
    return;
  }
  const auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
  if (p->config == nullptr) return;
  const CUlaunchConfig* c = p->config;
  info->grid_x = c->gridDimX; info->grid_y = c->gridDimY; info->grid_z = c->gridDimZ;
  info->block_x = c->blockDimX; info->block_y = c->blockDimY; info->block_z = c->blockDimZ;
  info->dynamic_shared_bytes = c->sharedMemBytes;
  info->stream = c->hStream;
}

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_LAUNCH_CALLBACKS_H_
