// lib/collect/call_stacks.cc — see call_stacks.h.
#include "lib/collect/call_stacks.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>
#include <cstring>

#include "lib/collect/self_cost.h"

namespace sightline::collect {

StackCollector::StackCollector(size_t max_pending) : max_pending_(max_pending) {
  pending_.reserve(256);
}

void StackCollector::WarmUp() {
  void* frames[2];
  backtrace(frames, 2);
}

void StackCollector::Capture(uint32_t correlation_id, bool shareable) {
  RawStack raw;
  raw.correlation_id = correlation_id;
  raw.shareable = shareable;
  CostScope cost(CostPart::kNative);
  int n = backtrace(raw.frames, kMaxStackFrames);
  raw.depth = n > 0 ? static_cast<uint32_t>(n) : 0;
  Push(raw);
}

void StackCollector::Share(uint32_t correlation_id, uint32_t same_as) {
  MutexLock lock(mu_);
  if (pending_.size() >= max_pending_) {
    ++dropped_;
    return;
  }
  RawStack& raw = pending_.emplace_back();
  raw.correlation_id = correlation_id;
  raw.same_as = same_as;
}

FrameSide ClassifyModule(const char* path) {
  if (path == nullptr) return FrameSide::kCaller;
  const char* base = std::strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  if (std::strncmp(base, "libcupti", 8) == 0) return FrameSide::kCupti;
  for (const char* prefix : {"libsightline", "libcuda.so", "libcudart"}) {
    if (std::strncmp(base, prefix, std::strlen(prefix)) == 0) return FrameSide::kCuda;
  }
  return FrameSide::kCaller;
}

FrameSide NativeStackOnce::Side(uintptr_t address) {
  {
    MutexLock lock(mu_);
    if (auto it = sides_.find(address); it != sides_.end()) return it->second;
  }
  // dladdr takes the loader's lock: never while holding mu_ (a thread inside
  // dlopen, calling CUDA from a constructor, may be waiting for mu_).
  Dl_info info = {};
  // A return address points after the call: look up the calling instruction.
  const FrameSide side = dladdr(reinterpret_cast<void*>(address - 1), &info) != 0
                             ? ClassifyModule(info.dli_fname)
                             : FrameSide::kCaller;
  MutexLock lock(mu_);
  if (sides_.size() < max_keys_) sides_.emplace(address, side);
  return side;
}

void NativeStackOnce::CaptureOrShare(StackCollector* stacks, uint32_t python_stack,
                                     uint32_t api_key, uint32_t correlation_id) {
  if (python_stack == 0) {
    stacks->Capture(correlation_id);
    return;
  }
  uintptr_t caller = 0;
  {
    CostScope cost(CostPart::kCaller);
    void* frames[kCallerFrames];
    const int n = backtrace(frames, kCallerFrames);
    caller = FirstCallerAddress(frames, n, [this](uintptr_t a) { return Side(a); });
  }
  bool remember = false;
  const uint32_t same_as = Decide(python_stack, api_key, caller, correlation_id, &remember);
  if (same_as != 0) {
    stacks->Share(correlation_id, same_as);
  } else {
    stacks->Capture(correlation_id, remember);
  }
}

uint32_t NativeStackOnce::Decide(uint32_t python_stack, uint32_t api_key, uintptr_t caller,
                                 uint32_t correlation_id, bool* remember) {
  *remember = false;
  if (python_stack == 0 || caller == 0 || correlation_id == 0) return 0;
  MutexLock lock(mu_);
  const auto key = std::make_tuple(python_stack, api_key, caller);
  if (auto it = first_.find(key); it != first_.end()) {
    ++shared_;
    return it->second;
  }
  if (first_.size() < max_keys_) {
    first_.emplace(key, correlation_id);
    *remember = true;
  }
  return 0;
}

uint64_t NativeStackOnce::shared() const {
  MutexLock lock(mu_);
  return shared_;
}

void StackCollector::Push(const RawStack& raw) {
  MutexLock lock(mu_);
  if (pending_.size() >= max_pending_) {
    ++dropped_;
    return;
  }
  pending_.push_back(raw);
}

void StackCollector::Take(std::vector<RawStack>* out) {
  MutexLock lock(mu_);
  out->insert(out->end(), pending_.begin(), pending_.end());
  pending_.clear();
}

uint64_t StackCollector::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

StackSymbolizer::StackSymbolizer(std::vector<std::string> skip_module_prefixes)
    : skip_prefixes_(std::move(skip_module_prefixes)) {}

const StackSymbolizer::Resolved& StackSymbolizer::Resolve(void* address, EventSink* sink) {
  auto it = cache_.find(address);
  if (it != cache_.end()) return it->second;
  Resolved r;
  Dl_info info = {};
  // Return addresses point after the call; look up address-1 so the frame is
  // attributed to the calling instruction's function.
  void* lookup = static_cast<char*>(address) - 1;
  if (dladdr(lookup, &info) != 0) {
    const char* module = info.dli_fname != nullptr ? info.dli_fname : "";
    const char* base = std::strrchr(module, '/');
    base = base != nullptr ? base + 1 : module;
    for (const std::string& prefix : skip_prefixes_) {
      if (std::strncmp(base, prefix.c_str(), prefix.size()) == 0) r.skip = true;
    }
    r.module_id = sink->Intern(module);
    if (info.dli_sname != nullptr) r.function_id = sink->Intern(Demangle(info.dli_sname));
    r.offset = reinterpret_cast<uintptr_t>(address) - reinterpret_cast<uintptr_t>(info.dli_fbase);
  }
  return cache_.emplace(address, r).first->second;
}

uint32_t StackSymbolizer::Symbolize(const RawStack& raw, EventSink* sink) {
  if (raw.same_as != 0) {
    auto it = shareable_ids_.find(raw.same_as);
    return it != shareable_ids_.end() ? it->second : 0;
  }
  CallStack stack;
  bool cutting = true;
  for (uint32_t i = 0; i < raw.depth && i < kMaxStackFrames; ++i) {
    const Resolved& r = Resolve(raw.frames[i], sink);
    if (cutting && r.skip) continue;
    cutting = false;
    StackFrame f;
    f.function_id = r.function_id;
    f.module_id = r.module_id;
    f.offset = r.offset;
    f.address = reinterpret_cast<uintptr_t>(raw.frames[i]);
    stack.frames.push_back(f);
  }
  if (stack.frames.empty()) return 0;
  const uint32_t id = sink->InternStack(stack);
  if (raw.shareable) shareable_ids_.emplace(raw.correlation_id, id);
  return id;
}

}  // namespace sightline::collect
