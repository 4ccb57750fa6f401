// lib/analysis/memory.h — GPU memory from allocation records (-t cuda-memory).
//
// Replays the trace's MemoryOps in time order per device through
// trace::MemoryTracker (lib/trace/memory_tracker.h: what counts as in use,
// stream-ordered pools, unmatched releases), the accounting the Chrome and
// Perfetto memory tracks share.
// This is what the program allocated through CUDA — for PyTorch, the caching
// allocator's reserved memory (torch.cuda.memory_reserved()) plus what other
// libraries allocate directly — not the CUDA context's own memory (nvidia-smi
// shows that too).
//
// Call site of an allocation: the Python line of its API call (--python-
// backtrace), else its native stack's innermost frames, else the API name.
//
// Stream-ordered pools (cudaMallocAsync, cudaMemPool*): per pool, what it
// held on the device over time (its reported size, else its live
// allocations), its peak, the peak of its allocations and their count.
//
// With the --pytorch hook, PyTorch's own samples after each optimizer step
// (TorchMemorySample: memory_allocated, max_memory_allocated,
// memory_reserved) give the tensors' bytes next to the reserved ones.
//
// Per analysed step: bytes in use at each step's end (host time), the
// Theil–Sen slope of that series and how many step-to-step changes went up
// and down (memory_growth), and the synchronous allocation/release calls
// inside the window with their host time (allocation_churn).
#ifndef SIGHTLINE_LIB_ANALYSIS_MEMORY_H_
#define SIGHTLINE_LIB_ANALYSIS_MEMORY_H_

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"
#include "lib/analysis/steps.h"

namespace sightline::analysis {

// Fills report->memory and summary.devices[].memory_peak_bytes from the whole
// model (the peak and the leaks are whole-run facts) and the analysed scope.
void FillMemory(const TimelineModel& whole, const StepDetection& steps,
                const ScopeChoice& scope, Report* report);
// The summary.devices[].memory_peak_bytes part of FillMemory, from
// report->memory (for a summary filled after the memory).
void SetDeviceMemoryPeaks(Report* report);

// Median of the pairwise slopes (y[j] - y[i]) / (j - i) (Theil–Sen); at most
// ~500 evenly spaced points are used. 0 for fewer than 2 values.
double TheilSenSlope(const std::vector<uint64_t>& y);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_MEMORY_H_
