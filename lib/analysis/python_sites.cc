// lib/analysis/python_sites.cc — see python_sites.h.
#include "lib/analysis/python_sites.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "lib/analysis/rule_util.h"

namespace sightline::analysis {
namespace {

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

std::string FrameSite(const TimelineModel& model, const StackFrame& f) {
  std::string s(model.String(f.module_id));
  s += ":" + std::to_string(f.line) + " in ";
  s += model.String(f.function_id);
  return s;
}

// Parsed emit_nvtx range name: "aten::mm, seq = 12, op_id = 3, sizes = ...".
struct OpName {
  std::string_view op;  // text before the first comma
  int64_t seq = -1;
  bool backward_node = false;  // an autograd Node's apply(), e.g. "MmBackward0"
};

bool ParseOpRange(std::string_view name, OpName* out) {
  size_t comma = name.find(',');
  std::string_view head = name.substr(0, comma);
  bool has_seq = false;
  size_t at = name.find("seq = ");
  size_t len = 6;
  if (at == std::string_view::npos) {
    at = name.find("seq=");
    len = 4;
  }
  if (at != std::string_view::npos) {
    out->seq = std::strtoll(std::string(name.substr(at + len, 20)).c_str(), nullptr, 10);
    has_seq = true;
  }
  bool aten = head.rfind("aten::", 0) == 0;
  out->backward_node = Contains(head, "Backward") || Contains(name, "stashed seq") ||
                       Contains(head, "evaluate_function");
  if (!aten && !has_seq && !out->backward_node) return false;
  out->op = head;
  if (size_t colon = head.rfind(": "); colon != std::string_view::npos && out->backward_node) {
    out->op = head.substr(colon + 2);  // "autograd::engine::evaluate_function: MmBackward0"
  }
  return true;
}

}  // namespace

bool IsLibraryPythonFile(std::string_view path) {
  return Contains(path, "/site-packages/") || Contains(path, "/dist-packages/") ||
         Contains(path, "/lib/python3") || Contains(path, "/lib64/python3") ||
         path.rfind("<frozen", 0) == 0 || Contains(path, "/torch/") ||
         Contains(path, "/triton/") || Contains(path, "torchinductor_") ||
         Contains(path, "/torch_compile_debug/");
}

std::optional<PythonAttribution> AttributePythonIfStacks(const TimelineModel& model) {
  for (const ApiCall& c : model.api_calls) {
    if (c.python_stack_id != 0) return AttributePython(model);
  }
  return std::nullopt;
}

PythonAttribution AttributePython(const TimelineModel& model) {
  PythonAttribution a;
  // Nothing to attribute without Python stacks and op ranges: the per-call
  // tables stay empty (SiteOf and OpOf say none) instead of ~20 bytes a call.
  bool stacks = false, op_ranges = false;
  for (const ApiCall& c : model.api_calls) {
    if (c.python_stack_id != 0) {
      stacks = true;
      break;
    }
  }
  std::vector<uint8_t> op_name(stacks ? 0 : model.strings.size(), 2);  // 2 = not parsed yet
  for (size_t i = 0; i < model.nvtx_ranges.size() && !stacks && !op_ranges; ++i) {
    const uint32_t name = model.nvtx_ranges[i].name;
    if (name >= op_name.size()) continue;  // no string: no op
    OpName op;
    if (op_name[name] == 2) op_name[name] = ParseOpRange(model.String(name), &op) ? 1 : 0;
    op_ranges = op_name[name] == 1;
  }
  if (!stacks && !op_ranges) return a;
  const size_t n = model.api_calls.size();
  a.api_site.assign(n, -1);
  a.api_site_inferred.assign(n, false);
  a.api_op.assign(n, -1);
  a.api_full_stack.assign(n, 0);
  std::unordered_map<std::string, int32_t> site_index, op_index;
  auto intern = [](std::unordered_map<std::string, int32_t>* index, std::vector<std::string>* v,
                   std::string s) {
    auto it = index->find(s);
    if (it != index->end()) return it->second;
    int32_t id = static_cast<int32_t>(v->size());
    index->emplace(s, id);
    v->push_back(std::move(s));
    return id;
  };
  // (trace, stack id) → site index and whether a frame is backward().
  struct StackSite {
    int32_t site = -1;
    bool has_backward = false;
  };
  std::map<std::pair<uint16_t, uint32_t>, StackSite> stack_sites;
  auto site_of_stack = [&](uint16_t trace, uint32_t id) -> StackSite {
    auto key = std::make_pair(trace, id);
    auto it = stack_sites.find(key);
    if (it != stack_sites.end()) return it->second;
    StackSite s;
    const CallStack* st = model.Stack(trace, id);
    if (st != nullptr && !st->frames.empty()) {
      const StackFrame* user = nullptr;
      for (const StackFrame& f : st->frames) {
        if (user == nullptr && !IsLibraryPythonFile(model.String(f.module_id))) user = &f;
        if (model.String(f.function_id) == "backward" ||
            model.String(f.function_id) == "Tensor.backward") {
          s.has_backward = true;
        }
      }
      s.site = intern(&site_index, &a.sites, FrameSite(model, user ? *user : st->frames[0]));
    }
    stack_sites.emplace(key, s);
    return s;
  };

  // Ops: per thread, the innermost op range enclosing the call's start.
  // Forward op ranges by (trace, seq) for the backward links.
  std::map<std::pair<uint16_t, int64_t>, uint32_t> forward_by_seq;  // → nvtx index
  for (uint32_t i = 0; i < model.nvtx_ranges.size(); ++i) {
    OpName op;
    const NvtxRange& r = model.nvtx_ranges[i];
    if (ParseOpRange(model.String(r.name), &op) && !op.backward_node && op.seq >= 0) {
      forward_by_seq.emplace(std::make_pair(r.trace, op.seq), i);
    }
  }
  // A forward op range's site: the site of a call with a Python stack inside it.
  std::unordered_map<uint32_t, int32_t> forward_site;  // nvtx index → site
  std::vector<int64_t> forward_of(n, -1);  // call in a backward node → forward op range
  for (const ThreadInfo& t : model.threads) {
    for (uint32_t c = t.api_begin; c < t.api_end; ++c) {
      const ApiCall& call = model.api_calls[c];
      if (call.python_stack_id != 0) {
        a.any_python = true;
        a.api_site[c] = site_of_stack(call.trace, call.python_stack_id).site;
        a.api_full_stack[c] = call.python_stack_id;
      }
      if (t.nvtx_end <= t.nvtx_begin) continue;
      // Latest range starting at or before the call, then outwards.
      auto begin = model.nvtx_ranges.begin() + t.nvtx_begin;
      auto end = model.nvtx_ranges.begin() + t.nvtx_end;
      auto it = std::upper_bound(begin, end, call.start_ns,
                                 [](uint64_t s, const NvtxRange& r) { return s < r.start_ns; });
      int steps = 0;
      int32_t innermost = -1;
      std::string_view inner_op;
      std::string backward_of;
      bool in_backward = false;
      for (auto r = it; r != begin && steps < 256; ++steps) {
        --r;
        if (r->end_ns < call.start_ns) {
          if (r->depth == 0) break;  // a closed top-level range: nothing encloses further back
          continue;
        }
        OpName op;
        if (!ParseOpRange(model.String(r->name), &op)) continue;
        uint32_t index = static_cast<uint32_t>(r - model.nvtx_ranges.begin());
        if (innermost < 0 && !op.backward_node) {
          innermost = static_cast<int32_t>(index);
          inner_op = op.op;
          if (a.api_site[c] >= 0) forward_site.emplace(index, a.api_site[c]);
        }
        if (op.backward_node) {
          in_backward = true;
          auto f = forward_by_seq.find({r->trace, op.seq});
          if (f != forward_by_seq.end()) {
            OpName fwd;
            ParseOpRange(model.String(model.nvtx_ranges[f->second].name), &fwd);
            backward_of = std::string(fwd.op);
            // Inferred site: the forward op's (filled in the second pass).
            if (a.api_site[c] < 0) forward_of[c] = static_cast<int64_t>(f->second);
          }
          if (innermost < 0) inner_op = op.op;
          break;
        }
        if (r->depth == 0) break;
      }
      std::string label(inner_op);
      if (in_backward && !label.empty()) {
        label += backward_of.empty() ? " [backward]" : " [backward of " + backward_of + "]";
      }
      if (!label.empty()) {
        a.any_op = true;
        a.api_op[c] = intern(&op_index, &a.ops, label);
      }
    }
  }
  if (!a.any_python) return a;
  // Second pass: calls without a Python stack.
  // Latest call with a Python stack per trace, by start, for the backward() rule.
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> py_calls(model.traces.size());
  for (uint32_t c = 0; c < n; ++c) {
    const ApiCall& call = model.api_calls[c];
    if (call.python_stack_id != 0 && call.trace < py_calls.size()) {
      py_calls[call.trace].emplace_back(call.start_ns, c);
    }
  }
  for (auto& v : py_calls) std::sort(v.begin(), v.end());
  for (uint32_t c = 0; c < n; ++c) {
    if (a.api_site[c] >= 0) continue;
    const ApiCall& call = model.api_calls[c];
    if (forward_of[c] >= 0) {
      auto f = forward_site.find(static_cast<uint32_t>(forward_of[c]));
      if (f != forward_site.end() && f->second >= 0) {
        a.api_site[c] = f->second;
        a.api_site_inferred[c] = true;
        continue;
      }
    }
    if (call.trace >= py_calls.size()) continue;
    const auto& v = py_calls[call.trace];
    auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(call.start_ns, UINT32_MAX));
    if (it == v.begin()) continue;
    --it;
    const ApiCall& before = model.api_calls[it->second];
    if (before.thread == call.thread) continue;
    StackSite s = site_of_stack(before.trace, before.python_stack_id);
    if (s.has_backward && s.site >= 0) {
      a.api_site[c] = s.site;
      a.api_site_inferred[c] = true;
      a.api_full_stack[c] = before.python_stack_id;
    }
  }
  return a;
}

void AddPythonSites(const TimelineModel& model, Report* report) {
  PythonAttribution a = AttributePython(model);
  if (!a.any_python && !a.any_op) return;
  // Rows per (site, inferred).
  std::map<std::pair<int32_t, bool>, PythonSiteRow> rows;
  std::map<int32_t, OpRow> op_rows;
  // Per kernel name: GPU time per site / per op.
  std::unordered_map<std::string, std::map<int32_t, uint64_t>> kernel_sites, kernel_ops;
  std::map<std::pair<uint16_t, uint32_t>, PythonStackRow> stacks;
  uint64_t kernel_ns = 0, kernel_site_ns = 0, kernel_inferred_ns = 0, kernel_op_ns = 0;
  auto row = [&](uint32_t api) -> PythonSiteRow* {
    int32_t s = a.api_site[api];
    if (s < 0) return nullptr;
    PythonSiteRow& r = rows[{s, a.api_site_inferred[api]}];
    r.site = a.sites[s];
    r.inferred = a.api_site_inferred[api];
    return &r;
  };
  auto stack_row = [&](uint32_t api) -> PythonStackRow* {
    uint32_t id = a.api_full_stack[api];
    if (id == 0) return nullptr;
    const ApiCall& call = model.api_calls[api];
    auto key = std::make_pair(call.trace, id);
    auto it = stacks.find(key);
    if (it != stacks.end()) return &it->second;
    PythonStackRow r;
    const CallStack* st = model.Stack(call.trace, id);
    if (st == nullptr) return nullptr;
    for (auto f = st->frames.rbegin(); f != st->frames.rend(); ++f) {
      r.frames.push_back(std::string(model.String(f->function_id)) + " (" +
                         std::string(model.String(f->module_id)) + ":" +
                         std::to_string(f->line) + ")");
    }
    if (a.api_site_inferred[api]) r.frames.push_back("[GPU work of other threads, inferred]");
    return &stacks.emplace(key, std::move(r)).first->second;
  };
  for (uint32_t c = 0; c < model.api_calls.size(); ++c) {
    const ApiCall& call = model.api_calls[c];
    PythonSiteRow* r = row(c);
    if (r == nullptr) continue;
    ++r->calls;
    if (call.flags & kApiLaunch) ++r->launches;
    if (call.flags & (kApiSync | kApiMemcpySync)) {
      r->host_blocked_ns += call.duration();
      if (PythonStackRow* s = stack_row(c)) s->host_blocked_ns += call.duration();
    }
  }
  for (const GpuActivity& g : model.activities) {
    bool kernel = g.kind == ActivityKind::kKernel;
    if (kernel) kernel_ns += g.duration();
    if (g.launch_api == kNone) continue;
    if (PythonSiteRow* r = row(g.launch_api)) {
      r->gpu_ns += g.duration();
      if (PythonStackRow* s = stack_row(g.launch_api)) s->gpu_ns += g.duration();
      if (kernel) {
        kernel_sites[std::string(model.String(g.name))][a.api_site[g.launch_api]] += g.duration();
        kernel_site_ns += g.duration();
        if (a.api_site_inferred[g.launch_api]) kernel_inferred_ns += g.duration();
      }
    }
    int32_t op = a.api_op[g.launch_api];
    if (op >= 0 && kernel) {
      OpRow& o = op_rows[op];
      o.op = a.ops[op];
      o.gpu_ns += g.duration();
      ++o.kernels;
      kernel_ops[std::string(model.String(g.name))][op] += g.duration();
      kernel_op_ns += g.duration();
    }
  }
  auto best = [](const std::map<int32_t, uint64_t>& m) {
    int32_t id = -1;
    uint64_t most = 0;
    for (const auto& [k, v] : m) {
      if (v > most) most = v, id = k;
    }
    return id;
  };
  for (KernelRow& k : report->kernels) {
    if (auto it = kernel_sites.find(k.name); it != kernel_sites.end()) {
      int32_t s = best(it->second);
      if (s >= 0) k.python_site = a.sites[s];
    }
    if (auto it = kernel_ops.find(k.name); it != kernel_ops.end()) {
      int32_t o = best(it->second);
      if (o >= 0) k.op = a.ops[o];
    }
  }
  for (auto& [key, r] : rows) report->python_sites.push_back(std::move(r));
  std::sort(report->python_sites.begin(), report->python_sites.end(),
            [](const PythonSiteRow& x, const PythonSiteRow& y) {
              uint64_t a1 = x.gpu_ns + x.host_blocked_ns, b1 = y.gpu_ns + y.host_blocked_ns;
              return a1 != b1 ? a1 > b1 : x.site < y.site;
            });
  for (auto& [id, o] : op_rows) report->ops.push_back(std::move(o));
  std::sort(report->ops.begin(), report->ops.end(), [](const OpRow& x, const OpRow& y) {
    return x.gpu_ns != y.gpu_ns ? x.gpu_ns > y.gpu_ns : x.op < y.op;
  });
  for (auto& [key, s] : stacks) report->python_stacks.push_back(std::move(s));
  std::sort(report->python_stacks.begin(), report->python_stacks.end(),
            [](const PythonStackRow& x, const PythonStackRow& y) {
              uint64_t a1 = x.gpu_ns + x.host_blocked_ns, b1 = y.gpu_ns + y.host_blocked_ns;
              return a1 != b1 ? a1 > b1 : x.frames < y.frames;
            });
  if (report->python_stacks.size() > 500) report->python_stacks.resize(500);
  if (kernel_ns > 0) {
    report->python_attributed_gpu_pct = 100.0 * double(kernel_site_ns) / double(kernel_ns);
    report->python_inferred_gpu_pct = 100.0 * double(kernel_inferred_ns) / double(kernel_ns);
    report->op_attributed_gpu_pct = 100.0 * double(kernel_op_ns) / double(kernel_ns);
  }

  // Offenders: kernels by name; API-call offenders (sync_api, sync_memcpy,
  // pageable_memcpy, ...) by (API name, native stack text) as the rules key
  // them: the site with the most blocked (else any) time among those calls.
  std::map<std::pair<std::string, std::string>, std::map<int32_t, uint64_t>> api_sites;
  bool api_sites_built = false;
  for (Finding& f : report->findings) {
    for (Offender& o : f.offenders) {
      if (!o.python_site.empty()) continue;
      if (auto it = kernel_sites.find(o.name); it != kernel_sites.end()) {
        int32_t s = best(it->second);
        if (s >= 0) o.python_site = a.sites[s];
        continue;
      }
      if (!api_sites_built) {
        api_sites_built = true;
        for (uint32_t c = 0; c < model.api_calls.size(); ++c) {
          const ApiCall& call = model.api_calls[c];
          if (a.api_site[c] < 0) continue;
          std::string name = ApiName(model, call.name);
          std::string stack = StackText(model, call.trace, call.stack_id);
          api_sites[{name, stack.empty() ? "no call stack recorded" : stack}][a.api_site[c]] +=
              call.duration() + 1;
          api_sites[{name, std::string()}][a.api_site[c]] += call.duration() + 1;
        }
      }
      auto it = api_sites.find({o.name, o.detail});
      if (it == api_sites.end()) it = api_sites.find({o.name, std::string()});
      if (it != api_sites.end()) {
        int32_t s = best(it->second);
        if (s >= 0) o.python_site = a.sites[s];
      }
    }
  }
}

}  // namespace sightline::analysis
