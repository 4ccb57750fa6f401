// lib/export/json_text.cc — see json_text.h.
#include "lib/export/json_text.h"

#include <cmath>

#include "lib/trace/json_writer.h"

namespace sightline::exporter {
void AppendJsonString(OutputFile& out, std::string_view s) {
  // Fast path: printable ASCII without quotes or backslashes needs no escaping.
  bool plain = true;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    out.Append('"');
    out.Append(s);
    out.Append('"');
    return;
  }
  thread_local std::string scratch;
  scratch.clear();
  json::JsonWriter::AppendQuoted(s, &scratch);
  out.Append(scratch);
}

void AppendJsonString(std::string& out, std::string_view s) {
  json::JsonWriter::AppendQuoted(s, &out);
}

void AppendDouble(OutputFile& out, double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.Append(std::string_view(buf, r.ptr - buf));
}

void AppendMicros(OutputFile& out, int64_t ns) {
  uint64_t mag;
  if (ns < 0) {
    out.Append('-');
    mag = static_cast<uint64_t>(-(ns + 1)) + 1;
  } else {
    mag = static_cast<uint64_t>(ns);
  }
  AppendUint(out, mag / 1000);
  uint64_t frac = mag % 1000;
  char f[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
               static_cast<char>('0' + frac % 10)};
  out.Append(std::string_view(f, 4));
}

}  // namespace sightline::exporter
