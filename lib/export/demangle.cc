// lib/export/demangle.cc — see demangle.h.
#include "lib/export/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace sightline::exporter {

std::string Demangle(std::string_view name) {
  if (name.size() < 3 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  std::string copy(name);
  int status = 0;
  char* out = abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return copy;
  }
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace sightline::exporter
