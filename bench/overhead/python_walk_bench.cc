// bench/overhead/python_walk_bench.cc — what sightline's own code pays per
// Python stack (issue 13's "≤ 1 µs per launch over the default mode"): the
// stack walk and the interning lookup of PythonStackCollector::Capture, on
// the CPU, without CUDA or CUPTI. The end-to-end figure on the H200 (part
// `torch` of run_overhead.sh) adds CUPTI's dispatch of the launch callbacks
// that carry the capture; this harness isolates the part sightline controls.
//
// Usage: python_walk_bench LIBPYTHON [ITERATIONS]
// Embeds that CPython (dlopen), runs a Python function at several call
// depths that calls a C entry point (ctypes.PyDLL: the GIL held, as at a
// PyTorch launch) which times ITERATIONS (default 200000) Capture calls of
// the same stack (the steady state of a training loop: every stack already
// interned) and one round of distinct stacks (first sight: text resolved and
// queued). Prints one line per depth:
//   PYWALK depth=D frames=F repeated_ns=X cold_ns=C first_ns=Y
// (cold: the same stack, each capture after 8 MiB of other writes, median).
// (frames: Python frames in the stack, harness frames included). A
// writer-like thread drains the pending pairs meanwhile, as the collector's
// writer does. Exit 0, or 77 when that libpython is not installed here.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "lib/collect/python_stacks.h"

namespace {

using sightline::collect::PythonStackCollector;
using sightline::collect::PythonStackDef;
using sightline::collect::PythonStackPair;

PythonStackCollector* g_collector = nullptr;
long g_iterations = 200000;

double NowNs() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Called from Python with the GIL held: ns per Capture of the caller's stack
// (mode 0: the same stack `g_iterations` times), or one Capture (mode 1).
extern "C" __attribute__((visibility("default"), noinline)) double sightline_bench_walk(int mode) {
  if (mode == 2) {
    // Cold: the same stack, each capture after 8 MiB of other writes (as a
    // training step's own work evicts the frames' code objects between two
    // launches); median of 2001 individually timed captures.
    static std::vector<char> evict(8u << 20);
    std::vector<double> t(2001);
    g_collector->Capture(1);
    for (double& v : t) {
      for (size_t i = 0; i < evict.size(); i += 64) evict[i] = static_cast<char>(evict[i] + 1);
      double t0 = NowNs();
      g_collector->Capture(2);
      v = NowNs() - t0;
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
  }
  if (mode == 1) {
    double t0 = NowNs();
    g_collector->Capture(1);
    return NowNs() - t0;
  }
  g_collector->Capture(1);  // interned before the timed loop
  double t0 = NowNs();
  for (long i = 0; i < g_iterations; ++i) g_collector->Capture(static_cast<uint32_t>(i + 2));
  return (NowNs() - t0) / double(g_iterations);
}

namespace {

const char kScript[] = R"PY(import ctypes, inspect
walk = ctypes.PyDLL(None).sightline_bench_walk
walk.argtypes = [ctypes.c_int]
walk.restype = ctypes.c_double

def frames():
    f, n = inspect.currentframe(), 0
    while f is not None:
        n, f = n + 1, f.f_back
    return n

def at_depth(d, fn):
    if d == 0:
        return fn()
    return at_depth(d - 1, fn)

def first_sight(d):
    # Distinct stacks: the same depth reached through 16 different lines.
    times = []
    for k in range(16):
        times.append(eval(compile("\n" * k + "at_depth(d, lambda: walk(1))", "<first>", "eval")))
    times.sort()
    return times[len(times) // 2]

for d in (0, 20, 60):
    repeated = at_depth(d, lambda: walk(0))
    cold = at_depth(d, lambda: walk(2))
    n = at_depth(d, frames) - 1
    first = first_sight(d)
    print(f"PYWALK depth={d} frames={n} repeated_ns={repeated:.1f} cold_ns={cold:.1f} "
          f"first_ns={first:.1f}", flush=True)
)PY";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: python_walk_bench LIBPYTHON [ITERATIONS]\n");
    return 2;
  }
  if (argc > 2) g_iterations = std::max(1L, std::atol(argv[2]));
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "skipped: %s\n", dlerror());
    return 77;
  }
  auto initialize = reinterpret_cast<void (*)(int)>(dlsym(lib, "Py_InitializeEx"));
  auto run = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "PyRun_SimpleString"));
  auto finalize = reinterpret_cast<int (*)()>(dlsym(lib, "Py_FinalizeEx"));
  if (initialize == nullptr || run == nullptr || finalize == nullptr) {
    std::fprintf(stderr, "%s: no Py_InitializeEx / PyRun_SimpleString / Py_FinalizeEx\n", argv[1]);
    return 1;
  }
  PythonStackCollector collector;
  g_collector = &collector;
  std::atomic<bool> stop{false};
  std::thread writer([&] {  // drains like the collector's writer
    std::vector<PythonStackDef> defs;
    std::vector<PythonStackPair> pairs;
    while (!stop.load()) {
      collector.Take(&defs, &pairs);
      defs.clear();
      pairs.clear();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  initialize(0);
  int rc = run(kScript);
  finalize();
  stop = true;
  writer.join();
  if (!collector.inactive_reason().empty()) {
    std::fprintf(stderr, "Python stacks inactive: %s\n", collector.inactive_reason().c_str());
    return 1;
  }
  auto s = collector.stats();
  std::printf("PYWALK stats captured=%llu distinct=%llu dropped=%llu\n",
              static_cast<unsigned long long>(s.captured),
              static_cast<unsigned long long>(s.distinct),
              static_cast<unsigned long long>(s.dropped));
  return rc == 0 && s.dropped == 0 ? 0 : 1;
}
