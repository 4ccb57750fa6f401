// lib/export/demangle.h — human-readable kernel names for display.
//
// CUPTI reports kernel names mangled (`_Z7ForwardPKfPfi`); Nsight Systems and
// the Perfetto UI show them demangled (`Forward(float const*, float*, int)`).
// Renderers show the demangled form; JSON keeps the recorded name (`name`,
// the key diffs match on) and adds the readable one (`display_name`).
#ifndef SIGHTLINE_LIB_EXPORT_DEMANGLE_H_
#define SIGHTLINE_LIB_EXPORT_DEMANGLE_H_

#include <string>
#include <string_view>

#include "lib/trace/demangle.h"

namespace sightline::exporter {

// The one demangler (lib/trace/demangle.h), for the renderers.
using trace::Demangle;

// A kernel name a person can read in `max_chars`: demangled, without the
// return type and the parameter list, template arguments collapsed to "<…>"
// (innermost first... outermost when still too long), then leading
// namespaces dropped ("…::kernel"), and only as a last resort cut at a
// token boundary ('_', ':', '<', ',', ' ') with "…" — never mid-word.
// `at::native::vectorized_elementwise_kernel<4, at::native::...>(int, ...)`
// → `at::native::vectorized_elementwise_kernel<…>`.
std::string DisplayKernelName(std::string_view name, size_t max_chars = 60);

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_DEMANGLE_H_
