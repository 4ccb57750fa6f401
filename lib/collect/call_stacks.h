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
#include <tuple>
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
  // Non-zero: no frames of its own; the call has the native stack captured
  // for this earlier correlation id (NativeStackOnce).
  uint32_t same_as = 0;
  // This stack may be shared by later calls (NativeStackOnce's first
  // sighting): the writer remembers its id by correlation id.
  bool shareable = false;
  void* frames[kMaxStackFrames];
};

class StackCollector {
 public:
  explicit StackCollector(size_t max_pending = 16384);
  // Loads the unwinder once (the first backtrace() call dlopens libgcc_s).
  static void WarmUp();
  // Application thread: captures the current stack for `correlation_id`.
  void Capture(uint32_t correlation_id, bool shareable = false);
  // Application thread: the call `correlation_id` has the stack captured for
  // `same_as` (no unwinding).
  void Share(uint32_t correlation_id, uint32_t same_as);
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
// native stack of the same API call from the same native caller is the same
// call after call (PyTorch's caching allocator under a line, the sync inside
// an .item()), while each glibc backtrace() through libtorch and the
// interpreter costs tens of µs (bench/overhead/README.md run Q: +0.5..1.1 ms
// a step on a loop with ~30 allocations a step). So a full native stack is
// captured the first time a (Python stack, API, native caller) triple is
// seen; later calls share that stack (RawStack::same_as, resolved by the
// writer: the trace carries a stack for every call).
//
// The native caller is the first return address outside the CUDA side of the
// call (sightline, libcupti, libcuda, libcudart; counted from libcupti's
// first frame) within the innermost kCallerFrames frames — a short unwind
// instead of a full one. It keeps
// callers apart that one Python line reaches through different libraries:
// on the H200 (run R) one line's cudaMalloc calls came both from PyTorch's
// caching allocator (libc10_cuda.so) and from cuBLAS's own workspace
// allocation (its static runtime inside libcublas.so); a key without the
// caller gave cuBLAS's 64 MiB to libc10_cuda.so.
inline constexpr int kCallerFrames = 16;

// Where a frame of an API callback's stack lies.
enum class FrameSide : uint8_t {
  kCaller = 0,  // the application or a library calling CUDA
  kCuda,        // sightline's own library, libcuda, libcudart
  kCupti,       // libcupti (it calls our callback)
};

// The module's side (path or basename; null: the caller's). Pure.
FrameSide ClassifyModule(const char* path);

// The first frame on the caller's side, else 0. Our callback's own frames
// come first and lie in the application's binary when sightline is linked
// in, so the walk starts at the first libcupti frame when there is one.
// `side(address)` classifies a frame. Pure.
template <typename Side>
uintptr_t FirstCallerAddress(void* const* frames, int n, Side&& side) {
  int start = 0;
  for (int i = 0; i < n; ++i) {
    const auto a = reinterpret_cast<uintptr_t>(frames[i]);
    if (a != 0 && side(a) == FrameSide::kCupti) {
      start = i;
      break;
    }
  }
  for (int i = start; i < n; ++i) {
    const auto a = reinterpret_cast<uintptr_t>(frames[i]);
    if (a != 0 && side(a) == FrameSide::kCaller) return a;
  }
  return 0;
}

class NativeStackOnce {
 public:
  explicit NativeStackOnce(size_t max_keys = size_t{1} << 20) : max_keys_(max_keys) {}
  // Application thread, at the exit of a call that needs a native stack:
  // captures it (StackCollector::Capture) or shares an earlier one
  // (StackCollector::Share). Calls without a Python stack always capture.
  void CaptureOrShare(StackCollector* stacks, uint32_t python_stack, uint32_t api_key,
                      uint32_t correlation_id);
  // The decision for a known caller address: 0 = capture (and remember this
  // call as the triple's first when `remember` says so), else the
  // correlation id of the call whose stack this one shares. Caller 0
  // (not found) always captures. Thread-safe.
  uint32_t Decide(uint32_t python_stack, uint32_t api_key, uintptr_t caller,
                  uint32_t correlation_id, bool* remember);
  uint64_t shared() const;  // calls that took an earlier call's stack

 private:
  FrameSide Side(uintptr_t address);  // dladdr once per address (cached; locks mu_)

  mutable Mutex mu_;  // leaf
  struct KeyHash {
    size_t operator()(const std::tuple<uint32_t, uint32_t, uintptr_t>& k) const {
      uint64_t h = (uint64_t{std::get<0>(k)} << 32) ^ std::get<1>(k);
      return static_cast<size_t>(h * 0x9e3779b97f4a7c15ull ^ std::get<2>(k));
    }
  };
  std::unordered_map<std::tuple<uint32_t, uint32_t, uintptr_t>, uint32_t, KeyHash> first_
      SL_GUARDED_BY(mu_);
  std::unordered_map<uintptr_t, FrameSide> sides_ SL_GUARDED_BY(mu_);
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
  // A shared stack (raw.same_as) gets the id of the earlier shareable stack
  // it names (0 when that one had no frame or was dropped).
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
  // Stack id of each shareable stack (NativeStackOnce's first sightings; as
  // many as its keys at most), by correlation id.
  std::unordered_map<uint32_t, uint32_t> shareable_ids_;
};

// "_ZN3foo3barEv" → "foo::bar()": the one demangler, lib/trace/demangle.h.
using trace::Demangle;

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_CALL_STACKS_H_
