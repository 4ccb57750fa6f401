// tests/gpu/trace_check.cc — checks a trace recorded on the GPU against what
// the profiled program says it did.
//
//   sightline_trace_check TRACE --stdout FILE [--allow-incomplete]
//       [--timing-tolerance 0.02] [--min-timed-ms 1] [--windows N]
//       [--keys kernel,memcpy] [--allow-loss] [--count-only]
//
// FILE is the program's stdout. Its "SIGHTLINE_EXPECT k=v ..." line gives the
// counts the trace must hold exactly (kernel, memcpy, memset, nvtx_range,
// nvtx_marker); "SIGHTLINE_EXPECT_CAPTURED windows=W kernel=K memcpy=M" is used
// instead when present (capture ranges); "SIGHTLINE_TIMING index=I
// event_ms=T" lines are matched, in order, with the kernels of the trace (by
// start time): every kernel of ≥ --min-timed-ms must agree within the
// tolerance. "SIGHTLINE_EXPECT_NCCL rank=R allreduce=N" requires N AllReduce
// NcclEvents from kernels. Always prints "KERNEL_SPAN first_start_ns=A
// last_end_ns=B span_s=S" (the kernels' own time span, to compare with the
// program's wall clock). --count-only keeps no kernel in memory (a trace of
// hours of launches; no timing or NCCL checks). Prints one line per check;
// exit 0 all passed, 1 a check failed, 2 unusable input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "lib/collect/nccl_names.h"
#include "lib/trace/reader.h"

namespace {

using namespace sightline;

struct Seen : trace::EventVisitor {
  bool keep_kernels = true;
  uint64_t first_start_ns = UINT64_MAX, last_end_ns = 0;
  std::vector<KernelEvent> kernels;
  std::vector<CaptureWindowEvent> windows;
  std::vector<NcclEvent> nccl;
  void OnKernel(const KernelEvent& e) override {
    first_start_ns = std::min(first_start_ns, e.start_ns);
    last_end_ns = std::max(last_end_ns, e.end_ns);
    if (keep_kernels) kernels.push_back(e);
  }
  void OnCaptureWindow(const CaptureWindowEvent& e) override { windows.push_back(e); }
  void OnNccl(const NcclEvent& e) override { nccl.push_back(e); }
};

std::map<std::string, std::string> ParseKv(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    size_t eq = tok.find('=');
    if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return kv;
}

int failures = 0;
void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sightline_trace_check TRACE --stdout FILE [options]\n");
    return 2;
  }
  std::string trace_path = argv[1], stdout_path;
  double tolerance = 0.02, min_timed_ms = 1.0;
  bool allow_incomplete = false, no_loss = true, count_only = false;
  int windows_expected = -1;
  std::string keys_filter;  // ",kernel,memcpy," — only these counts
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--stdout") stdout_path = next();
    else if (a == "--timing-tolerance") tolerance = std::stod(next());
    else if (a == "--min-timed-ms") min_timed_ms = std::stod(next());
    else if (a == "--allow-incomplete") allow_incomplete = true;
    else if (a == "--allow-loss") no_loss = false;
    else if (a == "--count-only") count_only = true;
    else if (a == "--windows") windows_expected = std::stoi(next());
    else if (a == "--keys") keys_filter = "," + next() + ",";
  }
  auto reader = trace::TraceReader::Open(trace_path);
  if (!reader.ok()) {
    std::fprintf(stderr, "sightline_trace_check: %s\n", std::string(reader.status().message()).c_str());
    return 2;
  }
  Seen seen;
  seen.keep_kernels = !count_only;
  absl::Status st = (*reader)->ReadAll(seen);
  if (seen.last_end_ns > 0 && seen.first_start_ns < seen.last_end_ns) {
    std::printf("KERNEL_SPAN first_start_ns=%llu last_end_ns=%llu span_s=%.6f\n",
                static_cast<unsigned long long>(seen.first_start_ns),
                static_cast<unsigned long long>(seen.last_end_ns),
                (seen.last_end_ns - seen.first_start_ns) / 1e9);
  }
  const trace::Integrity& in = (*reader)->integrity();
  Check(st.ok(), "trace readable: " + std::string(st.message()));
  if (!allow_incomplete) Check(in.complete, "trace complete " + in.reason);
  else Check(in.chunks_read > 0 && in.counts[int(EventKind::kKernel)] > 0,
             "incomplete trace still has chunks and kernels (" + in.reason + ")");
  if (no_loss) {
    Check(in.losses.total() == 0,
          "no lost records (cupti " + std::to_string(in.losses.cupti_dropped_records) +
              ", invalid " + std::to_string(in.losses.invalid_timestamps) + ", buffers " +
              std::to_string(in.losses.queue_dropped_buffers) + ")");
  }
  if (stdout_path.empty()) {  // integrity checks only
    std::printf("kernels %llu, events %llu\n",
                static_cast<unsigned long long>(in.counts[int(EventKind::kKernel)]),
                static_cast<unsigned long long>(in.events_read));
    if (windows_expected >= 0) {
      Check(static_cast<int>(seen.windows.size()) == windows_expected,
            "capture windows: trace " + std::to_string(seen.windows.size()) + ", expected " +
                std::to_string(windows_expected));
    }
    return failures == 0 ? 0 : 1;
  }
  std::ifstream out(stdout_path);
  std::string line;
  std::map<std::string, std::string> expect, captured, nccl;
  std::vector<double> timing;
  while (std::getline(out, line)) {
    if (line.rfind("SIGHTLINE_EXPECT_CAPTURED ", 0) == 0) captured = ParseKv(line);
    else if (line.rfind("SIGHTLINE_EXPECT_NCCL ", 0) == 0) nccl = ParseKv(line);
    else if (line.rfind("SIGHTLINE_EXPECT ", 0) == 0) expect = ParseKv(line);
    else if (line.rfind("SIGHTLINE_TIMING ", 0) == 0) timing.push_back(std::stod(ParseKv(line)["event_ms"]));
  }
  if (expect.empty()) {
    std::fprintf(stderr, "sightline_trace_check: no SIGHTLINE_EXPECT line in %s\n", stdout_path.c_str());
    return 2;
  }
  const std::map<std::string, EventKind> kinds = {
      {"kernel", EventKind::kKernel},       {"memcpy", EventKind::kMemcpy},
      {"memset", EventKind::kMemset},       {"nvtx_range", EventKind::kNvtxRange},
      {"nvtx_marker", EventKind::kNvtxMarker}};
  const auto& source = captured.empty() ? expect : captured;
  for (const auto& [key, kind] : kinds) {
    auto it = source.find(key);
    if (it == source.end()) continue;
    if (!keys_filter.empty() && keys_filter.find("," + key + ",") == std::string::npos) continue;
    uint64_t want = std::stoull(it->second);
    uint64_t got = in.counts[static_cast<int>(kind)];
    Check(got == want, key + ": trace " + std::to_string(got) + ", program " + std::to_string(want));
  }
  if (!captured.empty() && captured.count("windows")) windows_expected = std::stoi(captured["windows"]);
  if (windows_expected >= 0) {
    Check(static_cast<int>(seen.windows.size()) == windows_expected,
          "capture windows: trace " + std::to_string(seen.windows.size()) + ", expected " +
              std::to_string(windows_expected));
  }
  if (count_only && (!timing.empty() || !nccl.empty())) {
    std::fprintf(stderr, "sightline_trace_check: --count-only cannot check timing or NCCL lines\n");
    return 2;
  }
  if (!timing.empty()) {
    std::sort(seen.kernels.begin(), seen.kernels.end(),
              [](const KernelEvent& a, const KernelEvent& b) { return a.start_ns < b.start_ns; });
    Check(seen.kernels.size() == timing.size(), "timed kernels: trace " +
                                                    std::to_string(seen.kernels.size()) +
                                                    ", program " + std::to_string(timing.size()));
    double worst = 0;
    size_t compared = 0;
    for (size_t i = 0; i < timing.size() && i < seen.kernels.size(); ++i) {
      double trace_ms = (seen.kernels[i].end_ns - seen.kernels[i].start_ns) / 1e6;
      if (timing[i] <= 0 || timing[i] < min_timed_ms) continue;
      double rel = std::abs(trace_ms - timing[i]) / timing[i];
      worst = std::max(worst, rel);
      ++compared;
      std::printf("  kernel %zu: trace %.4f ms, cudaEvent %.4f ms, diff %.2f%%\n", i, trace_ms,
                  timing[i], rel * 100);
    }
    if (compared == 0) {
      std::printf("SKIP no kernel of >= %.3f ms to compare with CUDA events\n", min_timed_ms);
    } else Check(worst <= tolerance,
          "kernel durations >= " + std::to_string(min_timed_ms) + " ms within " +
              std::to_string(tolerance * 100) + "% of CUDA events (worst " +
              std::to_string(worst * 100) + "%, " + std::to_string(compared) + " kernels)");
  }
  if (!nccl.empty()) {
    long want = std::stol(nccl["allreduce"]);
    // Kernels recognised as AllReduce by the collector's parser (today's, so
    // older recordings are re-checked), and communication events of any source.
    long kernels = 0, events = 0;
    for (const KernelEvent& k : seen.kernels) {
      collect::NcclKernelInfo info;
      if (collect::ParseNcclKernelName((*reader)->strings().Get(k.name_id), &info) &&
          info.op == NcclOp::kAllReduce) {
        ++kernels;
      }
    }
    for (const NcclEvent& n : seen.nccl) {
      if (n.op == NcclOp::kAllReduce) ++events;
    }
    Check(kernels == want, "rank " + nccl["rank"] + " AllReduce kernels: trace " +
                               std::to_string(kernels) + ", program " + std::to_string(want));
    Check(events >= want, "rank " + nccl["rank"] + " AllReduce communication events: " +
                              std::to_string(events));
    Check((*reader)->header().process.rank == std::stoi(nccl["rank"]),
          "trace header rank " + std::to_string((*reader)->header().process.rank));
  }
  return failures == 0 ? 0 : 1;
}
