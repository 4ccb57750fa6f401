// lib/monitor/metrics_endpoint.h — a minimal HTTP/1.x server for the
// /metrics scrape, driven by its owner's poll loop (no thread of its own).
//
//   --metrics-listen 127.0.0.1:9400 | localhost:0 | [::1]:9400 | :9400 | unix:PATH
// TCP binds exactly the address asked for (":PORT" = loopback, never all
// interfaces unless the user writes 0.0.0.0); port 0 picks a free one
// (bound_address() says which). A unix socket is created 0600 (its directory
// 0700 when we create it); an existing non-socket path is never replaced and
// a live socket of another process is never taken over.
// Requests: GET /metrics (or /) → the exposition, OpenMetrics when the Accept
// header asks for application/openmetrics-text; anything else 404/405.
// Bounded: at most 16 clients, 8 KiB per request, 5 s per client.
// Thread-safety: none; one owner thread.
#ifndef SIGHTLINE_LIB_MONITOR_METRICS_ENDPOINT_H_
#define SIGHTLINE_LIB_MONITOR_METRICS_ENDPOINT_H_

#include <poll.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sightline::monitor {

class MetricsEndpoint {
 public:
  // Renders the body; `openmetrics` as negotiated.
  using Renderer = std::function<std::string(bool openmetrics)>;

  // nullptr and *error (naming the address and the problem) on failure.
  static std::unique_ptr<MetricsEndpoint> Listen(const std::string& spec, std::string* error);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // "127.0.0.1:41234" or "unix:/path".
  const std::string& bound_address() const { return bound_; }

  // Appends the descriptors to wait on (listener + clients).
  void AppendPollFds(std::vector<pollfd>* fds) const;
  // Handles whatever the poll said is ready (`fds` as filled by poll; entries
  // that are not ours are ignored) and expires slow clients.
  void Handle(const std::vector<pollfd>& fds, uint64_t now_ms, const Renderer& render);
  uint64_t requests_served() const { return served_; }

 private:
  MetricsEndpoint() = default;
  struct Client {
    int fd = -1;
    uint64_t since_ms = 0;
    std::string request;
  };
  void Accept(uint64_t now_ms);
  // True when the client is finished (answered or failed).
  bool ReadAndMaybeAnswer(Client* c, const Renderer& render);

  int listen_fd_ = -1;
  std::string bound_;
  std::string unix_path_;  // removed at destruction
  std::vector<Client> clients_;
  uint64_t served_ = 0;
};

}  // namespace sightline::monitor

#endif  // SIGHTLINE_LIB_MONITOR_METRICS_ENDPOINT_H_
