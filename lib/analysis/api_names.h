// lib/analysis/api_names.h — what a CUDA runtime / driver API call does, by name.
//
// Trace API events carry the function name (interned); these predicates
// classify it the way nsys's rules do: kernel launches, calls that block the
// host until GPU work finishes (cuda_api_sync), synchronous memcpy / memset
// (cuda_memcpy_sync, cuda_memset_sync). Names are matched exactly after
// stripping CUPTI's version suffix ("_v7000", "_v2") and "_ptsz"/"_ptds", for
// both runtime (cuda*) and driver (cu*) spellings.
#ifndef SIGHTLINE_LIB_ANALYSIS_API_NAMES_H_
#define SIGHTLINE_LIB_ANALYSIS_API_NAMES_H_

#include <cstdint>
#include <string_view>

namespace sightline::analysis {

// "cuMemcpyHtoD_v2" → "cuMemcpyHtoD"; "cudaLaunchKernel_v7000" and
// "cudaLaunchKernel_ptsz" → "cudaLaunchKernel".
std::string_view StripApiVersionSuffix(std::string_view name);

bool IsLaunchApi(std::string_view name);        // kernel, cooperative, graph launch
bool IsGraphLaunchApi(std::string_view name);
// Blocks the host until previously issued GPU work completes.
bool IsSyncApi(std::string_view name);
// Any memcpy / memset API.
bool IsMemcpyApi(std::string_view name);
// Memcpy / memset without "Async": synchronous with respect to the host.
bool IsSyncMemcpyApi(std::string_view name);

// Allocates memory: cudaMalloc*, cuMemAlloc*, host allocation and
// registration, cuMemCreate (not the stream-ordered *Async forms).
bool IsAllocatingApi(std::string_view name);
// Releases memory: cudaFree*, cuMemFree*, cuMemRelease (not *Async).
bool IsReleasingApi(std::string_view name);

// ApiFlag bits (model.h) for a name.
uint8_t ApiFlagsForName(std::string_view name);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_API_NAMES_H_
