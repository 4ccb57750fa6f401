// GPU memory in use over time, its peak and who made it (memory.h).
#include "lib/analysis/memory.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/analysis/python_sites.h"
#include "lib/analysis/rule_util.h"
#include "lib/trace/memory_tracker.h"

namespace sightline::analysis {

namespace {

using trace::MemoryTracker;
using Category = MemoryTracker::Category;
constexpr Category kStatic = MemoryTracker::kStatic;
constexpr Category kPinned = MemoryTracker::kPinned;
constexpr Category kManaged = MemoryTracker::kManaged;

MemoryEvent EventOf(const MemoryOp& op) {
  MemoryEvent e;
  e.operation = op.op;
  e.memory_kind = op.kind;
  e.address = op.address;
  e.bytes = op.bytes;
  e.pool_address = op.pool_address;
  e.pool_size = op.pool_size;
  return e;
}

// A MemoryTracker fed with model operations (tag = index into memory_ops).
class DeviceReplay : public MemoryTracker {
 public:
  void Apply(const MemoryOp& op, uint32_t index, uint64_t* unmatched) {
    if (!MemoryTracker::Apply(EventOf(op), index)) ++*unmatched;
  }
};

// Call-site text of allocation calls, cached per API call.
class Sites {
 public:
  explicit Sites(const TimelineModel& model) : model_(model) {
    for (const MemoryOp& op : model.memory_ops) {
      if (op.api != kNone && model.api_calls[op.api].python_stack_id != 0) {
        python_ = AttributePython(model);
        break;
      }
    }
  }
  std::string Of(const MemoryOp& op) {
    if (op.api == kNone) return "(allocating call not recorded)";
    const ApiCall& c = model_.api_calls[op.api];
    if (python_) {
      if (const std::string* s = python_->SiteOf(op.api)) return *s;
    }
    std::string stack = StackText(model_, c.trace, c.stack_id, 2);
    std::string name = ApiName(model_, c.name);
    return stack.empty() ? name : name + " <- " + stack;
  }

 private:
  const TimelineModel& model_;
  std::optional<PythonAttribution> python_;
};

// The library that requested an allocation: CUPTI's record source when set,
// else the first module of the allocating call's native stack that is not
// the CUDA runtime or driver (libc10_cuda.so for PyTorch's caching
// allocator, libcublasLt.so for cuBLAS's own buffers). "" when unknown.
std::string RequesterOf(const TimelineModel& model, const MemoryOp& op) {
  auto base = [](std::string_view path) {
    size_t slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
  };
  if (op.source != 0) return base(model.String(op.source));
  if (op.api == kNone) return "";
  const ApiCall& c = model.api_calls[op.api];
  const CallStack* stack = model.Stack(c.trace, c.stack_id);
  if (stack == nullptr) return "";
  for (const StackFrame& f : stack->frames) {
    std::string mod = base(model.String(f.module_id));
    if (mod.empty() || mod.rfind("libcudart", 0) == 0 || mod.rfind("libcuda.so", 0) == 0 ||
        mod.rfind("libsightline", 0) == 0) {
      continue;
    }
    return mod;
  }
  return "";
}

std::vector<MemorySite> GroupLive(const TimelineModel& model, const DeviceReplay& replay,
                                  Sites* sites, uint64_t allocated_from, size_t keep) {
  std::map<std::string, MemorySite> by_site;
  for (const auto& [address, l] : replay.live()) {
    const MemoryOp& op = model.memory_ops[l.tag];
    if (op.timestamp_ns < allocated_from) continue;
    if (l.category == kPinned || l.category == kManaged) continue;  // device memory only
    std::string site = sites->Of(op);
    MemorySite& s = by_site[site];
    s.site = site;
    s.bytes += l.bytes;
    ++s.allocations;
  }
  std::vector<MemorySite> out;
  for (auto& [k, s] : by_site) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const MemorySite& a, const MemorySite& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.site < b.site;
  });
  if (out.size() > keep) out.resize(keep);
  return out;
}

// Keeps at most ~2 * buckets points: per time bucket its first point and its
// highest one, so that the step function still shows every peak.
std::vector<MemoryPoint> Downsample(const std::vector<MemoryPoint>& in, size_t buckets) {
  if (in.size() <= 2 * buckets) return in;
  std::vector<MemoryPoint> out;
  const uint64_t t0 = in.front().t_ns, span = std::max<uint64_t>(in.back().t_ns - t0, 1);
  size_t i = 0;
  while (i < in.size()) {
    uint64_t b = MulDiv(in[i].t_ns - t0, buckets, span);
    size_t j = i, top = i;
    while (j < in.size() && MulDiv(in[j].t_ns - t0, buckets, span) == b) {
      if (in[j].bytes > in[top].bytes) top = j;
      ++j;
    }
    out.push_back(in[i]);
    if (top != i) out.push_back(in[top]);
    if (j - 1 != top && j - 1 != i) out.push_back(in[j - 1]);  // the level the bucket ends at
    i = j;
  }
  return out;
}

uint64_t BytesAt(const std::vector<MemoryPoint>& points, uint64_t t) {
  auto it = std::upper_bound(points.begin(), points.end(), t,
                             [](uint64_t v, const MemoryPoint& p) { return v < p.t_ns; });
  return it == points.begin() ? 0 : std::prev(it)->bytes;
}

}  // namespace

double TheilSenSlope(const std::vector<uint64_t>& y_in) {
  std::vector<std::pair<double, double>> pts;  // (x, y)
  const size_t n = y_in.size();
  if (n < 2) return 0;
  const size_t step = std::max<size_t>(1, n / 500);
  for (size_t i = 0; i < n; i += step) pts.push_back({double(i), double(y_in[i])});
  std::vector<double> slopes;
  slopes.reserve(pts.size() * (pts.size() - 1) / 2);
  for (size_t i = 0; i < pts.size(); ++i) {
    for (size_t j = i + 1; j < pts.size(); ++j) {
      slopes.push_back((pts[j].second - pts[i].second) / (pts[j].first - pts[i].first));
    }
  }
  if (slopes.empty()) return 0;
  size_t mid = slopes.size() / 2;
  std::nth_element(slopes.begin(), slopes.begin() + mid, slopes.end());
  double hi = slopes[mid];
  if (slopes.size() % 2 == 1) return hi;
  double lo = *std::max_element(slopes.begin(), slopes.begin() + mid);
  return (lo + hi) / 2;
}

void FillMemory(const TimelineModel& whole, const StepDetection& steps, const ScopeChoice& scope,
                Report* report) {
  MemorySummary& out = report->memory;
  out = MemorySummary();
  if (whole.memory_ops.empty()) return;
  out.recorded = true;
  const bool whole_scope = scope.kind == "whole";
  const uint64_t scope_start = whole_scope ? 0 : scope.start_ns;
  const uint64_t scope_end = whole_scope ? UINT64_MAX : scope.end_ns;
  // Analysed steps: the scope's, or after warm-up for the whole trace.
  int64_t first = scope.first_step, last = scope.last_step;
  if (first < 0 && !steps.steps.empty()) {
    first = static_cast<int64_t>(std::min(steps.warmup, steps.steps.size() - 1));
    last = static_cast<int64_t>(steps.steps.size()) - 1;
  }
  const uint64_t nsteps = first >= 0 && last >= first ? uint64_t(last - first + 1) : 0;
  Sites sites(whole);

  // Operations per device, in time order (memory_ops is sorted).
  std::map<uint32_t, std::vector<uint32_t>> ops_of;
  for (uint32_t i = 0; i < whole.memory_ops.size(); ++i) {
    const MemoryOp& op = whole.memory_ops[i];
    if (op.device < whole.devices.size()) ops_of[op.device].push_back(i);
  }
  for (const auto& [device, ops] : ops_of) {
    MemoryDevice md;
    md.device_index = device;
    const DeviceTimelineInfo& info = whole.devices[device];
    md.id = info.device_id;
    md.rank = info.trace < whole.traces.size() ? whole.traces[info.trace].rank : -1;
    md.capacity_bytes = info.info.global_memory_bytes;
    DeviceReplay replay;
    std::vector<MemoryPoint> points;
    struct PoolAcc {
      MemoryPoolSummary summary;
      std::vector<MemoryPoint> points;
    };
    std::map<uint64_t, PoolAcc> pools;  // by pool address
    size_t peak_pos = 0;
    bool scope_seen = false;
    absl::flat_hash_map<uint32_t, bool> churn_calls;  // api index → counted
    std::map<std::string, MemorySite> churn;
    // Device memory by requesting module (model string id): now, own peak,
    // and at the device's peak.
    std::map<std::string, uint64_t> src_now, src_peak, src_at_peak;
    for (size_t k = 0; k < ops.size(); ++k) {
      const MemoryOp& op = whole.memory_ops[ops[k]];
      std::string src;
      int64_t src_delta = 0;
      if (op.op == MemoryOperation::kAllocation) {
        Category c = MemoryTracker::CategoryOf(op.kind);
        if (c != kPinned && c != kManaged) {
          src = RequesterOf(whole, op);
          src_delta = static_cast<int64_t>(op.bytes);
        }
      } else if (op.op == MemoryOperation::kRelease) {
        auto it = replay.live().find(op.address);
        if (it != replay.live().end() && it->second.category != kPinned &&
            it->second.category != kManaged) {
          src = RequesterOf(whole, whole.memory_ops[it->second.tag]);
          src_delta = -static_cast<int64_t>(it->second.bytes);
        }
      }
      if (!scope_seen && op.timestamp_ns >= scope_start) {
        // In use when the window opens counts toward its peak.
        md.scope_peak_bytes = replay.device_bytes();
        scope_seen = true;
      }
      uint64_t before = replay.device_bytes();
      replay.Apply(op, ops[k], &md.unmatched_releases);
      // Per stream-ordered pool: what it holds now (allocations name their
      // pool; pool records carry their own address).
      const uint64_t pool_id = op.pool_address != 0 ? op.pool_address
                               : (op.op == MemoryOperation::kPoolCreated ||
                                  op.op == MemoryOperation::kPoolTrimmed ||
                                  op.op == MemoryOperation::kPoolDestroyed)
                                   ? op.address
                                   : 0;
      if (pool_id != 0) {
        PoolAcc& pa = pools[pool_id];
        pa.summary.address = pool_id;
        if (op.op == MemoryOperation::kAllocation) ++pa.summary.allocations;
        auto it = replay.pools().find(pool_id);
        const uint64_t held = it != replay.pools().end() ? MemoryTracker::Footprint(it->second) : 0;
        const uint64_t used = it != replay.pools().end() ? it->second.live_sum : 0;
        // Destroyed stays set through frees that come after the destroy
        // (allowed while allocations are live); a new pool at the address
        // clears it.
        if (op.op == MemoryOperation::kPoolDestroyed) pa.summary.destroyed = true;
        if (op.op == MemoryOperation::kPoolCreated) pa.summary.destroyed = false;
        pa.summary.peak_bytes = std::max(pa.summary.peak_bytes, held);
        pa.summary.peak_used_bytes = std::max(pa.summary.peak_used_bytes, used);
        pa.summary.end_bytes = held;
        if (pa.points.empty() || pa.points.back().bytes != held) {
          if (!pa.points.empty() && pa.points.back().t_ns == op.timestamp_ns) {
            pa.points.back().bytes = held;
          } else {
            pa.points.push_back({op.timestamp_ns, held});
          }
        }
      }
      if (op.op == MemoryOperation::kAllocation) ++md.allocations;
      if (op.op == MemoryOperation::kRelease) ++md.releases;
      if (src_delta != 0) {
        uint64_t& cur = src_now[src];
        cur = src_delta > 0 ? cur + uint64_t(src_delta) : cur - std::min(cur, uint64_t(-src_delta));
        src_peak[src] = std::max(src_peak[src], cur);
      }
      uint64_t now = replay.device_bytes();
      if (now != before || points.empty()) {
        if (!points.empty() && points.back().t_ns == op.timestamp_ns) {
          points.back().bytes = now;
        } else {
          points.push_back({op.timestamp_ns, now});
        }
      }
      if (now > md.peak_bytes) {
        md.peak_bytes = now;
        md.peak_ns = op.timestamp_ns;
        md.static_bytes = replay.static_bytes();
        md.pool_bytes = replay.pool_bytes();
        peak_pos = k;
        src_at_peak = src_now;
      }
      md.pinned_peak_bytes = std::max(md.pinned_peak_bytes, replay.pinned_bytes());
      md.managed_peak_bytes = std::max(md.managed_peak_bytes, replay.managed_bytes());
      const bool in_scope = op.timestamp_ns >= scope_start && op.timestamp_ns < scope_end;
      if (in_scope) md.scope_peak_bytes = std::max(md.scope_peak_bytes, now);
      // Synchronous allocation calls inside the window (not stream-ordered,
      // not module statics).
      if (in_scope && !op.async && op.pool_address == 0 && MemoryTracker::CategoryOf(op.kind) != kStatic &&
          (op.op == MemoryOperation::kAllocation || op.op == MemoryOperation::kRelease)) {
        if (op.op == MemoryOperation::kAllocation) {
          ++md.scope_allocations;
        } else {
          ++md.scope_releases;
        }
        std::string site = sites.Of(op);
        MemorySite& s = churn[site];
        s.site = site;
        ++s.allocations;
        s.bytes += op.bytes;
        if (op.api != kNone && churn_calls.try_emplace(op.api, true).second) {
          md.scope_alloc_call_ns += whole.api_calls[op.api].duration();
          s.call_ns += whole.api_calls[op.api].duration();
        }
      }
    }
    if (!scope_seen) md.scope_peak_bytes = replay.device_bytes();
    for (const auto& [src, peak] : src_peak) {
      MemorySource s;
      s.source = src;
      s.peak_bytes = peak;
      s.bytes_at_peak = src_at_peak[src];
      s.end_bytes = src_now[src];
      md.sources.push_back(std::move(s));
    }
    std::sort(md.sources.begin(), md.sources.end(), [](const MemorySource& a, const MemorySource& b) {
      if (a.peak_bytes != b.peak_bytes) return a.peak_bytes > b.peak_bytes;
      return a.source < b.source;
    });
    md.end_bytes = replay.device_bytes();
    for (const auto& [address, l] : replay.live()) {
      if (l.category != kPinned && l.category != kManaged) ++md.end_allocations;
    }
    md.end_sites = GroupLive(whole, replay, &sites, 0, 10);
    for (auto& [k, s] : churn) md.churn_sites.push_back(std::move(s));
    std::sort(md.churn_sites.begin(), md.churn_sites.end(),
              [](const MemorySite& a, const MemorySite& b) {
                if (a.allocations != b.allocations) return a.allocations > b.allocations;
                return a.site < b.site;
              });
    if (md.churn_sites.size() > 10) md.churn_sites.resize(10);
    // Live at the peak and at the window's end: replay again up to there.
    {
      DeviceReplay at_peak;
      uint64_t ignored = 0;
      for (size_t k = 0; k <= peak_pos && k < ops.size(); ++k) {
        at_peak.Apply(whole.memory_ops[ops[k]], ops[k], &ignored);
      }
      md.peak_sites = GroupLive(whole, at_peak, &sites, 0, 10);
    }
    if (!whole_scope) {
      DeviceReplay at_end;
      uint64_t ignored = 0;
      for (uint32_t i : ops) {
        if (whole.memory_ops[i].timestamp_ns >= scope_end) break;
        at_end.Apply(whole.memory_ops[i], i, &ignored);
      }
      md.scope_live_sites = GroupLive(whole, at_end, &sites, scope_start, 10);
    } else {
      md.scope_live_sites = md.end_sites;
    }
    // Per step: in use at each step's end, and its trend.
    if (nsteps > 0) {
      for (int64_t i = first; i <= last; ++i) {
        const DetectedStep& st = steps.steps[static_cast<size_t>(i)];
        md.step_end_bytes.push_back(BytesAt(points, st.end_ns));
      }
      for (size_t i = 1; i < md.step_end_bytes.size(); ++i) {
        if (md.step_end_bytes[i] > md.step_end_bytes[i - 1]) ++md.steps_increasing;
        if (md.step_end_bytes[i] < md.step_end_bytes[i - 1]) ++md.steps_decreasing;
      }
      md.growth_bytes_per_step = TheilSenSlope(md.step_end_bytes);
      md.allocations_per_step = double(md.scope_allocations + md.scope_releases) / double(nsteps);
    }
    md.timeline = Downsample(points, 1000);
    for (auto& [id, pa] : pools) {
      pa.summary.timeline = Downsample(pa.points, 150);
      md.pools.push_back(std::move(pa.summary));
    }
    std::sort(md.pools.begin(), md.pools.end(),
              [](const MemoryPoolSummary& a, const MemoryPoolSummary& b) {
                if (a.peak_bytes != b.peak_bytes) return a.peak_bytes > b.peak_bytes;
                return a.address < b.address;
              });
    if (md.pools.size() > 16) md.pools.resize(16);
    out.devices.push_back(std::move(md));
  }
  // PyTorch's samples (--pytorch hook), per device.
  for (const TorchMemorySample& s : whole.torch_memory) {
    for (MemoryDevice& md : out.devices) {
      if (md.device_index != s.device) continue;
      ++md.torch_samples;
      md.torch_allocated_peak_bytes = std::max(md.torch_allocated_peak_bytes, s.max_allocated);
      md.torch_reserved_peak_bytes = std::max(md.torch_reserved_peak_bytes, s.reserved);
      md.torch_allocated_end_bytes = s.allocated;
      md.torch_reserved_end_bytes = s.reserved;
    }
  }
  SetDeviceMemoryPeaks(report);
}

void SetDeviceMemoryPeaks(Report* report) {
  for (DeviceSummary& ds : report->summary.devices) {
    for (const MemoryDevice& md : report->memory.devices) {
      if (md.device_index == ds.index) ds.memory_peak_bytes = md.peak_bytes;
    }
  }
}

}  // namespace sightline::analysis
