// Writes the fuzzer's seed corpus into DIR: small valid traces (every event
// kind, several chunks, strings and stacks), a truncated and a damaged copy,
// and raw chunk/header/footer payloads (the fuzz target also wraps inputs as
// payloads).
//
//   trace_fuzz_seeds DIR [LARGE_DIR]
//
// LARGE_DIR gets multi-MiB inputs that reach resync after damage: a long
// trace with damage in the middle, and traces with megabytes of fake frame
// headers (overlapping and chained claims) between genuine frames — the
// inputs that made resync quadratic before its work was bounded.
#include <cstdio>
#include <cstring>
#include <string>

#include "lib/trace/format.h"
#include "lib/trace/writer.h"

namespace {

using namespace sightline;

void Save(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    return;
  }
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

std::string SmallTrace(size_t events, size_t chunk_bytes) {
  std::string out;
  trace::WriterOptions options;
  options.chunk_bytes = chunk_bytes;
  trace::TraceWriter w(trace::OpenMemorySink(&out), options);
  TraceHeaderData h;
  h.tool_version = "seed";
  h.process.pid = 1;
  h.process.host = "host";
  h.process.command_line = {"app", "--flag"};
  h.process.rank = 0;
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  d.memory_bandwidth_gbps = 4800;
  h.devices.push_back(d);
  w.Begin(h);
  CallStack stack;
  stack.frames = {{w.Intern("main"), w.Intern("/bin/app"), 16, 4096}};
  uint32_t stack_id = w.InternStack(stack);
  for (size_t i = 0; i < events; ++i) {
    uint64_t t = 1000000 + 1000 * i;
    switch (i % 7) {
      case 0: {
        KernelEvent k;
        k.start_ns = t;
        k.end_ns = t + 700;
        k.name_id = w.Intern(i % 2 ? "gemm" : "relu");
        k.grid_x = 80;
        k.grid_y = 2;
        k.block_x = 256;
        k.registers_per_thread = 32;
        w.Add(k);
        break;
      }
      case 1: {
        MemcpyEvent m;
        m.start_ns = t;
        m.end_ns = t + 100;
        m.bytes = 4096;
        m.copy_kind = CopyKind::kHtoD;
        m.src_kind = MemoryKind::kPageable;
        w.Add(m);
        break;
      }
      case 2: {
        ApiEvent a;
        a.start_ns = t - 50;
        a.end_ns = t + 10;
        a.name_id = w.Intern("cudaLaunchKernel");
        a.stack_id = stack_id;
        w.Add(a);
        break;
      }
      case 3: {
        NvtxRangeEvent n;
        n.start_ns = t;
        n.end_ns = t + 5000;
        n.name_id = w.Intern("step");
        n.payload_kind = PayloadKind::kDouble;
        n.payload_double = 1.5;
        w.Add(n);
        break;
      }
      case 4: {
        MetricRangeEvent m;
        m.start_ns = t;
        m.values = {{w.Intern("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 50.0}};
        w.Add(m);
        break;
      }
      case 5: {
        NcclEvent n;
        n.start_ns = t;
        n.end_ns = t + 3000;
        n.op = NcclOp::kAllReduce;
        n.rank = 1;
        w.Add(n);
        break;
      }
      default: {
        LossReport l;
        l.timestamp_ns = t;
        l.cupti_dropped_records = i;
        w.Add(l);
        SyncEvent s;
        s.start_ns = t;
        s.end_ns = t + 1;
        w.Add(s);
      }
    }
  }
  w.Finish("exit");
  return out;
}

// The payload of the first frame of `type` in `file`.
std::string Payload(const std::string& file, trace::FrameType type) {
  size_t pos = trace::kFilePreambleSize;
  while (pos + trace::kFrameHeaderSize <= file.size()) {
    uint32_t length;
    std::memcpy(&length, file.data() + pos + 8, 4);
    if (static_cast<uint8_t>(file[pos + 4]) == static_cast<uint8_t>(type)) {
      return file.substr(pos + trace::kFrameHeaderSize, length);
    }
    pos += trace::kFrameHeaderSize + length;
  }
  return "";
}

std::string FakeHeader(uint32_t length) {
  std::string out(trace::kFrameHeaderSize, '\0');
  uint32_t magic = trace::kFrameMagic;
  std::memcpy(&out[0], &magic, 4);
  out[4] = static_cast<char>(trace::FrameType::kChunk);
  std::memcpy(&out[8], &length, 4);
  return out;  // CRC 0
}

// Offset of the `n`-th frame of a well-formed trace.
size_t FrameAt(const std::string& file, int n) {
  size_t pos = trace::kFilePreambleSize;
  for (int i = 0; i < n && pos + trace::kFrameHeaderSize <= file.size(); ++i) {
    uint32_t length;
    std::memcpy(&length, file.data() + pos + 8, 4);
    pos += trace::kFrameHeaderSize + length;
  }
  return pos;
}

void SaveLarge(const std::string& dir) {
  std::string big = SmallTrace(120000, 64 << 10);  // ~3 MiB, ~50 chunks
  std::string damaged = big;
  for (size_t at = big.size() / 5; at < big.size(); at += big.size() / 5) damaged[at] ^= 0x20;
  Save(dir, "large_damaged.sltrace", damaged);
  const size_t cut = FrameAt(big, 3);
  // Overlapping claims: one fake header every 128 bytes, each claiming 2 MiB.
  std::string overlapping = big.substr(0, cut);
  while (overlapping.size() < cut + (size_t{3} << 20)) {
    overlapping += FakeHeader(2u << 20);
    overlapping.append(128 - trace::kFrameHeaderSize, 'x');
  }
  overlapping += big.substr(cut);
  Save(dir, "large_fake_headers.sltrace", overlapping);
  // Chained claims: each fake header ends exactly at the last one.
  std::string chained = big.substr(0, cut);
  const size_t stride = 512, count = (size_t{2} << 20) / stride;
  const size_t base = chained.size(), last = base + (count - 1) * stride;
  for (size_t i = 0; i < count; ++i) {
    size_t here = base + i * stride;
    chained += FakeHeader(i + 1 < count ? static_cast<uint32_t>(last - here - trace::kFrameHeaderSize)
                                        : 64u);
    chained.append(stride - trace::kFrameHeaderSize, 'y');
  }
  chained += big.substr(cut);
  Save(dir, "large_chained_headers.sltrace", chained);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s DIR [LARGE_DIR]\n", argv[0]);
    return 2;
  }
  if (argc == 3) SaveLarge(argv[2]);
  std::string dir = argv[1];
  std::string one_chunk = SmallTrace(14, 1 << 20);
  std::string many_chunks = SmallTrace(60, 256);
  Save(dir, "one_chunk.sltrace", one_chunk);
  Save(dir, "many_chunks.sltrace", many_chunks);
  Save(dir, "truncated.sltrace", many_chunks.substr(0, many_chunks.size() * 2 / 3));
  std::string damaged = many_chunks;
  damaged[damaged.size() / 2] ^= 0x10;
  Save(dir, "damaged.sltrace", damaged);
  Save(dir, "chunk_payload.bin", Payload(one_chunk, trace::FrameType::kChunk));
  Save(dir, "header_payload.bin", Payload(one_chunk, trace::FrameType::kHeader));
  Save(dir, "footer_payload.bin", Payload(one_chunk, trace::FrameType::kFooter));
  return 0;
}
