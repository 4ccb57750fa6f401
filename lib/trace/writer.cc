// TraceWriter: events → hand-encoded protobuf chunks → CRC'd frames → sink.
#include "lib/trace/writer.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <vector>

#include "lib/trace/byte_buffer.h"
#include "lib/trace/crc32c.h"
#include "lib/trace/event_encoder.h"
#include "lib/trace/format.h"
#include "lib/trace/message_builder.h"
#include "lib/trace/proto_wire.h"

namespace sightline::trace {
namespace {

using internal::ByteBuffer;
using internal::MessageBuilder;

// Longest string stored in a trace (longer ones are truncated): keeps every
// frame far below kMaxFramePayload.
constexpr size_t kMaxStringBytes = 1 << 20;
constexpr size_t kMaxStackFrames = 512;
constexpr size_t kMaxMetricValues = 1 << 16;
constexpr size_t kMinChunkBytes = 256;
constexpr size_t kMaxChunkBytes = kMaxFramePayload / 4;
// Outer Event framing: tag + length + delta + duration + payload tag + length.
constexpr size_t kEventEnvelopeBytes = 1 + 10 + 11 + 11 + 1 + 10;

// Open-addressing map from byte strings to dense ids 1..n. Lookups do not
// allocate; inserts copy the key once.
class InternTable {
 public:
  // Returns the id of `key`, or 0 with *slot set for a following Insert.
  uint32_t Find(std::string_view key, size_t hash, size_t* slot) const {
    if (slots_.empty()) {
      *slot = SIZE_MAX;
      return 0;
    }
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      uint32_t id = slots_[i];
      if (id == 0) {
        *slot = i;
        return 0;
      }
      if (hashes_[id - 1] == hash && keys_[id - 1] == key) return id;
    }
  }
  uint32_t Insert(std::string_view key, size_t hash, size_t slot, uint32_t id) {
    if ((keys_.size() + 1) * 2 > slots_.size()) {
      Grow();
      Find(key, hash, &slot);
    }
    keys_.emplace_back(key);
    hashes_.push_back(hash);
    ids_.push_back(id);
    slots_[slot] = static_cast<uint32_t>(keys_.size());
    return id;
  }
  uint32_t IdAt(uint32_t index) const { return ids_[index - 1]; }
  void Clear() {
    slots_.clear();
    keys_.clear();
    hashes_.clear();
    ids_.clear();
  }

 private:
  void Grow() {
    std::vector<uint32_t> slots(slots_.empty() ? 1024 : slots_.size() * 2, 0);
    size_t mask = slots.size() - 1;
    for (uint32_t index = 1; index <= keys_.size(); ++index) {
      size_t i = hashes_[index - 1] & mask;
      while (slots[i] != 0) i = (i + 1) & mask;
      slots[i] = index;
    }
    slots_.swap(slots);
  }
  // slots_ hold 1-based indexes into keys_/hashes_/ids_.
  std::vector<uint32_t> slots_;
  std::vector<std::string> keys_;
  std::vector<size_t> hashes_;
  std::vector<uint32_t> ids_;
};

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string EncodeHeader(const TraceHeaderData& h) {
  MessageBuilder process;
  process.Uint(1, h.process.pid).String(2, h.process.host);
  for (const std::string& arg : h.process.command_line) process.Bytes(3, arg);
  process.Sint32(4, h.process.rank).Sint32(5, h.process.world_size).Sint32(6, h.process.local_rank);

  MessageBuilder m;
  m.Uint(1, kFormatVersion).String(2, h.tool_version).Message(3, process);
  for (const DeviceInfo& d : h.devices) {
    MessageBuilder dev;
    dev.Uint(1, d.id).String(2, d.name).String(3, d.uuid).Uint(4, d.cc_major).Uint(5, d.cc_minor);
    dev.Uint(6, d.sm_count).Uint(7, d.max_warps_per_sm).Uint(8, d.max_blocks_per_sm);
    dev.Uint(9, d.max_threads_per_block).Uint(10, d.registers_per_sm).Uint(11, d.registers_per_block);
    dev.Uint(12, d.shared_memory_per_sm).Uint(13, d.shared_memory_per_block);
    dev.Uint(14, d.shared_memory_per_block_optin).Uint(15, d.reserved_shared_memory_per_block);
    dev.Uint(16, d.warp_size).Uint(17, d.core_clock_khz).Uint(18, d.memory_clock_khz);
    dev.Uint(19, d.memory_bus_width_bits).Uint(20, d.global_memory_bytes).Uint(21, d.l2_cache_bytes);
    dev.Double(22, d.memory_bandwidth_gbps).String(23, d.chip_name).Uint(24, d.pci_bus_id);
    dev.Uint(25, d.async_engine_count);
    m.Message(4, dev);
  }
  m.Uint(5, h.cupti_api_version).Uint(6, h.cuda_driver_version).Uint(7, h.cuda_runtime_version);
  MessageBuilder clock;
  clock.Uint(1, h.clock.trace_ns).Uint(2, h.clock.realtime_ns);
  m.Message(8, clock);
  m.Uint(9, h.start_realtime_ns);
  for (const std::string& e : h.enabled) m.Bytes(10, e);
  m.String(11, h.metric_set).String(12, h.capture_range);
  return m.bytes();
}

std::string EncodeLossMessage(const LossReport& loss) {
  uint8_t buf[8 * wire::kMaxScalarFieldBytes];
  uint8_t* end = internal::EncodeLoss(loss, buf);
  return std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
}

std::string EncodeFooter(const FooterData& f) {
  MessageBuilder m;
  m.Uint(1, f.chunks).Uint(2, f.events);
  for (int kind = 1; kind < kNumEventKinds; ++kind) {
    if (f.counts[kind] == 0) continue;
    MessageBuilder count;
    count.Uint(1, static_cast<uint64_t>(kind)).Uint(2, f.counts[kind]);
    m.Message(3, count);
  }
  m.Bytes(4, EncodeLossMessage(f.losses));
  m.Uint(5, f.first_ns).Uint(6, f.last_ns).Uint(7, f.end_realtime_ns).String(8, f.end_reason);
  return m.bytes();
}

}  // namespace

struct TraceWriter::Impl {
  std::unique_ptr<Sink> sink;
  size_t chunk_bytes;
  bool begun = false;
  bool finished = false;
  bool finish_ok = false;

  InternTable strings;
  InternTable stacks;
  uint32_t next_string_id = 1;
  uint32_t next_stack_id = 1;

  // The chunk being filled: its three repeated fields, encoded separately so
  // definitions precede events in the frame.
  ByteBuffer string_defs;
  ByteBuffer stack_defs;
  ByteBuffer events;
  ByteBuffer frame;
  uint64_t sequence = 0;
  uint64_t base_time = 0;
  uint64_t prev_start = 0;
  bool chunk_has_events = false;
  // Totals of the chunk being filled; merged into totals_ once it is written.
  uint64_t pending_events = 0;
  std::array<uint64_t, kNumEventKinds> pending_counts{};
  uint64_t pending_first = UINT64_MAX;
  uint64_t pending_last = 0;

  LossReport last_loss;
  uint64_t own_lost_events = 0;  // events of chunks the sink failed to take

  size_t chunk_size() const { return string_defs.size() + stack_defs.size() + events.size(); }

  struct Part {
    const void* data;
    size_t size;
  };

  // Frames the concatenation of `parts` as one payload (header + payload, with
  // `prefix`, the file preamble, in front) and hands it to the sink with one
  // Write call.
  bool WriteFrame(FrameType type, std::initializer_list<Part> parts, std::string* error,
                  uint64_t* bytes_written, std::string_view prefix = {}) {
    if (!sink) return false;
    size_t size = 0;
    for (const Part& part : parts) size += part.size;
    frame.Clear();
    if (size > kMaxFramePayload || !frame.Reserve(prefix.size() + kFrameHeaderSize + size)) {
      *error = "cannot frame " + std::to_string(size) + " bytes";
      return false;
    }
    frame.Append(prefix.data(), prefix.size());
    size_t header_at = frame.size();
    frame.Resize(header_at + kFrameHeaderSize);
    for (const Part& part : parts) frame.Append(part.data, part.size);
    uint8_t* header = frame.data() + header_at;
    EncodeFrameHeader(static_cast<uint8_t>(type), static_cast<uint32_t>(size),
                      Crc32c(header + kFrameHeaderSize, size), header);
    if (!sink->Write(frame.data(), frame.size())) {
      *error = sink->last_error();
      return false;
    }
    *bytes_written += frame.size();
    return true;
  }

  // Appends one Event (envelope + payload produced by `encode`) to the chunk.
  // `encode(p)` writes the payload at p and returns its end; it writes at most
  // `payload_max` bytes.
  template <typename EncodeFn>
  void AppendEvent(EventKind kind, uint32_t payload_field, uint64_t start, uint64_t end,
                   size_t payload_max, EncodeFn encode) {
    if (finished) return;  // after Finish(): nothing more reaches the sink
    if (!events.Reserve(kEventEnvelopeBytes + payload_max)) {
      ++own_lost_events;
      return;
    }
    if (!chunk_has_events) {
      base_time = start;
      prev_start = start;
      chunk_has_events = true;
    }
    // Deltas and durations are taken modulo 2^64, so any start/end pair (even
    // end < start) round-trips exactly.
    uint64_t delta_zz = wire::ZigZag64(static_cast<int64_t>(start - prev_start));
    uint64_t duration = end - start;
    prev_start = start;

    // Encode the payload at the worst-case envelope offset, then slide it down
    // behind the real envelope.
    uint8_t* base = events.end();
    uint8_t* payload = base + kEventEnvelopeBytes;
    size_t payload_size = static_cast<size_t>(encode(payload) - payload);
    size_t event_size = wire::VarintSize(wire::MakeTag(payload_field, wire::kLengthDelimited)) +
                        wire::VarintSize(payload_size) + payload_size;
    if (delta_zz) event_size += 1 + wire::VarintSize(delta_zz);
    if (duration) event_size += 1 + wire::VarintSize(duration);
    uint8_t* p = wire::WriteTag(5, wire::kLengthDelimited, base);
    p = wire::WriteVarint(event_size, p);
    p = wire::PutUint(1, delta_zz, p);
    p = wire::PutUint(2, duration, p);
    p = wire::WriteTag(payload_field, wire::kLengthDelimited, p);
    p = wire::WriteVarint(payload_size, p);
    std::memmove(p, payload, payload_size);
    events.CommitTo(p + payload_size);

    ++pending_events;
    ++pending_counts[static_cast<size_t>(kind)];
    if (start != 0) {
      pending_first = std::min(pending_first, start);
      pending_last = std::max(pending_last, std::max(start, end));
    }
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Sink> sink, const WriterOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->sink = std::move(sink);
  impl_->chunk_bytes = std::clamp(options.chunk_bytes, kMinChunkBytes, kMaxChunkBytes);
  if (!impl_->sink) error_ = "no sink";
}

TraceWriter::~TraceWriter() {
  if (impl_->begun && !impl_->finished) Finish("destroyed");
}

bool TraceWriter::Begin(const TraceHeaderData& header) {
  if (impl_->begun || !impl_->sink) return false;
  impl_->begun = true;
  std::string payload = EncodeHeader(header);
  char preamble[kFilePreambleSize];
  std::memcpy(preamble, kFileMagic, 8);
  uint32_t version = kFormatVersion;
  std::memcpy(preamble + 8, &version, 4);
  return impl_->WriteFrame(FrameType::kHeader, {{payload.data(), payload.size()}}, &error_,
                           &bytes_written_, std::string_view(preamble, sizeof(preamble)));
}

uint32_t TraceWriter::Intern(std::string_view s) {
  if (s.empty()) return 0;
  if (s.size() > kMaxStringBytes) s = s.substr(0, kMaxStringBytes);
  Impl& m = *impl_;
  size_t hash = std::hash<std::string_view>()(s);
  size_t slot;
  if (uint32_t index = m.strings.Find(s, hash, &slot)) return m.strings.IdAt(index);
  if (m.finished) return 0;  // nothing reaches the sink after Finish()
  size_t def_max = wire::BytesFieldMaxSize(s.size() + 2 + wire::kMaxScalarFieldBytes);
  // Keep chunks bounded: a definition that would overflow a non-empty chunk
  // goes into the next one (definitions may precede their users' chunk).
  if (m.chunk_size() > 0 && m.chunk_size() + def_max > m.chunk_bytes) Flush();
  if (!m.string_defs.Reserve(def_max)) return 0;
  uint32_t id = m.next_string_id++;
  uint8_t body[wire::kMaxScalarFieldBytes + 2 + wire::kMaxVarintBytes];
  uint8_t* b = wire::PutUint(1, id, body);
  b = wire::WriteTag(2, wire::kLengthDelimited, b);
  b = wire::WriteVarint(s.size(), b);
  size_t body_size = static_cast<size_t>(b - body) + s.size();
  uint8_t* p = m.string_defs.end();
  p = wire::WriteTag(3, wire::kLengthDelimited, p);
  p = wire::WriteVarint(body_size, p);
  std::memcpy(p, body, static_cast<size_t>(b - body));
  p += b - body;
  if (!s.empty()) std::memcpy(p, s.data(), s.size());  // an empty view's data() may be null
  m.string_defs.CommitTo(p + s.size());
  m.strings.Find(s, hash, &slot);  // the table may not have existed yet
  return m.strings.Insert(s, hash, slot, id);
}

uint32_t TraceWriter::InternStack(const CallStack& stack) {
  if (stack.frames.empty()) return 0;
  Impl& m = *impl_;
  // The key is the encoded frame list, which is also what gets written.
  MessageBuilder frames;
  size_t count = std::min(stack.frames.size(), kMaxStackFrames);
  for (size_t i = 0; i < count; ++i) {
    const StackFrame& f = stack.frames[i];
    MessageBuilder frame;
    frame.Uint(1, f.function_id).Uint(2, f.module_id).Uint(3, f.offset).Uint(4, f.address);
    frame.Uint(5, f.line);
    frames.Message(2, frame);
  }
  frames.Uint(3, static_cast<uint32_t>(stack.kind));
  const std::string& key = frames.bytes();
  size_t hash = std::hash<std::string_view>()(key);
  size_t slot;
  if (uint32_t index = m.stacks.Find(key, hash, &slot)) return m.stacks.IdAt(index);
  if (m.finished) return 0;
  MessageBuilder def;
  uint32_t id = m.next_stack_id++;
  def.Uint(1, id);
  def.mutable_bytes() += key;
  MessageBuilder field;
  field.Message(4, def);
  if (m.chunk_size() > 0 && m.chunk_size() + field.bytes().size() > m.chunk_bytes) Flush();
  if (!m.stack_defs.Append(field.bytes().data(), field.bytes().size())) return 0;
  m.stacks.Find(key, hash, &slot);
  return m.stacks.Insert(key, hash, slot, id);
}

#define SIGHTLINE_ADD_FIXED(Type, kind, field, start, end, Encoder)                         \
  void TraceWriter::Add(const Type& e) {                                                   \
    impl_->AppendEvent(kind, field, start, end, internal::kMaxFixedPayloadBytes,          \
                [&e](uint8_t* p) { return internal::Encoder(e, p); });                     \
    if (impl_->chunk_size() >= impl_->chunk_bytes) Flush();                                \
  }

SIGHTLINE_ADD_FIXED(KernelEvent, EventKind::kKernel, internal::kKernelField, e.start_ns, e.end_ns,
                    EncodeKernel)
SIGHTLINE_ADD_FIXED(MemcpyEvent, EventKind::kMemcpy, internal::kMemcpyField, e.start_ns, e.end_ns,
                    EncodeMemcpy)
SIGHTLINE_ADD_FIXED(MemsetEvent, EventKind::kMemset, internal::kMemsetField, e.start_ns, e.end_ns,
                    EncodeMemset)
SIGHTLINE_ADD_FIXED(MemoryEvent, EventKind::kMemory, internal::kMemoryField, e.timestamp_ns,
                    e.timestamp_ns, EncodeMemory)
SIGHTLINE_ADD_FIXED(SyncEvent, EventKind::kSync, internal::kSyncField, e.start_ns, e.end_ns,
                    EncodeSync)
SIGHTLINE_ADD_FIXED(ApiEvent, EventKind::kApi, internal::kApiField, e.start_ns, e.end_ns,
                    EncodeApi)
SIGHTLINE_ADD_FIXED(NvtxRangeEvent, EventKind::kNvtxRange, internal::kNvtxRangeField, e.start_ns,
                    e.end_ns, EncodeNvtxRange)
SIGHTLINE_ADD_FIXED(NvtxMarkerEvent, EventKind::kNvtxMarker, internal::kNvtxMarkerField,
                    e.timestamp_ns, e.timestamp_ns, EncodeNvtxMarker)
SIGHTLINE_ADD_FIXED(NcclEvent, EventKind::kNccl, internal::kNcclField, e.start_ns, e.end_ns,
                    EncodeNccl)
SIGHTLINE_ADD_FIXED(CaptureWindowEvent, EventKind::kCaptureWindow, internal::kCaptureWindowField,
                    e.start_ns, e.end_ns, EncodeCaptureWindow)
SIGHTLINE_ADD_FIXED(OverheadEvent, EventKind::kOverhead, internal::kOverheadField, e.start_ns,
                    e.end_ns, EncodeOverhead)
SIGHTLINE_ADD_FIXED(StepEvent, EventKind::kStep, internal::kStepField, e.timestamp_ns,
                    e.timestamp_ns, EncodeStep)
#undef SIGHTLINE_ADD_FIXED

void TraceWriter::Add(const MetricRangeEvent& e) {
  size_t count = std::min(e.values.size(), kMaxMetricValues);
  size_t max = internal::kMaxFixedPayloadBytes + count * internal::kMaxMetricValueBytes;
  impl_->AppendEvent(EventKind::kMetricRange, internal::kMetricRangeField, e.start_ns, e.end_ns,
              max, [&e, count](uint8_t* p) { return internal::EncodeMetricRange(e, count, p); });
  if (impl_->chunk_size() >= impl_->chunk_bytes) Flush();
}

void TraceWriter::Add(const GpuMetricSamplesEvent& e) {
  const size_t samples = e.sample_start_ns.size();
  const size_t metrics = e.metric_name_ids.size();
  if (samples > kMaxGpuMetricSamples || metrics > kMaxGpuMetrics ||
      e.sample_end_ns.size() != samples || e.values.size() != samples * metrics) {
    ++impl_->own_lost_events;
    return;
  }
  impl_->AppendEvent(EventKind::kGpuMetrics, internal::kGpuMetricsField, e.start_ns, e.end_ns,
                     internal::MaxGpuMetricsBytes(samples, metrics),
                     [&e](uint8_t* p) { return internal::EncodeGpuMetrics(e, p); });
  if (impl_->chunk_size() >= impl_->chunk_bytes) Flush();
}

void TraceWriter::Add(const LossReport& e) {
  impl_->last_loss = e;
  impl_->AppendEvent(EventKind::kLoss, internal::kLossField, e.timestamp_ns, e.timestamp_ns,
              internal::kMaxFixedPayloadBytes,
              [&e](uint8_t* p) { return internal::EncodeLoss(e, p); });
  if (impl_->chunk_size() >= impl_->chunk_bytes) Flush();
}

bool TraceWriter::Flush() {
  Impl& m = *impl_;
  if (m.finished || m.chunk_size() == 0) return ok();
  if (!m.begun) Begin(TraceHeaderData());  // events before Begin(): default header
  uint8_t head[2 * wire::kMaxScalarFieldBytes];
  uint8_t* h = wire::PutUint(1, m.sequence, head);
  h = wire::PutUint(2, m.base_time, h);
  size_t head_size = static_cast<size_t>(h - head);
  bool written = m.WriteFrame(FrameType::kChunk,
                              {{head, head_size},
                               {m.string_defs.data(), m.string_defs.size()},
                               {m.stack_defs.data(), m.stack_defs.size()},
                               {m.events.data(), m.events.size()}},
                              &error_, &bytes_written_);
  if (written) {
    ++totals_.chunks;
    totals_.events += m.pending_events;
    for (int k = 0; k < kNumEventKinds; ++k) totals_.counts[k] += m.pending_counts[k];
    if (m.pending_events && m.pending_first != UINT64_MAX) {
      totals_.first_ns = totals_.first_ns ? std::min(totals_.first_ns, m.pending_first)
                                          : m.pending_first;
      totals_.last_ns = std::max(totals_.last_ns, m.pending_last);
    }
  } else {
    if (error_.empty()) error_ = "failed to write chunk " + std::to_string(m.sequence);
    m.own_lost_events += m.pending_events;
    // Definitions in the lost chunk are gone: forget them so later uses
    // define the strings again (under new ids).
    m.strings.Clear();
    m.stacks.Clear();
  }
  ++m.sequence;
  m.string_defs.Clear();
  m.stack_defs.Clear();
  m.events.Clear();
  m.chunk_has_events = false;
  m.pending_events = 0;
  m.pending_counts.fill(0);
  m.pending_first = UINT64_MAX;
  m.pending_last = 0;
  return written;
}

bool TraceWriter::Finish(std::string_view end_reason) {
  Impl& m = *impl_;
  if (m.finished) return m.finish_ok;
  if (!m.begun) Begin(TraceHeaderData());
  Flush();
  m.finished = true;
  totals_.losses = m.last_loss;
  totals_.losses.timestamp_ns = 0;
  totals_.losses.write_errors += m.own_lost_events;
  totals_.end_realtime_ns = RealtimeNs();
  totals_.end_reason = std::string(end_reason);
  std::string footer = EncodeFooter(totals_);
  bool ok_footer =
      m.WriteFrame(FrameType::kFooter, {{footer.data(), footer.size()}}, &error_, &bytes_written_);
  bool ok_sync = m.sink && m.sink->Sync();
  bool ok_close = m.sink && m.sink->Close();
  if ((!ok_sync || !ok_close) && error_.empty() && m.sink) error_ = m.sink->last_error();
  m.finish_ok = ok_footer && ok_sync && ok_close && error_.empty();
  return m.finish_ok;
}

}  // namespace sightline::trace
