// lib/collect/api_classes.h — which CUDA API calls (CUPTI callback ids and
// names) sightline treats as synchronizing, allocating, launching, and which
// get a Python stack. Pure functions of the id and name (no CUPTI call), so
// the overhead floor (bench/overhead/floor_subscriber.cc) enables exactly the
// callbacks the collector enables.
#ifndef SIGHTLINE_LIB_COLLECT_API_CLASSES_H_
#define SIGHTLINE_LIB_COLLECT_API_CLASSES_H_

#include <cupti.h>

namespace sightline::collect {

// Synchronizing API calls (their call stacks are captured), by callback id.
bool IsSyncCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
// Calls that allocate or release memory (-t cuda-memory: their call stacks are
// recorded, like those of synchronizing calls).
bool IsAllocationCbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
// Kernel and graph launch calls by API name (cudaLaunch*, __cudaLaunch*,
// cudaGraphLaunch*; cuLaunch*, cuGraphLaunch*), all their variants.
bool IsLaunchApiName(CUpti_CallbackDomain domain, const char* name);
// Calls that get a Python stack: launches, copies, memsets, synchronizing
// calls and, with `memory`, allocating calls.
bool IsPythonStackApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name,
                      bool memory);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_API_CLASSES_H_
