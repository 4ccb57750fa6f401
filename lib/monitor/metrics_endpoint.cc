// lib/monitor/metrics_endpoint.cc — see metrics_endpoint.h.
#include "lib/monitor/metrics_endpoint.h"

#include "lib/monitor/metrics_text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace sightline::monitor {
namespace {

constexpr size_t kMaxClients = 16;
constexpr size_t kMaxRequest = 8192;
constexpr uint64_t kClientTimeoutMs = 5000;

std::string Errno() { return std::strerror(errno); }

bool SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  int spins = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && ++spins < 200) {
      pollfd p = {fd, POLLOUT, 0};
      poll(&p, 1, 10);
      continue;
    }
    return false;
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int ListenUnix(const std::string& path, std::string* error) {
  sockaddr_un addr = {};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    *error = "unix socket path '" + path + "' is empty or longer than " +
             std::to_string(sizeof(addr.sun_path) - 1) + " bytes";
    return -1;
  }
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    std::string dir = path.substr(0, slash);
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) {
      if (mkdir(dir.c_str(), 0700) != 0) {
        *error = "cannot create the directory '" + dir + "': " + Errno();
        return -1;
      }
    } else if (!S_ISDIR(st.st_mode)) {
      *error = "'" + dir + "' is not a directory";
      return -1;
    }
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *error = "'" + path + "' exists and is not a socket; not replacing it";
      return -1;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    addr.sun_family = AF_UNIX;
    bool live = probe >= 0 &&
                connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      *error = "'" + path + "' is the socket of a running process; choose another path";
      return -1;
    }
    unlink(path.c_str());  // stale socket of a dead process
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = "socket: " + Errno();
    return -1;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  mode_t old = umask(0177);  // the socket file is created 0600
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int bind_errno = errno;
  umask(old);
  if (rc != 0) {
    errno = bind_errno;
    *error = "cannot bind '" + path + "': " + Errno();
    close(fd);
    return -1;
  }
  chmod(path.c_str(), 0600);
  if (listen(fd, 16) != 0) {
    *error = "listen on '" + path + "': " + Errno();
    close(fd);
    unlink(path.c_str());
    return -1;
  }
  return fd;
}

int ListenTcp(const std::string& spec, std::string* bound, std::string* error) {
  std::string host, port;
  if (!spec.empty() && spec[0] == '[') {
    size_t close_bracket = spec.find(']');
    if (close_bracket == std::string::npos || close_bracket + 1 >= spec.size() ||
        spec[close_bracket + 1] != ':') {
      *error = "'" + spec + "' is not [IPV6]:PORT";
      return -1;
    }
    host = spec.substr(1, close_bracket - 1);
    port = spec.substr(close_bracket + 2);
  } else {
    size_t colon = spec.rfind(':');
    if (colon == std::string::npos) {
      *error = "'" + spec + "' is not HOST:PORT or unix:PATH";
      return -1;
    }
    host = spec.substr(0, colon);
    port = spec.substr(colon + 1);
  }
  if (host.empty()) host = "127.0.0.1";
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || end == nullptr || *end != '\0' || p < 0 || p > 65535) {
    *error = "port '" + port + "' in '" + spec + "' is not a number from 0 to 65535";
    return -1;
  }
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int gai = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (gai != 0 || res == nullptr) {
    *error = "cannot resolve '" + host + "': " + gai_strerror(gai);
    return -1;
  }
  int fd = -1;
  std::string last;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 16) == 0) break;
    last = Errno();
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    *error = "cannot listen on '" + spec + "': " + (last.empty() ? "no usable address" : last);
    return -1;
  }
  sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  char text[INET6_ADDRSTRLEN] = {};
  int bound_port = 0;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    bound_port = ntohs(in->sin_port);
    *bound = std::string(text) + ":" + std::to_string(bound_port);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    bound_port = ntohs(in6->sin6_port);
    *bound = "[" + std::string(text) + "]:" + std::to_string(bound_port);
  }
  return fd;
}

}  // namespace

std::unique_ptr<MetricsEndpoint> MetricsEndpoint::Listen(const std::string& spec,
                                                         std::string* error) {
  std::unique_ptr<MetricsEndpoint> ep(new MetricsEndpoint());
  if (spec.rfind("unix:", 0) == 0) {
    ep->listen_fd_ = ListenUnix(spec.substr(5), error);
    if (ep->listen_fd_ < 0) return nullptr;
    ep->unix_path_ = spec.substr(5);
    ep->bound_ = spec;
  } else {
    ep->listen_fd_ = ListenTcp(spec, &ep->bound_, error);
    if (ep->listen_fd_ < 0) return nullptr;
  }
  SetNonBlocking(ep->listen_fd_);
  return ep;
}

MetricsEndpoint::~MetricsEndpoint() {
  for (Client& c : clients_) close(c.fd);
  if (listen_fd_ >= 0) close(listen_fd_);
  if (!unix_path_.empty()) unlink(unix_path_.c_str());
}

void MetricsEndpoint::AppendPollFds(std::vector<pollfd>* fds) const {
  if (listen_fd_ >= 0 && clients_.size() < kMaxClients) fds->push_back({listen_fd_, POLLIN, 0});
  for (const Client& c : clients_) fds->push_back({c.fd, POLLIN, 0});
}

void MetricsEndpoint::Accept(uint64_t now_ms) {
  while (clients_.size() < kMaxClients) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    clients_.push_back({fd, now_ms, {}});
  }
}

bool MetricsEndpoint::ReadAndMaybeAnswer(Client* c, const Renderer& render) {
  char buf[2048];
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    if (n > 0) {
      c->request.append(buf, static_cast<size_t>(n));
      if (c->request.size() > kMaxRequest) {
        WriteAll(c->fd, "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n"
                        "Content-Length: 0\r\n\r\n");
        return true;
      }
      continue;
    }
    if (n == 0) return true;  // closed before a full request
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return true;
  }
  size_t header_end = c->request.find("\r\n\r\n");
  if (header_end == std::string::npos) header_end = c->request.find("\n\n");
  if (header_end == std::string::npos) return false;  // wait for more
  std::string head = c->request.substr(0, header_end);
  size_t line_end = head.find_first_of("\r\n");
  std::string first = head.substr(0, line_end);
  std::string method = first.substr(0, first.find(' '));
  size_t path_start = first.find(' ');
  std::string path = path_start == std::string::npos ? "" : first.substr(path_start + 1);
  path = path.substr(0, path.find(' '));
  std::string query_free = path.substr(0, path.find('?'));
  std::string response;
  if (method != "GET" && method != "HEAD") {
    response = "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nConnection: close\r\n"
               "Content-Length: 0\r\n\r\n";
  } else if (query_free != "/metrics" && query_free != "/") {
    std::string body = "sightline: only /metrics is served\n";
    response = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nConnection: close\r\n"
               "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  } else {
    bool om = Lower(head).find("application/openmetrics-text") != std::string::npos;
    std::string body = render(om);
    response = "HTTP/1.1 200 OK\r\nContent-Type: " + std::string(MetricsContentType(om)) +
               "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n\r\n";
    if (method == "GET") response += body;
    ++served_;
  }
  WriteAll(c->fd, response);
  return true;
}

void MetricsEndpoint::Handle(const std::vector<pollfd>& fds, uint64_t now_ms,
                             const Renderer& render) {
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == listen_fd_) {
      Accept(now_ms);
      continue;
    }
    for (Client& c : clients_) {
      if (c.fd != p.fd) continue;
      if (ReadAndMaybeAnswer(&c, render)) {
        close(c.fd);
        c.fd = -1;
      }
    }
  }
  for (Client& c : clients_) {
    if (c.fd >= 0 && now_ms - c.since_ms > kClientTimeoutMs) {
      close(c.fd);
      c.fd = -1;
    }
  }
  clients_.erase(std::remove_if(clients_.begin(), clients_.end(),
                                [](const Client& c) { return c.fd < 0; }),
                 clients_.end());
}

}  // namespace sightline::monitor
