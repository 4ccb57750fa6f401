// lib/collect/call_stacks.h — host call stacks of CUDA API calls (the
// equivalent of nsys --cudabacktrace), captured cheaply on the calling thread
// and symbolised later on the writer thread.
//
// Capture (API-exit callback, application thread): glibc backtrace() into a
// fixed array, pushed onto a bounded queue under a mutex (one lock per
// captured call, never per event); a full queue drops the stack and counts it
// (LossReport.stacks_dropped).
// Symbolisation (writer thread): dladdr() per distinct address (cached) gives
// the function (demangled, from the dynamic symbol table: build executables
// with -rdynamic / ENABLE_EXPORTS for their own names), the module (file
// basename) and the offset inside the module (feed it to addr2line -e MODULE).
// Frames inside the profiler, libcupti and libcuda are cut from the top, so a
// stack starts at the CUDA runtime entry point and then the user's code.
#ifndef SIGHTLINE_LIB_COLLECT_CALL_STACKS_H_
#define SIGHTLINE_LIB_COLLECT_CALL_STACKS_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/collect/event_sink.h"
#include "lib/trace/demangle.h"
#include "lib/trace/thread_annotations.h"
#include "lib/trace/events.h"

namespace sightline::collect {

inline constexpr int kMaxStackFrames = 48;

struct RawStack {
  uint32_t correlation_id = 0;
  uint32_t depth = 0;
  void* frames[kMaxStackFrames];
};

class StackCollector {
 public:
  explicit StackCollector(size_t max_pending = 16384);
  // Loads the unwinder once (the first backtrace() call dlopens libgcc_s).
  static void WarmUp();
  // Application thread: captures the current stack for `correlation_id`.
  void Capture(uint32_t correlation_id);
  // Pushes an already captured stack (tests).
  void Push(const RawStack& raw);
  // Writer thread: moves pending stacks into *out.
  void Take(std::vector<RawStack>* out);
  uint64_t dropped() const;

 private:
  mutable Mutex mu_;  // leaf
  std::vector<RawStack> pending_ SL_GUARDED_BY(mu_);
  size_t max_pending_;
  uint64_t dropped_ SL_GUARDED_BY(mu_) = 0;
};

// Calls that already carry a Python stack: under one Python call site the
// native stack of the same API call is the same call after call (PyTorch's
// caching allocator under a line, the sync inside an .item()), while each
// glibc backtrace() through libtorch and the interpreter costs tens of µs
// (bench/overhead/README.md run Q: +0.5..1.1 ms a step on a loop with ~30
// allocations a step). So a native stack is captured the first time a
// (Python stack, API) pair is seen; later calls get that stack in the
// analyzer (model_finish.cc). Thread-safe; past `max_keys` pairs every call
// is captured again (memory stays bounded).
class NativeStackOnce {
 public:
  explicit NativeStackOnce(size_t max_keys = size_t{1} << 20) : max_keys_(max_keys) {}
  // True when this call should capture its native stack.
  bool First(uint32_t python_stack, uint32_t api_key);
  uint64_t shared() const;  // calls that took an earlier call's stack

 private:
  mutable Mutex mu_;  // leaf
  std::unordered_set<uint64_t> seen_ SL_GUARDED_BY(mu_);
  uint64_t shared_ SL_GUARDED_BY(mu_) = 0;
  size_t max_keys_;
};

// Writer thread: turns raw addresses into interned frames.
class StackSymbolizer {
 public:
  // Frames whose module basename starts with one of `skip_module_prefixes` are
  // cut from the innermost end of every stack.
  explicit StackSymbolizer(std::vector<std::string> skip_module_prefixes);
  // Interns the stack on the sink and returns its id (0 if it has no frame).
  uint32_t Symbolize(const RawStack& raw, EventSink* sink);

 private:
  struct Resolved {
    uint32_t function_id = 0;
    uint32_t module_id = 0;
    uint64_t offset = 0;
    bool skip = false;
  };
  const Resolved& Resolve(void* address, EventSink* sink);

  std::vector<std::string> skip_prefixes_;
  std::unordered_map<void*, Resolved> cache_;
};

// "_ZN3foo3barEv" → "foo::bar()": the one demangler, lib/trace/demangle.h.
using trace::Demangle;

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_CALL_STACKS_H_
