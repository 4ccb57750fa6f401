// lib/collect/python_stacks.cc — see python_stacks.h.
#include "lib/collect/python_stacks.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "lib/collect/self_cost.h"
#include "lib/trace/thread_annotations.h"

namespace sightline::collect {
namespace {

// Offsets from CPython's headers (offsetof with Py_BUILD_CORE on 3.10.13,
// 3.11.7, 3.12.1, 3.13.0; tests/collect/python_offsets_probe.c prints them).
// They are the same for every patch release of a minor version on x86-64 and
// aarch64 (LP64) GIL builds without Py_TRACE_REFS.
constexpr PythonLayout kLayouts[] = {
    // minor tstate cframe code back instr lasti owner gen cstack adaptive first
    //   filename name qualname firstlineno ascii compact
    {10, 24, -1, 32, 24, -1, 96, -1, 1, -1, -1, -1, 104, 112, -1, 40, 48, 72},
    {11, 56, 8, 32, 48, 56, -1, 69, 1, -1, 184, 168, 112, 120, 128, 72, 48, 72},
    {12, 56, 0, 0, 8, 56, -1, 70, 1, 3, 192, 176, 112, 120, 128, 68, 40, 56},
    {13, 72, -1, 0, 8, 56, -1, 70, 1, 3, 200, 184, 112, 120, 128, 68, 40, 56},
};

template <typename T>
T Load(const void* base, int offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + offset, sizeof(T));
  return v;
}

const void* LoadPtr(const void* base, int offset) { return Load<const void*>(base, offset); }

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;  // lone surrogate
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x110000) {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    AppendUtf8(0xfffd, out);
  }
}

// Copies a compact str object out by layout (no CPython call, no cache
// written). Non-compact (legacy) strings, which code objects never hold,
// read as "?".
std::string ReadStr(const void* obj, const void* str_type, const PythonLayout& L) {
  constexpr size_t kMaxChars = 4096;
  if (obj == nullptr) return "?";
  if (str_type != nullptr && LoadPtr(obj, 8) != str_type) return "?";
  int64_t length = Load<int64_t>(obj, 16);
  uint32_t state = Load<uint32_t>(obj, 32);
  uint32_t kind = (state >> 2) & 7;
  bool compact = (state >> 5) & 1;
  bool ascii = (state >> 6) & 1;
  if (!compact || length < 0) return "?";
  size_t n = static_cast<size_t>(length) < kMaxChars ? static_cast<size_t>(length) : kMaxChars;
  const char* data = static_cast<const char*>(obj) + (ascii ? L.ascii_size : L.compact_size);
  std::string out;
  if (ascii) {
    out.assign(data, n);
    return out;
  }
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t c = 0;
    if (kind == 1) {
      c = static_cast<unsigned char>(data[i]);
    } else if (kind == 2) {
      c = Load<uint16_t>(data, static_cast<int>(2 * i));
    } else if (kind == 4) {
      c = Load<uint32_t>(data, static_cast<int>(4 * i));
    } else {
      return "?";
    }
    AppendUtf8(c, &out);
  }
  return out;
}

// One frame of a walk: the interning key.
struct FrameKey {
  const void* code;
  int64_t lasti;        // instruction byte offset; < 0 = not started
  uint64_t fingerprint; // Fingerprint(): filename/name pointers, first line, name hash
  bool operator==(const FrameKey& o) const {
    return code == o.code && lasti == o.lasti && fingerprint == o.fingerprint;
  }
};

// offsetof(PyASCIIObject, hash) on LP64 3.10–3.13 (PyObject_HEAD, then the
// length): a str's cached hash, set for every interned name.
constexpr int kStrHash = 24;

// What tells a code object from a freed one whose address it reuses: the
// filename and name pointers, the first line, and the name's hash. The
// pointers alone are not enough: on 3.10 and 3.11 a code object's interned
// name dies with it and the next one's name takes the same address (40
// functions made and freed in turn, tests/collect/python_stacks_embed.cc,
// all took the first one's name before the hash was added).
uint64_t Fingerprint(const void* code, const PythonLayout& L) {
  const void* name = LoadPtr(code, L.code_name);
  const uint64_t name_hash = name != nullptr ? Load<uint64_t>(name, kStrHash) : 0;
  return reinterpret_cast<uintptr_t>(LoadPtr(code, L.code_filename)) ^
         (reinterpret_cast<uintptr_t>(name) << 1) ^
         static_cast<uint64_t>(Load<int>(code, L.code_firstlineno)) ^
         (name_hash * 0x9e3779b97f4a7c15ull);
}

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

const PythonLayout* PythonLayoutFor(int minor) {
  for (const PythonLayout& l : kLayouts) {
    if (l.minor == minor) return &l;
  }
  return nullptr;
}

bool ResolvePythonApi(PythonApi* api, const PythonLayout** layout, std::string* why) {
  auto sym = [](const char* name) { return dlsym(RTLD_DEFAULT, name); };
  auto get_version = reinterpret_cast<const char* (*)()>(sym("Py_GetVersion"));
  if (get_version == nullptr || sym("Py_IsInitialized") == nullptr) {
    *why = "not a Python process";
    return false;
  }
  const char* version = get_version();
  int major = 0, minor = 0;
  if (version == nullptr || std::sscanf(version, "%d.%d", &major, &minor) != 2 || major != 3) {
    *why = std::string("unrecognised Python version ") + (version != nullptr ? version : "?");
    return false;
  }
  *layout = PythonLayoutFor(minor);
  if (*layout == nullptr) {
    *why = "Python 3." + std::to_string(minor) + " is not supported (3.10-3.13 are)";
    return false;
  }
  // Free-threaded and Py_TRACE_REFS/Py_REF_DEBUG builds lay objects out
  // differently: read nothing there.
  if (sym("_Py_DecRefShared") != nullptr || sym("_Py_MergeZeroLocalRefcount") != nullptr) {
    *why = "free-threaded CPython builds are not supported";
    return false;
  }
  if (sym("_Py_RefTotal") != nullptr || sym("_Py_GetGlobalRefTotal") != nullptr ||
      sym("_Py_ForgetReference") != nullptr) {
    *why = "debug CPython builds are not supported";
    return false;
  }
  api->is_initialized = reinterpret_cast<int (*)()>(sym("Py_IsInitialized"));
  api->is_finalizing = reinterpret_cast<int (*)()>(sym("Py_IsFinalizing"));
  if (api->is_finalizing == nullptr) {
    api->is_finalizing = reinterpret_cast<int (*)()>(sym("_Py_IsFinalizing"));
  }
  api->gil_state_this_thread = reinterpret_cast<void* (*)()>(sym("PyGILState_GetThisThreadState"));
  api->current_tstate = reinterpret_cast<void* (*)()>(sym("PyThreadState_GetUnchecked"));
  if (api->current_tstate == nullptr) {
    api->current_tstate = reinterpret_cast<void* (*)()>(sym("_PyThreadState_UncheckedGet"));
  }
  api->addr2line = reinterpret_cast<int (*)(void*, int)>(sym("PyCode_Addr2Line"));
  api->code_type = sym("PyCode_Type");
  api->version = version;
  if (api->gil_state_this_thread == nullptr || api->addr2line == nullptr ||
      api->code_type == nullptr) {
    *why = std::string("CPython ") + version + " lacks PyGILState_GetThisThreadState, "
           "PyCode_Addr2Line or PyCode_Type";
    return false;
  }
  return true;
}

struct PythonStackCollector::Impl {
  PythonApi api;
  const PythonLayout* layout = nullptr;
  const void* str_type = nullptr;
  std::string why;
  size_t max_pending = 0;
  size_t max_stacks = 0;

  // api/layout/str_type/why are written once under mu (EnsureResolved) and
  // published by PythonStackCollector::state_ (release/acquire); read
  // without mu afterwards.
  mutable Mutex mu;
  // Open-addressing table over an arena of frame keys.
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t id = 0;  // 0 = empty
    uint16_t depth = 0;
  };
  std::vector<Slot> slots SL_GUARDED_BY(mu) = std::vector<Slot>(1024);
  std::vector<FrameKey> arena SL_GUARDED_BY(mu);
  uint32_t next_id SL_GUARDED_BY(mu) = 1;
  struct CodeText {
    uint64_t fingerprint = 0;
    std::string file, function;
  };
  std::unordered_map<const void*, CodeText> code_text SL_GUARDED_BY(mu);
  std::vector<PythonStackDef> defs SL_GUARDED_BY(mu);
  std::vector<PythonStackPair> pairs SL_GUARDED_BY(mu);
  PythonStackStats stats SL_GUARDED_BY(mu);

  uint32_t Find(const FrameKey* keys, int depth, uint64_t hash, size_t* slot) const
      SL_REQUIRES(mu) {
    size_t mask = slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& s = slots[i];
      if (s.id == 0) {
        *slot = i;
        return 0;
      }
      if (s.hash == hash && s.depth == depth &&
          std::equal(keys, keys + depth, arena.begin() + s.offset)) {
        return s.id;
      }
    }
  }

  void Grow() SL_REQUIRES(mu) {
    std::vector<Slot> old;
    old.swap(slots);
    slots.assign(old.size() * 2, Slot());
    size_t mask = slots.size() - 1;
    for (const Slot& s : old) {
      if (s.id == 0) continue;
      size_t i = s.hash & mask;
      while (slots[i].id != 0) i = (i + 1) & mask;
      slots[i] = s;
    }
  }

  const CodeText& TextOf(const FrameKey& k) SL_REQUIRES(mu) {
    auto it = code_text.find(k.code);
    if (it != code_text.end() && it->second.fingerprint == k.fingerprint) return it->second;
    CodeText t;
    t.fingerprint = k.fingerprint;
    const PythonLayout& L = *layout;
    t.file = ReadStr(LoadPtr(k.code, L.code_filename), str_type, L);
    int name_off = L.code_qualname >= 0 ? L.code_qualname : L.code_name;
    t.function = ReadStr(LoadPtr(k.code, name_off), str_type, L);
    return code_text.insert_or_assign(k.code, std::move(t)).first->second;
  }

  // A new stack, under mu: resolves its text and queues its definition.
  uint32_t Insert(const FrameKey* keys, int depth, uint64_t hash, size_t slot) SL_REQUIRES(mu) {
    if (stats.distinct >= max_stacks || arena.size() + depth > (1u << 31)) {
      ++stats.dropped;
      return 0;
    }
    uint32_t id = next_id++;
    Slot s;
    s.hash = hash;
    s.offset = static_cast<uint32_t>(arena.size());
    s.depth = static_cast<uint16_t>(depth);
    s.id = id;
    arena.insert(arena.end(), keys, keys + depth);
    slots[slot] = s;
    ++stats.distinct;
    if (stats.distinct * 2 > slots.size()) Grow();
    PythonStackDef def;
    def.id = id;
    def.frames.reserve(depth);
    for (int i = 0; i < depth; ++i) {
      const CodeText& t = TextOf(keys[i]);
      PythonFrameText f;
      f.file = t.file;
      f.function = t.function;
      int line = keys[i].lasti < 0
                     ? Load<int>(keys[i].code, layout->code_firstlineno)
                     : api.addr2line(const_cast<void*>(keys[i].code),
                                     static_cast<int>(keys[i].lasti));
      f.line = line > 0 ? static_cast<uint32_t>(line) : 0;
      def.frames.push_back(std::move(f));
    }
    if (defs.size() < max_pending) {
      defs.push_back(std::move(def));
    } else {
      ++stats.dropped;  // never defined: pairs naming it resolve to nothing
    }
    return id;
  }
};

PythonStackCollector::PythonStackCollector(bool require_gil, size_t max_pending,
                                           size_t max_stacks)
    : require_gil_(require_gil), impl_(new Impl) {
  impl_->max_pending = max_pending;
  impl_->max_stacks = max_stacks;
}

PythonStackCollector::~PythonStackCollector() { delete impl_; }

void PythonStackCollector::UseApi(const PythonApi& api, const PythonLayout* layout) {
  impl_->api = api;
  impl_->layout = layout;
  impl_->str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  state_.store(layout != nullptr ? kActive : kInactive, std::memory_order_release);
}

bool PythonStackCollector::EnsureResolved() {
  int s = state_.load(std::memory_order_acquire);
  if (s != kUnresolved) return s == kActive;
  MutexLock lock(impl_->mu);
  s = state_.load(std::memory_order_acquire);
  if (s != kUnresolved) return s == kActive;
  bool ok = ResolvePythonApi(&impl_->api, &impl_->layout, &impl_->why);
  if (ok) impl_->str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  state_.store(ok ? kActive : kInactive, std::memory_order_release);
  return ok;
}

uint32_t PythonStackCollector::Walk(const uint32_t* correlation_id) {
  Impl& m = *impl_;
  const PythonApi& api = m.api;
  const PythonLayout& L = *m.layout;
  auto count = [&m](uint64_t PythonStackStats::*field) {
    MutexLock lock(m.mu);
    ++(m.stats.*field);
  };
  if (api.is_initialized() == 0 || (api.is_finalizing != nullptr && api.is_finalizing() != 0)) {
    count(&PythonStackStats::skipped_shutdown);
    return 0;
  }
  const void* ts = api.gil_state_this_thread();
  if (ts == nullptr) {
    count(&PythonStackStats::no_thread_state);
    return 0;
  }
  bool had_gil = api.current_tstate != nullptr && api.current_tstate() == ts;
  if (require_gil_ && !had_gil) {
    count(&PythonStackStats::skipped_no_gil);
    return 0;
  }
  const void* frame = LoadPtr(ts, L.tstate_frame);
  if (L.cframe_current >= 0 && frame != nullptr) frame = LoadPtr(frame, L.cframe_current);
  FrameKey keys[kMaxPythonFrames];
  int depth = 0;
  bool bad = false;
  const void* first = frame;
  uint64_t hash = 0;
  for (int steps = 0; frame != nullptr && depth < kMaxPythonFrames && steps < 4 * kMaxPythonFrames;
       ++steps) {
    const void* code = LoadPtr(frame, L.frame_code);
    const void* back = LoadPtr(frame, L.frame_back);
    bool skip = false;
    if (L.frame_owner >= 0) {
      int owner = Load<char>(frame, L.frame_owner);
      if (owner == L.owner_cstack) skip = true;  // the C entry shim of 3.12/3.13
      // 3.13 shim frames may hold None: skip any frame without a code object.
      if (!skip && (code == nullptr || LoadPtr(code, 8) != api.code_type)) skip = true;
      if (!skip) {
        const char* instr = static_cast<const char*>(LoadPtr(frame, L.frame_instr));
        const char* start = static_cast<const char*>(code) + L.code_adaptive;
        int first_traceable = Load<int>(code, L.code_firsttraceable);
        // Incomplete frames (being set up) have no valid instruction yet.
        if (owner != L.owner_generator && instr < start + 2 * first_traceable) skip = true;
        if (!skip) {
          keys[depth].code = code;
          keys[depth].lasti = instr - start;
        }
      }
    } else {
      if (code == nullptr || LoadPtr(code, 8) != api.code_type) {
        bad = true;
        break;
      }
      int lasti = Load<int>(frame, L.frame_lasti);
      keys[depth].code = code;
      keys[depth].lasti = lasti < 0 ? -1 : int64_t{lasti} * 2;
    }
    if (!skip) {
      FrameKey& k = keys[depth];
      k.fingerprint = Fingerprint(code, L);
      hash = Mix(Mix(Mix(hash, reinterpret_cast<uintptr_t>(code)), static_cast<uint64_t>(k.lasti)),
                 k.fingerprint);
      ++depth;
    }
    if (back == frame || back == first) {  // a cycle: stop
      bad = true;
      break;
    }
    frame = back;
  }
  MutexLock lock(m.mu);
  if (bad) ++m.stats.bad_frames;
  if (depth == 0) {
    ++m.stats.no_frames;
    return 0;
  }
  hash = Mix(hash, static_cast<uint64_t>(depth));
  size_t slot = 0;
  uint32_t id = m.Find(keys, depth, hash, &slot);
  if (id == 0) id = m.Insert(keys, depth, hash, slot);
  if (id == 0 || correlation_id == nullptr) return id;
  ++m.stats.captured;
  if (!had_gil) ++m.stats.captured_without_gil;
  if (m.pairs.size() >= m.max_pending) {
    ++m.stats.dropped;
    return 0;
  }
  m.pairs.push_back({*correlation_id, id});
  if (m.pairs.size() == m.max_pending / 2 && wake_fn_ != nullptr) wake_fn_(wake_arg_);
  return id;
}

uint32_t PythonStackCollector::CurrentStack() {
  if (!EnsureResolved()) return 0;
  return Walk(nullptr);
}

uint32_t PythonStackCollector::Capture(uint32_t correlation_id) {
  CostScope cost(CostPart::kPython);
  if (!EnsureResolved()) return 0;
  return Walk(&correlation_id);
}

void PythonStackCollector::Take(std::vector<PythonStackDef>* defs,
                                std::vector<PythonStackPair>* pairs) {
  MutexLock lock(impl_->mu);
  for (PythonStackDef& d : impl_->defs) defs->push_back(std::move(d));
  impl_->defs.clear();
  pairs->insert(pairs->end(), impl_->pairs.begin(), impl_->pairs.end());
  impl_->pairs.clear();
}

PythonStackStats PythonStackCollector::stats() const {
  MutexLock lock(impl_->mu);
  return impl_->stats;
}

std::string PythonStackCollector::inactive_reason() const {
  if (state_.load(std::memory_order_acquire) != kInactive) return "";
  MutexLock lock(impl_->mu);
  return impl_->why.empty() ? "not resolved" : impl_->why;
}

}  // namespace sightline::collect
