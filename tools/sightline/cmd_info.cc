// sightline info TRACE [--format text|json]
//
// Header (process, tool/CUDA/CUPTI versions, command line, rank), devices,
// event counts by kind, time span, loss accounting and validity of one trace.
// A trace whose writer died (no footer, truncated tail, damaged chunks) is
// not an error: it is reported INCOMPLETE with the reason, exit 0. Input that
// is not a readable trace at all (missing file, directory, wrong magic, newer
// format, damaged header) exits 2 with one message naming file and problem.
#include <time.h>

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "lib/analysis/rule_util.h"
#include "lib/trace/json_writer.h"
#include "lib/trace/reader.h"
#include "lib/trace/terminal_text.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"

namespace sightline::cli {
namespace {

struct InfoOptions {
  std::string path;
  bool json = false;
};

std::string FormatRealtime(uint64_t ns) {
  if (ns == 0) return "unknown";
  time_t seconds = static_cast<time_t>(ns / 1000000000ull);
  struct tm tm;
  if (gmtime_r(&seconds, &tm) == nullptr) return absl::StrCat(ns, " ns");
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return absl::StrFormat("%s.%03dZ", buf, (ns / 1000000ull) % 1000);
}

std::string FormatVersion(uint32_t cuda_version) {  // 13000 → "13.0"
  if (cuda_version == 0) return "unknown";
  return absl::StrFormat("%d.%d", cuda_version / 1000, (cuda_version % 1000) / 10);
}

// Shell-style quoting so empty or spaced arguments stay visible.
std::string QuoteArgument(const std::string& arg) {
  bool plain = !arg.empty();
  for (unsigned char c : arg) {
    // Shell-safe ASCII and any UTF-8 byte stay unquoted.
    if (!(std::isalnum(c) || c >= 0x80 || std::strchr("_./:=,+-@%", c) != nullptr)) plain = false;
  }
  if (plain) return arg;
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

uint64_t SpanNs(const trace::Integrity& in) {
  return in.last_ns > in.first_ns ? in.last_ns - in.first_ns : 0;
}

std::string LossSummary(const LossReport& l) {
  std::vector<std::string> parts;
  auto add = [&parts](uint64_t n, const char* what) {
    if (n) parts.push_back(absl::StrCat(n, " ", what));
  };
  add(l.cupti_dropped_records, "records dropped by CUPTI");
  add(l.queue_dropped_records, "records dropped by the buffer queue");
  add(l.queue_dropped_buffers, "buffers dropped by the buffer queue");
  add(l.invalid_timestamps, "records with invalid timestamps");
  add(l.metric_ranges_dropped, "metric ranges dropped");
  add(l.unsupported_records, "unsupported records skipped");
  add(l.write_errors, "events lost to write errors");
  add(l.stacks_dropped, "call stacks dropped");
  add(l.gpu_metric_samples_dropped, "GPU metric samples missing");
  add(l.untraced_kernels_lost, "kernels run untraced in metric passes without a launch seen");
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

// Every string below comes from the trace (untrusted): escaped for the
// terminal (lib/trace/terminal_text.h).
std::string T(std::string_view s) { return trace::EscapeTerminalText(s); }

void PrintText(const trace::TraceReader& reader) {
  const TraceHeaderData& h = reader.header();
  const trace::Integrity& in = reader.integrity();
  std::printf("trace      %s (%" PRIu64 " bytes, format v%u)\n", T(reader.name()).c_str(),
              in.file_bytes, h.format_version);
  if (in.complete) {
    std::printf("status     COMPLETE\n");
  } else {
    std::printf("status     INCOMPLETE: %s\n", T(in.reason).c_str());
  }
  std::printf("tool       sightline %s\n", h.tool_version.empty() ? "(unknown)" : T(h.tool_version).c_str());
  std::string rank = h.process.rank >= 0
                         ? absl::StrFormat(", rank %d of %d (local rank %d)", h.process.rank,
                                           h.process.world_size, h.process.local_rank)
                         : "";
  std::printf("process    pid %u on %s%s\n", h.process.pid,
              h.process.host.empty() ? "(unknown host)" : T(h.process.host).c_str(), rank.c_str());
  std::vector<std::string> quoted;
  for (const std::string& arg : h.process.command_line) quoted.push_back(T(QuoteArgument(arg)));
  std::printf("command    %s\n", absl::StrJoin(quoted, " ").c_str());
  std::printf("started    %s\n", FormatRealtime(h.start_realtime_ns).c_str());
  std::printf("cuda       driver %s, runtime %s, CUPTI API version %u\n",
              FormatVersion(h.cuda_driver_version).c_str(),
              FormatVersion(h.cuda_runtime_version).c_str(), h.cupti_api_version);
  if (!h.capture_range.empty() || !h.metric_set.empty() || !h.enabled.empty()) {
    std::printf("capture    range %s, metrics %s, enabled %s\n",
                h.capture_range.empty() ? "whole run" : T(h.capture_range).c_str(),
                h.metric_set.empty() ? "none" : T(h.metric_set).c_str(),
                T(absl::StrJoin(h.enabled, ",")).c_str());
  }
  std::printf("devices    %zu\n", h.devices.size());
  for (const DeviceInfo& d : h.devices) {
    std::printf("  [%u] %s (%s, sm_%u%u), %u SMs, %.1f GiB, %.1f GB/s, %s\n", d.id,
                T(d.name).c_str(), d.chip_name.empty() ? "?" : T(d.chip_name).c_str(), d.cc_major,
                d.cc_minor, d.sm_count, d.global_memory_bytes / double(1ull << 30),
                d.memory_bandwidth_gbps, T(d.uuid).c_str());
  }
  std::printf("span       %s (first %" PRIu64 " ns, last %" PRIu64 " ns)\n",
              analysis::FormatNs(static_cast<double>(SpanNs(in))).c_str(), in.first_ns, in.last_ns);
  std::printf("events     %" PRIu64 "\n", in.events_read);
  for (int k = 1; k < kNumEventKinds; ++k) {
    if (in.counts[k] == 0) continue;
    std::printf("  %-16s %" PRIu64 "\n", EventKindName(static_cast<EventKind>(k)), in.counts[k]);
  }
  std::printf("chunks     %" PRIu64 " read, %" PRIu64 " damaged, %" PRIu64 " missing\n",
              in.chunks_read, in.chunks_damaged, in.chunks_missing);
  std::printf("losses     %s\n", LossSummary(in.losses).c_str());
  if (in.events_missing) {
    std::printf("missing    %" PRIu64 " events listed in the footer were not read\n",
                in.events_missing);
  }
  if (in.invalid_events) {
    std::printf("invalid    %" PRIu64 " events end before they start\n", in.invalid_events);
  }
  if (in.footer) {
    std::printf("end        %s at %s\n",
                in.footer->end_reason.empty() ? "(no reason)" : T(in.footer->end_reason).c_str(),
                FormatRealtime(in.footer->end_realtime_ns).c_str());
  }
  if (!in.problems.empty()) {
    std::printf("problems\n");
    for (const std::string& p : in.problems) std::printf("  - %s\n", T(p).c_str());
  }
}

void PrintJson(const trace::TraceReader& reader) {
  const TraceHeaderData& h = reader.header();
  const trace::Integrity& in = reader.integrity();
  std::string out;
  json::JsonWriter w(&out, 2);
  w.BeginObject();
  w.Key("schema").String("sightline.info.v1");
  w.Key("path").String(reader.name());
  w.Key("file_bytes").Uint(in.file_bytes);
  w.Key("format_version").Uint(h.format_version);
  w.Key("complete").Bool(in.complete);
  w.Key("reason").String(in.reason);
  w.Key("tool_version").String(h.tool_version);
  w.Key("process").BeginObject();
  w.Key("pid").Uint(h.process.pid);
  w.Key("host").String(h.process.host);
  w.Key("command_line").BeginArray();
  for (const std::string& arg : h.process.command_line) w.String(arg);
  w.EndArray();
  w.Key("rank").Int(h.process.rank);
  w.Key("world_size").Int(h.process.world_size);
  w.Key("local_rank").Int(h.process.local_rank);
  w.EndObject();
  w.Key("pid").Uint(h.process.pid);
  w.Key("rank").Int(h.process.rank);
  w.Key("cupti_api_version").Uint(h.cupti_api_version);
  w.Key("cuda_driver_version").Uint(h.cuda_driver_version);
  w.Key("cuda_runtime_version").Uint(h.cuda_runtime_version);
  w.Key("clock").BeginObject();
  w.Key("trace_ns").Uint(h.clock.trace_ns);
  w.Key("realtime_ns").Uint(h.clock.realtime_ns);
  w.Key("offset_ns").Int(h.clock.offset_ns());
  w.EndObject();
  w.Key("start_realtime_ns").Uint(h.start_realtime_ns);
  w.Key("enabled").BeginArray();
  for (const std::string& e : h.enabled) w.String(e);
  w.EndArray();
  w.Key("metric_set").String(h.metric_set);
  w.Key("capture_range").String(h.capture_range);
  w.Key("devices").BeginArray();
  for (const DeviceInfo& d : h.devices) {
    w.BeginObject();
    w.Key("id").Uint(d.id);
    w.Key("name").String(d.name);
    w.Key("uuid").String(d.uuid);
    w.Key("chip_name").String(d.chip_name);
    w.Key("compute_capability").String(absl::StrCat(d.cc_major, ".", d.cc_minor));
    w.Key("sm_count").Uint(d.sm_count);
    w.Key("max_warps_per_sm").Uint(d.max_warps_per_sm);
    w.Key("max_blocks_per_sm").Uint(d.max_blocks_per_sm);
    w.Key("max_threads_per_block").Uint(d.max_threads_per_block);
    w.Key("registers_per_sm").Uint(d.registers_per_sm);
    w.Key("registers_per_block").Uint(d.registers_per_block);
    w.Key("shared_memory_per_sm").Uint(d.shared_memory_per_sm);
    w.Key("shared_memory_per_block").Uint(d.shared_memory_per_block);
    w.Key("shared_memory_per_block_optin").Uint(d.shared_memory_per_block_optin);
    w.Key("reserved_shared_memory_per_block").Uint(d.reserved_shared_memory_per_block);
    w.Key("warp_size").Uint(d.warp_size);
    w.Key("core_clock_khz").Uint(d.core_clock_khz);
    w.Key("memory_clock_khz").Uint(d.memory_clock_khz);
    w.Key("memory_bus_width_bits").Uint(d.memory_bus_width_bits);
    w.Key("global_memory_bytes").Uint(d.global_memory_bytes);
    w.Key("l2_cache_bytes").Uint(d.l2_cache_bytes);
    w.Key("memory_bandwidth_gbps").Double(d.memory_bandwidth_gbps);
    w.Key("pci_bus_id").Uint(d.pci_bus_id);
    w.Key("async_engine_count").Uint(d.async_engine_count);
    w.EndObject();
  }
  w.EndArray();
  w.Key("first_ns").Uint(in.first_ns);
  w.Key("last_ns").Uint(in.last_ns);
  w.Key("span_ns").Uint(SpanNs(in));
  w.Key("events").Uint(in.events_read);
  w.Key("counts").BeginObject();
  for (int k = 1; k < kNumEventKinds; ++k) {
    w.Key(EventKindName(static_cast<EventKind>(k))).Uint(in.counts[k]);
  }
  w.EndObject();
  w.Key("lost_records").Uint(in.losses.total());
  w.Key("losses").BeginObject();
  w.Key("cupti_dropped_records").Uint(in.losses.cupti_dropped_records);
  w.Key("queue_dropped_buffers").Uint(in.losses.queue_dropped_buffers);
  w.Key("queue_dropped_records").Uint(in.losses.queue_dropped_records);
  w.Key("invalid_timestamps").Uint(in.losses.invalid_timestamps);
  w.Key("metric_ranges_dropped").Uint(in.losses.metric_ranges_dropped);
  w.Key("unsupported_records").Uint(in.losses.unsupported_records);
  w.Key("write_errors").Uint(in.losses.write_errors);
  w.Key("stacks_dropped").Uint(in.losses.stacks_dropped);
  w.Key("gpu_metric_samples_dropped").Uint(in.losses.gpu_metric_samples_dropped);
  w.Key("untraced_kernels_lost").Uint(in.losses.untraced_kernels_lost);
  w.EndObject();
  w.Key("integrity").BeginObject();
  w.Key("footer").Bool(in.footer.has_value());
  w.Key("truncated").Bool(in.truncated);
  w.Key("shrank").Bool(in.shrank);
  w.Key("chunks_read").Uint(in.chunks_read);
  w.Key("chunks_damaged").Uint(in.chunks_damaged);
  w.Key("chunks_missing").Uint(in.chunks_missing);
  w.Key("bytes_accepted").Uint(in.bytes_accepted);
  w.Key("bytes_skipped").Uint(in.bytes_skipped);
  w.Key("events_missing").Uint(in.events_missing);
  w.Key("invalid_events").Uint(in.invalid_events);
  w.Key("problems").BeginArray();
  for (const std::string& p : in.problems) w.String(p);
  w.EndArray();
  w.EndObject();
  if (in.footer) {
    w.Key("end_reason").String(in.footer->end_reason);
    w.Key("end_realtime_ns").Uint(in.footer->end_realtime_ns);
  }
  w.EndObject();
  out.push_back('\n');
  std::fwrite(out.data(), 1, out.size(), stdout);
}

int RunInfo(const std::vector<std::string>& args) {
  InfoOptions options;
  std::string format = "text";
  ArgScanner scan(args);
  while (!scan.Done()) {
    bool missing = false;
    if (scan.Value("--format", &format, &missing) || scan.Value("-f", &format, &missing)) {
      if (missing) return UsageError("info: --format needs a value (text or json)");
      continue;
    }
    const std::string a = scan.Next();
    if (a == "--json") {
      format = "json";
    } else if (a.size() > 1 && a[0] == '-') {
      return UsageError("info: unknown option '" + a + "' (usage: sightline info TRACE [--format text|json])");
    } else if (options.path.empty()) {
      options.path = a;
    } else {
      return UsageError("info: one trace at a time (got '" + options.path + "' and '" + a + "')");
    }
  }
  if (format != "text" && format != "json") {
    return UsageError("info: unknown format '" + format + "' (text or json)");
  }
  options.json = format == "json";
  if (options.path.empty()) {
    return UsageError("info: missing TRACE (usage: sightline info TRACE [--format text|json])");
  }
  auto reader = trace::TraceReader::Open(options.path);
  if (!reader.ok()) return UsageError(std::string(reader.status().message()));
  trace::EventVisitor counting_only;  // Integrity already counts events by kind
  absl::Status status = (*reader)->ReadAll(counting_only);
  if (!status.ok()) return UsageError(std::string(status.message()));
  if (options.json) {
    PrintJson(**reader);
  } else {
    PrintText(**reader);
  }
  return std::fflush(stdout) == 0 ? kExitOk : UsageError("info: cannot write to stdout");
}

}  // namespace

SIGHTLINE_COMMAND("info", "info TRACE [--format text|json]",
                  "Show a trace's header, devices, event counts, span, losses and validity.",
                  RunInfo);

}  // namespace sightline::cli
