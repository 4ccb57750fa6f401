// bench/overhead/floor_subscriber.h — the overhead "floor": a minimal CUPTI
// subscriber enabling the activity kinds sightline enables by default, with a
// fixed pool of 8 MiB buffers whose records are counted and discarded. What
// any CUPTI activity tracer pays at least; linked into launch_overhead
// (--mode floor) and built as libfloor_inject.so for CUDA_INJECTION64_PATH
// (the PyTorch floor in run_overhead.sh). SIGHTLINE_FLOOR_KINDS=kernel
// enables kernel records only, =same exactly the records sightline's
// default makes for a Python command (floor_subscriber.cc);
// SIGHTLINE_FLOOR_EXTRA adds what sightline does beyond the kinds, part by
// part (attributes, subscriber, subnone, stackcb, flush, writer), and
// SIGHTLINE_FLOOR_AB switches one of them off and on while the process runs
// (in-process A/B rounds: bench/overhead/ab.sh).
#ifndef SIGHTLINE_BENCH_OVERHEAD_FLOOR_SUBSCRIBER_H_
#define SIGHTLINE_BENCH_OVERHEAD_FLOOR_SUBSCRIBER_H_

#include <cstdio>

namespace sightline_bench {

void StartFloorSubscriber();
// Disables every kind it enabled and flushes; with `finalize` also
// cuptiFinalize (what the app pays after a capture, with CUPTI's own parts
// only: launch_overhead --mode floor --capture-first-rep --after ...).
void StopFloorSubscriber(bool finalize);
// Switches the kinds StartFloorSubscriber enabled off or on again (nothing
// else: buffers, callbacks and threads stay), for launch_overhead --floor-arm.
void SetFloorKinds(bool enable);
// Flushes CUPTI and prints "floor subscriber: N records, D dropped".
void ReportFloorSubscriber(FILE* out);

}  // namespace sightline_bench

#endif  // SIGHTLINE_BENCH_OVERHEAD_FLOOR_SUBSCRIBER_H_
