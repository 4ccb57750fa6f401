// lib/collect/ab_log.h — benchmarks only: the switch log of the in-process
// A/B switches (collector_stack_ab.cc: SIGHTLINE_AB_STACKS_MS; pm_sampler.cc:
// SIGHTLINE_AB_PM_MS), read by bench/overhead/ab_split.py. One line per
// switch, "ab T0 T1 S": CLOCK_MONOTONIC ns before and after it, S = 1 when
// the switched part is on after it.
#ifndef SIGHTLINE_LIB_COLLECT_AB_LOG_H_
#define SIGHTLINE_LIB_COLLECT_AB_LOG_H_

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace sightline::collect {

// SIGHTLINE_AB_LOG's file, truncated, 0600, not through a symlink and only
// a regular file; -1 (with a warning on stderr) when it cannot be written,
// -1 silently when the variable is unset.
inline int OpenAbLog() {
  const char* path = std::getenv("SIGHTLINE_AB_LOG");
  if (path == nullptr || *path == '\0') return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  struct stat st {};
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ftruncate(fd, 0) != 0)) {
    close(fd);
    fd = -1;
  }
  if (fd < 0) std::fprintf(stderr, "sightline: warning: SIGHTLINE_AB_LOG: cannot write %s\n", path);
  return fd;
}

inline void WriteAbSwitch(int fd, uint64_t t0_ns, uint64_t t1_ns, bool on) {
  if (fd < 0) return;
  char line[80];
  const int n = std::snprintf(line, sizeof(line), "ab %llu %llu %d\n",
                              static_cast<unsigned long long>(t0_ns),
                              static_cast<unsigned long long>(t1_ns), on ? 1 : 0);
  if (n > 0 && write(fd, line, static_cast<size_t>(n)) < 0) {
    // A bench log: nothing else to do.
  }
}

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_AB_LOG_H_
