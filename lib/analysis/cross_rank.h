// lib/analysis/cross_rank.h — NCCL operations matched across ranks, each
// rank's clock aligned from collective completion times, and who made whom
// wait (issue 16).
//
// Matching. NCCL requires every rank of a communicator to call that
// communicator's collectives in the same order, so the k-th collective call
// on a communicator in one rank is the k-th in every other: the
// per-communicator sequence number is the call order. Point-to-point calls
// pair by peer: rank a's k-th Send to b on a communicator with rank b's k-th
// Recv from a (ranks within the communicator: from NCCL's communicator
// records, else the process's rank, right for the world communicator only;
// a Send/Recv without a recorded peer stays unmatched). A "channel" is one such ordered stream: (communicator,
// collectives) or (communicator, sender, receiver).
//   Records can be missing (a capture window opening at different times, a
//   dropped record) or extra (one rank's trace runs longer), so the k-th call
//   is not taken blindly: each rank's sequence on a channel is aligned to the
//   channel's reference rank (the one with the most calls) as a maximum-weight
//   common subsequence, where two calls may pair only with the same label
//   (collectives: operation and message size; point-to-point: message size)
//   and a pair weighs 1 + 0.5 / (1 + |end difference| / period), period being
//   the reference's median spacing of calls. The number of pairs dominates;
//   among alignments with as many pairs, the one whose completion times agree
//   best wins, so one missing record costs one match instead of shifting every
//   later one. Candidates are each call's 4 nearest same-label reference
//   calls in time, so the work is O(calls · log calls) per rank.
//   Traces without NCCL's NVTX payloads (no communicator id) fall back to the
//   order of the communication kernels of each rank's first device with any,
//   labelled by kernel name ("device_order"), aligned the same way. When two
//   or more traces have payloads, traces without are left out.
//   A host call's kernel is found by CUPTI correlation id (NCCL launches
//   through the driver API, often not recorded): the first unclaimed
//   communication kernel whose id lies between the calling thread's last API
//   call before the host call and its first one after; calls of an NCCL
//   group (kernel launched at ncclGroupEnd) share the next unclaimed one.
//
// Clock alignment. A collective completes at nearly the same instant on all
// its ranks, so the offset of rank r's clock to the reference's is the median
// over matched collectives of (reference end − r's end), GPU kernel ends only
// (a host call's end is not synchronised). Offsets chain across communicators
// (a rank that shares no communicator with the global reference gets its
// offset through one that does). The first alignment pass uses the merged
// clock (CLOCK_REALTIME from each trace's header; the raw CUPTI clock, shared
// by the processes of one host, for a trace without a mapping); the second
// pass realigns with the estimated offsets. Assumption, stated: the starting clock
// is right to within half the period of identical repeated collectives; a
// whole-period shift cannot be told apart from the data. The residual skew is
// the spread (max − min) of a matched collective's aligned GPU end times:
// median and maximum over matched collectives.
//
// Wait attribution (on aligned clocks). A rank's arrival at an operation is
// its kernel's start (the GPU reached the collective), else its host call's
// start. Per matched operation: the last rank to arrive and its margin over
// the second-last (the time the others would have saved had it arrived with
// them); per rank: arrival delay (its arrival − the earliest), wait (the
// latest arrival − its own: time it spent waiting inside NCCL), last
// arrivals and the margins it caused. Exposed communication per rank: its
// device's communication time not overlapped by compute kernels (HTA).
#ifndef SIGHTLINE_LIB_ANALYSIS_CROSS_RANK_H_
#define SIGHTLINE_LIB_ANALYSIS_CROSS_RANK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/model.h"

namespace sightline::analysis {

struct DeviceTimeline;

// One rank's part of a matched operation. Times on the model's merged clock
// (add the rank's clock_offset_ns for the aligned clock).
struct RankCall {
  uint16_t trace = 0;
  uint32_t rank_index = 0;     // into CrossRankAnalysis::ranks
  uint64_t call_ns = 0;        // host call start (NCCL's NVTX range, or the launch); 0 unknown
  uint64_t arrival_ns = 0;     // the kernel's start, else call_ns
  uint64_t end_ns = 0;         // the kernel's end, else the host call's end
  uint32_t activity = kNone;   // the kernel (index into activities), if known
  uint32_t thread = kNone;     // the calling host thread (index into threads), if known
  bool gpu_times = false;      // arrival/end are the kernel's
};

struct MatchedOp {
  uint64_t comm_id = 0;        // 0 in device_order mode
  NcclOp op = NcclOp::kUnknown;
  uint64_t bytes = 0;
  uint32_t seq = 0;            // position in its channel's reference sequence
  bool p2p = false;
  uint32_t parts_begin = 0, parts_end = 0;  // into CrossRankAnalysis::parts
  // Aligned clock:
  uint64_t earliest_arrival_ns = 0;
  uint32_t last = kNone;       // rank_index of the last to arrive
  uint64_t last_margin_ns = 0; // last arrival − second-last arrival
  uint64_t end_spread_ns = 0;  // max − min aligned GPU end (0 with < 2 GPU ends)
  uint32_t gpu_ends = 0;       // parts with GPU end times
};

struct RankCrossStats {
  uint16_t trace = 0;
  int32_t rank = -1;           // the trace's rank (header)
  uint32_t device = kNone;     // model device of its NCCL kernels
  int64_t clock_offset_ns = 0; // added to its merged-clock times to align it
  bool clock_aligned = false;  // the offset comes from matched completions
  uint64_t calls = 0;          // NCCL operations seen (host calls, or kernels)
  uint64_t matched_calls = 0, unmatched_calls = 0;
  uint64_t arrival_delay_ns = 0;  // Σ (its arrival − earliest arrival)
  uint64_t wait_ns = 0;           // Σ (last arrival − its arrival)
  uint64_t last_arrivals = 0;
  uint64_t late_margin_ns = 0;    // Σ margins of the operations it arrived last at
  uint64_t comm_ns = 0;           // its device's communication time (union)
  uint64_t exposed_comm_ns = 0;   // of which not overlapped by compute kernels
};

struct CrossRankAnalysis {
  // "" (fewer than 2 ranks with NCCL operations), "communicator" (NVTX
  // payloads: communicator id + per-communicator sequence), "device_order"
  // (communication kernels in each rank's device order, by kernel name).
  std::string method;
  // "collective_ends" (offsets estimated from matched completions) or
  // "realtime" (no matched GPU completions: the merged clock as recorded).
  std::string clock_source;
  std::vector<RankCrossStats> ranks;  // by trace
  std::vector<MatchedOp> ops;         // by earliest aligned arrival
  std::vector<RankCall> parts;
  uint32_t channels = 0;              // communicators (+ point-to-point pairs)
  uint64_t calls = 0, matched_calls = 0, unmatched_calls = 0;
  uint64_t skew_median_ns = 0, skew_max_ns = 0;  // over ops with >= 2 GPU ends
  uint64_t skew_samples = 0;
  bool active() const { return !method.empty(); }
  int64_t Offset(uint32_t rank_index) const { return ranks[rank_index].clock_offset_ns; }
  uint64_t Aligned(uint32_t rank_index, uint64_t t) const {
    return t + static_cast<uint64_t>(Offset(rank_index));  // wraps like int64 addition, defined
  }
};

// `devices` indexed like model.devices (for exposed communication); may be
// empty (exposed/comm stay 0).
CrossRankAnalysis AnalyzeCrossRank(const TimelineModel& model,
                                   const std::vector<DeviceTimeline>& devices);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_CROSS_RANK_H_
