// libFuzzer target for the trace reader (lib/trace/reader.h).
//
// Each input is read four ways so the fuzzer reaches every decoder quickly:
//  1. as a whole .sltrace file (preamble, framing, resync, integrity);
//  2. as the payload of a CRC-valid chunk frame behind a valid header
//     (the protobuf chunk/event decoder, string and stack tables);
//  3. as a header payload and 4. as a footer payload.
// Every event field is touched and every string and stack id resolved, so
// ASan/UBSan see any bad read. The reader must never crash, hang or allocate
// more than the input justifies (run with -rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "lib/trace/crc32c.h"
#include "lib/trace/format.h"
#include "lib/trace/reader.h"

namespace {

using namespace sightline;

// Touches everything an analyzer would.
class TouchingVisitor : public trace::EventVisitor {
 public:
  explicit TouchingVisitor(const trace::TraceReader* reader) : reader_(reader) {}
  void OnKernel(const KernelEvent& e) override {
    Mix(e.start_ns ^ e.end_ns ^ e.blocks() ^ e.threads_per_block() ^ e.graph_id);
    Name(e.name_id);
  }
  void OnMemcpy(const MemcpyEvent& e) override {
    Mix(e.bytes ^ e.start_ns);
    Mix(std::strlen(CopyKindName(e.copy_kind)) + std::strlen(MemoryKindName(e.src_kind)));
  }
  void OnMemset(const MemsetEvent& e) override { Mix(e.bytes ^ e.value); }
  void OnSync(const SyncEvent& e) override { Mix(std::strlen(SyncKindName(e.sync_kind))); }
  void OnApi(const ApiEvent& e) override {
    Name(e.name_id);
    if (const CallStack* s = reader_->stack(e.stack_id)) {
      for (const StackFrame& f : s->frames) {
        Name(f.function_id);
        Name(f.module_id);
      }
    }
  }
  void OnNvtxRange(const NvtxRangeEvent& e) override {
    Name(e.name_id);
    Name(e.domain_id);
  }
  void OnNvtxMarker(const NvtxMarkerEvent& e) override { Name(e.name_id); }
  void OnNccl(const NcclEvent& e) override {
    Name(e.datatype_id);
    Mix(std::strlen(NcclOpName(e.op)));
  }
  void OnMetricRange(const MetricRangeEvent& e) override {
    for (const MetricValue& v : e.values) Name(v.name_id);
  }
  void OnCaptureWindow(const CaptureWindowEvent& e) override { Name(e.label_id); }
  void OnStep(const StepEvent& e) override { Name(e.name_id); }
  void OnLoss(const LossReport& e) override { Mix(e.total()); }

  uint64_t sink = 0;

 private:
  void Mix(uint64_t v) { sink = sink * 31 + v; }
  void Name(uint32_t id) {
    std::string_view s = reader_->strings().Get(id);
    Mix(s.size() + (s.empty() ? 0 : static_cast<unsigned char>(s[0])));
  }
  const trace::TraceReader* reader_;
};

void ReadEverything(std::string_view bytes, bool resync) {
  trace::ReaderOptions options;
  options.resync = resync;
  auto reader = trace::TraceReader::FromBuffer("fuzz.sltrace", bytes, options);
  if (!reader.ok()) {
    if (reader.status().message().empty()) __builtin_trap();  // errors must explain
    return;
  }
  TouchingVisitor visitor(reader->get());
  (void)(*reader)->ReadAll(visitor);
  const trace::Integrity& in = (*reader)->integrity();
  if (!in.complete && in.reason.empty()) __builtin_trap();  // incompleteness is explained
  if (in.bytes_accepted + in.bytes_skipped > in.file_bytes) __builtin_trap();
  // Resync work is bounded by the input's size (reader.cc, ReadFrame): CRC
  // work at most ~6x the input plus a few maximal frames, whatever the bytes.
  if (in.crc_bytes > 6 * uint64_t{bytes.size()} + 3 * uint64_t{trace::kMaxFramePayload}) {
    __builtin_trap();
  }
  const TraceHeaderData& h = (*reader)->header();
  visitor.sink += h.devices.size() + h.process.command_line.size() + h.tool_version.size();
}

std::string Frame(trace::FrameType type, std::string_view payload) {
  uint8_t header[trace::kFrameHeaderSize];
  trace::EncodeFrameHeader(static_cast<uint8_t>(type), static_cast<uint32_t>(payload.size()),
                           trace::Crc32c(payload.data(), payload.size()), header);
  std::string out(reinterpret_cast<const char*>(header), trace::kFrameHeaderSize);
  out.append(payload);
  return out;
}

std::string Preamble() {
  std::string out(trace::kFileMagic, sizeof(trace::kFileMagic));
  uint32_t version = trace::kFormatVersion;
  out.append(reinterpret_cast<const char*>(&version), 4);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ReadEverything(input, /*resync=*/true);
  ReadEverything(input, /*resync=*/false);
  if (size > (1u << 20)) return 0;
  static const std::string preamble = Preamble();
  std::string wrapped = preamble + Frame(trace::FrameType::kHeader, "") +
                        Frame(trace::FrameType::kChunk, input) +
                        Frame(trace::FrameType::kChunk, input);
  ReadEverything(wrapped, true);
  ReadEverything(preamble + Frame(trace::FrameType::kHeader, input), true);
  ReadEverything(preamble + Frame(trace::FrameType::kHeader, "") +
                     Frame(trace::FrameType::kFooter, input),
                 true);
  return 0;
}
