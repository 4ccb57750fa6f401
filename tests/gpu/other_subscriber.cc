// tests/gpu/other_subscriber.cc — an application that holds CUPTI itself
// before any CUDA work (as torch.profiler, a sanitizer or an in-house tracer
// would), for tests/gpu/coexistence.sh: run under `sightline profile` (or
// with sightline LD_PRELOADed) it must finish with the right results and its
// own subscriber must keep working; sightline must say once that it is off.
//
// Prints "OTHER_SUBSCRIBER subscribed=1 callbacks=N result=ok" (or exits 1).
#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

std::atomic<long> g_callbacks{0};

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {
  g_callbacks.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

int main() {
  CUpti_SubscriberHandle subscriber = nullptr;
  CUptiResult r = cuptiSubscribe(&subscriber, &OnCallback, nullptr);
  int subscribed = r == CUPTI_SUCCESS ? 1 : 0;
  if (subscribed) cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  else std::fprintf(stderr, "other_subscriber: cuptiSubscribe failed (%d)\n", static_cast<int>(r));

  const int n = 1 << 20;
  int* d = nullptr;
  std::vector<int> h(n, 0);
  bool ok = cudaMalloc(&d, n * sizeof(int)) == cudaSuccess;
  for (int round = 0; ok && round < 50; ++round) {
    ok = cudaMemset(d, round & 0x7f, n * sizeof(int)) == cudaSuccess &&
         cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
    int want = (round & 0x7f) * 0x01010101;
    for (int i = 0; ok && i < n; i += 4097) ok = h[i] == want;
  }
  if (d != nullptr) cudaFree(d);
  if (subscribed) cuptiUnsubscribe(subscriber);
  std::printf("OTHER_SUBSCRIBER subscribed=%d callbacks=%ld result=%s\n", subscribed,
              g_callbacks.load(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
