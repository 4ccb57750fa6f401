#include "lib/analysis/api_names.h"

#include <array>

#include "lib/analysis/text_util.h"
#include "lib/analysis/model.h"

namespace sightline::analysis {

std::string_view StripApiVersionSuffix(std::string_view name) {
  // CUPTI's names carry the API version ("cudaLaunchKernel_v7000",
  // "cuMemcpyHtoD_v2") and per-thread-stream variants ("_ptsz", "_ptds").
  static constexpr std::array<std::string_view, 3> kSuffixes = {"_ptsz", "_ptds", "_spt"};
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (std::string_view s : kSuffixes) {
      if (EndsWith(name, s)) {
        name.remove_suffix(s.size());
        stripped = true;
      }
    }
    size_t v = name.rfind("_v");
    if (v != std::string_view::npos && v + 2 < name.size()) {
      bool digits = true;
      for (size_t i = v + 2; i < name.size(); ++i) {
        digits &= name[i] >= '0' && name[i] <= '9';
      }
      if (digits) {
        name = name.substr(0, v);
        stripped = true;
      }
    }
  }
  return name;
}

namespace {
template <size_t N>
bool OneOf(std::string_view name, const std::array<std::string_view, N>& names) {
  for (std::string_view n : names) {
    if (name == n) return true;
  }
  return false;
}
}  // namespace

bool IsGraphLaunchApi(std::string_view name) {
  name = StripApiVersionSuffix(name);
  return name == "cudaGraphLaunch" || name == "cuGraphLaunch";
}

bool IsLaunchApi(std::string_view name) {
  static constexpr std::array<std::string_view, 14> kLaunch = {
      "cudaLaunchKernel",       "cudaLaunchKernelExC",      "cudaLaunchCooperativeKernel",
      "cudaLaunchCooperativeKernelMultiDevice", "cudaLaunch", "cudaLaunchHostFunc",
      "cuLaunchKernel",         "cuLaunchKernelEx",         "cuLaunchCooperativeKernel",
      "cuLaunchCooperativeKernelMultiDevice",   "cuLaunch", "cuLaunchGrid",
      "cuLaunchGridAsync",      "cudaLaunchDevice"};
  std::string_view n = StripApiVersionSuffix(name);
  return OneOf(n, kLaunch) || IsGraphLaunchApi(n);
}

bool IsSyncApi(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kSync = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
      "cudaThreadSynchronize", "cuCtxSynchronize",      "cuStreamSynchronize",
      "cuEventSynchronize"};
  return OneOf(StripApiVersionSuffix(name), kSync);
}

bool IsMemcpyApi(std::string_view name) {
  std::string_view n = StripApiVersionSuffix(name);
  return StartsWith(n, "cudaMemcpy") || StartsWith(n, "cuMemcpy") ||
         StartsWith(n, "cudaMemset") || StartsWith(n, "cuMemset");
}

bool IsSyncMemcpyApi(std::string_view name) {
  std::string_view n = StripApiVersionSuffix(name);
  if (!IsMemcpyApi(n)) return false;
  return !Contains(n, "Async");
}

bool IsAllocatingApi(std::string_view name) {
  std::string_view n = StripApiVersionSuffix(name);
  if (Contains(n, "Async")) return false;
  return Contains(n, "Malloc") || Contains(n, "MemAlloc") || Contains(n, "HostAlloc") ||
         Contains(n, "HostRegister") || Contains(n, "MemCreate");
}

bool IsReleasingApi(std::string_view name) {
  std::string_view n = StripApiVersionSuffix(name);
  if (Contains(n, "Async")) return false;
  return StartsWith(n, "cudaFree") || StartsWith(n, "cuMemFree") || n == "cuMemRelease" ||
         n == "cudaHostUnregister" || n == "cuMemHostUnregister";
}

uint8_t ApiFlagsForName(std::string_view name) {
  uint8_t flags = 0;
  if (IsLaunchApi(name)) flags |= kApiLaunch;
  if (IsGraphLaunchApi(name)) flags |= kApiGraphLaunch;
  if (IsSyncApi(name)) flags |= kApiSync;
  if (IsMemcpyApi(name)) flags |= kApiMemcpy;
  if (IsSyncMemcpyApi(name)) flags |= kApiMemcpySync;
  if (IsAllocatingApi(name) || IsReleasingApi(name)) flags |= kApiAlloc;
  return flags;
}

}  // namespace sightline::analysis
