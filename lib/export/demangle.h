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

namespace sightline::exporter {

// The Itanium-ABI demangled form of `name` when it is a mangled C++ symbol
// ("_Z..."), else `name` unchanged. Never throws; invalid manglings are
// returned as they are.
std::string Demangle(std::string_view name);

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_DEMANGLE_H_
