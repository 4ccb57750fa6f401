// lib/analysis/python_sites.h — Python call sites and PyTorch ops of CUDA
// calls and of the GPU work they launch.
//
// Call site: an API call's Python stack (ApiCall::python_stack_id, recorded by
// --python-backtrace) is reduced to its *user* frame: the innermost frame
// whose file is not library code (site-packages, dist-packages, the standard
// library, torch, Triton, TorchInductor's generated code, "<frozen ...>");
// the innermost frame when every frame is library code. Written
// "path.py:LINE in function".
//
// Threads without Python frames (autograd's backward threads, C++ threads):
// their calls are attributed, and marked inferred, to
//  1. the forward op's site, when the call is inside an autograd backward
//     node range whose "seq = N" names a forward op range (--pytorch) that
//     made a call with a Python stack; else
//  2. the `backward()` line, when the latest call with a Python stack made
//     before it in the same process has `backward` among its frames (the
//     thread blocked in backward() while the engine ran).
// Anything else stays unattributed.
//
// Op: the innermost NVTX range on the calling thread enclosing the call whose
// name is an op range ("aten::mm, seq = 3, ..." from emit_nvtx), the text
// before the first comma; inside a backward node, "aten::mm [backward of
// aten::addmm]" when the forward op is found by seq.
//
// GPU time of kernels, copies and memsets goes to their launching call's site
// and op (correlation id); host-blocked time is the duration of synchronizing
// calls and synchronous copies.
#ifndef SIGHTLINE_LIB_ANALYSIS_PYTHON_SITES_H_
#define SIGHTLINE_LIB_ANALYSIS_PYTHON_SITES_H_

#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"

namespace sightline::analysis {

// Whether a Python source path is library code (not the user's).
bool IsLibraryPythonFile(std::string_view path);

// Per API call (index into model.api_calls): its site and op. The per-call
// tables are empty when the model has neither Python stacks nor op ranges.
struct PythonAttribution {
  std::vector<std::string> sites;  // unique site texts
  std::vector<std::string> ops;    // unique op labels
  std::vector<int32_t> api_site;   // -1 = none
  std::vector<bool> api_site_inferred;
  std::vector<int32_t> api_op;     // -1 = none
  std::vector<uint32_t> api_full_stack;  // Python stack id used (0 = none), per call
  bool any_python = false;
  bool any_op = false;

  const std::string* SiteOf(uint32_t api) const {
    return api < api_site.size() && api_site[api] >= 0 ? &sites[api_site[api]] : nullptr;
  }
  const std::string* OpOf(uint32_t api) const {
    return api < api_op.size() && api_op[api] >= 0 ? &ops[api_op[api]] : nullptr;
  }
};

PythonAttribution AttributePython(const TimelineModel& model);
// The same, only for a trace with Python stacks (nullopt without any).
std::optional<PythonAttribution> AttributePythonIfStacks(const TimelineModel& model);

// Fills report->python_sites, ops, python_stacks, kernels[].python_site/op and
// findings' offenders[].python_site. A no-op on traces without Python stacks
// or op ranges.
void AddPythonSites(const TimelineModel& model, Report* report);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_PYTHON_SITES_H_
