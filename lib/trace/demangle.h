// lib/trace/demangle.h — the one Itanium-ABI demangler of the tree.
//
// CUPTI reports kernel names mangled (`_Z7ForwardPKfPfi`), backtrace symbols
// are mangled too. The collector (call stacks, the metrics kernel filter),
// the analysis rules and the exporters all demangle through this. libc++abi
// only: usable in the injected library. Display shortening for people is
// lib/export/demangle.h (DisplayKernelName).
#ifndef SIGHTLINE_LIB_TRACE_DEMANGLE_H_
#define SIGHTLINE_LIB_TRACE_DEMANGLE_H_

#include <string>
#include <string_view>

namespace sightline::trace {

// The demangled form of `name` when it is a mangled C++ symbol ("_Z..."),
// else `name` unchanged. Never throws; an invalid mangling is returned as it
// is.
std::string Demangle(std::string_view name);
// The same for a C string; nullptr gives "".
inline std::string Demangle(const char* name) {
  return name == nullptr ? std::string() : Demangle(std::string_view(name));
}

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_DEMANGLE_H_
