// A fake libnvidia-ml for CPU tests of the NVML poller (SIGHTLINE_NVML_LIB).
// One device; its utilization (percent) and memory used (MiB) are read from
// the file named by SIGHTLINE_FAKE_NVML_FILE ("UTIL MEM_MIB"), else 90 / 1000.
#include <cstdio>
#include <cstdlib>

namespace {
struct Util {
  unsigned gpu, memory;
};
struct Mem {
  unsigned long long total, free, used;
};
void Read(unsigned* util, unsigned* mem_mib) {
  *util = 90;
  *mem_mib = 1000;
  const char* path = std::getenv("SIGHTLINE_FAKE_NVML_FILE");
  if (path == nullptr) return;
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return;
  if (std::fscanf(f, "%u %u", util, mem_mib) != 2) {
    *util = 90;
    *mem_mib = 1000;
  }
  std::fclose(f);
}
int g_device = 0;
}  // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int) { return "fake error"; }
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 1;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  if (i != 0) return 2;
  *d = &g_device;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void*, Util* u) {
  unsigned util, mem;
  Read(&util, &mem);
  u->gpu = util;
  u->memory = 10;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void*, Mem* m) {
  unsigned util, mem;
  Read(&util, &mem);
  m->total = 80ull << 30;
  m->used = static_cast<unsigned long long>(mem) << 20;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetClockInfo(void*, int type, unsigned* mhz) {
  *mhz = type == 1 ? 1980 : 0;
  return 0;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  *mw = 450000;
  return 0;
}
int nvmlDeviceGetTemperature(void*, int, unsigned* c) {
  *c = 51;
  return 0;
}
}
