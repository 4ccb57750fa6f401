// A child process for kill_test: writes a trace to a real file sink and is
// SIGKILLed by the test while running.
//
//   sightline_trace_kill_helper PATH CHUNKS EVENTS_PER_CHUNK MODE STATUS_FD
//
// Writes CHUNKS chunks of EVENTS_PER_CHUNK kernel events (event i has
// correlation id i and starts at 1000 + 1000 * i), flushing after each and
// writing one byte to STATUS_FD once the chunk is in the file. Then, by MODE:
//   "buffered": keeps adding events to the next (never flushed) chunk;
//   "partial":  also appends the first half of one more frame to the file,
//               as a write cut short by the kill would leave it.
// It then waits to be killed (it never finishes the trace on its own).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lib/trace/writer.h"

int main(int argc, char** argv) {
  using namespace sightline;
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s PATH CHUNKS EVENTS_PER_CHUNK MODE STATUS_FD\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  int chunks = std::atoi(argv[2]);
  int per_chunk = std::atoi(argv[3]);
  std::string mode = argv[4];
  int status_fd = std::atoi(argv[5]);

  std::string error;
  auto sink = trace::OpenFileSink(path, {}, &error);
  if (!sink) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  trace::WriterOptions options;
  options.chunk_bytes = 64 << 20;  // only explicit flushes emit chunks
  trace::TraceWriter writer(std::move(sink), options);
  TraceHeaderData header;
  header.tool_version = "kill-helper";
  header.process.pid = static_cast<uint32_t>(getpid());
  if (!writer.Begin(header)) return 1;
  uint32_t name = writer.Intern("killed_kernel");
  uint32_t i = 0;
  auto add_one = [&] {
    KernelEvent k;
    k.start_ns = 1000 + 1000ull * i;
    k.end_ns = k.start_ns + 500;
    k.correlation_id = i;
    k.name_id = name;
    k.grid_x = 1 + i % 100;
    k.block_x = 256;
    writer.Add(k);
    ++i;
  };
  for (int c = 0; c < chunks; ++c) {
    for (int e = 0; e < per_chunk; ++e) add_one();
    if (!writer.Flush()) return 1;
    char byte = 'c';
    if (write(status_fd, &byte, 1) != 1) return 1;
  }
  if (mode == "partial") {
    // Half a frame: magic, type 2, a length of 1000 and 300 payload bytes.
    char frame[16 + 300] = {'S', 'L', 'F', 'R', 2, 0, 0, 0};
    uint32_t length = 1000;
    std::memcpy(frame + 8, &length, 4);
    int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 || write(fd, frame, sizeof(frame)) != static_cast<ssize_t>(sizeof(frame))) return 1;
    close(fd);
  }
  char done = 'd';
  if (write(status_fd, &done, 1) != 1) return 1;
  for (;;) {  // buffered events that will never be flushed
    add_one();
    if (i % 1024 == 0) usleep(1000);
  }
}
