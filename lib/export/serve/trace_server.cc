// lib/export/serve/trace_server.cc — see trace_server.h.
#include "lib/export/serve/trace_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/export/serve/frame_assembler.h"
#include "lib/trace/reader.h"
#include "lib/trace/terminal_text.h"

namespace sightline::exporter {
namespace {

using Clock = std::chrono::steady_clock;

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Keeps file names to [A-Za-z0-9._-].
std::string SafeName(std::string_view s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
    if (out.size() >= 64) break;
  }
  return out.empty() ? "host" : out;
}

// Counts events and the union of GPU busy time of one chunk.
class ChunkStats : public trace::EventVisitor {
 public:
  uint64_t events = 0;
  std::vector<std::pair<uint64_t, uint64_t>> gpu;
  void OnKernel(const KernelEvent& e) override { Gpu(e.start_ns, e.end_ns); }
  void OnMemcpy(const MemcpyEvent& e) override { Gpu(e.start_ns, e.end_ns); }
  void OnMemset(const MemsetEvent& e) override { Gpu(e.start_ns, e.end_ns); }
  void OnSync(const SyncEvent&) override { ++events; }
  void OnApi(const ApiEvent&) override { ++events; }
  void OnNvtxRange(const NvtxRangeEvent&) override { ++events; }
  void OnNvtxMarker(const NvtxMarkerEvent&) override { ++events; }
  void OnNccl(const NcclEvent&) override { ++events; }
  void OnMetricRange(const MetricRangeEvent&) override { ++events; }
  void OnCaptureWindow(const CaptureWindowEvent&) override { ++events; }
  void OnOverhead(const OverheadEvent&) override { ++events; }
  void OnStep(const StepEvent&) override { ++events; }
  void OnLoss(const LossReport&) override { ++events; }

 private:
  void Gpu(uint64_t s, uint64_t e) {
    ++events;
    if (s != 0 && e > s) gpu.emplace_back(s, e);
  }
};

struct Connection {
  int fd = -1;
  int file_fd = -1;
  uint32_t peer_pid = 0;
  FrameAssembler frames;
  std::string header_frame;  // kept to decode chunks for status
  ConnectionResult result;
  Clock::time_point last_data;  // when bytes last arrived
  // Status window.
  uint64_t window_events = 0;
  uint64_t window_busy_ns = 0;
  uint64_t window_min_ns = UINT64_MAX, window_max_ns = 0;
  bool active_in_window = false;
};

}  // namespace

struct TraceServer::Impl {
  ServeOptions options;
  int listen_fd = -1;
  int wake_pipe[2] = {-1, -1};
  std::list<Connection> connections;
  std::vector<ConnectionResult> results;
  Clock::time_point next_status;
  size_t redrawn_lines = 0;
  bool redraw = false;
  uint64_t ended = 0;
  ServeStats stats;
  uint64_t buffered = 0;                 // incomplete-frame bytes of all connections
  const Connection* largest = nullptr;   // may read past the cap (see header)
  Clock::time_point accept_paused_until;
  bool accept_paused_logged = false;

  // Host names, command lines and errors come from the stream: escaped.
  void Log(const std::string& line) {
    ClearRedraw();
    std::fprintf(options.log, "sightline serve: %s\n", trace::EscapeTerminalText(line).c_str());
    std::fflush(options.log);
  }
  // Under the cap everyone reads; at the cap, the largest incomplete frame
  // (so it can complete) and every connection under its fair share of the
  // cap (so small frames keep flowing: no client starves behind big ones).
  bool MayRead(const Connection& c) const {
    if (buffered < options.max_buffered_bytes || &c == largest) return true;
    const size_t share = options.max_buffered_bytes / std::max<size_t>(1, connections.size());
    return c.frames.partial_bytes() < share;
  }
  void ClearRedraw() {
    if (redraw && redrawn_lines > 0) {
      std::fprintf(options.log, "\033[%zuA\033[J", redrawn_lines);
      redrawn_lines = 0;
    }
  }

  void Accept();
  void ReadFrom(Connection& c, bool* closed);
  void OnFrame(Connection& c, const Frame& f);
  void Finish(Connection& c, const std::string& why);
  absl::Status OpenTraceFile(Connection& c, const TraceHeaderData& h);
  void PrintStatus(double window_s);
};

absl::StatusOr<std::unique_ptr<TraceServer>> TraceServer::Listen(const ServeOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  const std::string& path = options.socket_path;
  if (path.empty()) return absl::InvalidArgumentError("empty socket path");
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path ", path, " is too long (",
                                                   path.size(), " bytes, at most ",
                                                   sizeof(addr.sun_path) - 1, ")"));
  }
  struct stat st;
  if (stat(options.out_dir.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("output directory ", options.out_dir, ": ",
                                            std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output directory ", options.out_dir, " is not a directory"));
  }
  if (access(options.out_dir.c_str(), W_OK | X_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("output directory ", options.out_dir,
                                                    " is not writable: ", std::strerror(errno)));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  addr.sun_family = AF_UNIX;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::AlreadyExistsError(
          absl::StrCat("socket path ", path, " exists and is not a socket"));
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 &&
                connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      return absl::AlreadyExistsError(
          absl::StrCat("another server is already listening on ", path));
    }
    unlink(path.c_str());  // stale socket of a server that died
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  mode_t old_mask = umask(077);
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int bind_errno = errno;
  umask(old_mask);
  if (rc != 0) {
    close(fd);
    return absl::PermissionDeniedError(
        absl::StrCat("cannot listen on ", path, ": ", std::strerror(bind_errno)));
  }
  chmod(path.c_str(), 0600);
  if (listen(fd, 128) != 0) {
    int e = errno;
    close(fd);
    unlink(path.c_str());
    return absl::InternalError(absl::StrCat("listen on ", path, ": ", std::strerror(e)));
  }
  impl->listen_fd = fd;
  if (pipe2(impl->wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd);
    unlink(path.c_str());
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  impl->redraw = options.redraw < 0 ? isatty(fileno(options.log)) != 0 : options.redraw != 0;
  return std::unique_ptr<TraceServer>(new TraceServer(std::move(impl)));
}

TraceServer::TraceServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceServer::~TraceServer() {
  for (Connection& c : impl_->connections) {
    if (c.fd >= 0) close(c.fd);
    if (c.file_fd >= 0) close(c.file_fd);
  }
  if (impl_->listen_fd >= 0) {
    close(impl_->listen_fd);
    unlink(impl_->options.socket_path.c_str());
  }
  for (int fd : impl_->wake_pipe) {
    if (fd >= 0) close(fd);
  }
}

void TraceServer::Stop() {
  char b = 1;
  ssize_t ignored = write(impl_->wake_pipe[1], &b, 1);
  (void)ignored;
}

const std::vector<ConnectionResult>& TraceServer::results() const { return impl_->results; }
const ServeStats& TraceServer::stats() const { return impl_->stats; }

void TraceServer::Impl::Accept() {
  while (connections.size() < std::max<size_t>(1, options.max_clients)) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The listening socket stays readable: polling it again at once
        // would spin. Pause accepting; connected clients go on.
        ++stats.accept_backoffs;
        accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
        if (!accept_paused_logged) {
          Log(absl::StrCat("cannot accept more connections (", std::strerror(errno),
                           "); retrying every 100 ms"));
          accept_paused_logged = true;
        }
      }
      return;  // EAGAIN or a transient error: poll again
    }
    accept_paused_logged = false;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        cred.uid != geteuid()) {
      ConnectionResult r;
      r.refused = true;
      r.pid = cred.pid;
      r.error = absl::StrCat("refused connection from uid ", cred.uid, " (pid ", cred.pid,
                             "): only uid ", geteuid(), " may send traces");
      Log(r.error);
      close(fd);
      results.push_back(std::move(r));
      ++ended;
      continue;
    }
    Connection& c = connections.emplace_back();
    c.fd = fd;
    c.last_data = Clock::now();
    stats.peak_connections = std::max<uint64_t>(stats.peak_connections, connections.size());
    c.peer_pid = static_cast<uint32_t>(cred.pid);
    c.result.pid = c.peer_pid;
  }
}

absl::Status TraceServer::Impl::OpenTraceFile(Connection& c, const TraceHeaderData& h) {
  c.result.pid = h.process.pid;
  c.result.host = h.process.host;
  c.result.rank = h.process.rank;
  std::string base = absl::StrCat(options.out_dir, "/", SafeName(h.process.host), "-pid",
                                  h.process.pid);
  if (h.process.rank >= 0) absl::StrAppend(&base, "-rank", h.process.rank);
  for (int attempt = 1; attempt < 1000; ++attempt) {
    std::string path = attempt == 1 ? absl::StrCat(base, ".sltrace")
                                    : absl::StrCat(base, "-", attempt, ".sltrace");
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      c.file_fd = fd;
      c.result.file = path;
      return absl::OkStatus();
    }
    if (errno != EEXIST) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
    }
  }
  return absl::AlreadyExistsError(absl::StrCat("too many files named ", base, "*"));
}

void TraceServer::Impl::OnFrame(Connection& c, const Frame& f) {
  if (!c.result.error.empty()) return;
  if (f.type == trace::FrameType::kHeader) {
    if (c.file_fd >= 0) {
      c.result.error = "second header frame in one stream";
      return;
    }
    std::string file(c.frames.preamble());
    file.append(f.bytes.data(), f.bytes.size());
    auto reader = trace::TraceReader::FromBuffer("stream header", file);
    if (!reader.ok()) {
      c.result.error = absl::StrCat("undecodable trace header: ", reader.status().message());
      return;
    }
    absl::Status opened = OpenTraceFile(c, (*reader)->header());
    if (!opened.ok()) {
      c.result.error = std::string(opened.message());
      return;
    }
    c.header_frame.assign(f.bytes.data(), f.bytes.size());
    if (!WriteAll(c.file_fd, file.data(), file.size())) {
      c.result.error = absl::StrCat("write ", c.result.file, ": ", std::strerror(errno));
      return;
    }
    c.result.bytes += file.size();
    Log(absl::StrCat("pid ", c.result.pid, " (", c.result.host, c.result.rank >= 0 ? ", rank " : "",
                     c.result.rank >= 0 ? absl::StrCat(c.result.rank) : "", ") connected -> ",
                     c.result.file));
    return;
  }
  if (c.file_fd < 0) {
    c.result.error = "stream sent events before its header";
    return;
  }
  if (!WriteAll(c.file_fd, f.bytes.data(), f.bytes.size())) {
    c.result.error = absl::StrCat("write ", c.result.file, ": ", std::strerror(errno));
    return;
  }
  c.result.bytes += f.bytes.size();
  if (f.type == trace::FrameType::kFooter) {
    c.result.footer = true;
    return;
  }
  ++c.result.chunks;
  // Decode the chunk for the live status (events, GPU busy time).
  std::string buf(c.frames.preamble());
  buf += c.header_frame;
  buf.append(f.bytes.data(), f.bytes.size());
  auto reader = trace::TraceReader::FromBuffer("stream chunk", buf);
  if (!reader.ok()) return;
  ChunkStats stats;
  if (!(*reader)->NextChunk(stats).ok()) return;
  c.result.events += stats.events;
  c.window_events += stats.events;
  c.active_in_window = true;
  if (!stats.gpu.empty()) {
    std::sort(stats.gpu.begin(), stats.gpu.end());
    uint64_t busy = 0, cur_s = stats.gpu[0].first, cur_e = stats.gpu[0].second;
    for (const auto& [s, e] : stats.gpu) {
      if (s > cur_e) {
        busy += cur_e - cur_s;
        cur_s = s;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
    }
    busy += cur_e - cur_s;
    c.window_busy_ns += busy;
    c.window_min_ns = std::min(c.window_min_ns, stats.gpu.front().first);
    for (const auto& iv : stats.gpu) c.window_max_ns = std::max(c.window_max_ns, iv.second);
  }
}

void TraceServer::Impl::ReadFrom(Connection& c, bool* closed) {
  char buf[1 << 16];
  for (int round = 0; round < 64; ++round) {  // stay fair to other clients
    if (!MayRead(c)) {
      ++stats.reads_deferred;
      return;
    }
    ssize_t n = read(c.fd, buf, sizeof(buf));
    if (n > 0) {
      c.last_data = Clock::now();
      buffered -= c.frames.partial_bytes();
      bool ok = c.frames.Feed(buf, static_cast<size_t>(n),
                              [&](const Frame& f) { OnFrame(c, f); });
      buffered += c.frames.partial_bytes();
      stats.peak_buffered_bytes = std::max(stats.peak_buffered_bytes, buffered);
      if (!ok && c.result.error.empty()) {
        c.result.error = c.frames.error();
        if (!c.frames.has_preamble() || c.file_fd < 0) c.result.refused = true;
      }
      if (!c.result.error.empty()) {
        Finish(c, c.result.error);
        *closed = true;
        return;
      }
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      Finish(c, n == 0 ? "" : std::strerror(errno));
      *closed = true;
    }
    return;
  }
}

void TraceServer::Impl::Finish(Connection& c, const std::string& why) {
  c.result.partial_bytes = c.frames.partial_bytes();
  buffered -= c.result.partial_bytes;
  if (largest == &c) largest = nullptr;
  std::string what;
  if (!c.result.error.empty()) {
    what = absl::StrCat("dropped: ", c.result.error);
  } else if (c.result.footer) {
    what = "finished cleanly";
  } else if (c.result.partial_bytes > 0) {
    what = absl::StrCat("disconnected mid-frame (", c.result.partial_bytes,
                        " bytes of an incomplete frame dropped; file readable up to its last "
                        "complete frame)");
  } else {
    what = absl::StrCat("disconnected without a footer", why.empty() ? "" : " (", why,
                        why.empty() ? "" : ")");
  }
  if (c.result.file.empty()) {
    Log(absl::StrCat("connection from pid ", c.peer_pid, " ", what));
  } else {
    Log(absl::StrFormat("pid %u: %s; %llu events, %.1f MB in %s", c.result.pid, what,
                        static_cast<unsigned long long>(c.result.events),
                        static_cast<double>(c.result.bytes) / 1e6, c.result.file));
  }
  if (c.file_fd >= 0) close(c.file_fd);
  if (c.fd >= 0) close(c.fd);
  c.file_fd = c.fd = -1;
  results.push_back(c.result);
  ++ended;
}

void TraceServer::Impl::PrintStatus(double window_s) {
  std::vector<std::string> lines;
  for (Connection& c : connections) {
    if (c.result.file.empty()) continue;
    if (!c.active_in_window && !redraw) continue;
    double rate = static_cast<double>(c.window_events) / std::max(window_s, 1e-3);
    std::string util = "GPU util n/a";
    if (c.window_max_ns > c.window_min_ns) {
      util = absl::StrFormat("GPU util %.1f%%",
                             100.0 * static_cast<double>(c.window_busy_ns) /
                                 static_cast<double>(c.window_max_ns - c.window_min_ns));
    }
    std::string rate_text = rate >= 1e6   ? absl::StrFormat("%.2fM", rate / 1e6)
                            : rate >= 1e3 ? absl::StrFormat("%.1fk", rate / 1e3)
                                          : absl::StrFormat("%.0f", rate);
    lines.push_back(absl::StrFormat(
        "pid %u (%s%s): %s events/s, %s (last %.1f s), %llu events, %.1f MB", c.result.pid,
        c.result.host, c.result.rank >= 0 ? absl::StrCat(", rank ", c.result.rank) : "",
        rate_text, util, window_s, static_cast<unsigned long long>(c.result.events),
        static_cast<double>(c.result.bytes) / 1e6));
    c.window_events = 0;
    c.window_busy_ns = 0;
    c.window_min_ns = UINT64_MAX;
    c.window_max_ns = 0;
    c.active_in_window = false;
  }
  ClearRedraw();
  for (const std::string& l : lines) {
    std::fprintf(options.log, "sightline serve: %s\n", trace::EscapeTerminalText(l).c_str());
  }
  if (redraw) redrawn_lines = lines.size();
  std::fflush(options.log);
}

absl::Status TraceServer::Run() {
  Impl& s = *impl_;
  auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.05, s.options.status_interval_s)));
  Clock::time_point window_start = Clock::now();
  s.next_status = window_start + interval;
  bool stopping = false;
  while (!stopping) {
    auto now = Clock::now();
    // At the buffer cap only the largest incomplete frame is read; if its
    // sender stalls while others wait, it is dropped.
    s.largest = nullptr;
    for (const Connection& c : s.connections) {
      if (s.largest == nullptr || c.frames.partial_bytes() > s.largest->frames.partial_bytes()) {
        s.largest = &c;
      }
    }
    if (s.largest != nullptr && s.buffered >= s.options.max_buffered_bytes &&
        s.connections.size() > 1 &&
        now - s.largest->last_data > std::chrono::duration<double>(s.options.stall_timeout_s)) {
      Connection& stalled = const_cast<Connection&>(*s.largest);
      stalled.result.error = absl::StrCat(
          "stalled mid-frame for ", s.options.stall_timeout_s,
          " s while the server's buffer cap was reached and other clients waited");
      ++s.stats.stalled_dropped;
      s.Finish(stalled, stalled.result.error);
      s.connections.remove_if([](const Connection& c) { return c.fd < 0; });
      continue;
    }
    bool accepting = s.connections.size() < std::max<size_t>(1, s.options.max_clients) &&
                     now >= s.accept_paused_until;
    std::vector<pollfd> fds;
    fds.push_back({s.wake_pipe[0], POLLIN, 0});
    // A negative descriptor is skipped by poll(2).
    fds.push_back({accepting ? s.listen_fd : -1, POLLIN, 0});
    std::vector<Connection*> order;
    for (Connection& c : s.connections) {
      fds.push_back({s.MayRead(c) ? c.fd : -1, POLLIN, 0});
      order.push_back(&c);
    }
    auto wake = s.next_status;
    if (!accepting && now < s.accept_paused_until) wake = std::min(wake, s.accept_paused_until);
    if (s.buffered >= s.options.max_buffered_bytes) {
      wake = std::min(wake, now + std::chrono::milliseconds(500));  // stall check
    }
    int timeout_ms = static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1));
    int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    if (n > 0) {
      if (fds[0].revents) stopping = true;
      if (accepting && (fds[1].revents & POLLIN)) s.Accept();
      for (size_t i = 0; i < order.size(); ++i) {
        if (fds[i + 2].revents == 0) continue;
        bool closed = false;
        s.ReadFrom(*order[i], &closed);
      }
      s.connections.remove_if([](const Connection& c) { return c.fd < 0; });
    }
    now = Clock::now();
    if (now >= s.next_status) {
      s.PrintStatus(std::chrono::duration<double>(now - window_start).count());
      window_start = now;
      s.next_status = now + interval;
    }
    if (s.options.max_connections > 0 && s.ended >= s.options.max_connections &&
        s.connections.empty()) {
      break;
    }
  }
  // Drain what the clients already sent, then close: files stay readable.
  for (Connection& c : s.connections) {
    bool closed = false;
    s.ReadFrom(c, &closed);
    if (!closed) s.Finish(c, "server stopped");
  }
  s.connections.clear();
  close(s.listen_fd);
  unlink(s.options.socket_path.c_str());
  s.listen_fd = -1;
  return absl::OkStatus();
}

}  // namespace sightline::exporter
