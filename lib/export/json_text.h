// lib/export/json_text.h — the few JSON primitives the streaming exporters
// append straight into an OutputFile (no DOM, no per-event allocation):
// escaped strings, integers, microsecond timestamps with nanosecond precision.
#ifndef SIGHTLINE_LIB_EXPORT_JSON_TEXT_H_
#define SIGHTLINE_LIB_EXPORT_JSON_TEXT_H_

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "lib/export/output_file.h"

namespace sightline::exporter {

// Appends `s` as a quoted JSON string, escaped like json::JsonWriter
// (lib/trace/json_writer.h) so the output always parses.
void AppendJsonString(OutputFile& out, std::string_view s);
void AppendJsonString(std::string& out, std::string_view s);

inline void AppendUint(OutputFile& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.Append(std::string_view(buf, r.ptr - buf));
}
inline void AppendInt(OutputFile& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.Append(std::string_view(buf, r.ptr - buf));
}
// Finite doubles in shortest round-trip form; NaN/Inf become 0.
void AppendDouble(OutputFile& out, double v);
// Nanoseconds as microseconds with exactly three decimals ("-12.345"), the
// unit of Chrome's "ts"/"dur" without losing nanosecond precision.
void AppendMicros(OutputFile& out, int64_t ns);

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_JSON_TEXT_H_
