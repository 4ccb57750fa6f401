// libFuzzer target for the report JSON reader (lib/export/report_json_read.h):
// `sightline diff` and `sightline history` read report files that may come
// from anywhere. A report that reads is rendered as text and JSON, read back
// (the JSON we write must read), and diffed against itself, each rendered.
// Seeds are the reports of tests/data's real traces (analyze_fuzz_seeds
// --reports).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lib/export/report_json_read.h"
#include "lib/export/report_render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sightline;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)exporter::LooksLikeJson(text);
  auto report = exporter::ReportFromJson("fuzz.json", text);
  if (!report.ok()) {
    if (report.status().message().empty()) __builtin_trap();  // errors must explain
    return 0;
  }
  std::string rendered = exporter::RenderReportText(*report);
  std::string json = exporter::RenderReportJson(*report);
  auto back = exporter::ReportFromJson("again.json", json);
  if (!back.ok()) __builtin_trap();
  exporter::DiffOptions options;
  options.fail_on_regression_pct = 5;
  exporter::DiffResult diff = exporter::DiffReports(*report, *back, options);
  rendered += exporter::RenderDiffText(diff);
  rendered += exporter::RenderDiffJson(diff);
  if (rendered.empty()) __builtin_trap();
  return 0;
}
