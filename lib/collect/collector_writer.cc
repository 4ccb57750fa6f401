// lib/collect/collector_writer.cc — the collector's writer thread: turns
// completed CUPTI buffers, call stacks and link-in API events into trace
// chunks, flushes CUPTI periodically, answers flush/finish requests.
#include <cupti.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "lib/collect/activity_drain.h"
#include "lib/collect/collector_impl.h"
#include "lib/collect/device_info.h"
#include "lib/collect/event_sink.h"
#include "lib/collect/flight_recorder.h"
#include "lib/collect/record_converter.h"
#include "lib/collect/self_cost.h"
#include "lib/collect/signal_flush.h"

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "0.1.0"
#endif

namespace sightline::collect {
namespace {

uint64_t RealtimeNs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + t.tv_nsec;
}

uint64_t MonotonicMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000ull + t.tv_nsec / 1000000;
}

const char* ApiName(ApiDomain domain, uint32_t cbid) {
  const char* name = nullptr;
  CUpti_CallbackDomain d =
      domain == ApiDomain::kDriver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cuptiGetCallbackName(d, cbid, &name) != CUPTI_SUCCESS) return nullptr;
  return name;
}

}  // namespace

void CollectorImpl::EnsureHeader() {
  if (header_written_) return;
  header_written_ = true;
  TraceHeaderData h;
  h.tool_version = SIGHTLINE_VERSION;
  h.process = ReadProcessInfo();
  std::vector<std::string> problems;
  h.devices = ReadDeviceInfo(&problems);
  uint32_t cupti_version = 0;
  if (CuptiCall cupti(this); cupti.ok()) cuptiGetVersion(&cupti_version);
  h.cupti_api_version = cupti_version;
  h.cuda_driver_version = DriverVersion();
  h.cuda_runtime_version = RuntimeVersion();
  // Clock mapping: CUPTI timestamp and CLOCK_REALTIME at (nearly) one instant.
  uint64_t before = RealtimeNs();
  uint64_t cupti_now = Now();
  uint64_t after = RealtimeNs();
  h.clock.trace_ns = cupti_now;
  h.clock.realtime_ns = before + (after - before) / 2;
  h.start_realtime_ns = h.clock.realtime_ns;
  h.enabled = config_.EnabledList();
  h.metric_set = config_.metric_set;
  h.capture_range = config_.CaptureDescription();
  if (!writer_->Begin(h)) Warn("cannot write the trace header: " + writer_->error());
}

uint64_t CollectorImpl::CollectDroppedRecords() {
  uint64_t total = 0;
  {
    CuptiCall cupti(this);
    if (!cupti.ok()) {  // CUPTI finalised: its counters were read before
      MutexLock lock(contexts_mu_);
      return cupti_dropped_total_;
    }
    std::vector<CUcontext> contexts;
    {
      MutexLock lock(contexts_mu_);
      contexts = contexts_;
    }
    // Not under contexts_mu_ (STYLE.md #8).
    total = ReadDroppedRecords(contexts, &cuptiActivityGetNumDroppedRecords);
  }
  MutexLock lock(contexts_mu_);
  cupti_dropped_total_ += total;  // the counters reset when read
  return cupti_dropped_total_;
}

void CollectorImpl::WriterMain() {
  BlockFlushSignalsInThisThread();
  TraceWriterEventSink trace_sink(writer_.get());
  // Monitor mode's flight recorder: events wait in a ring until a capture.
  std::unique_ptr<FlightRecorderSink> recorder;
  if (flight_recorder_) {
    recorder = std::make_unique<FlightRecorderSink>(
        &trace_sink, static_cast<uint64_t>(monitor_config_.flight_recorder_s * 1e9),
        size_t{monitor_config_.flight_recorder_mb} << 20);
  }
  EventSink& sink = recorder != nullptr ? static_cast<EventSink&>(*recorder) : trace_sink;
  uint64_t recorder_window_start = 0;  // oldest event the open capture wrote from the ring
  ConverterOptions options;
  options.api_skip = config_.api_skip;
  options.nccl = config_.trace_nccl;
  options.untraced_kernels = config_.metric_inplace_untraced() && hook_ != nullptr;
  options.keep_untimed_kernels = hook_ != nullptr;
  RecordConverter converter(&sink, options, [this](ApiDomain d, uint32_t cbid) -> const char* {
    CuptiCall cupti(this);
    return cupti.ok() ? ApiName(d, cbid) : nullptr;
  });
  if (hook_ != nullptr) {
    KernelLaunchHook* hook = hook_.get();
    converter.set_replayed_fn([hook](uint32_t c) { return hook->IsReplayedCorrelation(c); });
  }
  StackSymbolizer symbolizer({"libsightline", "libcupti", "libcuda.so", "libpthread", "libc.so"});
  std::vector<CompletedBuffer> buffers;
  std::vector<RawStack> raw_stacks;
  std::vector<PythonStackDef> py_defs;
  std::vector<PythonStackPair> py_pairs;
  std::vector<uint32_t> py_ids;  // local Python stack id → trace stack id
  std::vector<HostEvent> host;
  std::vector<CallbackApi> callback_apis;
  uint64_t last_flush_ms = MonotonicMs();
  uint64_t last_chunk_ms = last_flush_ms;
  uint32_t sightline_domain = 0;
  // PM sample batches share one names vector per device: interned once.
  std::shared_ptr<const std::vector<std::string>> gpu_metric_names;
  std::vector<uint32_t> gpu_metric_ids;

  auto process = [&]() {
    CostScope cost(CostPart::kWriter, CostScope::kThreadCpu);
    if (!header_written_ && !cuda_ready_ && !finish_requested_) {
      // Nothing can be written before the header; keep buffers queued.
      return;
    }
    EnsureHeader();
    raw_stacks.clear();
    stacks_.Take(&raw_stacks);
    for (const RawStack& raw : raw_stacks) {
      uint32_t id = symbolizer.Symbolize(raw, &sink);  // shared ones too (NativeStackOnce)
      if (id != 0) converter.AttachStack(raw.correlation_id, id);
    }
    buffers.clear();
    pool_->TakeCompleted(&buffers);
    // Driver launches timed by our callbacks (CallbackApi): taken before the
    // Python stacks (each was pushed at its call's exit, after its stack at
    // the entry) and converted once those are attached.
    callback_apis.clear();
    {
      MutexLock lock(host_mu_);
      callback_apis.swap(callback_apis_);
    }
    // Python stacks after the buffers: the pair of every API record in them
    // was pushed at the call's entry, before its buffer completed.
    if (python_ != nullptr) {
      py_defs.clear();
      py_pairs.clear();
      python_->Take(&py_defs, &py_pairs);
      for (const PythonStackDef& d : py_defs) {
        CallStack cs;
        cs.kind = StackKind::kPython;
        cs.frames.reserve(d.frames.size());
        for (const PythonFrameText& f : d.frames) {
          StackFrame sf;
          sf.function_id = sink.Intern(f.function);
          sf.module_id = sink.Intern(f.file);
          sf.line = f.line;
          cs.frames.push_back(sf);
        }
        if (py_ids.size() <= d.id) py_ids.resize(d.id + 1, 0);
        py_ids[d.id] = sink.InternStack(cs);
      }
      for (const PythonStackPair& p : py_pairs) {
        uint32_t id = p.stack_id < py_ids.size() ? py_ids[p.stack_id] : 0;
        if (id != 0) converter.AttachPythonStack(p.correlation_id, id);
      }
    }
    // Host events are taken after the buffers: every NCCL payload pushed
    // before a range whose end is in these buffers is then in hand when the
    // converter joins it (NcclPayload events go in before the drain).
    for (const CallbackApi& a : callback_apis) {
      converter.AddCallbackApi(ApiDomain::kDriver, a.cbid, a.start_ns, a.end_ns,
                               a.correlation_id, a.thread_id);
    }
    host.clear();
    {
      MutexLock lock(host_mu_);
      host.swap(host_events_);
    }
    for (const HostEvent& e : host) {
      if (e.kind == HostEvent::kNcclPayload) converter.AddNcclPayload(e.thread_id, e.start_ns, e.nccl);
    }
    for (const CompletedBuffer& b : buffers) {
      // Buffers completed before a teardown are drained before it (the
      // teardown waits for this); none arrive after.
      if (CuptiCall cupti(this); cupti.ok()) {
        DrainResult r = DrainActivityBuffer(b, &cuptiActivityGetNextRecord, &converter);
        if (r.broken) ++broken_buffers_;
      } else if (b.valid_bytes > 0) {
        ++broken_buffers_;  // after a teardown that gave up: its records are lost, counted
      }
      pool_->Release(b.data, b.valid_bytes);
    }
    pool_->Replenish(2);
    nccl_join_stats_ = converter.stats().nccl;
    for (HostEvent& e : host) {
      switch (e.kind) {
        case HostEvent::kRange: {
          if (sightline_domain == 0) sightline_domain = sink.Intern("sightline");
          NvtxRangeEvent r;
          r.start_ns = e.start_ns;
          r.end_ns = e.end_ns;
          r.domain_id = e.app_range ? 0 : sightline_domain;
          r.name_id = sink.Intern(e.name);
          r.thread_id = r.end_thread_id = e.thread_id;
          r.push_pop = true;
          sink.Add(r);
          break;
        }
        case HostEvent::kStep: {
          StepEvent s;
          s.timestamp_ns = e.start_ns;
          s.step = e.step;
          s.thread_id = e.thread_id;
          sink.Add(s);
          break;
        }
        case HostEvent::kRecorderOpen:
          if (recorder != nullptr) {
            const FlightRecorderStats before = recorder->stats();
            recorder_window_start = recorder->Open(e.start_ns);
            const FlightRecorderStats& st = recorder->stats();
            if (!config_.quiet) {
              std::fprintf(
                  stderr,
                  "sightline: flight recorder: %llu events of the last %.3g s written "
                  "(%llu older ones discarded, %llu for memory, since the last capture)\n",
                  static_cast<unsigned long long>(st.written_from_ring - before.written_from_ring),
                  recorder_window_start != 0 && e.start_ns > recorder_window_start
                      ? (e.start_ns - recorder_window_start) / 1e9
                      : 0.0,
                  static_cast<unsigned long long>(st.discarded_by_age - before.discarded_by_age),
                  static_cast<unsigned long long>(st.discarded_by_size - before.discarded_by_size));
            }
          }
          break;
        case HostEvent::kRecorderClose:
          if (recorder != nullptr) recorder->Close(e.start_ns);
          break;
        case HostEvent::kWindow: {
          CaptureWindowEvent w;
          w.start_ns = e.start_ns;
          // With the flight recorder the window starts at the lead-up.
          if (recorder_window_start != 0 && recorder_window_start < w.start_ns) {
            w.start_ns = recorder_window_start;
          }
          recorder_window_start = 0;
          w.end_ns = e.end_ns;
          w.index = e.index;
          w.label_id = sink.Intern(e.name);
          w.trigger = e.trigger;
          sink.Add(w);
          break;
        }
        case HostEvent::kMetrics: {
          const MetricCaptureResult& m = *e.metrics;
          metric_ranges_dropped_ += m.ranges_dropped;
          if (!m.error.empty()) Warn("metrics: " + m.error);
          for (size_t i = 0; i < m.ranges.size(); ++i) {
            MetricRangeEvent out = m.ranges[i];
            if (i < m.range_names.size()) out.range_name_id = sink.Intern(m.range_names[i]);
            if (i < m.spans.size()) {
              out.launches_spanned = m.spans[i].launches;
              out.first_correlation_id = m.spans[i].first_correlation_id;
              out.passes_collected = m.spans[i].passes_collected;
            }
            for (size_t v = 0; v < out.values.size(); ++v) {
              if (i < m.metric_names.size() && v < m.metric_names[i].size()) {
                out.values[v].name_id = sink.Intern(m.metric_names[i][v]);
              }
            }
            sink.Add(out);
          }
          break;
        }
        case HostEvent::kGpuMetrics: {
          PmSampleBatch& b = *e.samples;
          if (b.metric_names != gpu_metric_names) {
            gpu_metric_names = b.metric_names;
            gpu_metric_ids.clear();
            for (const std::string& name : *b.metric_names) {
              gpu_metric_ids.push_back(sink.Intern(name));
            }
          }
          GpuMetricSamplesEvent& g = b.event;
          g.metric_name_ids = gpu_metric_ids;
          if (!g.sample_start_ns.empty()) {
            g.start_ns = *std::min_element(g.sample_start_ns.begin(), g.sample_start_ns.end());
            g.end_ns = *std::max_element(g.sample_end_ns.begin(), g.sample_end_ns.end());
          }
          sink.Add(g);
          break;
        }
        case HostEvent::kNcclPayload:
          break;  // given to the converter before the drain
        case HostEvent::kUntracedKernel:
          converter.AddUntracedKernel(e.kernel, e.name, e.maybe_traced);
          break;
      }
    }
    converter.FlushUntracedKernels(/*final=*/false);
  };

  auto loss_report = [&]() {
    BufferPoolStats ps = pool_->stats();
    LossInputs in;
    in.cupti_dropped_records = CollectDroppedRecords();
    in.pool_dropped_requests = ps.dropped_requests;
    in.broken_buffers = broken_buffers_;
    in.invalid_timestamps = converter.stats().invalid_timestamps;
    in.unsupported_records = converter.stats().unsupported_records;
    in.metric_ranges_dropped = metric_ranges_dropped_;
    in.untraced_kernels_lost = untraced_kernels_lost_.load(std::memory_order_relaxed);
    if (pm_sampler_ != nullptr) {
      in.gpu_metric_samples_dropped = pm_sampler_->stats().samples_dropped;
    }
    in.stacks_dropped = stacks_.dropped() + converter.stats().python_stacks_unmatched +
                        (python_ != nullptr ? python_->stats().dropped : 0);
    {
      MutexLock lock(host_mu_);
      in.host_events_dropped = host_events_dropped_;
    }
    if (finish_requested_ || signal_finish_) in.buffers_not_returned = ps.outstanding;
    LossReport r = MakeLossReport(in, Now());
    LossReport prev = last_loss_report_;
    prev.timestamp_ns = r.timestamp_ns;
    if (std::memcmp(&prev, &r, sizeof(r)) != 0 || finish_requested_) {
      sink.Add(r);
      last_loss_report_ = r;
    }
    return ps;
  };

  while (true) {
    int timeout_ms = static_cast<int>(config_.flush_period_ms);
    {
      MutexLock lock(control_mu_);
      uint64_t deadline = capture_->next_deadline_ns();
      if (deadline != 0) {
        uint64_t now = Now();
        int until = deadline > now ? static_cast<int>((deadline - now) / 1000000) + 1 : 0;
        if (until < timeout_ms) timeout_ms = until;
      }
    }
    if (wake_pipe_[0] >= 0) {
      pollfd p = {wake_pipe_[0], POLLIN, 0};
      poll(&p, 1, timeout_ms);
      char drain[64];
      while (read(wake_pipe_[0], drain, sizeof(drain)) > 0) {
      }
    } else {
      usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    }
    Control(&CaptureStateMachine::OnTick);
    bool finishing = finish_requested_.load();
    bool signalled = signal_requested_.exchange(false);
    bool flush_now = flush_requested_.exchange(false);
    uint64_t now_ms = MonotonicMs();
    if (!finishing && cupti_attached_ &&
        (signalled || flush_now || now_ms - last_flush_ms >= config_.flush_period_ms)) {
      // Never under a lock of ours (CUPTI calls back into OnBufferCompleted).
      if (CuptiCall cupti(this); cupti.ok()) {
        // One timing for both the metric-debug totals and the self-cost part.
        const uint64_t t0 = SelfCost::NowNs();
        // Forced when the pool runs low (buffer_pool.h PoolNeedsForcedFlush).
        const bool pool_low = config_.metric_passes_hold_buffers() &&
                              PoolNeedsForcedFlush(pool_->stats(), pool_->max_buffers());
        if (pool_low) ++forced_flushes_;
        cuptiActivityFlushAll(signalled || pool_low ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
        const uint64_t took = SelfCost::NowNs() - t0;
        if (SelfCost::Enabled()) SelfCost::Add(CostPart::kFlush, took);
        flush_ns_total_ += took;
        flush_ns_max_ = std::max(flush_ns_max_, took);
        ++flush_calls_;
      }
      last_flush_ms = now_ms;
    }
    uint64_t generation = flush_generation_.load();
    process();
    if (!detach_ && !finishing && teardown_pending_.exchange(false)) Quiesce();
    if (header_written_ &&
        (finishing || signalled || flush_now || now_ms - last_chunk_ms >= config_.flush_period_ms)) {
      loss_report();
      writer_->Flush();
      last_chunk_ms = now_ms;
    }
    if (flush_now) {
      flushed_generation_ = generation;
      done_cv_.NotifyAll();
    }
    if (signalled) {
      if (signal_finish_) {
        converter.FlushUntracedKernels(/*final=*/true);
        converter.CloseOpenRanges(Now());
        nccl_join_stats_ = converter.stats().nccl;
        loss_report();
        FinishTrace("signal");
        SignalFlushDone();
        break;
      }
      SignalFlushDone();
    }
    if (finishing) {
      process();
      converter.FlushUntracedKernels(/*final=*/true);
      converter.CloseOpenRanges(Now());
      nccl_join_stats_ = converter.stats().nccl;
      BufferPoolStats ps = loss_report();
      if (const uint64_t n = converter.stats().untimed_kernels_kept; n > 0) {
        Warn(std::to_string(n) + " kernel records came from CUPTI without timestamps while "
             "metrics were collected (e.g. a CUDA graph's kernels inside a measured "
             "--metrics-range instance): kept as untraced kernels, placed at their launch call");
      }
      if (const uint64_t n = converter.stats().untimed_memsets_kept; n > 0) {
        Warn(std::to_string(n) + " memset records came from CUPTI without timestamps while "
             "metrics were collected: kept (bytes, stream, correlation) outside all timing");
      }
      if (const uint64_t n = converter.stats().untraced_without_template; n > 0) {
        Warn(std::to_string(n) + " kernels measured in place without being traced had no traced "
             "launch of their configuration: their registers and shared memory read 0");
      }
      if (config_.metric_debug) {
        std::fprintf(stderr,
                     "sightline: writer: %llu periodic flushes (%llu forced: pool low), %llu ms "
                     "in them (max %llu ms); buffers: %llu allocated, %llu completed (%llu bytes), "
                     "%llu refused, %llu outstanding\n",
                     static_cast<unsigned long long>(flush_calls_),
                     static_cast<unsigned long long>(forced_flushes_),
                     static_cast<unsigned long long>(flush_ns_total_ / 1000000),
                     static_cast<unsigned long long>(flush_ns_max_ / 1000000),
                     static_cast<unsigned long long>(ps.allocated),
                     static_cast<unsigned long long>(ps.completed),
                     static_cast<unsigned long long>(ps.completed_bytes),
                     static_cast<unsigned long long>(ps.dropped_requests),
                     static_cast<unsigned long long>(ps.outstanding));
      }
      if (ps.outstanding > 0 && !config_.quiet) {
        Warn(std::to_string(ps.outstanding) +
             " activity buffers were not returned by CUPTI: another CUPTI client (e.g. "
             "torch.profiler) took over activity recording; records after that point are "
             "missing from this trace");
      }
      FinishTrace(finish_reason_.empty() ? "exit" : finish_reason_);
      break;
    }
  }
  SignalFlushWriterGone();
  {
    MutexLock lock(done_mu_);
    writer_done_ = true;
  }
  done_cv_.NotifyAll();
}

void CollectorImpl::FinishTrace(const std::string& reason) {
  EnsureHeader();
  if (!writer_->Finish(reason)) {
    // Disk full, EIO: the app goes on; say what was lost and where to look.
    Warn("trace write error: " + writer_->error() + "; " +
         std::to_string(writer_->totals().losses.write_errors) +
         " events lost to write errors (`sightline info` says where the trace ends)");
  }
  const FooterData& t = writer_->totals();
  auto count = [&](EventKind k) { return t.counts[static_cast<int>(k)]; };
  const uint64_t gpu_records = count(EventKind::kKernel) + count(EventKind::kMemcpy) +
                               count(EventKind::kMemset) + count(EventKind::kSync) +
                               count(EventKind::kNccl) + count(EventKind::kMetricRange);
  const bool no_gpu_work = gpu_records == 0 && count(EventKind::kApi) == 0;
  // Asked for explicitly: printed also with -q, and by a monitored process
  // that never captured.
  if (SelfCost::Enabled()) std::fputs(SelfCost::Report().c_str(), stderr);
  bool no_window = false;
  if (config_.capture != CaptureMode::kWholeRun) {
    MutexLock lock(control_mu_);
    no_window = capture_->window_index() == 0;
  }
  if (no_gpu_work && owns_output_file_ && unlink(output_path_.c_str()) == 0) {
    // A process of the run that initialised CUDA but recorded no GPU work
    // and no CUDA call (a compile worker, a launcher, a DataLoader worker):
    // its trace would only hide the ones that matter.
    AppendManifest("empty", 0, t.events);
    if (!config_.quiet) {
      std::fprintf(stderr,
                   "sightline: pid %d recorded no GPU work and no CUDA call%s; no trace kept "
                   "(%s removed)\n",
                   owner_pid_, no_window ? " (no capture window opened)" : "",
                   output_path_.c_str());
    }
    return;
  }
  AppendManifest("done", gpu_records, t.events);
  PrintSummary();
}

void CollectorImpl::PrintSummary() {
  if (config_.quiet) return;
  const FooterData& t = writer_->totals();
  auto count = [&](EventKind k) {
    return static_cast<unsigned long long>(t.counts[static_cast<int>(k)]);
  };
  std::fprintf(stderr,
               "sightline: wrote %s: %llu events (%llu kernels, %llu memcpy, %llu memset, "
               "%llu api, %llu nvtx ranges), %llu lost\n",
               output_path_.c_str(), static_cast<unsigned long long>(t.events),
               count(EventKind::kKernel), count(EventKind::kMemcpy), count(EventKind::kMemset),
               count(EventKind::kApi), count(EventKind::kNvtxRange),
               static_cast<unsigned long long>(last_loss_report_.total()));
  if (python_ != nullptr) {
    auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
    std::string why = python_->inactive_reason();
    PythonStackStats s = python_->stats();
    if (!why.empty()) {
      std::fprintf(stderr, "sightline: no Python stacks: %s\n", why.c_str());
    } else {
      std::fprintf(stderr,
                   "sightline: Python stacks on %llu calls (%llu with the GIL released by the "
                   "caller), %llu distinct; without one: %llu calls from threads unknown to "
                   "Python, %llu without Python frames, %llu at interpreter shutdown, %llu "
                   "without the GIL (gil mode), %llu lost; %llu walks cut short\n",
                   u(s.captured), u(s.captured_without_gil), u(s.distinct), u(s.no_thread_state),
                   u(s.no_frames), u(s.skipped_shutdown), u(s.skipped_no_gil), u(s.dropped),
                   u(s.bad_frames));
      if (uint64_t shared = native_once_.shared(); shared > 0) {
        std::fprintf(stderr,
                     "sightline: native stacks: %llu calls share the one captured for an earlier "
                     "call of the same API from the same native caller under the same Python stack "
                     "(SIGHTLINE_NATIVE_STACK_EVERY_CALL=1 captures each)\n",
                     u(shared));
      }
    }
  }
  const NcclJoinStats& n = nccl_join_stats_;
  if (n.ranges > 0) {
    auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
    std::fprintf(stderr,
                 "sightline: NCCL ranges %llu: payload from activity records %llu, from NVTX "
                 "callbacks %llu, collectives without payload %llu, undecoded %llu; "
                 "callback payloads unmatched %llu; communicator events %llu\n",
                 u(n.ranges), u(n.from_activity), u(n.from_callback), u(n.without_payload),
                 u(n.undecoded), u(n.callback_unmatched), u(n.comm_events));
  }
}

}  // namespace sightline::collect
