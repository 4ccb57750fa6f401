// lib/analysis/rule_util.h — small helpers shared by rule files: labels,
// human-readable durations for titles, call-stack text, per-device lookups.
#ifndef SIGHTLINE_LIB_ANALYSIS_RULE_UTIL_H_
#define SIGHTLINE_LIB_ANALYSIS_RULE_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/model.h"
#include "lib/analysis/report.h"

namespace sightline::analysis {

// "device 0" for a single trace, "device 0 (rank 1)" when several traces.
std::string DeviceLabel(const TimelineModel& model, uint32_t device);
// An API call's name for display, without CUPTI's version suffix
// ("cudaMemcpy_v3020" → "cudaMemcpy").
std::string ApiName(const TimelineModel& model, uint32_t name);
// The one duration / percentage formatter of the tree (rules, the report
// renderers in lib/export, `sightline info`): "1.23 ms", "45.6 us", "789 ns",
// "2.50 s".
std::string FormatNs(double ns);
// "12.3%".
std::string FormatPct(double pct);
// "512 B", "4.0 KiB", "1.50 MiB", "75.2 GiB" (binary units).
std::string FormatBytes(double bytes);
// "f (mod+0x12) ← g (mod+0x40)" for at most `max_frames` innermost frames; ""
// when no stack was recorded.
std::string StackText(const TimelineModel& model, uint16_t trace, uint32_t stack_id,
                      size_t max_frames = 3);
// Summary row of a model device, or nullptr (devices without activity).
const DeviceSummary* FindDeviceSummary(const Report& report, uint32_t device);
double PctOf(double part, double whole);
// a * b / c without overflow (128-bit intermediate); c > 0. For interval
// arithmetic on timestamps, which a trace may spread over the whole range.
inline uint64_t MulDiv(uint64_t a, uint64_t b, uint64_t c) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b / c);
}
// An offender for a memory call site (MemorySite::site): a Python site
// ("/path/train.py:42 in step") is named "train.py:42" and kept whole in
// python_site; other sites (native frames, API names) as they are.
Offender MemorySiteOffender(const std::string& site);
// Keeps the `n` offenders with the largest total_ns (ties: count, name).
void KeepTopOffenders(std::vector<Offender>* offenders, size_t n);

}  // namespace sightline::analysis

#endif  // SIGHTLINE_LIB_ANALYSIS_RULE_UTIL_H_
