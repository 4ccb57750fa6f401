// lib/trace/html_text.h — text made safe inside HTML elements and attributes
// (&, <, >, ", '), shared by the HTML report (lib/export) and the trend page
// (lib/history). Header-only: no library needed.
#ifndef SIGHTLINE_LIB_TRACE_HTML_TEXT_H_
#define SIGHTLINE_LIB_TRACE_HTML_TEXT_H_

#include <string>
#include <string_view>

namespace sightline::trace {

inline std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_HTML_TEXT_H_
