// lib/collect/nvtx_observer.cc — see nvtx_observer.h.
#include "lib/collect/nvtx_observer.h"

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "lib/collect/self_cost.h"

namespace sightline::collect {
namespace {

std::atomic<NvtxMessageObserver> g_observer{nullptr};
std::atomic<uint32_t> g_instances{0};
// CUPTI's handlers of the observed slots (the same functions for every
// instance: an NVTX handler's arguments do not say which instance called).
std::atomic<NvtxFunctionPointer> g_core[NVTX_CBID_CORE_SIZE];
std::atomic<NvtxFunctionPointer> g_core2[NVTX_CBID_CORE2_SIZE];

inline void Observe(const char* message) {
  CostScope cost(CostPart::kObserver);
  NvtxMessageObserver o = g_observer.load(std::memory_order_relaxed);
  if (o != nullptr && message != nullptr) o(message);
}

inline const char* Ascii(const nvtxEventAttributes_t* a) {
  return a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : nullptr;
}

template <typename Fn>
inline Fn Core(int cbid) {
  return reinterpret_cast<Fn>(g_core[cbid].load(std::memory_order_acquire));
}
template <typename Fn>
inline Fn Core2(int cbid) {
  return reinterpret_cast<Fn>(g_core2[cbid].load(std::memory_order_acquire));
}

void NVTX_API MarkEx(const nvtxEventAttributes_t* a) {
  Observe(Ascii(a));
  if (auto f = Core<nvtxMarkEx_impl_fntype>(NVTX_CBID_CORE_MarkEx)) f(a);
}
void NVTX_API MarkA(const char* m) {
  Observe(m);
  if (auto f = Core<nvtxMarkA_impl_fntype>(NVTX_CBID_CORE_MarkA)) f(m);
}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  Observe(Ascii(a));
  auto f = Core<nvtxRangeStartEx_impl_fntype>(NVTX_CBID_CORE_RangeStartEx);
  return f != nullptr ? f(a) : nvtxRangeId_t{0};
}
nvtxRangeId_t NVTX_API RangeStartA(const char* m) {
  Observe(m);
  auto f = Core<nvtxRangeStartA_impl_fntype>(NVTX_CBID_CORE_RangeStartA);
  return f != nullptr ? f(m) : nvtxRangeId_t{0};
}
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) {
  Observe(Ascii(a));
  auto f = Core<nvtxRangePushEx_impl_fntype>(NVTX_CBID_CORE_RangePushEx);
  return f != nullptr ? f(a) : NVTX_NO_PUSH_POP_TRACKING;
}
int NVTX_API RangePushA(const char* m) {
  Observe(m);
  auto f = Core<nvtxRangePushA_impl_fntype>(NVTX_CBID_CORE_RangePushA);
  return f != nullptr ? f(m) : NVTX_NO_PUSH_POP_TRACKING;
}
void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Observe(Ascii(a));
  if (auto f = Core2<nvtxDomainMarkEx_impl_fntype>(NVTX_CBID_CORE2_DomainMarkEx)) f(d, a);
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Observe(Ascii(a));
  auto f = Core2<nvtxDomainRangeStartEx_impl_fntype>(NVTX_CBID_CORE2_DomainRangeStartEx);
  return f != nullptr ? f(d, a) : nvtxRangeId_t{0};
}
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Observe(Ascii(a));
  auto f = Core2<nvtxDomainRangePushEx_impl_fntype>(NVTX_CBID_CORE2_DomainRangePushEx);
  return f != nullptr ? f(d, a) : NVTX_NO_PUSH_POP_TRACKING;
}

struct Observed {
  NvtxCallbackModule module;
  int cbid;
  NvtxFunctionPointer handler;
};
const Observed kObserved[] = {
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, reinterpret_cast<NvtxFunctionPointer>(&MarkEx)},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, reinterpret_cast<NvtxFunctionPointer>(&MarkA)},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx,
     reinterpret_cast<NvtxFunctionPointer>(&RangeStartEx)},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA,
     reinterpret_cast<NvtxFunctionPointer>(&RangeStartA)},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx,
     reinterpret_cast<NvtxFunctionPointer>(&RangePushEx)},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA,
     reinterpret_cast<NvtxFunctionPointer>(&RangePushA)},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx,
     reinterpret_cast<NvtxFunctionPointer>(&DomainMarkEx)},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx,
     reinterpret_cast<NvtxFunctionPointer>(&DomainRangeStartEx)},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx,
     reinterpret_cast<NvtxFunctionPointer>(&DomainRangePushEx)},
};

bool IsObserved(NvtxCallbackModule module, unsigned int cbid) {
  for (const Observed& o : kObserved) {
    if (o.module == module && static_cast<unsigned int>(o.cbid) == cbid) return true;
  }
  return false;
}

// The instance being set up (one at a time, under g_install_mu): what the
// proxy export table hands CUPTI.
std::mutex g_install_mu;
NvtxGetExportTableFn g_real_get = nullptr;
const NvtxExportTableCallbacks* g_real_callbacks = nullptr;
// Per instance, never freed (CUPTI may keep the table it was given): the
// proxy tables point at the shadow slots for the observed calls and at the
// instance's own slots for the rest.
struct Proxy {
  NvtxFunctionPointer shadow_core[NVTX_CBID_CORE_SIZE] = {};
  NvtxFunctionPointer shadow_core2[NVTX_CBID_CORE2_SIZE] = {};
  // As long as the instance's own tables (a newer NVTX may have more slots).
  std::vector<NvtxFunctionPointer*> table_core, table_core2;
};
Proxy* g_proxy = nullptr;

int NVTX_API ProxyGetModuleFunctionTable(NvtxCallbackModule module, NvtxFunctionTable* out_table,
                                         unsigned int* out_size) {
  NvtxFunctionTable real = nullptr;
  unsigned int size = 0;
  if (g_real_callbacks == nullptr ||
      g_real_callbacks->GetModuleFunctionTable(module, &real, &size) == 0 || real == nullptr) {
    return 0;
  }
  std::vector<NvtxFunctionPointer*>* table = nullptr;
  NvtxFunctionPointer* shadow = nullptr;
  if (module == NVTX_CB_MODULE_CORE) {
    table = &g_proxy->table_core;
    shadow = g_proxy->shadow_core;
  } else if (module == NVTX_CB_MODULE_CORE2) {
    table = &g_proxy->table_core2;
    shadow = g_proxy->shadow_core2;
  } else {
    if (out_table != nullptr) *out_table = real;
    if (out_size != nullptr) *out_size = size;
    return 1;
  }
  // Every slot of the instance (a newer NVTX may have more than this header
  // knows: those are the instance's own, for CUPTI to fill); the observed
  // ones point at the shadow table.
  table->assign(size + 1, nullptr);
  for (unsigned int i = 0; i < size; ++i) {
    (*table)[i] = IsObserved(module, i) ? &shadow[i] : real[i];
  }
  if (out_table != nullptr) *out_table = table->data();
  if (out_size != nullptr) *out_size = size;
  return 1;
}

const NvtxExportTableCallbacks kProxyCallbacks = {sizeof(NvtxExportTableCallbacks),
                                                  &ProxyGetModuleFunctionTable};

const void* NVTX_API ProxyGet(uint32_t id) {
  if (id == NVTX_ETID_CALLBACKS) return &kProxyCallbacks;
  return g_real_get != nullptr ? g_real_get(id) : nullptr;
}

}  // namespace

int InstallNvtxObserver(NvtxGetExportTableFn get, NvtxInitFn cupti_init,
                        NvtxMessageObserver observer) {
  if (get == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  NvtxMessageObserver none = nullptr;
  g_observer.compare_exchange_strong(none, observer);
  std::lock_guard<std::mutex> lock(g_install_mu);
  g_real_get = get;
  g_real_callbacks = callbacks;
  g_proxy = new Proxy();
  const int cupti_ok = cupti_init != nullptr ? cupti_init(&ProxyGet) : 0;
  // CUPTI's handlers of the observed calls, for every instance.
  if (cupti_ok != 0) {
    for (const Observed& o : kObserved) {
      NvtxFunctionPointer f = o.module == NVTX_CB_MODULE_CORE ? g_proxy->shadow_core[o.cbid]
                                                               : g_proxy->shadow_core2[o.cbid];
      if (f == nullptr) continue;
      std::atomic<NvtxFunctionPointer>& slot =
          o.module == NVTX_CB_MODULE_CORE ? g_core[o.cbid] : g_core2[o.cbid];
      NvtxFunctionPointer expected = nullptr;
      slot.compare_exchange_strong(expected, f, std::memory_order_acq_rel);
    }
  }
  // Ours into the instance's slots.
  int installed = 0;
  for (NvtxCallbackModule module : {NVTX_CB_MODULE_CORE, NVTX_CB_MODULE_CORE2}) {
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (callbacks->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) continue;
    for (const Observed& o : kObserved) {
      if (o.module != module || static_cast<unsigned int>(o.cbid) >= size) continue;
      if (table[o.cbid] == nullptr) continue;
      *table[o.cbid] = o.handler;
      ++installed;
    }
  }
  // Only during an install: a later call through the proxy finds nothing
  // (ProxyGet returns null, the table function 0) rather than another
  // instance's tables.
  g_real_get = nullptr;
  g_real_callbacks = nullptr;
  if (installed == 0) return cupti_ok;
  g_instances.fetch_add(1, std::memory_order_relaxed);
  return 1;
}

uint32_t NvtxObservedInstances() { return g_instances.load(std::memory_order_relaxed); }

}  // namespace sightline::collect
