// lib/collect/call_stacks.cc — see call_stacks.h.
#include "lib/collect/call_stacks.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>
#include <cstring>

namespace sightline::collect {

StackCollector::StackCollector(size_t max_pending) : max_pending_(max_pending) {
  pending_.reserve(256);
}

void StackCollector::WarmUp() {
  void* frames[2];
  backtrace(frames, 2);
}

void StackCollector::Capture(uint32_t correlation_id) {
  RawStack raw;
  raw.correlation_id = correlation_id;
  int n = backtrace(raw.frames, kMaxStackFrames);
  raw.depth = n > 0 ? static_cast<uint32_t>(n) : 0;
  Push(raw);
}

bool NativeStackOnce::First(uint32_t python_stack, uint32_t api_key) {
  if (python_stack == 0) return true;
  const uint64_t key = (uint64_t{python_stack} << 32) | api_key;
  MutexLock lock(mu_);
  if (seen_.count(key) != 0) {
    ++shared_;
    return false;
  }
  if (seen_.size() < max_keys_) seen_.insert(key);
  return true;
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
  return sink->InternStack(stack);
}

}  // namespace sightline::collect
