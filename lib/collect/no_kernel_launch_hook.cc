// lib/collect/no_kernel_launch_hook.cc — CreateKernelLaunchHook when the range
// profiler (range_profiler.cc) is not part of the build: metrics unavailable.
#include "lib/collect/kernel_launch_hook.h"

namespace sightline::collect {

std::unique_ptr<KernelLaunchHook> CreateKernelLaunchHook(const KernelLaunchHookConfig&,
                                                         std::string* error) {
  if (error != nullptr) *error = "this build has no range profiler (lib/collect/range_profiler.cc)";
  return nullptr;
}

}  // namespace sightline::collect
