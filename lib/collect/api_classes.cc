// lib/collect/api_classes.cc — see api_classes.h.
#include "lib/collect/api_classes.h"

#include <cstring>

namespace sightline::collect {

bool IsSyncCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
        return true;
      default:
        return false;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
      case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
        return true;
      default:
        return false;
    }
  }
  return false;
}

bool IsAllocationCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
        return true;
      default:
        return false;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
      case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
      case CUPTI_DRIVER_TRACE_CBID_cuMemFree:
      case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
        return true;
      default:
        return false;
    }
  }
  return false;
}

namespace {
bool StartsWith(const char* name, const char* prefix) {
  return std::strncmp(name, prefix, std::strlen(prefix)) == 0;
}
}  // namespace

bool IsLaunchApiName(CUpti_CallbackDomain domain, const char* name) {
  if (name == nullptr) return false;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return StartsWith(name, "cudaLaunch") || StartsWith(name, "__cudaLaunch") ||
           StartsWith(name, "cudaGraphLaunch");
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    return StartsWith(name, "cuLaunch") || StartsWith(name, "cuGraphLaunch");
  }
  return false;
}

bool IsPythonStackApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name,
                      bool memory) {
  if (IsSyncCbid(domain, cbid)) return true;
  if (memory && IsAllocationCbid(domain, cbid)) return true;
  if (name == nullptr) return false;
  if (IsLaunchApiName(domain, name)) return true;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return StartsWith(name, "cudaMemcpy") || StartsWith(name, "cudaMemset");
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    return StartsWith(name, "cuMemcpy") || StartsWith(name, "cuMemset");
  }
  return false;
}

}  // namespace sightline::collect
