// TraceReader: frames → CRC check → chunk decoding, with resynchronisation
// after damage and an exact account of what was lost.
//
// Bytes come from an InputWindow (input_window.h): the caller's buffer, or
// the file read with pread() one block at a time. Every access asks the
// window first, and a window that comes back empty means the file shrank
// (or a read failed) while being read: the frame is then looked at again
// against the smaller size, so the result is exactly that of a file
// truncated there, plus one problem saying that the file shrank.
#include "lib/trace/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/trace/chunk_decoder.h"
#include "lib/trace/crc32c.h"
#include "lib/trace/format.h"
#include "lib/trace/input_window.h"
#include "lib/trace/input_file.h"

namespace sightline::trace {

// ---- StringTable ------------------------------------------------------------

std::string_view StringTable::Get(uint32_t id) const {
  if (id < strings_.size()) {
    if (defined_[id]) return strings_[id];
  } else if (auto it = sparse_.find(id); it != sparse_.end()) {
    return it->second;
  }
  if (auto it = unknown_.find(id); it != unknown_.end()) return it->second;
  if (unknown_.size() >= kMaxUnknownTexts) return "<unknown string>";
  return unknown_.emplace(id, absl::StrCat("<unknown string ", id, ">")).first->second;
}

bool StringTable::Has(uint32_t id) const {
  if (id < strings_.size()) return defined_[id];
  return sparse_.count(id) != 0;
}

void StringTable::Set(uint32_t id, std::string value) {
  if (id == 0) return;
  if (id < strings_.size()) {
    if (!defined_[id]) ++defined_count_;
    defined_[id] = true;
    strings_[id] = std::move(value);
    return;
  }
  // Grow the dense part only while it stays proportional to the definitions.
  if (id <= 2 * defined_count_ + 1024) {
    // (id >= size(): if it is defined, it is in the sparse part; the new
    // value replaces it.)
    if (sparse_.erase(id) == 0) ++defined_count_;
    size_t old_size = strings_.size();
    strings_.resize(id + 1);
    defined_.resize(id + 1, false);
    defined_[id] = true;
    strings_[id] = std::move(value);
    // Move sparse entries that now fall into the dense range (cost bounded
    // by the growth, which is bounded by the definitions seen).
    for (size_t i = old_size; i < id && !sparse_.empty(); ++i) {
      auto s = sparse_.find(static_cast<uint32_t>(i));
      if (s == sparse_.end()) continue;
      defined_[i] = true;
      strings_[i] = std::move(s->second);
      sparse_.erase(s);
    }
    return;
  }
  auto [it, inserted] = sparse_.try_emplace(id);
  if (inserted) ++defined_count_;
  it->second = std::move(value);
}

// ---- TraceReader ------------------------------------------------------------

namespace {

constexpr size_t kMaxProblemsListed = 100;

struct FrameHead {
  uint32_t magic;
  uint8_t type;
  uint32_t length;
  uint32_t crc;
};

FrameHead ParseFrameHead(const uint8_t* p) {
  FrameHead h;
  std::memcpy(&h.magic, p, 4);
  h.type = p[4];
  std::memcpy(&h.length, p + 8, 4);
  std::memcpy(&h.crc, p + 12, 4);
  return h;
}

const char* FrameTypeName(uint8_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kHeader: return "header";
    case FrameType::kChunk: return "chunk";
    case FrameType::kFooter: return "footer";
  }
  return "unknown";
}

}  // namespace

struct TraceReader::Impl {
  std::string name;
  ReaderOptions options;
  // The input; reading a file costs O(block + frame) memory, never its size.
  std::unique_ptr<internal::InputWindow> input;
  uint64_t size() const { return input->size(); }
  uint64_t pos = 0;
  int shrinks_reported = 0;
  bool finished = false;
  bool footer_seen = false;
  bool data_after_footer_reported = false;
  bool after_damage = false;    // a frame was skipped; candidates are checked harder
  bool resync_given_up = false;
  uint64_t next_sequence = 0;
  uint64_t problems_dropped = 0;
  bool has_loss_event = false;

  TraceHeaderData header;
  StringTable strings;
  std::unordered_map<uint32_t, CallStack> stacks;
  Integrity integrity;
  internal::ChunkDecoder decoder;

  void Problem(std::string text) {
    if (integrity.problems.size() < kMaxProblemsListed) {
      integrity.problems.push_back(std::move(text));
    } else {
      ++problems_dropped;
    }
  }

  void Finalize();
  // Records damage and skips [pos, next), `next` being the next frame magic.
  absl::StatusOr<bool> Damage(std::string text, uint64_t next);
  // The input ends inside the frame at pos (`present` bytes of it).
  absl::StatusOr<bool> Truncated(std::string text, uint64_t present);
  // The window returned nothing: a read error ends the read with a Status;
  // a shrink is reported once and the frame at pos is read again.
  absl::StatusOr<bool> InputEnded();
  // Reports a shrink of the file noticed by the window while reading the
  // frame at `at` (once per shrink).
  void NoteShrink(uint64_t at);
  // Without resync: the first damage ends the read (integrity finalised).
  absl::Status StopAtDamage(const std::string& problem) {
    finished = true;
    Finalize();
    return absl::DataLossError(absl::StrCat(name, ": ", problem));
  }
  absl::StatusOr<bool> ReadFrame(EventVisitor& visitor);
};

absl::StatusOr<bool> TraceReader::Impl::Damage(std::string text, uint64_t next) {
  Problem(text);
  after_damage = true;
  integrity.bytes_skipped += next - pos;
  pos = next;
  if (!options.resync) return StopAtDamage(text);
  return false;
}

absl::StatusOr<bool> TraceReader::Impl::Truncated(std::string text, uint64_t present) {
  Problem(text);
  integrity.truncated = true;
  integrity.bytes_skipped += present;
  pos = size();
  if (!options.resync) return StopAtDamage(text);
  return false;
}

void TraceReader::Impl::NoteShrink(uint64_t at) {
  if (input->shrink_count() == shrinks_reported) return;
  shrinks_reported = input->shrink_count();
  integrity.shrank = true;
  integrity.file_bytes = size();
  Problem(absl::StrFormat("%s shrank while being read: %d bytes when opened, it ended at byte %d "
                          "(reading the frame at byte %d)",
                          name, input->size_at_open(), size(), at));
}

absl::StatusOr<bool> TraceReader::Impl::InputEnded() {
  if (int err = input->read_errno(); err != 0) {
    std::string text = absl::StrFormat("read error at byte %d: %s; the rest of the file was not "
                                       "read",
                                       input->read_error_at(), std::strerror(err));
    Problem(text);
    finished = true;
    Finalize();
    return absl::DataLossError(absl::StrCat(name, ": ", text));
  }
  NoteShrink(pos);
  return false;  // pos unchanged: NextChunk looks at this frame again
}

void TraceReader::Impl::Finalize() {
  Integrity& in = integrity;
  in.input_window_bytes = input->window_bytes();
  if (in.footer.has_value()) {
    const FooterData& f = *in.footer;
    in.losses = f.losses;
    in.events_missing = f.events > in.events_read ? f.events - in.events_read : 0;
    if (in.events_missing > 0) {
      Problem(absl::StrCat(in.events_missing, " of the ", f.events,
                           " events listed in the footer were not read"));
    }
  }
  if (problems_dropped > 0) {
    in.problems.push_back(absl::StrCat("... and ", problems_dropped, " more problems"));
  }
  in.complete = in.footer.has_value() && in.problems.empty();
  if (in.complete) {
    in.reason.clear();
    return;
  }
  std::string reason = in.problems.empty() ? "" : in.problems.front();
  if (in.problems.size() > 1) absl::StrAppend(&reason, " (", in.problems.size(), " problems)");
  if (!in.footer.has_value()) {
    absl::StrAppend(&reason, reason.empty() ? "" : "; ",
                    "no footer: the writer did not finish (killed, crashed or still "
                    "running); ",
                    in.chunks_read, " complete chunks read up to byte ", in.bytes_accepted);
  }
  in.reason = std::move(reason);
}

absl::StatusOr<bool> TraceReader::Impl::ReadFrame(EventVisitor& visitor) {
  const uint64_t at = pos;
  const uint64_t remaining = size() - at;
  if (remaining < kFrameHeaderSize) {
    return Truncated(absl::StrFormat("truncated at byte %d: partial frame header (%d of %d bytes)",
                                     at, remaining, kFrameHeaderSize),
                     remaining);
  }
  const uint8_t* head_bytes = input->Get(at, kFrameHeaderSize);
  if (head_bytes == nullptr) return InputEnded();
  FrameHead head = ParseFrameHead(head_bytes);
  if (head.magic != kFrameMagic) {
    uint64_t next;
    if (!input->FindFrameMagic(at + 1, &next)) return InputEnded();
    return Damage(
        next < size() ? absl::StrFormat("garbage at byte %d: no frame magic; skipped %d bytes to "
                                        "the next frame",
                                        at, next - at)
                      : absl::StrFormat("garbage at byte %d: no frame magic in the last %d bytes",
                                        at, size() - at),
        next);
  }
  if (head.length > kMaxFramePayload) {
    uint64_t next;
    if (!input->FindFrameMagic(at + 4, &next)) return InputEnded();
    return Damage(absl::StrFormat("damaged frame at byte %d: length %d exceeds the %d byte limit",
                                  at, head.length, kMaxFramePayload),
                  next);
  }
  const uint64_t payload_at = at + kFrameHeaderSize;
  if (head.length > size() - payload_at) {
    uint64_t next;
    if (!input->FindFrameMagic(at + 4, &next)) return InputEnded();
    if (next < size()) {  // a later frame exists: the length is damaged
      return Damage(absl::StrFormat("damaged frame at byte %d: length %d runs past the next frame "
                                    "at byte %d",
                                    at, head.length, next),
                    next);
    }
    return Truncated(absl::StrFormat("truncated at byte %d: %s frame of %d bytes, only %d present",
                                     at, FrameTypeName(head.type),
                                     head.length + kFrameHeaderSize, remaining),
                     remaining);
  }
  // Bounded resync. After damage, every "SLFR" in the damaged bytes is a
  // candidate frame, and a candidate claiming a long payload costs a CRC over
  // it: a file of fake headers (each claiming megabytes that overlap the
  // next ones) made the work quadratic in the file size. So, after damage:
  //  - a candidate must end where another frame starts (or at the end of the
  //    file) — O(1) to check — or fit in a CRC budget of one file size for
  //    unchained candidates; otherwise it is skipped unverified;
  //  - frames failing their CRC may in all cost 4x the file size (+ one
  //    maximal frame); past that the rest of the file is skipped with a
  //    problem that says so. Genuine frames pass their CRC and cost nothing
  //    of the budget, so real damage never gets near it.
  const uint64_t end = payload_at + head.length;
  if (after_damage) {
    const uint64_t file = size();
    if (integrity.crc_failed_bytes > 4 * file + kMaxFramePayload) {
      if (!resync_given_up) {
        resync_given_up = true;
        Problem(absl::StrFormat("stopped resynchronising at byte %d: damaged frames before it "
                                "cost %d bytes of CRC checks (bound: 4x the file); the "
                                "remaining %d bytes were skipped",
                                at, integrity.crc_failed_bytes, file - at));
      }
      integrity.bytes_skipped += file - at;
      pos = file;
      if (!options.resync) return StopAtDamage(integrity.problems.back());
      return false;
    }
    const bool chained = end + 4 > file || input->FrameMagicAt(end);
    if (!chained && integrity.crc_failed_bytes + head.length > file) {
      ++integrity.frames_unverified;
      uint64_t next;
      if (!input->FindFrameMagic(at + 4, &next)) return InputEnded();
      return Damage(absl::StrFormat("unverified frame at byte %d after damage: its %d-byte "
                                    "payload does not end at a frame; skipped",
                                    at, head.length),
                    next);
    }
  }
  // Header and payload in one piece, checked and decoded from the same bytes.
  const uint8_t* frame = input->Get(at, kFrameHeaderSize + head.length);
  if (frame == nullptr) return InputEnded();
  std::string_view payload(reinterpret_cast<const char*>(frame + kFrameHeaderSize), head.length);
  integrity.crc_bytes += head.length;
  if (Crc32c(payload.data(), payload.size()) != head.crc) {
    integrity.crc_failed_bytes += head.length;
    uint64_t next;
    if (!input->FindFrameMagic(payload_at, &next)) return InputEnded();
    if (head.type == static_cast<uint8_t>(FrameType::kChunk)) ++integrity.chunks_damaged;
    return Damage(absl::StrFormat("bad CRC at byte %d (%s frame of %d bytes); skipped", at,
                                  FrameTypeName(head.type), head.length),
                  next);
  }
  pos = payload_at + head.length;
  if (footer_seen && !data_after_footer_reported) {
    data_after_footer_reported = true;
    Problem(absl::StrFormat("data after the footer at byte %d", at));
  }
  switch (static_cast<FrameType>(head.type)) {
    case FrameType::kHeader:
      Problem(absl::StrFormat("unexpected header frame at byte %d (concatenated traces?); skipped",
                              at));
      integrity.bytes_skipped += pos - at;
      return false;
    case FrameType::kFooter: {
      FooterData footer;
      internal::DecodeError error;
      if (!internal::DecodeFooter(payload, &footer, &error)) {
        Problem(absl::StrFormat("undecodable footer at byte %d: %s", at, error.what));
        integrity.bytes_skipped += pos - at;
        return false;
      }
      integrity.footer = std::move(footer);
      footer_seen = true;
      integrity.bytes_accepted += pos - at;
      return false;
    }
    case FrameType::kChunk: {
      internal::ChunkStats stats;
      internal::DecodeError error;
      bool ok = decoder.Decode(payload, &strings, &stacks, visitor, &stats, &error);
      // Account for what was visited, even from a chunk that turned out bad.
      integrity.events_read += stats.events;
      for (int k = 0; k < kNumEventKinds; ++k) integrity.counts[k] += stats.counts[k];
      integrity.invalid_events += stats.invalid_events;
      if (stats.events && stats.first_ns != UINT64_MAX) {
        integrity.first_ns =
            integrity.first_ns ? std::min(integrity.first_ns, stats.first_ns) : stats.first_ns;
        integrity.last_ns = std::max(integrity.last_ns, stats.last_ns);
      }
      if (stats.has_last_loss) {
        has_loss_event = true;
        if (!integrity.footer) integrity.losses = stats.last_loss;
      }
      if (stats.stacks_over_limit) {
        Problem(absl::StrFormat("chunk at byte %d: %d call stacks ignored (over the limit)", at,
                                stats.stacks_over_limit));
      }
      if (stats.string_conflicts) {
        Problem(absl::StrFormat("chunk at byte %d redefines %d string ids with different text", at,
                                stats.string_conflicts));
      }
      if (!ok) {
        ++integrity.chunks_damaged;
        integrity.bytes_skipped += pos - at;
        std::string text = absl::StrFormat("undecodable chunk at byte %d: %s at payload offset %d",
                                           at, error.what, error.offset);
        Problem(text);
        if (!options.resync) return StopAtDamage(text);
        return true;
      }
      ++integrity.chunks_read;
      integrity.bytes_accepted += pos - at;
      if (stats.sequence != next_sequence) {
        if (stats.sequence > next_sequence) {
          integrity.chunks_missing += stats.sequence - next_sequence;
          Problem(absl::StrFormat("chunks %d to %d missing before byte %d", next_sequence,
                                  stats.sequence - 1, at));
        } else {
          Problem(absl::StrFormat("chunk sequence goes back from %d to %d at byte %d",
                                  next_sequence, stats.sequence, at));
        }
      }
      next_sequence = stats.sequence + 1;
      return true;
    }
  }
  Problem(absl::StrFormat("unknown frame type %d at byte %d; skipped", head.type, at));
  integrity.bytes_skipped += pos - at;
  return false;
}

TraceReader::TraceReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceReader::~TraceReader() = default;

const std::string& TraceReader::name() const { return impl_->name; }
const TraceHeaderData& TraceReader::header() const { return impl_->header; }
const StringTable& TraceReader::strings() const { return impl_->strings; }
const Integrity& TraceReader::integrity() const { return impl_->integrity; }
uint64_t TraceReader::position() const { return impl_->pos; }

const CallStack* TraceReader::stack(uint32_t id) const {
  auto it = impl_->stacks.find(id);
  return it == impl_->stacks.end() ? nullptr : &it->second;
}

absl::StatusOr<bool> TraceReader::NextChunk(EventVisitor& visitor) {
  Impl& m = *impl_;
  while (!m.finished) {
    if (m.pos >= m.size()) {
      m.finished = true;
      m.Finalize();
      break;
    }
    absl::StatusOr<bool> chunk = m.ReadFrame(visitor);
    if (!chunk.ok()) return chunk;
    if (*chunk) return true;
  }
  return false;
}

absl::Status TraceReader::ReadAll(EventVisitor& visitor) {
  while (true) {
    absl::StatusOr<bool> more = NextChunk(visitor);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
  }
}

namespace {

// Validates the preamble and the header frame. Sets *input_ended (and
// returns OK) when the window comes back empty: the caller decides.
absl::Status TryReadPreambleAndHeader(const std::string& name, internal::InputWindow& input,
                                      TraceHeaderData* header, uint64_t* header_end,
                                      bool* input_ended) {
  *input_ended = false;
  const uint64_t size = input.size();
  auto get = [&](uint64_t offset, size_t n) {
    const uint8_t* p = input.Get(offset, n);
    if (p == nullptr) *input_ended = true;
    return p;
  };
  if (size == 0) return absl::InvalidArgumentError(absl::StrCat(name, ": empty file"));
  size_t magic_present = std::min<uint64_t>(size, sizeof(kFileMagic));
  const uint8_t* magic = get(0, magic_present);
  if (magic == nullptr) return absl::OkStatus();
  if (std::memcmp(magic, kFileMagic, magic_present) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a sightline trace (bad magic at byte 0)"));
  }
  if (size < kFilePreambleSize) {
    return absl::DataLossError(absl::StrFormat(
        "%s: truncated at byte %d: the %d-byte file preamble is incomplete", name, size,
        kFilePreambleSize));
  }
  const uint8_t* version_bytes = get(8, 4);
  if (version_bytes == nullptr) return absl::OkStatus();
  uint32_t version;
  std::memcpy(&version, version_bytes, 4);
  if (version == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": damaged preamble at byte 8: format version 0"));
  }
  if (version > kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: format version %d (at byte 8) is newer than this reader supports (%d); "
        "use a newer sightline",
        name, version, kFormatVersion));
  }
  const uint64_t at = kFilePreambleSize;
  if (size - at < kFrameHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "%s: truncated header at byte %d: %d of %d frame header bytes present", name, at,
        size - at, kFrameHeaderSize));
  }
  const uint8_t* head_bytes = get(at, kFrameHeaderSize);
  if (head_bytes == nullptr) return absl::OkStatus();
  FrameHead head = ParseFrameHead(head_bytes);
  if (head.magic != kFrameMagic) {
    return absl::DataLossError(
        absl::StrFormat("%s: damaged header at byte %d: no frame magic", name, at));
  }
  if (head.type != static_cast<uint8_t>(FrameType::kHeader)) {
    return absl::DataLossError(absl::StrFormat(
        "%s: damaged header at byte %d: first frame has type %d, expected a header", name, at,
        head.type));
  }
  if (head.length > kMaxFramePayload) {
    return absl::DataLossError(absl::StrFormat(
        "%s: damaged header at byte %d: length %d exceeds the limit", name, at, head.length));
  }
  if (head.length > size - at - kFrameHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "%s: truncated header at byte %d: frame of %d bytes, only %d present", name, at,
        head.length + kFrameHeaderSize, size - at));
  }
  const uint8_t* frame = get(at, kFrameHeaderSize + head.length);
  if (frame == nullptr) return absl::OkStatus();
  const uint8_t* payload = frame + kFrameHeaderSize;
  if (Crc32c(payload, head.length) != head.crc) {
    return absl::DataLossError(
        absl::StrFormat("%s: damaged header at byte %d: CRC mismatch", name, at));
  }
  internal::DecodeError error;
  if (!internal::DecodeHeader(
          std::string_view(reinterpret_cast<const char*>(payload), head.length), header,
          &error)) {
    return absl::DataLossError(absl::StrFormat("%s: damaged header at byte %d: %s", name,
                                               at + kFrameHeaderSize + error.offset, error.what));
  }
  header->format_version = version;
  *header_end = at + kFrameHeaderSize + head.length;
  return absl::OkStatus();
}

// TryReadPreambleAndHeader until it is not cut short by a shrinking file
// (each retry sees a strictly smaller size, so this ends).
absl::Status ReadPreambleAndHeader(const std::string& name, internal::InputWindow& input,
                                   TraceHeaderData* header, uint64_t* header_end) {
  while (true) {
    bool input_ended = false;
    absl::Status status =
        TryReadPreambleAndHeader(name, input, header, header_end, &input_ended);
    if (int err = input.read_errno(); err != 0) {
      return absl::DataLossError(absl::StrFormat("%s: read error at byte %d: %s", name,
                                                 input.read_error_at(), std::strerror(err)));
    }
    if (input_ended) continue;
    if (!status.ok() && input.shrink_count() > 0) {
      return absl::Status(status.code(),
                          absl::StrFormat("%s (the file shrank while being read: %d bytes when "
                                          "opened, it ended at byte %d)",
                                          status.message(), input.size_at_open(), input.size()));
    }
    return status;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::FromInput(
    std::string name, std::unique_ptr<internal::InputWindow> input,
    const ReaderOptions& options) {
  auto impl = std::make_unique<TraceReader::Impl>();
  impl->name = std::move(name);
  impl->options = options;
  impl->input = std::move(input);
  uint64_t header_end = 0;
  absl::Status status = ReadPreambleAndHeader(impl->name, *impl->input, &impl->header,
                                              &header_end);
  if (!status.ok()) return status;
  impl->pos = header_end;
  impl->integrity.file_bytes = impl->size();
  impl->integrity.bytes_accepted = header_end;
  // Shrank while the header was read, but the header is whole: say so.
  if (impl->input->shrink_count() > 0) impl->NoteShrink(kFilePreambleSize);
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::FromBuffer(std::string name,
                                                                     std::string_view data,
                                                                     const ReaderOptions& options) {
  return FromInput(std::move(name), std::make_unique<internal::InputWindow>(data), options);
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path,
                                                               const ReaderOptions& options) {
  // Never blocks on a FIFO, never reads a non-regular file (input_file.h).
  absl::StatusOr<InputFile> file = OpenInputFile(path);
  if (!file.ok()) return file.status();
  int fd = file->fd;
  if (file->size == 0) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty file"));
  }
  // Frames are read in order: let the kernel read ahead generously.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  // The window owns fd from here on.
  return FromInput(path,
                   std::make_unique<internal::InputWindow>(
                       fd, file->size, options.read_block_bytes),
                   options);
}

}  // namespace sightline::trace
