// lib/trace/demangle.cc — see demangle.h.
#include "lib/trace/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace sightline::trace {

std::string Demangle(std::string_view name) {
  if (name.size() < 3 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  std::string copy(name);
  int status = 0;
  char* out = abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status);
  std::string result = status == 0 && out != nullptr ? std::string(out) : copy;
  std::free(out);
  return result;
}

}  // namespace sightline::trace
