// What-if replay of the analysed window (whatif.h).
#include "lib/analysis/whatif.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "lib/trace/demangle.h"

namespace sightline::analysis {

namespace {

bool ContainsLower(const std::string& lower, std::string_view what) {
  return lower.find(what) != std::string::npos;
}

}  // namespace

bool IsFp32MathKernelName(std::string_view name) {
  std::string n(name.substr(0, 4096));
  n = trace::Demangle(n);  // template arguments ("<float>") only show demangled
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view tc : {"tf32", "hmma", "1688", "16816", "gmma", "bf16", "f16", "h884",
                              "imma", "fp16", "half", "bfloat", "__nv_bfloat", "tensorop",
                              "s884", "fp8", "e4m3", "e5m2", "int8"}) {
    if (ContainsLower(n, tc)) return false;
  }
  bool math = false;
  for (std::string_view m : {"gemm", "conv", "xmma", "cutlass", "implicit", "winograd",
                             "fft2d", "fft_", "direct_kernel", "dgrad", "wgrad", "fprop"}) {
    if (ContainsLower(n, m)) math = true;
  }
  if (!math) return false;
  for (std::string_view f : {"sgemm", "f32f32_f32f32", "_ffma", "ffma_", "<float", "<float,",
                             "float>", "gemm_f32", "_fp32", "fp32_"}) {
    if (ContainsLower(n, f)) return true;
  }
  return false;
}

double TensorSpeedupFor(uint32_t cc_major, uint32_t cc_minor) {
  // Dense BF16 tensor-core peak over FP32 FMA peak (the recommended fix is
  // bf16 autocast; TF32 alone gives about half of it).
  if (cc_major == 9) return 14.8;                   // H100/H200 SXM: 989 / 67 TFLOPS
  if (cc_major == 8 && cc_minor == 0) return 16.0;  // A100: 312 / 19.5
  if (cc_major == 8) return 4.0;                    // GA10x: ~4x
  if (cc_major >= 10) return 14.8;
  return 4.0;
}

double PinnedGbpsFor(uint32_t cc_major, uint32_t /*cc_minor*/) {
  // The host link of the data-center parts, per direction, at 80 % of its
  // raw rate (PCIe encoding and packet headers; pinned copies of a few MiB
  // reach 80-86 %): Hopper (H100/H200) and Blackwell on PCIe Gen5 x16
  // (63 GB/s raw; 53-54 GB/s measured on the H200), A100 and the rest on
  // Gen4 x16 (31.5 GB/s raw).
  return cc_major >= 9 ? 50.0 : 25.0;
}

// The replayed trace's calls in start order, the longer first at equal
// starts, then by index: a k-way merge of its threads' calls, which the model
// keeps in that order (model_finish.cc MergeApiCalls), with each call's GPU
// work. Nothing is materialized: each replay walks the model again.
class WhatIf::CallWalk {
 public:
  explicit CallWalk(const WhatIf& w) : w_(w), heap_(w.runs_.size() > kLinearRuns) {
    heads_.reserve(w.runs_.size());
    for (const Run& r : w.runs_) {
      const ApiCall& c = w.model_.api_calls[r.api_begin];
      heads_.push_back({c.start_ns, c.end_ns, r.api_begin, r.api_end, r.op_begin});
    }
    if (heap_) std::make_heap(heads_.begin(), heads_.end(), Later);
  }
  // The next call (index into api_calls) and its work ops_[*op_begin,
  // *op_end); false after the last.
  bool Next(uint32_t* api, uint32_t* op_begin, uint32_t* op_end) {
    if (heads_.empty()) return false;
    // The run whose next call comes first: a scan of a few threads' heads,
    // else a heap.
    size_t first = 0;
    if (heap_) {
      std::pop_heap(heads_.begin(), heads_.end(), Later);
      first = heads_.size() - 1;
    } else {
      for (size_t i = 1; i < heads_.size(); ++i) {
        if (Later(heads_[first], heads_[i])) first = i;
      }
    }
    Head& h = heads_[first];
    *api = h.api;
    *op_begin = h.op;
    if (w_.call_bits_[h.api] & kHasOps) {
      while (!w_.last_op_[h.op]) ++h.op;
      ++h.op;
    }
    *op_end = h.op;
    if (++h.api == h.api_end) {
      std::swap(h, heads_.back());  // a heap's is already the back; a scan's order is free
      heads_.pop_back();
      return true;
    }
    const ApiCall& c = w_.model_.api_calls[h.api];
    h.start = c.start_ns;
    h.end = c.end_ns;
    if (heap_) std::push_heap(heads_.begin(), heads_.end(), Later);
    return true;
  }

 private:
  static constexpr size_t kLinearRuns = 8;
  struct Head {
    uint64_t start, end;  // of the run's next call (cached)
    uint32_t api, api_end, op;
  };
  // Whether a's next call comes after b's (the heap's top is the first).
  static bool Later(const Head& a, const Head& b) {
    if (a.start != b.start) return a.start > b.start;
    if (a.end != b.end) return a.end < b.end;
    return a.api > b.api;
  }
  const WhatIf& w_;
  const bool heap_;
  std::vector<Head> heads_;
};

WhatIf::WhatIf(const TimelineModel& model, const WhatIfParams& params)
    : model_(model), params_(params) {
  // The trace with the most GPU work (one rank's loop).
  std::vector<uint64_t> per_trace(model.traces.size(), 0);
  for (const GpuActivity& a : model.activities) per_trace[a.trace]++;
  if (per_trace.empty()) return;
  uint16_t trace = static_cast<uint16_t>(
      std::max_element(per_trace.begin(), per_trace.end()) - per_trace.begin());
  // The replayed trace's device (compute capability 0.0 when unknown: the
  // tables' defaults): tensor-core speed-up and pinned copy bandwidth.
  uint32_t cc_major = 0, cc_minor = 0;
  for (const DeviceTimelineInfo& d : model.devices) {
    if (d.trace == trace && d.has_info) {
      cc_major = d.info.cc_major;
      cc_minor = d.info.cc_minor;
      break;
    }
  }
  tensor_speedup_ = params.tensor_speedup > 0 ? params.tensor_speedup
                                              : TensorSpeedupFor(cc_major, cc_minor);
  const double default_pinned_gbps =
      params.pinned_gbps > 0 ? params.pinned_gbps : PinnedGbpsFor(cc_major, cc_minor);
  // The launching call of each of the trace's activities. Work launched
  // through an API that was not recorded (cuBLAS, cuDNN and Triton launch
  // through the driver API, which is not traced by default) joins the
  // runtime call issued just before it: CUPTI's correlation ids count
  // runtime and driver calls alike.
  // (correlation id, api), built only when some work has no launching call.
  std::vector<std::pair<uint32_t, uint32_t>> by_correlation;
  bool by_correlation_built = false;
  auto launcher = [&](const GpuActivity& a) -> uint32_t {
    if (a.launch_api != kNone) return a.launch_api;
    if (a.correlation_id == 0) return kNone;
    if (!by_correlation_built) {
      by_correlation_built = true;
      for (uint32_t k = 0; k < model.api_calls.size(); ++k) {
        const ApiCall& c = model.api_calls[k];
        if (c.trace == trace && c.correlation_id != 0) by_correlation.push_back({c.correlation_id, k});
      }
      std::sort(by_correlation.begin(), by_correlation.end());
    }
    auto it = std::lower_bound(by_correlation.begin(), by_correlation.end(),
                               std::pair<uint32_t, uint32_t>{a.correlation_id, 0});
    if (it == by_correlation.begin()) return kNone;
    return std::prev(it)->second;
  };
  // Ops per call, grouped by call with a counting sort (no comparison sort
  // over the trace): ends[api] counts a call's ops, then is the next free
  // slot of its group, then the group's end. In the same pass: pinned
  // bandwidth per direction, from the trace's own pinned copies of at least
  // 64 KiB (smaller ones are latency).
  std::vector<uint32_t> ends(model.api_calls.size(), 0);
  double pinned_bytes[2] = {0, 0}, pinned_ns[2] = {0, 0};
  for (const GpuActivity& a : model.activities) {
    if (a.trace != trace) continue;
    const uint32_t api = launcher(a);
    if (api != kNone) ++ends[api];
    if (a.kind != ActivityKind::kMemcpy || a.detail == kNone || a.detail >= model.copies.size()) {
      continue;
    }
    const CopyDetail& d = model.copies[a.detail];
    int dir = d.copy_kind == CopyKind::kHtoD ? 0 : d.copy_kind == CopyKind::kDtoH ? 1 : -1;
    bool pinned = d.src_kind == MemoryKind::kPinned || d.dst_kind == MemoryKind::kPinned;
    if (dir < 0 || !pinned || d.bytes < (64u << 10) || a.duration() == 0) continue;
    pinned_bytes[dir] += double(d.bytes);
    pinned_ns[dir] += double(a.duration());
  }
  for (int dir = 0; dir < 2; ++dir) {
    pinned_gbps_[dir] =
        pinned_ns[dir] > 0 ? pinned_bytes[dir] / pinned_ns[dir] : default_pinned_gbps;
  }
  uint32_t total = 0;
  for (uint32_t& e : ends) {
    const uint32_t n = e;
    e = total;
    total += n;
  }
  ops_.resize(total);
  for (uint32_t i = 0; i < model.activities.size(); ++i) {
    const GpuActivity& a = model.activities[i];
    if (a.trace != trace) continue;
    const uint32_t api = launcher(a);
    if (api != kNone) ops_[ends[api]++] = i;
  }
  std::vector<std::pair<uint32_t, uint32_t>>().swap(by_correlation);
  // Within a call, by start (then by index): activities are in start order
  // per device only.
  call_bits_.assign(model.api_calls.size(), 0);
  last_op_.assign(total, false);
  for (uint32_t api = 0, begin = 0; api < ends.size(); begin = ends[api++]) {
    const uint32_t end = ends[api];
    if (end == begin) continue;
    call_bits_[api] |= kHasOps;
    last_op_[end - 1] = true;
    auto by_start = [&](uint32_t x, uint32_t y) {
      const uint64_t sx = model.activities[x].start_ns, sy = model.activities[y].start_ns;
      return sx != sy ? sx < sy : x < y;
    };
    if (end - begin > 1 && !std::is_sorted(ops_.begin() + begin, ops_.begin() + end, by_start)) {
      std::sort(ops_.begin() + begin, ops_.begin() + end, by_start);
    }
  }
  size_t calls = 0;
  for (const ThreadInfo& t : model.threads) {
    if (t.trace != trace || t.api_end <= t.api_begin) continue;
    runs_.push_back({t.api_begin, t.api_end, t.api_begin == 0 ? 0 : ends[t.api_begin - 1]});
    calls += t.api_end - t.api_begin;
  }
  std::vector<uint32_t>().swap(ends);
  // One pass in replay order: what each call's work and its neighbours say
  // (pageable copies, uploads waited for, synchronizes before collectives),
  // the median of the launch path's short host pauses.
  fp32_math_.assign(model.strings.size(), 2);  // 2 = not yet known
  // Per thread (index into threads): its last call, if that call was an
  // upload the memcpy fix makes asynchronous (else kNone); a synchronize not
  // yet followed by GPU work (else kNone).
  std::vector<uint32_t> upload_before(model.threads.size(), kNone);
  std::vector<uint32_t> sync_before_comm(model.threads.size(), kNone);
  // Pauses shorter than host_gap_ns, 4 bytes each when they fit.
  const bool narrow_gaps = params_.host_gap_ns <= (uint64_t{1} << 32);
  std::vector<uint32_t> small_gaps;
  std::vector<uint64_t> wide_small_gaps;
  if (narrow_gaps) {
    small_gaps.reserve(calls);  // pages never written cost nothing
  } else {
    wide_small_gaps.reserve(calls);
  }
  uint64_t busy_end = 0;
  bool first = true;
  CallWalk walk(*this);
  uint32_t api = 0, op_begin = 0, op_end = 0;
  while (walk.Next(&api, &op_begin, &op_end)) {
    const ApiCall& c = model.api_calls[api];
    if (first) busy_end = c.start_ns;
    first = false;
    const uint64_t gap = c.start_ns > busy_end ? c.start_ns - busy_end : 0;
    busy_end = std::max(busy_end, c.end_ns);
    bool uploads = false, downloads = false, has_comm = false, has_other = false, pageable = false;
    for (uint32_t k = op_begin; k < op_end; ++k) {
      PrefetchOp(k);
      const GpuActivity& a = model.activities[ops_[k]];
      const bool comm = a.klass == ActivityClass::kCommunication;
      has_comm |= comm;
      has_other |= !comm;
      if (a.kind == ActivityKind::kKernel) {
        uint8_t& known = fp32_math_[a.name];
        if (known == 2) known = IsFp32MathKernelName(model.String(a.name)) ? 1 : 0;
        if (known == 1) fp32_math_ns_ += a.duration();
      }
      if (a.kind == ActivityKind::kMemcpy && a.detail != kNone && a.detail < model.copies.size()) {
        const CopyDetail& d = model.copies[a.detail];
        uploads |= d.copy_kind == CopyKind::kHtoD;
        downloads |= d.copy_kind != CopyKind::kHtoD;
        pageable |= d.src_kind == MemoryKind::kPageable || d.dst_kind == MemoryKind::kPageable;
      }
    }
    if (pageable) call_bits_[api] |= kPageable;
    if (gap < params_.host_gap_ns && (c.flags & kApiLaunch) && narrow_gaps) {
      small_gaps.push_back(static_cast<uint32_t>(gap));
    } else if (gap < params_.host_gap_ns && (c.flags & kApiLaunch)) {
      wide_small_gaps.push_back(gap);
    }
    const bool sync_copy = (c.flags & kApiMemcpySync) != 0 || (pageable && (c.flags & kApiMemcpy));
    if ((c.flags & kApiSync) && !(c.flags & kApiMemcpy) && upload_before[c.thread] != kNone &&
        gap < params_.host_gap_ns) {
      call_bits_[api] |= kUploadWait;
    }
    upload_before[c.thread] = sync_copy && uploads && !downloads ? api : kNone;
    // A synchronize whose thread's next GPU work is a collective (calls
    // without GPU work between, e.g. NCCL's own event calls, are passed).
    uint32_t& pending = sync_before_comm[c.thread];
    if (has_comm && !has_other && pending != kNone) {
      call_bits_[pending] |= kCommWait;
      ++comm_waits_;
    }
    if (has_comm || has_other || (c.flags & (kApiSync | kApiMemcpySync))) {
      const bool pure_sync =
          (c.flags & kApiSync) && !(c.flags & kApiMemcpy) && op_end == op_begin;
      pending = pure_sync ? api : kNone;
    }
  }
  auto median = [](auto& v) -> uint64_t {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  if (!small_gaps.empty()) median_small_gap_ = median(small_gaps);
  if (!wide_small_gaps.empty()) median_small_gap_ = median(wide_small_gaps);
  baseline_ = Replay(kFixNone);
}

void WhatIf::PrefetchOp(uint32_t i) const {
  // A call's work is read through ops_, in launch order: activities of
  // several streams, far apart in the table (sorted by start), which the
  // hardware does not prefetch; the same thread's work a few calls ahead.
  constexpr uint32_t kAhead = 16;
  if (i + kAhead < ops_.size()) __builtin_prefetch(&model_.activities[ops_[i + kAhead]]);
}

uint64_t WhatIf::PinnedDuration(const GpuActivity& a) const {
  if (a.kind != ActivityKind::kMemcpy || a.detail == kNone || a.detail >= model_.copies.size()) {
    return a.duration();
  }
  const CopyDetail& d = model_.copies[a.detail];
  if (d.src_kind != MemoryKind::kPageable && d.dst_kind != MemoryKind::kPageable) {
    return a.duration();
  }
  int dir = d.copy_kind == CopyKind::kDtoH ? 1 : 0;
  double gbps = std::max(pinned_gbps_[dir], 1.0);  // bytes per ns == GB/s
  uint64_t at_pinned = static_cast<uint64_t>(double(d.bytes) / gbps) + 2'000;
  return std::min(a.duration(), at_pinned);
}

bool WhatIfParams::operator==(const WhatIfParams& o) const {
  return host_gap_ns == o.host_gap_ns && graph_launch_ns == o.graph_launch_ns &&
         launch_overhead_ns == o.launch_overhead_ns && launch_to_start_ns == o.launch_to_start_ns &&
         tensor_speedup == o.tensor_speedup && pinned_gbps == o.pinned_gbps;
}

const WhatIf& WhatIfCache::Get(const WhatIfParams& params) {
  for (size_t i = 0; i < built_.size(); ++i) {
    if (params_[i] == params) return *built_[i];
  }
  built_.push_back(std::make_unique<WhatIf>(model_, params));
  params_.push_back(params);
  return *built_.back();
}

uint64_t WhatIf::Replay(uint32_t fixes) const {
  if (empty()) return 0;
  for (const auto& [done, result] : replayed_) {
    if (done == fixes) return result;
  }
  const uint64_t result = ReplayOnce(fixes);
  replayed_.push_back({fixes, result});
  return result;
}

uint64_t WhatIf::ReplayOnce(uint32_t fixes) const {
  // Per model stream, and one more: the communication stream of kFixCommOverlap.
  const uint32_t comm_stream = static_cast<uint32_t>(model_.streams.size());
  std::vector<uint64_t> free(model_.streams.size() + 1, 0);
  const bool comm_fix = (fixes & kFixCommOverlap) != 0;
  uint64_t t = 0, gpu_done = 0;
  bool in_run = false;  // inside a run of graphed launches
  const bool graph = fixes & kFixGraph;
  // The recorded host time: the union of every thread's calls, cut into the
  // pause before each call and the part of it not overlapped by earlier calls.
  uint64_t busy_end = 0;
  bool first = true;
  CallWalk walk(*this);
  uint32_t api = 0, op_begin = 0, op_end = 0;
  while (walk.Next(&api, &op_begin, &op_end)) {
    const ApiCall& c = model_.api_calls[api];
    if (first) busy_end = c.start_ns;
    first = false;
    const uint64_t recorded_gap = c.start_ns > busy_end ? c.start_ns - busy_end : 0;
    const uint64_t from = std::max(c.start_ns, busy_end);
    const uint64_t recorded_duration = c.end_ns > from ? c.end_ns - from : 0;
    busy_end = std::max(busy_end, c.end_ns);
    const uint8_t bits = call_bits_[api];
    const bool pageable = (bits & kPageable) != 0;
    const bool launch = (c.flags & kApiLaunch) && !(c.flags & kApiSync);
    const bool sync_api = (c.flags & kApiSync) != 0;
    const bool sync_copy = (c.flags & kApiMemcpySync) != 0 || (pageable && (c.flags & kApiMemcpy));
    const bool alloc = (c.flags & kApiAlloc) != 0;
    if (alloc && (fixes & kFixAllocations)) {  // memory kept cached: the call is gone
      t += recorded_gap;
      continue;
    }
    uint64_t gap = recorded_gap;
    if ((fixes & kFixHostGaps) && gap >= params_.host_gap_ns) gap = median_small_gap_;
    const bool capturable = !sync_api && !sync_copy && !alloc;
    if (graph && gap < params_.host_gap_ns && in_run && capturable) gap = 0;
    t += gap;
    uint64_t launch_at = t;
    uint64_t duration = recorded_duration;
    // A launch call longer than the launch path (launch_overhead_ns) was
    // waiting for room in the GPU's queue (a GPU-bound loop runs ahead of
    // the GPU until the queue is full): that wait follows the GPU, it is not
    // host work, so the replay keeps only the launch path.
    if (launch) duration = std::min(duration, params_.launch_overhead_ns);
    if (graph && capturable && (launch || op_end > op_begin)) {
      duration = in_run ? 0 : std::min(duration, params_.graph_launch_ns);
      in_run = true;
    } else if (graph && !capturable) {
      in_run = false;
    } else if (graph && gap >= params_.host_gap_ns) {
      in_run = false;
    }
    // GPU work of the call.
    for (uint32_t i = op_begin; i < op_end; ++i) {
      PrefetchOp(i);
      const GpuActivity& a = model_.activities[ops_[i]];
      uint64_t d = (fixes & kFixSyncMemcpy) && pageable ? PinnedDuration(a) : a.duration();
      if ((fixes & kFixTensorCores) && a.kind == ActivityKind::kKernel &&
          fp32_math_[a.name] == 1 && tensor_speedup_ > 1) {
        d = static_cast<uint64_t>(double(d) / tensor_speedup_);
      }
      const uint32_t stream =
          comm_fix && a.klass == ActivityClass::kCommunication ? comm_stream : a.stream;
      uint64_t start = std::max(launch_at + params_.launch_to_start_ns, free[stream]);
      free[stream] = start + d;
      gpu_done = std::max(gpu_done, free[stream]);
    }
    // A synchronize before a collective belongs to kFixCommOverlap alone.
    const bool sync_fixed = (bits & kCommWait) ? comm_fix : (fixes & kFixSyncApi) != 0;
    const bool waits = (sync_api && !sync_fixed &&
                        !((bits & kUploadWait) && (fixes & kFixSyncMemcpy))) ||
                       (sync_copy && !(fixes & kFixSyncMemcpy));
    if (waits) {
      // The host part of a blocking call is short; the rest was the wait.
      uint64_t host_part = std::min<uint64_t>(duration, 5'000);
      t = std::max(t + host_part, gpu_done);
    } else if (sync_api || sync_copy) {
      t += std::min<uint64_t>(duration, 5'000);
    } else {
      t += duration;
    }
  }
  return std::max(t, gpu_done);
}

uint64_t WhatIf::Saving(uint32_t fixes, uint32_t already, uint64_t window_ns) const {
  uint64_t before = Replay(already);
  uint64_t after = Replay(already | fixes);
  if (baseline_ == 0 || after >= before) return 0;
  double share = double(before - after) / double(baseline_);
  return static_cast<uint64_t>(share * double(window_ns));
}

}  // namespace sightline::analysis
