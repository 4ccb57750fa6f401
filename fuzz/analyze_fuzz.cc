// libFuzzer target for the analyzer and the report renderers, fed through
// the real trace reader.
//
// The input is a trace without its framing: records of [frame type: 1 byte]
// [payload length: LEB128 varint][payload]. The harness frames each record
// with a valid CRC behind the file preamble, so mutations reach the events
// (timestamps, ids, correlation, nesting, metric arrays...) instead of dying
// at the CRC check. Seeds are real traces converted by analyze_fuzz_seeds.
//
// Each input is built into a timeline model, analysed (steady window, and the
// whole window for inputs of odd length), rendered as text, JSON and HTML, and
// the JSON read back; the trace is also exported (to /dev/null) as a
// Perfetto trace when the input's length is a multiple of 3, else as Chrome
// JSON. The analyzer and the exporters must never
// crash, hang, allocate beyond what the input justifies, or write a report
// their own reader refuses.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/analysis/analyze.h"
#include "lib/analysis/model.h"
#include "lib/export/chrome_trace.h"
#include "lib/export/output_file.h"
#include "lib/export/perfetto_trace.h"
#include "lib/export/report_html.h"
#include "lib/export/report_json_read.h"
#include "lib/export/report_render.h"
#include "lib/trace/crc32c.h"
#include "lib/trace/format.h"
#include "lib/trace/reader.h"

namespace {

using namespace sightline;

void AppendFrame(std::string* out, uint8_t type, std::string_view payload) {
  uint8_t header[trace::kFrameHeaderSize];
  trace::EncodeFrameHeader(type, static_cast<uint32_t>(payload.size()),
                           trace::Crc32c(payload.data(), payload.size()), header);
  out->append(reinterpret_cast<const char*>(header), sizeof(header));
  out->append(payload);
}

// Records → a framed .sltrace image. A length running past the end is cut
// to what is left.
std::string Frame(std::string_view in) {
  std::string out(trace::kFileMagic, sizeof(trace::kFileMagic));
  const uint32_t version = trace::kFormatVersion;
  out.append(reinterpret_cast<const char*>(&version), 4);
  size_t i = 0;
  while (i < in.size()) {
    const uint8_t type = static_cast<uint8_t>(in[i++]);
    uint64_t length = 0;
    for (int shift = 0; i < in.size() && shift < 35; shift += 7) {
      const uint8_t b = static_cast<uint8_t>(in[i++]);
      length |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80u) == 0) break;
    }
    if (length > in.size() - i) length = in.size() - i;
    AppendFrame(&out, type, in.substr(i, length));
    i += length;
  }
  return out;
}

void AnalyzeImage(const std::string& image, bool whole_window) {
  auto reader = trace::TraceReader::FromBuffer("fuzz.sltrace", image);
  if (!reader.ok()) {
    if (reader.status().message().empty()) __builtin_trap();  // errors must explain
    return;
  }
  analysis::ModelBuilder builder;
  if (!builder.AddTrace(**reader).ok()) return;
  analysis::TimelineModel model = builder.Finish();
  analysis::AnalysisOptions options;
  if (whole_window) options.window = "all";
  analysis::Report report = analysis::AnalyzeModel(model, options);
  // What the report promises whatever the trace: percentages of the window
  // in [0, 100] and finite, savings no larger than the window.
  auto pct_ok = [](double v) { return std::isfinite(v) && v >= 0 && v <= 100.0 + 1e-6; };
  for (const analysis::Finding& f : report.findings) {
    if (!pct_ok(f.est_saving_pct)) __builtin_trap();
  }
  for (const analysis::DeviceSummary& d : report.summary.devices) {
    if (!pct_ok(d.gpu_utilization_pct) || !pct_ok(d.compute_pct) || !pct_ok(d.comm_pct) ||
        !pct_ok(d.memory_pct) || !pct_ok(d.idle_pct)) {
      __builtin_trap();
    }
  }
  std::string text = exporter::RenderReportText(report);
  std::string json = exporter::RenderReportJson(report);
  auto back = exporter::ReportFromJson("fuzz.json", json);
  if (!back.ok()) __builtin_trap();  // our own report must read back
  std::string html = exporter::RenderReportHtml({{"fuzz", &model, &report}});
  if (text.empty() || html.empty()) __builtin_trap();
}

void ExportImage(const std::string& image, bool perfetto) {
  auto reader = trace::TraceReader::FromBuffer("fuzz.sltrace", image);
  if (!reader.ok()) return;
  auto out = exporter::OutputFile::Open("/dev/null");
  if (!out.ok()) __builtin_trap();
  auto stats = perfetto ? exporter::ExportPerfettoTrace(**reader, **out)
                        : exporter::ExportChromeTrace(**reader, **out);
  if (!stats.ok() && stats.status().message().empty()) __builtin_trap();
  (void)(*out)->Close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string image = Frame(std::string_view(reinterpret_cast<const char*>(data), size));
  AnalyzeImage(image, /*whole_window=*/false);
  if (size % 2 == 1) AnalyzeImage(image, /*whole_window=*/true);
  ExportImage(image, /*perfetto=*/size % 3 == 0);
  return 0;
}
