// lib/collect/event_sink.h — where converted events go.
//
// The record converter and the collector write through this interface; in the
// product it forwards to trace::TraceWriter (TraceWriterEventSink), in tests
// a recording fake keeps the events for inspection. Used from one thread (the
// collector's writer thread).
#ifndef SIGHTLINE_LIB_COLLECT_EVENT_SINK_H_
#define SIGHTLINE_LIB_COLLECT_EVENT_SINK_H_

#include <cstdint>
#include <string_view>

#include "lib/trace/writer.h"
#include "lib/trace/events.h"

namespace sightline::collect {

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual uint32_t Intern(std::string_view s) = 0;
  virtual uint32_t InternStack(const CallStack& stack) = 0;
  virtual void Add(const KernelEvent& e) = 0;
  virtual void Add(const MemcpyEvent& e) = 0;
  virtual void Add(const MemsetEvent& e) = 0;
  virtual void Add(const MemoryEvent& e) = 0;
  virtual void Add(const SyncEvent& e) = 0;
  virtual void Add(const ApiEvent& e) = 0;
  virtual void Add(const NvtxRangeEvent& e) = 0;
  virtual void Add(const NvtxMarkerEvent& e) = 0;
  virtual void Add(const NcclEvent& e) = 0;
  virtual void Add(const MetricRangeEvent& e) = 0;
  virtual void Add(const GpuMetricSamplesEvent& e) = 0;
  virtual void Add(const CaptureWindowEvent& e) = 0;
  virtual void Add(const OverheadEvent& e) = 0;
  virtual void Add(const StepEvent& e) = 0;
  virtual void Add(const LossReport& e) = 0;
};

// Forwards to a TraceWriter (not owned).
class TraceWriterEventSink final : public EventSink {
 public:
  explicit TraceWriterEventSink(trace::TraceWriter* writer) : writer_(writer) {}
  uint32_t Intern(std::string_view s) override { return writer_->Intern(s); }
  uint32_t InternStack(const CallStack& stack) override { return writer_->InternStack(stack); }
  void Add(const KernelEvent& e) override { writer_->Add(e); }
  void Add(const MemcpyEvent& e) override { writer_->Add(e); }
  void Add(const MemsetEvent& e) override { writer_->Add(e); }
  void Add(const MemoryEvent& e) override { writer_->Add(e); }
  void Add(const SyncEvent& e) override { writer_->Add(e); }
  void Add(const ApiEvent& e) override { writer_->Add(e); }
  void Add(const NvtxRangeEvent& e) override { writer_->Add(e); }
  void Add(const NvtxMarkerEvent& e) override { writer_->Add(e); }
  void Add(const NcclEvent& e) override { writer_->Add(e); }
  void Add(const MetricRangeEvent& e) override { writer_->Add(e); }
  void Add(const GpuMetricSamplesEvent& e) override { writer_->Add(e); }
  void Add(const CaptureWindowEvent& e) override { writer_->Add(e); }
  void Add(const OverheadEvent& e) override { writer_->Add(e); }
  void Add(const StepEvent& e) override { writer_->Add(e); }
  void Add(const LossReport& e) override { writer_->Add(e); }

 private:
  trace::TraceWriter* writer_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_EVENT_SINK_H_
