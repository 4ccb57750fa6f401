// lib/collect/range_profiler_select.cc — which launches the range profiler
// profiles (KernelSelector, see range_profiler.h). Pure C++.
#include <cstdlib>

#include "lib/collect/range_profiler.h"
#include "lib/trace/demangle.h"

namespace sightline::collect {

// ---- KernelSelector ---------------------------------------------------------

KernelSelector::~KernelSelector() {
  if (has_regex_) regfree(&regex_);
}

bool KernelSelector::Init(const KernelSelectorOptions& options, std::string* error) {
  options_ = options;
  if (options_.every_nth == 0) options_.every_nth = 1;
  if (!options_.name_regex.empty()) {
    const int rc = regcomp(&regex_, options_.name_regex.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char buf[256];
      regerror(rc, &regex_, buf, sizeof(buf));
      *error = "metrics: bad kernel-name regex '" + options_.name_regex + "': " + buf;
      return false;
    }
    has_regex_ = true;
  }
  return true;
}

std::string DemangleKernelName(std::string_view name) { return trace::Demangle(name); }

namespace {
// FNV-1a; launch keys and name-match results are cached by hash so the
// per-launch decision allocates nothing (a 64-bit collision would only merge
// two kernels' quotas).
uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
uint64_t MixU32(uint64_t h, uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}
bool ContainsNcclCaseInsensitive(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    if ((name[i] | 0x20) == 'n' && (name[i + 1] | 0x20) == 'c' && (name[i + 2] | 0x20) == 'c' &&
        (name[i + 3] | 0x20) == 'l') {
      return true;
    }
  }
  return false;
}
}  // namespace

bool KernelSelector::NameMatches(std::string_view name) {
  if (!has_regex_) return true;
  const uint64_t key = Fnv1a(name);
  auto it = name_match_cache_.find(key);
  if (it != name_match_cache_.end()) return it->second;
  const std::string text(name);
  bool match = regexec(&regex_, text.c_str(), 0, nullptr, 0) == 0;
  if (!match) {
    const std::string demangled = DemangleKernelName(name);
    match = demangled != text && regexec(&regex_, demangled.c_str(), 0, nullptr, 0) == 0;
  }
  name_match_cache_.emplace(key, match);
  return match;
}

SelectDecision KernelSelector::Decide(std::string_view name, uint32_t gx, uint32_t gy, uint32_t gz,
                                      uint32_t bx, uint32_t by, uint32_t bz, uint32_t smem) {
  auto skip = [this](SelectDecision d) {
    ++skipped_[static_cast<int>(d)];
    return d;
  };
  if (options_.exclude_nccl && ContainsNcclCaseInsensitive(name)) return skip(SelectDecision::kSkipNccl);
  if (!NameMatches(name)) return skip(SelectDecision::kSkipName);
  uint64_t key = Fnv1a(name);
  for (uint32_t d : {gx, gy, gz, bx, by, bz, smem}) key = MixU32(key, d);
  const uint64_t index = launches_by_key_[key]++;
  if (index % options_.every_nth != 0) return skip(SelectDecision::kSkipNth);
  if (options_.launches_per_kernel != 0 && index / options_.every_nth >= options_.launches_per_kernel) {
    return skip(SelectDecision::kSkipQuota);
  }
  if (profiled_ >= options_.max_ranges) return skip(SelectDecision::kSkipBudget);
  ++profiled_;
  return SelectDecision::kProfile;
}

KernelSelectorOptions SelectorOptionsFromConfig(const KernelLaunchHookConfig& config) {
  KernelSelectorOptions o;
  o.name_regex = config.kernel_filter;
  o.launches_per_kernel = config.launches_per_kernel;
  o.every_nth = config.every_nth == 0 ? 1 : config.every_nth;
  o.max_ranges = config.max_ranges == 0 ? 2000 : config.max_ranges;
  o.exclude_nccl = config.exclude_nccl;
  return o;
}

}  // namespace sightline::collect
