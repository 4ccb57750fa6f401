// lib/collect/nccl_names.h — recognising NCCL collectives by name.
//
// NCCL's device kernels are named after the collective they run, e.g.
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
// (NCCL ≥ 2.19; CUPTI reports it mangled: "_Z39ncclDevKernel_AllReduce_Sum_f32_
// RING_LL24ncclDevKernelArgsStorageILm4096EE", as seen with NCCL 2.28 on the
// H200) or "ncclKernel_AllReduce_RING_LL_Sum_float(...)" (older), and its
// host-side NVTX ranges (domain "NCCL") are named after the API call
// ("ncclAllReduce", "ncclGroupEnd" ...). Pure string logic, no CUDA.
#ifndef SIGHTLINE_LIB_COLLECT_NCCL_NAMES_H_
#define SIGHTLINE_LIB_COLLECT_NCCL_NAMES_H_

#include <string>
#include <string_view>

#include "lib/trace/events.h"

namespace sightline::collect {

struct NcclKernelInfo {
  NcclOp op = NcclOp::kUnknown;
  std::string datatype;   // "f32", "bf16", "float" ... ("" unknown)
  std::string reduction;  // "Sum", "Prod", "Max", "Min", "Avg" ("" n/a)
  std::string algorithm;  // "RING_LL", "TREE_SIMPLE" ... ("" unknown)
};

// True when `kernel_name` is an NCCL device kernel; fills *info as far as the
// name says (a generic "ncclDevKernel_Generic" kernel gives op kUnknown).
bool ParseNcclKernelName(std::string_view kernel_name, NcclKernelInfo* info);

// Collective from an NCCL API/NVTX name: "ncclAllReduce" → kAllReduce,
// "ncclGroupEnd" → kUnknown with false returned.
bool ParseNcclApiName(std::string_view api_name, NcclOp* op);

// Bytes per element of an NCCL datatype token ("f32"/"float" → 4); 0 unknown.
uint32_t NcclDatatypeBytes(std::string_view datatype);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_NCCL_NAMES_H_
