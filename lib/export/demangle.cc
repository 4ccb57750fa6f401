// lib/export/demangle.cc — see demangle.h.
#include "lib/export/demangle.h"

namespace sightline::exporter {

namespace {

// Length in characters (UTF-8 code points: "…" counts as one).
size_t Chars(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Removes a trailing top-level "(...)" parameter list (and " const").
std::string StripParameters(std::string s) {
  if (s.size() > 6 && s.compare(s.size() - 6, 6, " const") == 0) s.resize(s.size() - 6);
  if (s.empty() || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    char c = s[i];
    if (c == ')' || c == '>' || c == ']') ++depth;
    if (c == '(' || c == '<' || c == '[') --depth;
    if (depth == 0) {
      if (c == '(' && i > 0) s.resize(i);
      break;
    }
  }
  return s;
}

// Drops a leading return type ("void ", "int ") outside template brackets.
std::string StripReturnType(std::string s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ' ' && depth == 0) {
      std::string_view head(s.data(), i);
      if (head.find("operator") != std::string_view::npos) return s;
      return s.substr(i + 1);
    }
  }
  return s;
}

// Replaces the contents of every template argument list at nesting `level`
// (1 = outermost) with "…".
std::string CollapseTemplates(const std::string& s, int level) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<') {
      ++depth;
      if (depth <= level) out += c;
      if (depth == level) out += "\u2026";
      continue;
    }
    if (c == '>' && depth > 0) {
      if (depth <= level) out += c;
      --depth;
      continue;
    }
    if (depth < level) out += c;
  }
  return out;
}

}  // namespace

std::string DisplayKernelName(std::string_view name, size_t max_chars) {
  std::string s = StripReturnType(StripParameters(Demangle(name)));
  if (Chars(s) <= max_chars) return s;
  for (int level = 3; level >= 1; --level) {
    std::string c = CollapseTemplates(s, level);
    if (Chars(c) <= max_chars || level == 1) s = std::move(c);
    if (Chars(s) <= max_chars) return s;
  }
  // Leading namespaces, at "::" outside templates.
  std::string body = s;
  while (Chars(s) > max_chars) {
    int depth = 0;
    size_t cut = std::string::npos;
    for (size_t i = 0; i + 1 < body.size(); ++i) {
      if (body[i] == '<') ++depth;
      if (body[i] == '>') --depth;
      if (depth == 0 && body[i] == ':' && body[i + 1] == ':') {
        cut = i + 2;
        break;
      }
    }
    if (cut == std::string::npos || cut >= body.size()) break;
    body = body.substr(cut);
    s = "\u2026::" + body;
  }
  if (Chars(s) <= max_chars) return s;
  // Last resort: cut at the last token boundary that fits.
  size_t limit = 0, chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++chars;
    if (chars >= max_chars) break;
    limit = i + 1;
  }
  size_t cut = 0;
  for (size_t i = limit; i-- > 0;) {
    char c = s[i];
    if (c == '_' || c == ':' || c == '<' || c == ',' || c == ' ' || c == '(') {
      cut = i;
      break;
    }
  }
  if (cut < max_chars / 2) cut = limit;  // no boundary in reach: a hard cut
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "\u2026";
}

}  // namespace sightline::exporter
