// lib/trace/torch_memory_marker.cc — see torch_memory_marker.h.
#include "lib/trace/torch_memory_marker.h"

namespace sightline::trace {

bool ParseTorchMemoryMarker(std::string_view name, TorchMemoryMarker* out) {
  if (name.substr(0, kTorchMemoryMarkerPrefix.size()) != kTorchMemoryMarkerPrefix) return false;
  name.remove_prefix(kTorchMemoryMarkerPrefix.size());
  TorchMemoryMarker m;
  bool have_device = false;
  while (!name.empty()) {
    size_t space = name.find(' ');
    std::string_view field = name.substr(0, space);
    name = space == std::string_view::npos ? std::string_view() : name.substr(space + 1);
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = field.substr(0, eq), digits = field.substr(eq + 1);
    uint64_t v = 0;
    bool ok = !digits.empty() && digits.size() <= 19;
    for (char ch : digits) {
      ok &= ch >= '0' && ch <= '9';
      v = v * 10 + uint64_t(ch - '0');
    }
    if (!ok) return false;
    if (key == "device") {
      have_device = v <= 0xffff;
      m.device = static_cast<uint32_t>(v);
    } else if (key == "allocated") {
      m.allocated = v;
      m.has_memory = true;
    } else if (key == "max_allocated") {
      m.max_allocated = v;
      m.has_memory = true;
    } else if (key == "reserved") {
      m.reserved = v;
      m.has_memory = true;
    } else if (key == "opt") {
      m.optimizer = v;
    }
  }
  if (!have_device) return false;
  *out = m;
  return true;
}

}  // namespace sightline::trace
