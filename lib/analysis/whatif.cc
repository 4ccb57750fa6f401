// What-if replay of the analysed window (whatif.h).
#include "lib/analysis/whatif.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "absl/container/flat_hash_map.h"
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

WhatIf::WhatIf(const TimelineModel& model, const WhatIfParams& params) : params_(params) {
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
  // Ops per launching call. Work launched through an API that was not
  // recorded (cuBLAS, cuDNN and Triton launch through the driver API, which
  // is not traced by default) joins the runtime call issued just before it:
  // CUPTI's correlation ids count runtime and driver calls alike.
  // One flat table (a hash map of small vectors cost ~4 allocations a call
  // and was the analyzer's largest table on a 5 M-event trace): a call's
  // activities are ops_of[ops_begin[api] .. ops_begin[api + 1]), by start.
  std::vector<uint32_t> ops_of;
  std::vector<uint32_t> ops_begin(model.api_calls.size() + 1, 0);
  std::vector<uint8_t> fp32(model.strings.size(), 2);  // 2 = unknown
  // (correlation id, api), built only when some work has no launching call.
  std::vector<std::pair<uint32_t, uint32_t>> by_correlation;
  bool by_correlation_built = false;
  struct Link {
    uint32_t api;
    uint64_t start_ns;
    uint32_t activity;
    bool operator<(const Link& o) const {
      if (api != o.api) return api < o.api;
      if (start_ns != o.start_ns) return start_ns < o.start_ns;
      return activity < o.activity;
    }
  };
  std::vector<Link> links;
  for (uint32_t i = 0; i < model.activities.size(); ++i) {
    const GpuActivity& a = model.activities[i];
    if (a.trace != trace) continue;
    if (a.launch_api != kNone) {
      links.push_back({a.launch_api, a.start_ns, i});
      continue;
    }
    if (a.correlation_id == 0) continue;
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
    if (it == by_correlation.begin()) continue;
    --it;
    links.push_back({it->second, a.start_ns, i});
  }
  std::stable_sort(links.begin(), links.end());  // runs already in order: merge, not introsort
  ops_of.reserve(links.size());
  for (const Link& l : links) {
    ops_of.push_back(l.activity);
    ++ops_begin[l.api + 1];
  }
  std::vector<Link>().swap(links);
  for (size_t i = 1; i < ops_begin.size(); ++i) ops_begin[i] += ops_begin[i - 1];
  // The trace's calls by start, the longer first at equal starts (then by
  // index): sorted on the keys themselves, not through the call table.
  std::vector<uint32_t> order;
  {
    struct Key {
      uint64_t start_ns, end_ns;
      uint32_t api;
      bool operator<(const Key& o) const {
        if (start_ns != o.start_ns) return start_ns < o.start_ns;
        if (end_ns != o.end_ns) return end_ns > o.end_ns;
        return api < o.api;
      }
    };
    std::vector<Key> keys;
    for (uint32_t i = 0; i < model.api_calls.size(); ++i) {
      const ApiCall& c = model.api_calls[i];
      if (c.trace == trace) keys.push_back({c.start_ns, c.end_ns, i});
    }
    std::stable_sort(keys.begin(), keys.end());  // one sorted run per thread
    order.reserve(keys.size());
    for (const Key& k : keys) order.push_back(k.api);
  }
  // Pinned bandwidth per direction, from the trace's own pinned copies of
  // at least 64 KiB (smaller ones are latency).
  double pinned_bytes[2] = {0, 0}, pinned_ns[2] = {0, 0};
  for (const GpuActivity& a : model.activities) {
    if (a.trace != trace || a.kind != ActivityKind::kMemcpy || a.detail == kNone ||
        a.detail >= model.copies.size()) {
      continue;
    }
    const CopyDetail& d = model.copies[a.detail];
    int dir = d.copy_kind == CopyKind::kHtoD ? 0 : d.copy_kind == CopyKind::kDtoH ? 1 : -1;
    bool pinned = d.src_kind == MemoryKind::kPinned || d.dst_kind == MemoryKind::kPinned;
    if (dir < 0 || !pinned || d.bytes < (64u << 10) || a.duration() == 0) continue;
    pinned_bytes[dir] += double(d.bytes);
    pinned_ns[dir] += double(a.duration());
  }
  double pinned_gbps[2];
  for (int dir = 0; dir < 2; ++dir) {
    pinned_gbps[dir] =
        pinned_ns[dir] > 0 ? pinned_bytes[dir] / pinned_ns[dir] : default_pinned_gbps;
  }
  absl::flat_hash_map<uint32_t, uint32_t> stream_index;
  // Per thread: the index in calls_ of its last call, if that call was an
  // upload the memcpy fix makes asynchronous (else kNone).
  absl::flat_hash_map<uint32_t, uint32_t> upload_before;
  // Per thread: the index in calls_ of a synchronize not yet followed by GPU
  // work (else kNone).
  absl::flat_hash_map<uint32_t, uint32_t> sync_before_comm;
  uint64_t busy_end = 0;
  std::vector<uint64_t> small_gaps;
  calls_.reserve(order.size());
  ops_.reserve(ops_of.size());
  for (uint32_t idx : order) {
    const ApiCall& c = model.api_calls[idx];
    Call call{};
    if (calls_.empty()) {
      busy_end = c.start_ns;
    }
    call.gap = c.start_ns > busy_end ? c.start_ns - busy_end : 0;
    uint64_t from = std::max(c.start_ns, busy_end);
    call.duration = c.end_ns > from ? c.end_ns - from : 0;
    busy_end = std::max(busy_end, c.end_ns);
    call.flags = c.flags;
    call.op_begin = static_cast<uint32_t>(ops_.size());
    bool uploads = false, downloads = false, has_comm = false, has_other = false;
    for (uint32_t k = ops_begin[idx]; k < ops_begin[idx + 1]; ++k) {
      const uint32_t ai = ops_of[k];
      const GpuActivity& a = model.activities[ai];
      auto [s, fresh] = stream_index.try_emplace(a.stream, static_cast<uint32_t>(streams_));
      if (fresh) ++streams_;
      Op op{s->second, a.duration(), false, a.duration()};
      op.comm = a.klass == ActivityClass::kCommunication;
      has_comm |= op.comm;
      has_other |= !op.comm;
      if (a.kind == ActivityKind::kKernel) {
        uint8_t& known = fp32[a.name];
        if (known == 2) known = IsFp32MathKernelName(model.String(a.name)) ? 1 : 0;
        op.fp32_math = known == 1;
        if (op.fp32_math) fp32_math_ns_ += a.duration();
      }
      if ((a.kind == ActivityKind::kMemcpy || a.kind == ActivityKind::kMemset) &&
          a.detail != kNone && a.detail < model.copies.size()) {
        const CopyDetail& d = model.copies[a.detail];
        if (a.kind == ActivityKind::kMemcpy) {
          uploads |= d.copy_kind == CopyKind::kHtoD;
          downloads |= d.copy_kind != CopyKind::kHtoD;
        }
        if (a.kind == ActivityKind::kMemcpy &&
            (d.src_kind == MemoryKind::kPageable || d.dst_kind == MemoryKind::kPageable)) {
          call.pageable = true;
          int dir = d.copy_kind == CopyKind::kDtoH ? 1 : 0;
          double gbps = std::max(pinned_gbps[dir], 1.0);  // bytes per ns == GB/s
          uint64_t at_pinned = static_cast<uint64_t>(double(d.bytes) / gbps) + 2'000;
          op.pinned_duration = std::min(op.duration, at_pinned);
        }
      }
      ops_.push_back(op);
    }
    call.op_end = static_cast<uint32_t>(ops_.size());
    if (call.gap < params_.host_gap_ns && (c.flags & kApiLaunch)) small_gaps.push_back(call.gap);
    const bool sync_copy = (c.flags & kApiMemcpySync) != 0 || (call.pageable && (c.flags & kApiMemcpy));
    auto before = upload_before.find(c.thread);
    if ((c.flags & kApiSync) && !(c.flags & kApiMemcpy) && before != upload_before.end() &&
        before->second != kNone && call.gap < params_.host_gap_ns) {
      call.upload_wait = true;
    }
    upload_before[c.thread] = sync_copy && uploads && !downloads
                                  ? static_cast<uint32_t>(calls_.size())
                                  : kNone;
    // A synchronize whose thread's next GPU work is a collective (calls
    // without GPU work between, e.g. NCCL's own event calls, are passed).
    uint32_t& pending = sync_before_comm.try_emplace(c.thread, kNone).first->second;
    if (has_comm && !has_other && pending != kNone) {
      calls_[pending].comm_wait = true;
      ++comm_waits_;
    }
    if (has_comm || has_other || (c.flags & (kApiSync | kApiMemcpySync))) {
      const bool pure_sync =
          (c.flags & kApiSync) && !(c.flags & kApiMemcpy) && call.op_end == call.op_begin;
      pending = pure_sync ? static_cast<uint32_t>(calls_.size()) : kNone;
    }
    calls_.push_back(call);
  }
  if (!small_gaps.empty()) {
    std::nth_element(small_gaps.begin(), small_gaps.begin() + small_gaps.size() / 2,
                     small_gaps.end());
    median_small_gap_ = small_gaps[small_gaps.size() / 2];
  }
  baseline_ = Replay(kFixNone);
}

uint64_t WhatIf::Replay(uint32_t fixes) const {
  if (calls_.empty()) return 0;
  // One more stream: the communication stream of kFixCommOverlap.
  std::vector<uint64_t> free(streams_ + 1, 0);
  const bool comm_fix = (fixes & kFixCommOverlap) != 0;
  uint64_t t = 0, gpu_done = 0;
  bool in_run = false;  // inside a run of graphed launches
  const bool graph = fixes & kFixGraph;
  for (const Call& c : calls_) {
    const bool launch = (c.flags & kApiLaunch) && !(c.flags & kApiSync);
    const bool sync_api = (c.flags & kApiSync) != 0;
    const bool sync_copy = (c.flags & kApiMemcpySync) != 0 || (c.pageable && (c.flags & kApiMemcpy));
    const bool alloc = (c.flags & kApiAlloc) != 0;
    if (alloc && (fixes & kFixAllocations)) {  // memory kept cached: the call is gone
      t += c.gap;
      continue;
    }
    uint64_t gap = c.gap;
    if ((fixes & kFixHostGaps) && gap >= params_.host_gap_ns) gap = median_small_gap_;
    const bool capturable = !sync_api && !sync_copy && !alloc;
    if (graph && gap < params_.host_gap_ns && in_run && capturable) gap = 0;
    t += gap;
    uint64_t launch_at = t;
    uint64_t duration = c.duration;
    // A launch call longer than the launch path (launch_overhead_ns) was
    // waiting for room in the GPU's queue (a GPU-bound loop runs ahead of
    // the GPU until the queue is full): that wait follows the GPU, it is not
    // host work, so the replay keeps only the launch path.
    if (launch) duration = std::min(duration, params_.launch_overhead_ns);
    if (graph && capturable && (launch || c.op_end > c.op_begin)) {
      duration = in_run ? 0 : std::min(duration, params_.graph_launch_ns);
      in_run = true;
    } else if (graph && !capturable) {
      in_run = false;
    } else if (graph && gap >= params_.host_gap_ns) {
      in_run = false;
    }
    // GPU work of the call.
    for (uint32_t i = c.op_begin; i < c.op_end; ++i) {
      const Op& op = ops_[i];
      uint64_t d = (fixes & kFixSyncMemcpy) ? op.pinned_duration : op.duration;
      if ((fixes & kFixTensorCores) && op.fp32_math && tensor_speedup_ > 1) {
        d = static_cast<uint64_t>(double(d) / tensor_speedup_);
      }
      const uint32_t stream = comm_fix && op.comm ? static_cast<uint32_t>(streams_) : op.stream;
      uint64_t start = std::max(launch_at + params_.launch_to_start_ns, free[stream]);
      free[stream] = start + d;
      gpu_done = std::max(gpu_done, free[stream]);
    }
    // A synchronize before a collective belongs to kFixCommOverlap alone.
    const bool sync_fixed = c.comm_wait ? comm_fix : (fixes & kFixSyncApi) != 0;
    const bool waits = (sync_api && !sync_fixed &&
                        !(c.upload_wait && (fixes & kFixSyncMemcpy))) ||
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
