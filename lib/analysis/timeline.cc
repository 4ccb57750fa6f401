#include "lib/analysis/timeline.h"

#include <algorithm>

namespace sightline::analysis {

const char* IdleCauseName(IdleCause c) {
  switch (c) {
    case IdleCause::kHostWait: return "host_wait";
    case IdleCause::kSyncWait: return "sync_wait";
    case IdleCause::kKernelWait: return "kernel_wait";
    case IdleCause::kOther: return "other";
    case IdleCause::kProfiler: return "profiler";
  }
  return "other";
}

uint32_t FindBlockingSyncCall(const TimelineModel& model, uint32_t thread, uint64_t from_ns,
                              uint64_t to_ns) {
  if (thread >= model.threads.size()) return kNone;
  const ThreadInfo& t = model.threads[thread];
  const ApiCall* begin = model.api_calls.data() + t.api_begin;
  const ApiCall* end = model.api_calls.data() + t.api_end;
  // Calls on one thread are sequential or nested (runtime → driver), so a
  // call that started before from_ns and is still running at from_ns is one
  // of the few enclosing the last call before from_ns: a short walk back
  // finds it.
  const ApiCall* it = std::lower_bound(begin, end, from_ns, [](const ApiCall& c, uint64_t v) {
    return c.start_ns < v;
  });
  constexpr int kMaxWalk = 16;
  uint32_t best = kNone;
  uint64_t best_end = 0;
  for (int walked = 0; it != begin && walked < kMaxWalk; ++walked) {
    --it;
    if ((it->flags & (kApiSync | kApiMemcpySync)) == 0) continue;
    if (it->end_ns >= from_ns && it->end_ns <= to_ns && it->end_ns >= best_end) {
      best = static_cast<uint32_t>(it - model.api_calls.data());
      best_end = it->end_ns;
    }
  }
  return best;
}

namespace {

IdleCause Attribute(const TimelineModel& model, const IdleGap& gap, const TimelineOptions& options,
                    uint32_t* blocking_api);

}  // namespace

IdleCause AttributeIdleGap(const TimelineModel& model, uint64_t start_ns, uint64_t end_ns,
                           uint32_t next_activity, const TimelineOptions& options,
                           uint32_t* blocking_api) {
  IdleGap gap;
  gap.start_ns = start_ns;
  gap.end_ns = end_ns;
  gap.next_activity = next_activity;
  return Attribute(model, gap, options, blocking_api);
}

namespace {

// Host-side profiler overhead of `trace` (of `thread`, or any thread when
// kNone) inside [start, end). Overhead spans
// are few and sorted by start; a bounded backward walk from the first span
// starting at or after `end` finds the overlapping ones.
uint64_t ProfilerTimeIn(const TimelineModel& model, uint16_t trace, uint32_t thread, uint64_t start,
                        uint64_t end) {
  auto hi = std::lower_bound(model.overheads.begin(), model.overheads.end(), end,
                             [](const OverheadSpan& o, uint64_t t) { return o.start_ns < t; });
  uint64_t sum = 0;
  int budget = 256;
  for (auto it = hi; it != model.overheads.begin() && budget-- > 0;) {
    --it;
    if (it->device != kNone || it->trace != trace ||
        (thread != kNone && it->thread != kNone && it->thread != thread) ||
        it->end_ns <= start || !IsProfilerOverheadKind(it->kind)) {
      continue;
    }
    sum += std::min(it->end_ns, end) - std::max(it->start_ns, start);
  }
  return std::min(sum, end - start);
}

IdleCause Attribute(const TimelineModel& model, const IdleGap& gap, const TimelineOptions& options,
                    uint32_t* blocking_api) {
  *blocking_api = kNone;
  if (gap.length() <= options.kernel_wait_ns) return IdleCause::kKernelWait;
  if (gap.next_activity == kNone) return IdleCause::kOther;
  // The launching thread (any thread of the trace when the next work has no
  // recorded launch, e.g. NCCL's driver-API launches) was inside the
  // profiler for most (>= 3/4) of the gap: the gap is the profiler's. A gap
  // the app would have had anyway (its CPU work) with a few ms of profiler
  // time in it keeps the app's cause.
  if (!model.overheads.empty()) {
    const GpuActivity& next = model.activities[gap.next_activity];
    const ApiCall* next_launch = model.LaunchOf(next);
    uint32_t thread = next_launch != nullptr ? next_launch->thread : kNone;
    if (4 * ProfilerTimeIn(model, next.trace, thread, gap.start_ns, gap.end_ns) >=
        3 * gap.length()) {
      return IdleCause::kProfiler;
    }
  }
  const ApiCall* launch = model.LaunchOf(model.activities[gap.next_activity]);
  if (launch == nullptr) return IdleCause::kOther;
  if (launch->start_ns >= gap.start_ns) {
    uint32_t sync = FindBlockingSyncCall(model, launch->thread, gap.start_ns, launch->start_ns);
    // Sync-wait when the host launched soon after the synchronization returned;
    // when it did other work first, the gap is mostly host-wait.
    if (sync != kNone && model.api_calls[sync].start_ns < gap.start_ns &&
        launch->start_ns - model.api_calls[sync].end_ns <=
            std::max<uint64_t>(options.kernel_wait_ns, gap.length() / 2)) {
      *blocking_api = sync;
      return IdleCause::kSyncWait;
    }
    return IdleCause::kHostWait;
  }
  // The launch call began before the GPU went idle but returned after: the
  // launch itself was too slow for the GPU (the host side could not keep up).
  if (launch->end_ns > gap.start_ns) return IdleCause::kHostWait;
  return IdleCause::kOther;
}

}  // namespace

DerivedTimeline BuildDerivedTimeline(const TimelineModel& model, const TimelineOptions& options) {
  DerivedTimeline out;
  out.options = options;
  out.devices.resize(model.devices.size());
  uint64_t global_start = UINT64_MAX, global_end = 0;
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const DeviceTimelineInfo& info = model.devices[d];
    DeviceTimeline& t = out.devices[d];
    t.device = static_cast<uint32_t>(d);
    if (info.activity_begin == info.activity_end) continue;
    t.window_start_ns = model.activities[info.activity_begin].start_ns;
    // Count the disjoint intervals of each set first, so that each set is
    // allocated once at its exact size (no doubling on large traces).
    UnionLength n_busy, n_compute, n_comm, n_memory, n_copies;
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      const GpuActivity& a = model.activities[i];
      n_busy.Add(a.start_ns, a.end_ns);
      switch (a.klass) {
        case ActivityClass::kCompute: n_compute.Add(a.start_ns, a.end_ns); break;
        case ActivityClass::kCommunication: n_comm.Add(a.start_ns, a.end_ns); break;
        case ActivityClass::kMemory:
          n_memory.Add(a.start_ns, a.end_ns);
          if (a.kind == ActivityKind::kMemcpy) n_copies.Add(a.start_ns, a.end_ns);
          break;
      }
    }
    t.busy.Reserve(n_busy.intervals());
    t.compute.Reserve(n_compute.intervals());
    t.comm.Reserve(n_comm.intervals());
    t.memory.Reserve(n_memory.intervals());
    t.copies.Reserve(n_copies.intervals());
    for (uint32_t i = info.activity_begin; i < info.activity_end; ++i) {
      const GpuActivity& a = model.activities[i];
      t.window_end_ns = std::max(t.window_end_ns, a.end_ns);
      t.busy.AddSorted(a.start_ns, a.end_ns);
      switch (a.klass) {
        case ActivityClass::kCompute: t.compute.AddSorted(a.start_ns, a.end_ns); break;
        case ActivityClass::kCommunication: t.comm.AddSorted(a.start_ns, a.end_ns); break;
        case ActivityClass::kMemory:
          t.memory.AddSorted(a.start_ns, a.end_ns);
          if (a.kind == ActivityKind::kMemcpy) t.copies.AddSorted(a.start_ns, a.end_ns);
          break;
      }
    }
    // Zero-length activities keep the window but add no busy time.
    IntervalSet overhead;
    for (const OverheadSpan& o : model.overheads) {
      if (o.device == d) overhead.AddSorted(o.start_ns, o.end_ns);
    }
    if (!overhead.empty()) {
      t.busy = t.busy.Union(overhead.Clip(t.window_start_ns, t.window_end_ns));
    }
    global_start = std::min(global_start, t.window_start_ns);
    global_end = std::max(global_end, t.window_end_ns);

    IntervalSet idle = t.busy.Complement(t.window_start_ns, t.window_end_ns);
    t.gaps.reserve(idle.size());
    const GpuActivity* acts = model.activities.data();
    for (const Interval& g : idle.intervals()) {
      IdleGap gap;
      gap.start_ns = g.start_ns;
      gap.end_ns = g.end_ns;
      gap.device = static_cast<uint32_t>(d);
      const GpuActivity* next = std::lower_bound(
          acts + info.activity_begin, acts + info.activity_end, g.end_ns,
          [](const GpuActivity& a, uint64_t v) { return a.start_ns < v; });
      if (next != acts + info.activity_end) gap.next_activity = static_cast<uint32_t>(next - acts);
      gap.cause = Attribute(model, gap, options, &gap.blocking_api);
      t.gaps.push_back(gap);
    }
  }
  if (global_end == 0) {
    out.window_start_ns = model.first_ns;
    out.window_end_ns = model.last_ns;
  } else {
    out.window_start_ns = global_start;
    out.window_end_ns = global_end;
  }
  out.cross_rank = AnalyzeCrossRank(model, out.devices);
  return out;
}

}  // namespace sightline::analysis
