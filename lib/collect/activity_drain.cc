// lib/collect/activity_drain.cc — see activity_drain.h.
#include "lib/collect/activity_drain.h"

namespace sightline::collect {

uint64_t ReadDroppedRecords(const std::vector<CUcontext>& contexts, DroppedRecordsFn query) {
  uint64_t total = 0;
  size_t dropped = 0;
  for (CUcontext ctx : contexts) {
    dropped = 0;
    if (query(ctx, 0, &dropped) == CUPTI_SUCCESS) total += dropped;
  }
  dropped = 0;
  if (query(nullptr, 0, &dropped) == CUPTI_SUCCESS) total += dropped;
  return total;
}

DrainResult DrainActivityBuffer(const CompletedBuffer& buffer, NextRecordFn next,
                                RecordConverter* converter) {
  DrainResult result;
  if (buffer.data != nullptr && buffer.valid_bytes > 0) {
    CUpti_Activity* record = nullptr;
    while (true) {
      CUptiResult status = next(buffer.data, buffer.valid_bytes, &record);
      if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (status != CUPTI_SUCCESS || record == nullptr) {
        result.broken = true;
        break;
      }
      converter->Convert(record);
      ++result.records;
    }
  }
  converter->EndBuffer();
  return result;
}

LossReport MakeLossReport(const LossInputs& in, uint64_t timestamp_ns) {
  LossReport r;
  r.timestamp_ns = timestamp_ns;
  r.cupti_dropped_records = in.cupti_dropped_records;
  r.queue_dropped_buffers = in.pool_dropped_requests + in.buffers_not_returned + in.broken_buffers;
  r.queue_dropped_records = in.host_events_dropped;
  r.invalid_timestamps = in.invalid_timestamps;
  r.metric_ranges_dropped = in.metric_ranges_dropped;
  r.unsupported_records = in.unsupported_records;
  r.stacks_dropped = in.stacks_dropped;
  r.gpu_metric_samples_dropped = in.gpu_metric_samples_dropped;
  r.untraced_kernels_lost = in.untraced_kernels_lost;
  return r;
}

}  // namespace sightline::collect
