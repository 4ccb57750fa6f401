// lib/trace/terminal_text.h — strings from a trace made safe for a terminal.
//
// A trace is untrusted input: its host name, command line, kernel and NVTX
// names are whatever the traced program (or an attacker editing the file)
// put there. Printed raw, an ESC sequence clears the screen, sets the window
// title or rewrites earlier lines; a C1 control (U+0080..U+009F, bytes C2 80..
// C2 9F in UTF-8) does the same on terminals that honour 8-bit controls.
//
// EscapeTerminalText keeps printable ASCII and valid UTF-8 (other than C1
// controls) as they are and writes everything else visibly:
//   C0 controls and DEL    → \xNN       (\n and \t kept when asked: a whole
//                                         rendered report keeps its layout)
//   C1 controls            → \u0080..\u009f
//   invalid UTF-8 bytes    → \xNN       (overlong forms, surrogates, > U+10FFFF,
//                                         truncated sequences)
//   a backslash            → stays      (escapes are for reading, not parsing)
// Header-only, no dependencies: used by `info`, the text renderers of
// analyze/diff, and `serve`'s log.
#ifndef SIGHTLINE_LIB_TRACE_TERMINAL_TEXT_H_
#define SIGHTLINE_LIB_TRACE_TERMINAL_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sightline::trace {

enum class KeepLayout { kNo, kNewlinesAndTabs };

// Length of the valid UTF-8 sequence at s[i] (2..4), or 0 when it is not one.
inline size_t ValidUtf8SequenceAt(std::string_view s, size_t i, uint32_t* code_point) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  uint8_t c = b(0);
  size_t n;
  uint32_t cp, min;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return n;
}

inline void AppendTerminalText(std::string* out, std::string_view s,
                               KeepLayout keep = KeepLayout::kNo) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->reserve(out->size() + s.size());
  for (size_t i = 0; i < s.size();) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if ((c == '\n' || c == '\t') && keep == KeepLayout::kNewlinesAndTabs) {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c >= 0x80) {
      uint32_t cp = 0;
      size_t n = ValidUtf8SequenceAt(s, i, &cp);
      if (n != 0 && cp >= 0xA0) {
        out->append(s.substr(i, n));
        i += n;
        continue;
      }
      if (n != 0) {  // a C1 control
        out->append("\\u00");
        out->push_back(kHex[cp >> 4]);
        out->push_back(kHex[cp & 15]);
        i += n;
        continue;
      }
    }
    out->append("\\x");
    out->push_back(kHex[c >> 4]);
    out->push_back(kHex[c & 15]);
    ++i;
  }
}

inline std::string EscapeTerminalText(std::string_view s, KeepLayout keep = KeepLayout::kNo) {
  std::string out;
  AppendTerminalText(&out, s, keep);
  return out;
}

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_TERMINAL_TEXT_H_
