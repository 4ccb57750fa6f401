// Embeds one CPython (dlopen'ed libpython, the path in argv[1]) and checks
// that PythonStackCollector reads the right file:line:function for a known
// call chain: nested calls, a method (qualname), a thread, a generator, a
// `finally` during exception unwinding, an `except` handler, a lambda, calls
// with the GIL held (ctypes.PyDLL) and released (ctypes.CDLL), the strict
// GIL-only mode, a thread unknown to Python, and Py_FinalizeEx while a daemon
// thread keeps calling into the reader. Exit 0 pass, 1 fail, 77 skipped
// (that libpython is not installed here).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/collect/python_stacks.h"

namespace {

using sightline::collect::PythonStackCollector;
using sightline::collect::PythonStackDef;
using sightline::collect::PythonStackPair;

PythonStackCollector* g_collector = nullptr;
PythonStackCollector* g_strict = nullptr;
PythonStackCollector* g_small = nullptr;  // max_pending 4: the writer's wake-up
std::atomic<int> g_wakes{0};
std::mutex g_mu;
struct Record {
  int tag;
  uint32_t id;
  uint32_t strict_id;
};
std::vector<Record> g_records;
int g_hammer_records = 0;

const char kScript[] = R"PY(import ctypes, threading, sys
gil = ctypes.PyDLL(None).sightline_test_capture
nogil = ctypes.CDLL(None).sightline_test_capture
gil.argtypes = [ctypes.c_int]
nogil.argtypes = [ctypes.c_int]

def leaf(fn, tag):
    fn(tag)  # L_leaf

def middle(fn, tag):
    leaf(fn, tag)  # L_middle

class Model:
    def forward(self, fn, tag):
        middle(fn, tag)  # L_forward

Model().forward(gil, 1)  # L_call1
Model().forward(nogil, 2)  # L_call2
for _ in range(3):
    middle(gil, 3)  # L_loop

def worker():
    middle(nogil, 4)  # L_thread
t = threading.Thread(target=worker)
t.start()
t.join()

def gen(fn):
    for i in range(2):
        fn(5)  # L_gen
        yield i
for _ in gen(gil):  # L_gen_caller
    pass

def unwinding(fn):
    try:
        raise ValueError("x")
    finally:
        fn(6)  # L_finally
try:
    unwinding(gil)  # L_unwind_caller
except ValueError:
    nogil(7)  # L_except

lam = lambda: nogil(8)  # L_lambda
lam()  # L_lambda_caller

code_ids = []
for i in range(40):
    ns = {}
    exec("def fn%02d(fn):\n    fn(12)\n" % i, ns)
    f = ns["fn%02d" % i]
    code_ids.append(id(f.__code__))
    f(gil)  # L_exec_call
    del f
    ns.clear()  # the function and its globals form a cycle: broken here, freed now
    del ns
print("exec'd functions: %d code addresses for 40 code objects" % len(set(code_ids)))

def deep(fn, n):
    if n == 0:
        fn(13)  # L_deep
    else:
        deep(fn, n - 1)  # L_deep_rec
for _ in range(2):
    deep(gil, 80)  # L_deep_caller1
deep(gil, 80)  # L_deep_caller2
deep(gil, 10)  # L_deep_short

def hammer():
    while True:
        nogil(9)  # L_hammer
threading.Thread(target=hammer, daemon=True).start()
import time
time.sleep(0.05)
)PY";

int LineOf(const std::string& marker) {
  std::string text = kScript;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, marker.size() + 3, "# " + marker + "\n") == 0) return line;
    if (text[i] == '\n') ++line;
  }
  std::fprintf(stderr, "marker %s not found\n", marker.c_str());
  std::exit(1);
}

int g_failures = 0;
void Expect(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

std::string Describe(const PythonStackDef& d) {
  std::string s;
  for (const auto& f : d.frames) {
    s += "  " + f.function + " " + f.file + ":" + std::to_string(f.line) + "\n";
  }
  return s;
}

// Checks that the stack's innermost frames are `want` (function, marker).
void ExpectFrames(const std::map<uint32_t, PythonStackDef>& defs, uint32_t id, int tag,
                  const std::vector<std::pair<std::string, std::string>>& want,
                  const std::string& script_path) {
  auto it = defs.find(id);
  if (it == defs.end()) {
    Expect(false, "tag " + std::to_string(tag) + ": no stack (id " + std::to_string(id) + ")");
    return;
  }
  const PythonStackDef& d = it->second;
  bool ok = d.frames.size() >= want.size();
  for (size_t i = 0; ok && i < want.size(); ++i) {
    const auto& f = d.frames[i];
    ok = f.function == want[i].first && f.line == static_cast<uint32_t>(LineOf(want[i].second)) &&
         f.file == script_path;
  }
  Expect(ok, "tag " + std::to_string(tag) + " stack:\n" + Describe(d));
}

}  // namespace

extern "C" __attribute__((visibility("default"), noinline)) void sightline_test_capture(int tag) {
  uint32_t id = g_collector->Capture(static_cast<uint32_t>(tag));
  uint32_t strict = g_strict->CurrentStack();
  if (g_small != nullptr) g_small->Capture(static_cast<uint32_t>(tag));
  std::lock_guard<std::mutex> lock(g_mu);
  if (tag == 9 && ++g_hammer_records > 3) return;
  g_records.push_back({tag, id, strict});
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s LIBPYTHON MINOR\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::printf("skipped: %s\n", dlerror());
    return 77;
  }
  auto initialize = reinterpret_cast<void (*)(int)>(dlsym(lib, "Py_InitializeEx"));
  auto run = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "PyRun_SimpleString"));
  auto finalize = reinterpret_cast<int (*)()>(dlsym(lib, "Py_FinalizeEx"));
  if (initialize == nullptr || run == nullptr || finalize == nullptr) return 77;

  PythonStackCollector collector;
  PythonStackCollector strict(/*require_gil=*/true);
  PythonStackCollector small(/*require_gil=*/false, /*max_pending=*/4);
  small.SetWakeWriter([](void*) { ++g_wakes; }, nullptr);
  g_collector = &collector;
  g_strict = &strict;
  g_small = &small;

  // Before Py_Initialize: resolved, but nothing read.
  sightline_test_capture(0);
  Expect(collector.active(), "collector inactive: " + collector.inactive_reason());
  const auto* layout = sightline::collect::PythonLayoutFor(std::atoi(argv[2]));
  Expect(layout != nullptr, "no layout for 3." + std::string(argv[2]));

  char dir[] = "/tmp/sightline-pystacks-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  std::string script_path = std::string(dir) + "/stack_case.py";
  std::ofstream(script_path) << kScript;

  initialize(0);
  std::string runner = "p = '" + script_path +
                       "'\nexec(compile(open(p).read(), p, 'exec'), {'__name__': '__main__'})\n";
  Expect(run(runner.c_str()) == 0, "the script raised");
  // A thread unknown to Python.
  std::thread([] { sightline_test_capture(10); }).join();
  // Shutdown while the daemon thread keeps calling the reader.
  Expect(finalize() == 0, "Py_FinalizeEx failed");
  sightline_test_capture(11);
  usleep(20000);

  std::vector<PythonStackDef> defs_list;
  std::vector<PythonStackPair> pairs;
  collector.Take(&defs_list, &pairs);
  std::map<uint32_t, PythonStackDef> defs;
  for (auto& d : defs_list) defs[d.id] = d;
  std::map<int, std::vector<Record>> by_tag;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (const Record& r : g_records) by_tag[r.tag].push_back(r);
  }
  auto first = [&](int tag) -> Record {
    if (by_tag[tag].empty()) {
      Expect(false, "no call for tag " + std::to_string(tag));
      return {tag, 0, 0};
    }
    return by_tag[tag][0];
  };
  std::string forward = std::atoi(argv[2]) >= 11 ? "Model.forward" : "forward";
  Expect(first(0).id == 0, "a stack before Py_Initialize");
  ExpectFrames(defs, first(1).id, 1,
               {{"leaf", "L_leaf"}, {"middle", "L_middle"}, {forward, "L_forward"},
                {"<module>", "L_call1"}}, script_path);
  ExpectFrames(defs, first(2).id, 2,
               {{"leaf", "L_leaf"}, {"middle", "L_middle"}, {forward, "L_forward"},
                {"<module>", "L_call2"}}, script_path);
  Expect(first(1).id != first(2).id, "different call lines share a stack");
  Expect(by_tag[3].size() == 3 && by_tag[3][0].id == by_tag[3][1].id &&
             by_tag[3][1].id == by_tag[3][2].id && by_tag[3][0].id != 0,
         "a repeated stack got different ids");
  ExpectFrames(defs, first(3).id, 3,
               {{"leaf", "L_leaf"}, {"middle", "L_middle"}, {"<module>", "L_loop"}}, script_path);
  ExpectFrames(defs, first(4).id, 4,
               {{"leaf", "L_leaf"}, {"middle", "L_middle"}, {"worker", "L_thread"}}, script_path);
  if (defs.count(first(4).id) != 0) {
    const auto& frames = defs[first(4).id].frames;
    Expect(frames.size() > 3 && frames[3].function.find("run") != std::string::npos &&
               frames[3].file.find("threading.py") != std::string::npos,
           "thread stack does not go through threading.Thread.run");
  }
  Expect(by_tag[5].size() == 2, "generator called twice");
  ExpectFrames(defs, first(5).id, 5, {{"gen", "L_gen"}, {"<module>", "L_gen_caller"}},
               script_path);
  ExpectFrames(defs, first(6).id, 6, {{"unwinding", "L_finally"}, {"<module>", "L_unwind_caller"}},
               script_path);
  ExpectFrames(defs, first(7).id, 7, {{"<module>", "L_except"}}, script_path);
  ExpectFrames(defs, first(8).id, 8, {{"<lambda>", "L_lambda"}, {"<module>", "L_lambda_caller"}},
               script_path);
  ExpectFrames(defs, first(9).id, 9, {{"hammer", "L_hammer"}}, script_path);
  // Functions made and freed one after another, called from one line: their
  // code objects may reuse one address, and each stack still names its own.
  Expect(by_tag[12].size() == 40, "40 exec'd functions called");
  for (size_t i = 0; i < by_tag[12].size(); ++i) {
    auto it = defs.find(by_tag[12][i].id);
    char name[16];
    std::snprintf(name, sizeof(name), "fn%02zu", i);
    Expect(it != defs.end() && !it->second.frames.empty() &&
               it->second.frames[0].function == name &&
               it->second.frames.size() > 1 &&
               it->second.frames[1].line == static_cast<uint32_t>(LineOf("L_exec_call")),
           std::string("exec'd function ") + name + " not named by its stack");
  }
  // Deeper than the depth cap: the innermost kMaxPythonFrames frames, the same
  // stack from either caller, and a shallower recursion a different one.
  Expect(by_tag[13].size() == 4, "deep recursion called four times");
  if (by_tag[13].size() == 4) {
    Expect(by_tag[13][0].id != 0 && by_tag[13][0].id == by_tag[13][1].id &&
               by_tag[13][1].id == by_tag[13][2].id,
           "a stack deeper than the cap got different ids");
    Expect(by_tag[13][3].id != by_tag[13][0].id, "a shallower recursion shares the deep stack");
    auto it = defs.find(by_tag[13][0].id);
    bool ok = it != defs.end() &&
              it->second.frames.size() == static_cast<size_t>(sightline::collect::kMaxPythonFrames);
    for (size_t i = 0; ok && i < it->second.frames.size(); ++i) {
      ok = it->second.frames[i].function == "deep" &&
           it->second.frames[i].line ==
               static_cast<uint32_t>(LineOf(i == 0 ? "L_deep" : "L_deep_rec"));
    }
    Expect(ok, "the deep stack is not the innermost frames of deep()");
    ExpectFrames(defs, by_tag[13][3].id, 13,
                 {{"deep", "L_deep"}, {"deep", "L_deep_rec"}}, script_path);
    if (defs.count(by_tag[13][3].id) != 0) {
      const auto& frames = defs[by_tag[13][3].id].frames;
      Expect(frames.size() == 13 && frames[11].line == static_cast<uint32_t>(LineOf("L_deep_short")),
             "the shallow recursion's stack:\n" + Describe(defs[by_tag[13][3].id]));
    }
  }
  Expect(first(10).id == 0, "a stack on a thread unknown to Python");
  Expect(first(11).id == 0, "a stack after Py_FinalizeEx");
  // Strict mode: only the calls made with the GIL held.
  for (int tag : {1, 3, 5, 6}) {
    Expect(first(tag).strict_id != 0, "strict mode missed GIL-held tag " + std::to_string(tag));
  }
  for (int tag : {2, 4, 7, 8}) {
    Expect(first(tag).strict_id == 0, "strict mode read GIL-free tag " + std::to_string(tag));
  }
  // Every capture produced a pair with its correlation id (= tag).
  size_t captured_pairs = 0;
  for (const PythonStackPair& p : pairs) {
    if (p.correlation_id >= 1 && p.correlation_id <= 8) ++captured_pairs;
  }
  Expect(captured_pairs == 11, "pairs for tags 1-8: " + std::to_string(captured_pairs));
  // The small collector woke its writer once, when 2 of its 4 pending pairs
  // were there (nobody took them), and counted the captures past the bound
  // (and the stack definitions past it: it holds at most 4 of those too).
  Expect(g_wakes.load() == 1, "wake-ups at half of max_pending: " + std::to_string(g_wakes.load()));
  auto small_stats = small.stats();  // one snapshot: the daemon thread still captures
  Expect(small_stats.captured > 4 && small_stats.dropped >= small_stats.captured - 4,
         "pairs past the bound not counted as dropped");
  auto st = collector.stats();
  Expect(st.captured_without_gil >= 5, "captures without the GIL not counted");
  Expect(st.no_thread_state >= 1, "thread unknown to Python not counted");
  Expect(st.skipped_shutdown >= 2, "calls outside the interpreter's life not counted");
  Expect(st.bad_frames == 0, "bad frames: " + std::to_string(st.bad_frames));
  std::printf("Python %s: %zu stacks, %llu captured (%llu without the GIL), %d failures\n",
              argv[2], defs.size(), static_cast<unsigned long long>(st.captured),
              static_cast<unsigned long long>(st.captured_without_gil), g_failures);
  unlink(script_path.c_str());
  rmdir(dir);
  std::fflush(stdout);
  // The daemon thread is parked by the finalized interpreter: leave at once.
  _exit(g_failures == 0 ? 0 : 1);
}
