// Converts .sltrace files into analyze_fuzz inputs (its header comment says
// the form): each frame's type, LEB128 length and payload, framing and CRCs
// dropped. A damaged frame is copied as it is; a file that is not a trace is
// an error naming it. With --reports, also writes each trace's report JSON
// there (report_json_fuzz's seeds).
//
//   analyze_fuzz_seeds [--reports REPORT_DIR] OUT_DIR TRACE...
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lib/analysis/analyze.h"
#include "lib/export/report_render.h"
#include "lib/trace/format.h"

namespace {

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!o) std::fprintf(stderr, "analyze_fuzz_seeds: cannot write %s\n", path.c_str());
  return static_cast<bool>(o);
}

bool Convert(const std::string& path, const std::string& out_path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "analyze_fuzz_seeds: cannot open %s\n", path.c_str());
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t preamble = sightline::trace::kFilePreambleSize;
  if (bytes.size() < preamble ||
      std::memcmp(bytes.data(), sightline::trace::kFileMagic, sizeof(sightline::trace::kFileMagic)) != 0) {
    std::fprintf(stderr, "analyze_fuzz_seeds: %s: not a .sltrace file\n", path.c_str());
    return false;
  }
  std::string out;
  size_t i = preamble;
  while (i + sightline::trace::kFrameHeaderSize <= bytes.size()) {
    uint32_t length = 0;
    std::memcpy(&length, bytes.data() + i + 8, 4);
    const uint8_t type = static_cast<uint8_t>(bytes[i + 4]);
    i += sightline::trace::kFrameHeaderSize;
    if (length > bytes.size() - i) length = static_cast<uint32_t>(bytes.size() - i);
    out.push_back(static_cast<char>(type));
    uint64_t v = length;
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      out.push_back(static_cast<char>(v ? (b | 0x80) : b));
    } while (v);
    out.append(bytes, i, length);
    i += length;
  }
  return WriteFile(out_path, out);
}

bool Report(const std::string& path, const std::string& out_path) {
  auto report = sightline::analysis::Analyze(std::vector<std::string>{path},
                                             sightline::analysis::AnalysisOptions());
  if (!report.ok()) {
    std::fprintf(stderr, "analyze_fuzz_seeds: %s\n", std::string(report.status().message()).c_str());
    return false;
  }
  return WriteFile(out_path, sightline::exporter::RenderReportJson(*report));
}

}  // namespace

int main(int argc, char** argv) {
  int a = 1;
  std::string reports;
  if (argc > 2 && std::string(argv[1]) == "--reports") {
    reports = argv[2];
    a = 3;
  }
  if (argc - a < 2) {
    std::fprintf(stderr, "usage: %s [--reports REPORT_DIR] OUT_DIR TRACE...\n", argv[0]);
    return 2;
  }
  const std::string out_dir = argv[a++];
  int failed = 0;
  for (; a < argc; ++a) {
    std::string name = argv[a];
    name = name.substr(name.rfind('/') + 1);
    if (!Convert(argv[a], out_dir + "/" + name + ".rec")) ++failed;
    if (!reports.empty() && !Report(argv[a], reports + "/" + name + ".json")) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
