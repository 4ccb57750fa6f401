// lib/collect/activity_drain.h — walking the records of one completed CUPTI
// buffer, and adding up losses.
//
// The record iterator is passed in (cuptiActivityGetNextRecord in the product,
// a fake over synthetic records in tests), so this compiles and runs without
// libcupti or a GPU.
#ifndef SIGHTLINE_LIB_COLLECT_ACTIVITY_DRAIN_H_
#define SIGHTLINE_LIB_COLLECT_ACTIVITY_DRAIN_H_

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/collect/buffer_pool.h"
#include "lib/collect/record_converter.h"
#include "lib/trace/events.h"

namespace sightline::collect {

// Same contract as cuptiActivityGetNextRecord: *record = nullptr starts at the
// beginning; returns CUPTI_SUCCESS with the next record or
// CUPTI_ERROR_MAX_LIMIT_REACHED at the end (anything else: a broken buffer).
using NextRecordFn = CUptiResult (*)(uint8_t* buffer, size_t valid_bytes,
                                     CUpti_Activity** record);

struct DrainResult {
  uint64_t records = 0;
  bool broken = false;  // iteration stopped on an error before the end
};

// Converts every record of `buffer` and calls converter->EndBuffer().
DrainResult DrainActivityBuffer(const CompletedBuffer& buffer, NextRecordFn next,
                                RecordConverter* converter);

// Same contract as cuptiActivityGetNumDroppedRecords: the records CUPTI
// dropped for `context` (nullptr: the process-wide count, records of no
// context) since the last call; the counter resets when read.
using DroppedRecordsFn = CUptiResult (*)(CUcontext context, uint32_t stream_id, size_t* dropped);

// CUPTI's dropped records since the last read: every context of `contexts`
// plus the process-wide count. The one place that asks (the writer's loss
// report and the teardown both call it through the collector).
uint64_t ReadDroppedRecords(const std::vector<CUcontext>& contexts, DroppedRecordsFn query);

// Everything that can lose events, in one place.
struct LossInputs {
  uint64_t cupti_dropped_records = 0;   // ReadDroppedRecords, summed over the run
  uint64_t pool_dropped_requests = 0;   // buffers CUPTI asked for and did not get
  uint64_t buffers_not_returned = 0;    // handed to CUPTI, never completed (another client)
  uint64_t broken_buffers = 0;
  uint64_t invalid_timestamps = 0;
  uint64_t unsupported_records = 0;
  uint64_t metric_ranges_dropped = 0;
  uint64_t stacks_dropped = 0;
  uint64_t gpu_metric_samples_dropped = 0;
  uint64_t host_events_dropped = 0;     // link-in API ranges/steps over the bound
  uint64_t untraced_kernels_lost = 0;   // run in untraced metric passes, no launch seen
};

// Cumulative LossReport for the trace. Buffers refused or never returned are
// counted in queue_dropped_buffers; their records are inside CUPTI's count
// (refused) or unknown (never returned) and are not double counted.
LossReport MakeLossReport(const LossInputs& in, uint64_t timestamp_ns);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_ACTIVITY_DRAIN_H_
