// Rule registry, rule parameters and AnalysisOptions parsing.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cctype>
#include <mutex>

#include "lib/analysis/text_util.h"
#include "absl/strings/str_cat.h"
#include "lib/analysis/rule.h"

namespace sightline::analysis {
namespace rule_registration {
void RegisterAllRules();  // generated from rules/*.cc (rule_table.cc)
}  // namespace rule_registration

namespace {
std::vector<RuleInfo>& Registry() {
  static auto* rules = new std::vector<RuleInfo>();
  return *rules;
}
}  // namespace

void RegisterRule(RuleInfo info) {
  auto& rules = Registry();
  for (const RuleInfo& r : rules) {
    if (r.id == info.id) return;
  }
  rules.push_back(std::move(info));
}

const std::vector<RuleInfo>& Rules() {
  static std::once_flag once;
  std::call_once(once, [] {
    rule_registration::RegisterAllRules();
    auto& rules = Registry();
    std::sort(rules.begin(), rules.end(),
              [](const RuleInfo& a, const RuleInfo& b) { return a.id < b.id; });
  });
  return Registry();
}

const RuleInfo* FindRule(std::string_view id) {
  for (const RuleInfo& r : Rules()) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

double AnalysisOptions::Global(std::string_view key, double fallback) const {
  auto it = params.find(std::string(key));
  return it == params.end() ? fallback : it->second;
}

namespace {
std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool ParseDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}
}  // namespace

ParamRange ParamBounds(const RuleParam& p) {
  ParamRange r{0, 1e12};
  if (EndsWith(p.key, "_pct")) r = {0, 100};
  if (EndsWith(p.key, "_ns")) r = {0, 1e15};
  if (!std::isnan(p.min_value)) r.min = p.min_value;
  if (!std::isnan(p.max_value)) r.max = p.max_value;
  return r;
}

absl::Status AnalysisOptions::SetFromString(std::string_view assignment_view) {
  std::string assignment(assignment_view);
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad parameter '", assignment, "': expected KEY=VALUE"));
  }
  std::string key = Trim(std::string_view(assignment).substr(0, eq));
  std::string text = Trim(std::string_view(assignment).substr(eq + 1));
  double scale = 1;
  if (EndsWith(key, "_ns")) {
    struct Unit {
      const char* suffix;
      double ns;
    };
    static constexpr Unit kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    for (const Unit& u : kUnits) {
      double v;
      std::string number = text.substr(0, text.size() - std::min(text.size(), std::strlen(u.suffix)));
      if (EndsWith(text, u.suffix) && ParseDouble(number, &v)) {
        text = number;
        scale = u.ns;
        break;
      }
    }
  }
  if (EndsWith(text, "%")) text.pop_back();
  double value;
  if (!ParseDouble(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad parameter '", assignment, "': '", text, "' is not a number"));
  }
  ParamRange bounds{0, 0};
  size_t dot = key.find('.');
  if (dot != std::string::npos) {
    std::string rule_id = key.substr(0, dot);
    std::string param = key.substr(dot + 1);
    const RuleInfo* rule = FindRule(rule_id);
    if (rule == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad parameter '", key, "': no rule '", rule_id, "'"));
    }
    const RuleParam* declared = nullptr;
    for (const RuleParam& p : rule->params) {
      if (p.key == param) declared = &p;
    }
    if (declared == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad parameter '", key, "': rule '", rule_id, "' has no '", param, "'"));
    }
    bounds = ParamBounds(*declared);
  } else if (key == "kernel_wait_ns") {
    bounds = ParamBounds(RuleParam{key, 0, ""});
  } else if (key == "min_saving_pct") {
    bounds = {0, 100};
  } else if (key == "timeline_rules_with_replay" || key == "root_causes") {
    bounds = {0, 1};
  } else if (key == "host_gap_ns") {
    bounds = {0, 60e9};
  } else {
    return absl::InvalidArgumentError(absl::StrCat("bad parameter '", key, "': unknown key"));
  }
  // Unbounded values size memory and work (a chunk count of 1e8 allocated
  // gigabytes): every parameter has a documented range.
  value *= scale;
  if (!(value >= bounds.min && value <= bounds.max)) {
    return absl::InvalidArgumentError(absl::StrCat("bad parameter '", key, "': ", value,
                                                   " is outside [", bounds.min, ", ",
                                                   bounds.max, "]"));
  }
  params[key] = value;
  return absl::OkStatus();
}

double RuleContext::Param(std::string_view key) const {
  auto it = options_.params.find(rule_.id + "." + std::string(key));
  if (it != options_.params.end()) return it->second;
  for (const RuleParam& p : rule_.params) {
    if (p.key == key) return p.default_value;
  }
  return 0;
}

uint64_t RuleContext::window_ns() const {
  uint64_t w = timeline_.window_ns();
  return w == 0 ? 1 : w;
}

Finding RuleContext::NewFinding(uint64_t est_saving_ns) const {
  Finding f;
  f.rule = rule_.id;
  f.est_saving_ns = est_saving_ns;
  f.est_saving_pct = PctOfWindow(est_saving_ns);
  f.severity = SeverityForSavingPct(f.est_saving_pct);
  return f;
}

}  // namespace sightline::analysis
