// tools/sightline/trace_inputs.cc — see trace_inputs.h.
#include "tools/sightline/trace_inputs.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/trace/reader.h"

namespace sightline::cli {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

bool IsRegular(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool HasGlobCharacters(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

}  // namespace

bool TraceHasGpuWork(const std::string& path) {
  auto reader = trace::TraceReader::Open(path);
  if (!reader.ok()) return true;
  trace::EventVisitor ignore;
  if (!(*reader)->ReadAll(ignore).ok()) return true;
  const trace::Integrity& in = (*reader)->integrity();
  for (EventKind k : {EventKind::kKernel, EventKind::kMemcpy, EventKind::kMemset,
                      EventKind::kSync, EventKind::kNccl, EventKind::kApi,
                      EventKind::kMetricRange}) {
    if (in.counts[static_cast<int>(k)] > 0) return true;
  }
  return false;
}

absl::StatusOr<TraceSet> ExpandTraceArgument(const std::string& arg) {
  TraceSet set;
  std::vector<std::string> candidates;
  bool expanded = false;
  if (IsDirectory(arg)) {
    expanded = true;
    DIR* dir = opendir(arg.c_str());
    if (dir == nullptr) return absl::InvalidArgumentError(absl::StrCat(arg, ": cannot list the directory"));
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (!absl::EndsWith(name, ".sltrace")) continue;
      std::string full = arg + (absl::EndsWith(arg, "/") ? "" : "/") + name;
      if (IsRegular(full)) candidates.push_back(full);
    }
    closedir(dir);
    std::sort(candidates.begin(), candidates.end());
    if (candidates.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(arg, ": is a directory without .sltrace files"));
    }
  } else if (!Exists(arg) && HasGlobCharacters(arg)) {
    expanded = true;
    glob_t g;
    int rc = glob(arg.c_str(), 0, nullptr, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        if (IsRegular(g.gl_pathv[i])) candidates.push_back(g.gl_pathv[i]);
      }
    }
    globfree(&g);
    if (candidates.empty()) {
      return absl::NotFoundError(absl::StrCat(arg, ": no file matches this pattern"));
    }
  } else {
    set.paths.push_back(arg);
    return set;
  }
  if (expanded && candidates.size() > 1) {
    for (const std::string& c : candidates) {
      if (TraceHasGpuWork(c)) {
        set.paths.push_back(c);
      } else {
        set.notes.push_back(absl::StrCat(c, ": no GPU work recorded (no kernel, copy, sync or "
                                            "CUDA call); left out"));
      }
    }
    if (set.paths.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(arg, ": none of its ", candidates.size(), " traces holds GPU work"));
    }
  } else {
    set.paths = candidates;
  }
  return set;
}

absl::StatusOr<std::vector<std::string>> ExpandTraceArguments(
    const std::vector<std::string>& args, bool quiet) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    absl::StatusOr<TraceSet> set = ExpandTraceArgument(a);
    if (!set.ok()) return set.status();
    if (!quiet) {
      for (const std::string& n : set->notes) std::fprintf(stderr, "sightline: %s\n", n.c_str());
    }
    out.insert(out.end(), set->paths.begin(), set->paths.end());
  }
  return out;
}

}  // namespace sightline::cli
