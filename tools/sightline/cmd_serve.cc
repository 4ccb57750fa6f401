// sightline serve --listen unix:PATH [--out DIR] [--status-interval S]
//                 [--max-connections N] [--max-clients N] [--max-buffered-mb MB]
//                 [--stall-timeout S]
// (limits: see lib/export/serve/trace_server.h)
//
// Receives trace streams from many profiled processes at once
// (SIGHTLINE_OUTPUT=unix:PATH), writes one .sltrace per process into DIR,
// prints a live status line per process on stderr, refuses other users, and
// stops cleanly on SIGINT/SIGTERM (files of connected clients stay readable
// up to their last complete frame). See lib/export/serve/trace_server.h.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/export/serve/trace_server.h"
#include "tools/sightline/cli_support.h"
#include "tools/sightline/command.h"

namespace sightline::cli {
namespace {

exporter::TraceServer* g_server = nullptr;

void OnStopSignal(int) {
  if (g_server) g_server->Stop();
}

int RunServe(const std::vector<std::string>& args) {
  exporter::ServeOptions options;
  std::string listen, interval, max_connections, max_clients, max_buffered_mb, stall_timeout;
  ArgScanner scan(args);
  while (!scan.Done()) {
    bool missing = false;
    if (scan.Value("--listen", &listen, &missing) || scan.Value("--out", &options.out_dir, &missing) ||
        scan.Value("-o", &options.out_dir, &missing) ||
        scan.Value("--status-interval", &interval, &missing) ||
        scan.Value("--max-connections", &max_connections, &missing) ||
        scan.Value("--max-clients", &max_clients, &missing) ||
        scan.Value("--max-buffered-mb", &max_buffered_mb, &missing) ||
        scan.Value("--stall-timeout", &stall_timeout, &missing)) {
      if (missing) return UsageError("serve: " + scan.last_option() + " needs a non-empty value (see --help)");
      continue;
    }
    return UsageError("serve: unexpected argument '" + scan.Next() +
                      "' (usage: sightline serve --listen unix:PATH [--out DIR])");
  }
  if (listen.empty()) return UsageError("serve: missing --listen unix:PATH");
  if (listen.compare(0, 5, "unix:") != 0 || listen.size() == 5) {
    return UsageError("serve: --listen expects unix:PATH (got '" + listen + "')");
  }
  options.socket_path = listen.substr(5);
  if (!interval.empty()) {
    absl::StatusOr<double> v = ParseNumberOption("--status-interval", interval, 0.05, 86400);
    if (!v.ok()) return UsageError("serve: " + std::string(v.status().message()));
    options.status_interval_s = *v;
  }
  if (!max_connections.empty()) {
    absl::StatusOr<uint64_t> v =
        ParseCountOption("--max-connections", max_connections, 1, uint64_t{1} << 40);
    if (!v.ok()) return UsageError("serve: " + std::string(v.status().message()));
    options.max_connections = *v;
  }
  if (!max_clients.empty()) {
    absl::StatusOr<uint64_t> v = ParseCountOption("--max-clients", max_clients, 1, 65536);
    if (!v.ok()) return UsageError("serve: " + std::string(v.status().message()));
    options.max_clients = static_cast<size_t>(*v);
  }
  if (!max_buffered_mb.empty()) {
    absl::StatusOr<uint64_t> v =
        ParseCountOption("--max-buffered-mb", max_buffered_mb, 1, 1 << 20);
    if (!v.ok()) return UsageError("serve: " + std::string(v.status().message()));
    options.max_buffered_bytes = *v << 20;
  }
  if (!stall_timeout.empty()) {
    absl::StatusOr<double> v = ParseNumberOption("--stall-timeout", stall_timeout, 0.1, 86400);
    if (!v.ok()) return UsageError("serve: " + std::string(v.status().message()));
    options.stall_timeout_s = *v;
  }
  auto server = exporter::TraceServer::Listen(options);
  if (!server.ok()) return UsageError("serve: " + std::string(server.status().message()));
  g_server = server->get();
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr,
               "sightline serve: listening on unix:%s (mode 0600), writing traces to %s\n"
               "sightline serve: profile with SIGHTLINE_OUTPUT=unix:%s; Ctrl-C to stop\n",
               options.socket_path.c_str(), options.out_dir.c_str(), options.socket_path.c_str());
  absl::Status run = (*server)->Run();
  g_server = nullptr;
  size_t files = 0, clean = 0, refused = 0;
  for (const exporter::ConnectionResult& r : (*server)->results()) {
    if (!r.file.empty()) ++files;
    if (r.footer) ++clean;
    if (r.refused) ++refused;
  }
  const exporter::ServeStats& st = (*server)->stats();
  std::fprintf(stderr,
               "sightline serve: stopped; %zu traces written (%zu complete), %zu connections refused; "
               "peak %llu connections, %.1f MB buffered, %llu accept back-offs, %llu stalled dropped\n",
               files, clean, refused, static_cast<unsigned long long>(st.peak_connections),
               static_cast<double>(st.peak_buffered_bytes) / 1e6,
               static_cast<unsigned long long>(st.accept_backoffs),
               static_cast<unsigned long long>(st.stalled_dropped));
  if (!run.ok()) return UsageError("serve: " + std::string(run.message()));
  return kExitOk;
}

}  // namespace

SIGHTLINE_COMMAND("serve",
                  "serve --listen unix:PATH [--out DIR] [--status-interval S] [--max-connections N] "
                  "[--max-clients N (256)] [--max-buffered-mb MB (256)] [--stall-timeout S (10)]",
                  "Receive trace streams from many processes; one trace file per process",
                  RunServe);

}  // namespace sightline::cli
