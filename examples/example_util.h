// examples/example_util.h — shared by the example programs.
//
// Every example prints one line
//   SIGHTLINE_EXPECT kernel=N memcpy=M memset=K nvtx_range=R ...
// with the number of GPU operations it issued, so tests can check that a
// profiled run recorded exactly that many (keys are `sightline info` kinds).
#ifndef SIGHTLINE_EXAMPLES_EXAMPLE_UTIL_H_
#define SIGHTLINE_EXAMPLES_EXAMPLE_UTIL_H_

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define EX_CHECK(call)                                                             \
  do {                                                                             \
    cudaError_t err_ = (call);                                                     \
    if (err_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                   cudaGetErrorString(err_));                                      \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

namespace example {

struct Counts {
  long kernel = 0, memcpy = 0, memset = 0, nvtx_range = 0, nvtx_marker = 0, sync = 0;
};

inline void PrintExpect(const char* name, const char* variant, const Counts& c, double wall_ms) {
  std::printf("SIGHTLINE_EXPECT example=%s variant=%s kernel=%ld memcpy=%ld memset=%ld "
              "nvtx_range=%ld nvtx_marker=%ld wall_ms=%.3f\n",
              name, variant, c.kernel, c.memcpy, c.memset, c.nvtx_range, c.nvtx_marker,
              wall_ms);
  std::fflush(stdout);
}

inline bool HasFlag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return true;
  }
  return false;
}

// True for "--fixed", "--variant fixed" or "--variant=fixed" (and likewise for
// other variant names given as `name`).
inline bool Variant(int argc, char** argv, const char* name) {
  std::string flag = std::string("--") + name;
  std::string eq = std::string("--variant=") + name;
  for (int i = 1; i < argc; ++i) {
    if (flag == argv[i] || eq == argv[i]) return true;
    if (std::strcmp(argv[i], "--variant") == 0 && i + 1 < argc && std::strcmp(argv[i + 1], name) == 0) {
      return true;
    }
  }
  return false;
}

inline long IntFlag(int argc, char** argv, const char* flag, long fallback) {
  size_t n = std::strlen(flag);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=') return std::atol(argv[i] + n + 1);
  }
  return fallback;
}

inline double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace example

#endif  // SIGHTLINE_EXAMPLES_EXAMPLE_UTIL_H_
