// lib/analysis/text_util.h — std::string_view helpers. (Debian's abseil
// 20220623 has its own absl::string_view, distinct from std::string_view, so
// absl::StartsWith & co. do not accept ours.)
#ifndef SIGHTLINE_LIB_ANALYSIS_TEXT_UTIL_H_
#define SIGHTLINE_LIB_ANALYSIS_TEXT_UTIL_H_

#include <cctype>
#include <string_view>

namespace sightline::analysis {

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
inline bool Contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}
inline bool ContainsIgnoreCase(std::string_view s, std::string_view needle) {
  if (needle.empty()) return true;
  for (size_t i = 0; i + needle.size() <= s.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() &&
           std::tolower(static_cast<unsigned char>(s[i + k])) ==
               std::tolower(static_cast<unsigned char>(needle[k]))) {
      ++k;
    }
    if (k == needle.size()) return true;
  }
  return false;
}

// An NVTX range name without the per-instance annotations of PyTorch's
// emit_nvtx / `--pytorch` ranges ("aten::mm, seq = 12, op_id = 3, sizes =
// [[8, 4]]" -> "aten::mm"; "enumerate(DataLoader)#..., op_id = 4187" ->
// "enumerate(DataLoader)#..."), so that the instances of one op or one
// record_function group together; any other name whole.
inline std::string_view RangeGroupName(std::string_view name) {
  size_t cut = name.size();
  for (std::string_view key : {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "}) {
    size_t at = name.find(key);
    if (at != std::string_view::npos && at < cut) cut = at;
  }
  return name.substr(0, cut);
}

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_TEXT_UTIL_H_
