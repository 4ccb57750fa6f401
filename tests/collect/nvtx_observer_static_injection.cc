// NVTX's static injection for nvtx_observer_test.cc: a strong definition of
// the pointer NVTX's header defines weak in every instance.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

extern "C" {
int SightlineTestNvtxInject(NvtxGetExportTableFunc_t get);
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &SightlineTestNvtxInject;
}
