// lib/trace/setting_value.cc — see setting_value.h.
#include "lib/trace/setting_value.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <strings.h>

namespace sightline::trace {

bool ParseBoolValue(const char* text, bool* out) {
  if (text == nullptr) return false;
  for (const char* word : {"1", "true", "yes", "on"}) {
    if (strcasecmp(text, word) == 0) {
      *out = true;
      return true;
    }
  }
  for (const char* word : {"0", "false", "no", "off"}) {
    if (strcasecmp(text, word) == 0) {
      *out = false;
      return true;
    }
  }
  return false;
}

const char* BoolValueWords() { return "1/0, true/false, yes/no, on/off"; }

bool ParseCountValue(const char* text, uint64_t min, uint64_t max, uint64_t* out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

bool ParseCountList(const char* text, uint64_t min, uint64_t max, std::vector<uint32_t>* out) {
  if (text == nullptr || *text == '\0') return false;
  std::vector<uint32_t> items;
  const char* p = text;
  while (true) {
    const char* comma = std::strchr(p, ',');
    char item[24];
    const size_t len = comma != nullptr ? static_cast<size_t>(comma - p) : std::strlen(p);
    if (len == 0 || len >= sizeof(item)) return false;
    std::memcpy(item, p, len);
    item[len] = '\0';
    uint64_t n = 0;
    if (max > UINT32_MAX || !ParseCountValue(item, min, max, &n)) return false;
    items.push_back(static_cast<uint32_t>(n));
    if (comma == nullptr) break;
    p = comma + 1;
  }
  if (out != nullptr) out->insert(out->end(), items.begin(), items.end());
  return true;
}

bool ParseNumberValue(const char* text, double min, double max, double* out) {
  if (text == nullptr || *text == '\0') return false;
  // strtod also takes blanks, "nan", "inf" and hex floats: only a decimal.
  for (const char* c = text; *c != '\0'; ++c) {
    if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '-' ||
          *c == '+')) {
      return false;
    }
  }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
    return false;
  }
  *out = v;
  return true;
}

}  // namespace sightline::trace
