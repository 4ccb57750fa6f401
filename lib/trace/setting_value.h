// lib/trace/setting_value.h — one parser per kind of setting value.
//
// Every SIGHTLINE_* variable (lib/collect/config.h for the collector,
// lib/monitor/monitor_config.h for monitor mode, README's table) and every
// CLI value that mirrors one is parsed by these, so one spelling means the
// same everywhere (`SIGHTLINE_QUIET=yes` silenced the banner but not the
// metrics summary while three parsers existed).
//
//   bool    1 true yes on | 0 false no off   (ASCII case ignored)
//   count   decimal digits only, in [min, max] (no sign, no spaces)
//   size    a count of the unit the variable's name says (SIGHTLINE_BUFFER_KB)
//   number  a finite decimal number in [min, max] (seconds, percentages):
//           digits, '.', an exponent, a sign; no blanks, nan, inf or hex
//   enum    one of a table's names, exactly
//
// Each returns false and leaves *out alone on a value it does not accept; the
// caller reports the variable and keeps its default. libc only: usable in the
// injected library.
#ifndef SIGHTLINE_LIB_TRACE_SETTING_VALUE_H_
#define SIGHTLINE_LIB_TRACE_SETTING_VALUE_H_

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

namespace sightline::trace {

bool ParseBoolValue(const char* text, bool* out);
bool ParseCountValue(const char* text, uint64_t min, uint64_t max, uint64_t* out);
bool ParseNumberValue(const char* text, double min, double max, double* out);
// "N[,N...]": counts in [min, max], comma-separated, none empty; appends them
// to *out (may be null: validation only).
bool ParseCountList(const char* text, uint64_t min, uint64_t max, std::vector<uint32_t>* out);

// `table` pairs a name with its value: {{"kernel", Replay::kKernel}, ...}.
template <typename E>
bool ParseEnumValue(const char* text, std::initializer_list<std::pair<const char*, E>> table,
                    E* out) {
  if (text == nullptr) return false;
  for (const auto& [name, value] : table) {
    if (std::strcmp(text, name) == 0) {
      *out = value;
      return true;
    }
  }
  return false;
}

// The words ParseBoolValue accepts, for messages: "1/0, true/false, yes/no, on/off".
const char* BoolValueWords();

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_SETTING_VALUE_H_
