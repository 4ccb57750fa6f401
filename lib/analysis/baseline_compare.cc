// lib/analysis/baseline_compare.cc — see baseline_compare.h.
#include "lib/analysis/baseline_compare.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace sightline::analysis {
namespace {

std::string Ms(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
  return buf;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v >= 10 ? "%.0f" : "%.1f", v);
  return buf;
}

// Long template names would fill the terminal: the start and the end.
std::string Short(const std::string& name) {
  if (name.size() <= 80) return name;
  return name.substr(0, 50) + "..." + name.substr(name.size() - 27);
}

std::string Pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%+.0f %%", v);
  return buf;
}

}  // namespace

BaselineComparison CompareWithBaseline(const Report& base, const Report& now,
                                       const BaselineCompareOptions& options) {
  BaselineComparison c;
  c.per_step = base.summary.steps.count > 0 && now.summary.steps.count > 0;
  // Divisors: steps, or seconds of window. The totals hold everything
  // launched in the analysed host range, whole steps and the parts of steps
  // at its edges (a capture opens mid-step), so the steps are counted as
  // that range over the median step, not as the whole steps inside it.
  auto units = [&](const Report& r) {
    const Summary& s = r.summary;
    const double span = s.scope_end_ns > s.scope_start_ns
                            ? static_cast<double>(s.scope_end_ns - s.scope_start_ns)
                            : static_cast<double>(s.window_ns);
    if (c.per_step) {
      const double whole = static_cast<double>(s.steps.count);
      if (s.steps.p50_ns > 0 && span > 0) {
        return std::max(whole, span / static_cast<double>(s.steps.p50_ns));
      }
      return whole;
    }
    return std::max(1e-9, span / 1e9);
  };
  const double ub = units(base), un = units(now);
  if (c.per_step) {
    c.base_step_ns = static_cast<double>(base.summary.steps.p50_ns);
    c.now_step_ns = static_cast<double>(now.summary.steps.p50_ns);
    c.base_gpu_pct = base.summary.steps.mean_gpu_utilization_pct;
    c.now_gpu_pct = now.summary.steps.mean_gpu_utilization_pct;
  }
  // A share of the step, or of each second without steps.
  const double threshold =
      std::max(options.min_growth_ns,
               options.min_growth_pct / 100 * (c.per_step ? c.base_step_ns : 1e9));
  auto collect = [&](const char* what, const auto& base_rows, const auto& now_rows,
                     size_t limit) {
    std::map<std::string, std::pair<double, double>> before;  // name -> (ns, count) per unit
    for (const auto& r : base_rows) {
      auto& b = before[r.name];
      b.first += static_cast<double>(r.total_ns) / ub;
      b.second += static_cast<double>(r.count) / ub;
    }
    std::map<std::string, std::pair<double, double>> after;
    for (const auto& r : now_rows) {
      auto& a = after[r.name];
      a.first += static_cast<double>(r.total_ns) / un;
      a.second += static_cast<double>(r.count) / un;
    }
    std::vector<BaselineChange> found;
    for (const auto& [name, a] : after) {
      auto it = before.find(name);
      BaselineChange ch;
      ch.what = what;
      ch.name = name;
      ch.is_new = it == before.end() || it->second.second == 0;
      if (it != before.end()) {
        ch.base_ns = it->second.first;
        ch.base_count = it->second.second;
      }
      ch.now_ns = a.first;
      ch.now_count = a.second;
      if (ch.now_ns - ch.base_ns >= threshold) found.push_back(ch);
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& x, const auto& y) {
      return x.now_ns - x.base_ns > y.now_ns - y.base_ns;
    });
    if (found.size() > limit) found.resize(limit);
    c.changes.insert(c.changes.end(), found.begin(), found.end());
  };
  collect("api", base.apis, now.apis, options.max_apis);
  collect("kernel", base.kernels, now.kernels, options.max_kernels);
  std::set<std::string> before_rules;
  for (const Finding& f : base.findings) {
    if (f.est_saving_pct >= 1) before_rules.insert(f.rule);
  }
  for (const Finding& f : now.findings) {
    if (f.est_saving_pct >= 1 && before_rules.count(f.rule) == 0) c.new_findings.push_back(&f);
  }
  return c;
}

std::vector<std::string> DescribeComparison(const BaselineComparison& c) {
  std::vector<std::string> lines;
  const char* unit = c.per_step ? "step" : "s";
  if (c.per_step && c.base_step_ns > 0) {
    lines.push_back("step " + Ms(c.base_step_ns) + " -> " + Ms(c.now_step_ns) + " (" +
                    Pct((c.now_step_ns / c.base_step_ns - 1) * 100) + "), GPU busy " +
                    Num(c.base_gpu_pct) + " -> " + Num(c.now_gpu_pct) + " % of the step");
  }
  for (const BaselineChange& ch : c.changes) {
    std::string count_word = ch.what == "api" ? " calls" : " launches";
    std::string s = (ch.is_new ? "new: " : "grown: ") +
                    std::string(ch.what == "api" ? "CUDA call " : "kernel ") + Short(ch.name) + " ";
    if (ch.is_new) {
      s += Num(ch.now_count) + count_word + " and " + Ms(ch.now_ns) + " per " + unit;
    } else {
      s += Ms(ch.base_ns) + " -> " + Ms(ch.now_ns) + " per " + unit + " (" +
           Num(ch.base_count) + " -> " + Num(ch.now_count) + count_word + ")";
    }
    lines.push_back(s);
  }
  if (!c.new_findings.empty()) {
    std::string s = "findings new since the baseline:";
    for (size_t i = 0; i < c.new_findings.size(); ++i) {
      char pct[32];
      std::snprintf(pct, sizeof(pct), "%.1f %%", c.new_findings[i]->est_saving_pct);
      s += std::string(i ? "," : "") + " " + c.new_findings[i]->rule + " (" + pct + ")";
    }
    lines.push_back(s);
  }
  return lines;
}

std::vector<const Finding*> FindingsByChange(const BaselineComparison& c, const Report& now) {
  // Each changed call or kernel's growth per step (or per second).
  std::map<std::string, double> growth;
  for (const BaselineChange& ch : c.changes) {
    double& g = growth[ch.name];
    g = std::max(g, ch.now_ns - ch.base_ns);
  }
  std::set<const Finding*> fresh(c.new_findings.begin(), c.new_findings.end());
  // How a finding names the change: whether its top offender is a call or
  // kernel that grew (the finding is about it), and the largest growth among
  // the changes any of its offenders name (0: none).
  struct Named {
    bool top = false;
    double growth = 0;
    const Finding* finding = nullptr;
  };
  auto named = [&](const Finding& f) {
    Named n;
    n.finding = &f;
    for (size_t i = 0; i < f.offenders.size(); ++i) {
      auto it = growth.find(f.offenders[i].name);
      if (it == growth.end()) continue;
      n.growth = std::max(n.growth, it->second);
      if (i == 0 && it->second > 0) n.top = true;
    }
    return n;
  };
  std::vector<Named> first;
  std::vector<const Finding*> second, rest;
  for (const Finding& f : now.findings) {
    Named n = fresh.count(&f) != 0 ? named(f) : Named{};
    if (n.growth > 0) first.push_back(n);
    else if (fresh.count(&f) != 0) second.push_back(&f);
    else rest.push_back(&f);
  }
  // The finding about most of the extra time first: a per-step sync that
  // appeared (8 ms a step) before a host-bound finding that lists it among
  // the places its host time goes, or names the launches, grown by 1 ms (two
  // H200 runs read cpu_bound first that way).
  std::stable_sort(first.begin(), first.end(), [](const Named& x, const Named& y) {
    if (x.top != y.top) return x.top;
    return x.growth > y.growth;
  });
  std::vector<const Finding*> order;
  for (const Named& n : first) order.push_back(n.finding);
  order.insert(order.end(), second.begin(), second.end());
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

}  // namespace sightline::analysis
