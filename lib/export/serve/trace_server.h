// lib/export/serve/trace_server.h — `sightline serve`: receives trace streams
// from many profiled processes over a unix-domain socket
// (SIGHTLINE_OUTPUT=unix:PATH) and writes one .sltrace per process.
//
// Protocol: the byte stream of a connection is exactly a .sltrace file
// (preamble, header frame, chunk frames, footer frame). The server checks
// every frame (magic, length bound, CRC32C) and writes whole frames only, with
// one write(2) each, so a client that dies mid-chunk leaves a file readable up
// to its last complete frame (the reader then reports the missing footer).
//
// Files: "<out_dir>/<host>-pid<pid>[-rank<r>].sltrace", created 0600 with
// O_EXCL|O_NOFOLLOW ("-2", "-3"... appended when the name is taken), named
// from the stream's TraceHeader.
//
// Security: the socket is created 0600 (umask 077 around bind) and every
// accepted connection is checked with SO_PEERCRED: peers whose uid differs
// from the server's effective uid are refused and logged. An existing socket
// file is replaced only when no server answers on it; any other file at the
// path is an error.
//
// Status: every `status_interval_s`, one line per process that sent data:
//   pid 4242 (node1, rank 0): 182.4k events/s, GPU util 71.3% (last 1.0 s), 12.6 MB
// GPU utilization of the window = union of the GPU activity intervals decoded
// in the window (per chunk) / the time span they cover. On a terminal the
// lines are redrawn in place. Connect/disconnect events are logged as lines.
//
// Limits (a hostile or broken client must not exhaust the server):
//  * at most `max_clients` connections at once; more wait in the listen
//    backlog (the listening socket is not polled while full);
//  * about `max_buffered_bytes` of incomplete frames over all connections.
//    Once reached, a connection is read only if it holds the largest
//    incomplete frame (so it can complete it and free the space) or less
//    than its fair share (cap / connections: small frames keep flowing);
//    the others wait in their socket buffers (their writers block:
//    backpressure, nothing lost). The total stays under the cap + one read
//    (64 KiB) per connection + the largest frame. If the largest sends
//    nothing for `stall_timeout_s` while others wait, it is dropped as
//    stalled.
//  * accept() failing for lack of file descriptors (EMFILE/ENFILE) pauses
//    accepting for 100 ms (logged once per episode) instead of spinning on
//    a listening socket that stays readable.
// Every string from a stream that reaches the log is escaped for the
// terminal (lib/trace/terminal_text.h).
//
// Threading: one thread runs a poll(2) loop; Stop() may be called from a
// signal handler (it writes one byte to a self-pipe).
#ifndef SIGHTLINE_LIB_EXPORT_SERVE_TRACE_SERVER_H_
#define SIGHTLINE_LIB_EXPORT_SERVE_TRACE_SERVER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sightline::exporter {

struct ServeOptions {
  std::string socket_path;
  std::string out_dir = ".";
  double status_interval_s = 1.0;
  FILE* log = stderr;
  // Stop after this many connections have ended (0 = run until Stop()).
  uint64_t max_connections = 0;
  // Redraw status lines in place (default: when `log` is a terminal).
  int redraw = -1;
  // Limits (see above).
  size_t max_clients = 256;
  uint64_t max_buffered_bytes = uint64_t{256} << 20;
  double stall_timeout_s = 10.0;
};

// Counters of the limits at work (tests, final summary).
struct ServeStats {
  uint64_t peak_buffered_bytes = 0;   // most incomplete-frame bytes held at once
  uint64_t peak_connections = 0;      // most connections open at once
  uint64_t accept_backoffs = 0;       // accept() pauses on EMFILE/ENFILE
  uint64_t reads_deferred = 0;        // reads skipped because the buffer cap was reached
  uint64_t stalled_dropped = 0;       // connections dropped as stalled at the cap
};

// What happened to one connection (for the final summary and tests).
struct ConnectionResult {
  std::string file;          // trace written ("" if none)
  uint32_t pid = 0;
  std::string host;
  int32_t rank = -1;
  uint64_t bytes = 0;        // bytes written to the file
  uint64_t chunks = 0;
  uint64_t events = 0;
  bool footer = false;       // stream ended cleanly with a footer
  uint64_t partial_bytes = 0;  // bytes of an incomplete last frame, dropped
  std::string error;         // protocol error or refusal reason ("" if none)
  bool refused = false;      // other user, or not a trace stream
};

class TraceServer {
 public:
  // Creates the output directory check and the listening socket.
  static absl::StatusOr<std::unique_ptr<TraceServer>> Listen(const ServeOptions& options);
  ~TraceServer();

  // Serves until Stop() or max_connections; then closes every connection
  // (their files stay readable) and removes the socket.
  absl::Status Run();
  // Async-signal-safe.
  void Stop();

  const std::vector<ConnectionResult>& results() const;
  const ServeStats& stats() const;

 private:
  struct Impl;
  explicit TraceServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sightline::exporter

#endif  // SIGHTLINE_LIB_EXPORT_SERVE_TRACE_SERVER_H_
