// sightline serve --listen unix:PATH [--out DIR] [--status-interval S]
//                 [--max-connections N]
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

#include "lib/export/cli_support.h"
#include "lib/export/serve/trace_server.h"
#include "tools/sightline/command.h"

namespace sightline::cli {
namespace {

exporter::TraceServer* g_server = nullptr;

void OnStopSignal(int) {
  if (g_server) g_server->Stop();
}

int RunServe(const std::vector<std::string>& args) {
  exporter::ServeOptions options;
  std::string listen, interval, max_connections;
  exporter::ArgScanner scan(args);
  while (!scan.Done()) {
    bool missing = false;
    if (scan.Value("--listen", &listen, &missing) || scan.Value("--out", &options.out_dir, &missing) ||
        scan.Value("-o", &options.out_dir, &missing) ||
        scan.Value("--status-interval", &interval, &missing) ||
        scan.Value("--max-connections", &max_connections, &missing)) {
      if (missing) return UsageError("serve: option needs a value (see --help)");
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
    options.status_interval_s = std::strtod(interval.c_str(), nullptr);
    if (options.status_interval_s <= 0) {
      return UsageError("serve: --status-interval expects seconds > 0 (got '" + interval + "')");
    }
  }
  if (!max_connections.empty()) {
    options.max_connections = std::strtoull(max_connections.c_str(), nullptr, 10);
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
  std::fprintf(stderr, "sightline serve: stopped; %zu traces written (%zu complete), %zu connections refused\n",
               files, clean, refused);
  if (!run.ok()) return UsageError("serve: " + std::string(run.message()));
  return kExitOk;
}

}  // namespace

SIGHTLINE_COMMAND("serve",
                  "serve --listen unix:PATH [--out DIR] [--status-interval S] [--max-connections N]",
                  "Receive trace streams from many processes; one trace file per process",
                  RunServe);

}  // namespace sightline::cli
