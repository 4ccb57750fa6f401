// lib/collect/nvtx_observer.h — sightline's own NVTX handlers in front of
// CUPTI's, for monitor mode.
//
// NVTX reaches a tool through NVTX_INJECTION64_PATH: each NVTX instance (every
// library that compiled the header-only NVTX in, e.g. libtorch, NCCL, the
// application) calls the tool's InitializeInjectionNvtx2(get) once, and the
// tool writes its handlers into that instance's function slots. sightline
// forwards that call to CUPTI's (injection/injection.cc), so ranges become
// CUPTI records and CUPTI NVTX callbacks. Monitor mode needs the step ranges
// and markers between captures, when it holds no CUPTI subscriber at all (a
// subscriber costs every launch: bench/overhead/README.md runs K, L); so
// there the handlers of the message-bearing calls (RangePushA/Ex,
// RangeStartA/Ex, MarkA/Ex and the domain Push/Start/Mark) are ours: each
// hands the call's ASCII message to an observer and then calls CUPTI's
// handler for the same slot, which CUPTI wrote into a shadow table instead of
// the instance's. Every other slot (pop, end, names, domains, registered
// strings) is CUPTI's own, as without the observer, so NVTX behaves exactly
// as before towards CUPTI.
#ifndef SIGHTLINE_LIB_COLLECT_NVTX_OBSERVER_H_
#define SIGHTLINE_LIB_COLLECT_NVTX_OBSERVER_H_

#include <cstdint>

namespace sightline::collect {

using NvtxGetExportTableFn = const void* (*)(uint32_t export_table_id);
using NvtxInitFn = int (*)(NvtxGetExportTableFn get);
// The ASCII message of a push, start or mark (any domain); never null.
// Runs on the application's thread inside its NVTX call: must be cheap and
// must not call NVTX.
using NvtxMessageObserver = void (*)(const char* message);

// Sets up one NVTX instance: CUPTI's initialiser (`cupti_init`, null when
// libcupti is not loaded) fills the instance's slots, those of the
// message-bearing calls through a shadow table, and the observer's handlers
// take those slots. The observer is process-wide (the first one given
// stays). Returns 1 (NVTX keeps the handlers) unless the instance's export
// table is unusable, then 0 (NVTX turns itself into no-ops, as when a tool
// fails).
int InstallNvtxObserver(NvtxGetExportTableFn get, NvtxInitFn cupti_init,
                        NvtxMessageObserver observer);

// How many NVTX instances have the observer (0: the monitor gets no NVTX
// without CUPTI callbacks).
uint32_t NvtxObservedInstances();

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_NVTX_OBSERVER_H_
