// lib/collect/python_stacks.h — Python call stacks of CUDA API calls (the
// equivalent of nsys --python-backtrace=cuda), read from CPython's own frame
// chain inside CUPTI API-enter callbacks, with no change to the program.
//
// What is read, and why it is safe:
//  * Only the calling thread's own frames: the thread state comes from
//    PyGILState_GetThisThreadState() (a thread-specific slot, readable without
//    the GIL). A thread's frame chain is written only by that thread, so while
//    it sits in a CUDA call its frames and their code objects (strong
//    references from the frames) are alive and unchanged — whether it holds
//    the GIL or released it for the call. PyTorch releases the GIL around
//    every ATen dispatch, so "GIL held" alone would miss almost every launch;
//    `require_gil` keeps the strict rule (and counts the skipped calls).
//  * Nothing is created, freed, reference-counted or locked in CPython: no
//    Py_IncRef, no PyUnicode_AsUTF8, no GIL. Strings are copied out of
//    compact str objects by layout; line numbers come from PyCode_Addr2Line,
//    a pure read of the code object's line table.
//  * Every code pointer is checked (ob_type == &PyCode_Type) before use; depth
//    is capped at kMaxPythonFrames; a cycle ends the walk.
//  * Interpreter shutdown: nothing is read unless Py_IsInitialized() and not
//    finalizing. Residual risk, stated: a daemon thread inside a CUDA call at
//    the very instant Py_FinalizeEx deletes its thread state.
//  * CPython 3.10–3.13, GIL builds, release or debug-free layouts: offsets per
//    minor version (derived from the real headers with offsetof, see
//    tests/collect/python_offsets_probe.c). Other versions, free-threaded
//    builds: disabled with one reason string, nothing read.
//  * A process without CPython pays one dlsym at the first call, then one
//    branch per call.
//
// Interning: the key is the sequence of (code object, instruction offset,
// code fingerprint) from innermost to outermost frame → a local stack id. A
// repeated stack costs the walk, a hash and one lookup under a mutex (threads
// without the GIL run concurrently). The fingerprint (filename/name pointers,
// first line) keeps a freed and reallocated code object from matching a
// stale key. New stacks are resolved once (file, function, line per frame)
// and queued for the writer thread with the (correlation id → stack id)
// pairs; both queues are bounded and count what they drop.
#ifndef SIGHTLINE_LIB_COLLECT_PYTHON_STACKS_H_
#define SIGHTLINE_LIB_COLLECT_PYTHON_STACKS_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace sightline::collect {

inline constexpr int kMaxPythonFrames = 64;

// Per-minor-version struct offsets (bytes); -1 = field absent.
struct PythonLayout {
  int minor = 0;                 // 10..13
  int tstate_frame = -1;         // 3.10 frame, 3.11/12 cframe, 3.13 current_frame
  int cframe_current = -1;       // 3.11/12: _PyCFrame.current_frame
  int frame_code = -1;           // f_code / f_executable
  int frame_back = -1;           // f_back (3.10) / previous
  int frame_instr = -1;          // 3.11/12 prev_instr, 3.13 instr_ptr
  int frame_lasti = -1;          // 3.10 f_lasti (int, code units)
  int frame_owner = -1;          // char
  int owner_generator = 1;
  int owner_cstack = -1;         // 3.12/13: FRAME_OWNED_BY_CSTACK
  int code_adaptive = -1;        // co_code_adaptive (3.11+)
  int code_firsttraceable = -1;  // _co_firsttraceable (int, 3.11+)
  int code_filename = -1;
  int code_name = -1;
  int code_qualname = -1;        // 3.11+
  int code_firstlineno = -1;
  int ascii_size = 0;            // sizeof(PyASCIIObject)
  int compact_size = 0;          // sizeof(PyCompactUnicodeObject)
};

// The layout for CPython 3.`minor`, or nullptr when unsupported.
const PythonLayout* PythonLayoutFor(int minor);

// CPython entry points, resolved with dlsym (tests may fill them by hand).
struct PythonApi {
  int (*is_initialized)() = nullptr;                 // Py_IsInitialized
  int (*is_finalizing)() = nullptr;                  // Py_IsFinalizing / _Py_IsFinalizing
  void* (*gil_state_this_thread)() = nullptr;        // PyGILState_GetThisThreadState
  void* (*current_tstate)() = nullptr;               // _PyThreadState_UncheckedGet / PyThreadState_GetUnchecked
  int (*addr2line)(void* code, int byte_offset) = nullptr;  // PyCode_Addr2Line
  const void* code_type = nullptr;                   // &PyCode_Type
  const char* version = nullptr;                     // Py_GetVersion()
};

// Fills *api from the process's symbols. False (with *why) when CPython is
// absent, its version unsupported or the build free-threaded.
bool ResolvePythonApi(PythonApi* api, const PythonLayout** layout, std::string* why);

struct PythonFrameText {
  std::string file;      // co_filename
  std::string function;  // co_qualname (3.11+) or co_name
  uint32_t line = 0;     // 0 = unknown
};

// A stack seen for the first time: frames innermost first.
struct PythonStackDef {
  uint32_t id = 0;
  std::vector<PythonFrameText> frames;
};

struct PythonStackPair {
  uint32_t correlation_id = 0;
  uint32_t stack_id = 0;
};

struct PythonStackStats {
  uint64_t captured = 0;          // calls given a stack
  uint64_t captured_without_gil = 0;  // of which the thread had released the GIL
  uint64_t no_thread_state = 0;   // thread unknown to Python (no stack, not a loss)
  uint64_t no_frames = 0;         // thread state without Python frames
  uint64_t skipped_no_gil = 0;    // require_gil and the thread did not hold it
  uint64_t skipped_shutdown = 0;  // interpreter not initialized or finalizing
  uint64_t bad_frames = 0;        // walks cut at an invalid code object or a cycle
  uint64_t dropped = 0;           // stacks or pairs lost to the bounds
  uint64_t distinct = 0;          // stacks interned
};

class PythonStackCollector {
 public:
  explicit PythonStackCollector(bool require_gil = false, size_t max_pending = 65536,
                                size_t max_stacks = 1 << 16);
  ~PythonStackCollector();
  PythonStackCollector(const PythonStackCollector&) = delete;
  PythonStackCollector& operator=(const PythonStackCollector&) = delete;

  // Uses this API and layout instead of resolving them (tests).
  void UseApi(const PythonApi& api, const PythonLayout* layout);
  // Called (on the capturing thread, under the collector's lock: it must
  // only signal, e.g. write a byte to a pipe) when the pending pairs reach
  // half of max_pending, so the writer takes them before the bound drops
  // any: a loop of 150 k launches a second between the writer's periodic
  // wake-ups lost 64 622 of them on the H200. Set before any capture.
  void SetWakeWriter(void (*fn)(void*), void* arg) {
    wake_fn_ = fn;
    wake_arg_ = arg;
  }
  // Application thread, API-enter callback: records the calling thread's
  // Python stack for `correlation_id`. Returns the local stack id (0 = none).
  uint32_t Capture(uint32_t correlation_id);
  // The stack id of the calling thread's current Python stack, without a
  // pair (tests, benchmarks).
  uint32_t CurrentStack();
  // Writer thread: moves new definitions and pairs out (definitions first:
  // every pair's stack is defined in this call's or an earlier call's defs).
  void Take(std::vector<PythonStackDef>* defs, std::vector<PythonStackPair>* pairs);
  PythonStackStats stats() const;
  // Empty when active; else why not (after the first Capture).
  std::string inactive_reason() const;
  bool active() const { return state_.load(std::memory_order_acquire) == kActive; }

 private:
  enum State : int { kUnresolved = 0, kActive = 1, kInactive = 2 };
  struct Impl;
  bool EnsureResolved();
  uint32_t Walk(const uint32_t* correlation_id);  // nullptr: no pair

  std::atomic<int> state_{kUnresolved};
  void (*wake_fn_)(void*) = nullptr;
  void* wake_arg_ = nullptr;
  bool require_gil_;
  Impl* impl_;
};

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_PYTHON_STACKS_H_
