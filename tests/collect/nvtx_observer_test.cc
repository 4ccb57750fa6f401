// tests/collect/nvtx_observer_test.cc — sightline's NVTX handlers in front of
// a tool's (monitor mode, lib/collect/nvtx_observer.h), against the real
// header-only NVTX of the CUDA toolkit: this binary is an NVTX instance
// whose injection is linked in statically (InitializeInjectionNvtx2_fnptr);
// a fake "CUPTI" fills every slot it is given and records what reaches it.
#include <nvtx3/nvToolsExt.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/collect/nvtx_observer.h"
#include "lib/collect/self_cost.h"

namespace {

std::vector<std::string> g_observed;
std::vector<std::string> g_tool;  // what reached the fake CUPTI, in order

void Observer(const char* message) { g_observed.emplace_back(message); }

std::string Msg(const nvtxEventAttributes_t* a) {
  return a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "?";
}

// The fake tool's handlers: each records its call and returns a value that
// shows it was the one called.
void NVTX_API ToolMarkA(const char* m) { g_tool.push_back(std::string("markA ") + m); }
void NVTX_API ToolMarkEx(const nvtxEventAttributes_t* a) { g_tool.push_back("markEx " + Msg(a)); }
int NVTX_API ToolPushA(const char* m) {
  g_tool.push_back(std::string("pushA ") + m);
  return 41;
}
int NVTX_API ToolPushEx(const nvtxEventAttributes_t* a) {
  g_tool.push_back("pushEx " + Msg(a));
  return 42;
}
int NVTX_API ToolPop() {
  g_tool.push_back("pop");
  return 40;
}
nvtxRangeId_t NVTX_API ToolStartA(const char* m) {
  g_tool.push_back(std::string("startA ") + m);
  return 1234;
}
void NVTX_API ToolEnd(nvtxRangeId_t id) { g_tool.push_back("end " + std::to_string(id)); }
nvtxDomainHandle_t NVTX_API ToolDomainCreateA(const char* name) {
  g_tool.push_back(std::string("domain ") + name);
  return reinterpret_cast<nvtxDomainHandle_t>(0x77);
}
int NVTX_API ToolDomainPushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  g_tool.push_back("domainPush " + std::to_string(reinterpret_cast<uintptr_t>(d)) + " " + Msg(a));
  return 43;
}
int NVTX_API ToolDomainPop(nvtxDomainHandle_t) {
  g_tool.push_back("domainPop");
  return 44;
}

int g_tool_inits = 0;

// What CUPTI's InitializeInjectionNvtx2 does: writes its handlers into the
// slots the export table gives it.
int FakeToolInit(sightline::collect::NvtxGetExportTableFn get) {
  ++g_tool_inits;
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int n1 = 0, n2 = 0;
  if (cb == nullptr || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &n1) ||
      !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &n2)) {
    return 0;
  }
  auto set = [](NvtxFunctionTable t, unsigned int n, unsigned int id, auto fn) {
    if (id < n && t[id] != nullptr) *t[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  };
  set(core, n1, NVTX_CBID_CORE_MarkA, &ToolMarkA);
  set(core, n1, NVTX_CBID_CORE_MarkEx, &ToolMarkEx);
  set(core, n1, NVTX_CBID_CORE_RangePushA, &ToolPushA);
  set(core, n1, NVTX_CBID_CORE_RangePushEx, &ToolPushEx);
  set(core, n1, NVTX_CBID_CORE_RangePop, &ToolPop);
  set(core, n1, NVTX_CBID_CORE_RangeStartA, &ToolStartA);
  set(core, n1, NVTX_CBID_CORE_RangeEnd, &ToolEnd);
  set(core2, n2, NVTX_CBID_CORE2_DomainCreateA, &ToolDomainCreateA);
  set(core2, n2, NVTX_CBID_CORE2_DomainRangePushEx, &ToolDomainPushEx);
  set(core2, n2, NVTX_CBID_CORE2_DomainRangePop, &ToolDomainPop);
  return 1;
}

}  // namespace

// The injection (NVTX's static-injection pointer to it is defined in
// nvtx_observer_static_injection.cc: the header defines it weak here).
extern "C" int SightlineTestNvtxInject(NvtxGetExportTableFunc_t get) {
  return sightline::collect::InstallNvtxObserver(get, &FakeToolInit, &Observer);
}

namespace {

nvtxEventAttributes_t Attr(const char* message) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

// One process, one NVTX instance: every expectation in one test, in order.
TEST(NvtxObserver, SeesMessagesAndLeavesEveryCallToTheTool) {
  unsetenv("NVTX_INJECTION64_PATH");
  unsetenv("NVTX_INJECTION32_PATH");
  EXPECT_EQ(sightline::collect::NvtxObservedInstances(), 0u);
  EXPECT_EQ(nvtxRangePushA("train_step"), 41) << "the tool's return value";
  EXPECT_EQ(g_tool_inits, 1);
  EXPECT_EQ(sightline::collect::NvtxObservedInstances(), 1u);
  nvtxMarkA("sightline.torch_memory device=0 opt=0");
  nvtxEventAttributes_t fwd = Attr("forward");
  EXPECT_EQ(nvtxRangePushEx(&fwd), 42);
  EXPECT_EQ(nvtxRangePop(), 40);
  EXPECT_EQ(nvtxRangePop(), 40);
  nvtxRangeId_t id = nvtxRangeStartA("epoch");
  EXPECT_EQ(id, 1234u);
  nvtxRangeEnd(id);
  nvtxDomainHandle_t d = nvtxDomainCreateA("NCCL");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d), 0x77u) << "domains are the tool's";
  nvtxEventAttributes_t ar = Attr("allreduce");
  EXPECT_EQ(nvtxDomainRangePushEx(d, &ar), 43);
  EXPECT_EQ(nvtxDomainRangePop(d), 44);
  nvtxEventAttributes_t mk = Attr("checkpoint");
  nvtxMarkEx(&mk);
  const std::vector<std::string> observed = {"train_step", "sightline.torch_memory device=0 opt=0",
                                             "forward",    "epoch",
                                             "allreduce",  "checkpoint"};
  EXPECT_EQ(g_observed, observed);
  const std::vector<std::string> tool = {"pushA train_step",
                                         "markA sightline.torch_memory device=0 opt=0",
                                         "pushEx forward",
                                         "pop",
                                         "pop",
                                         "startA epoch",
                                         "end 1234",
                                         "domain NCCL",
                                         "domainPush 119 allreduce",
                                         "domainPop",
                                         "markEx checkpoint"};
  EXPECT_EQ(g_tool, tool) << "every call reached the tool once, with its arguments";

  // SIGHTLINE_SELF_COST: the handlers time what they do before the tool's
  // handler; nothing while off.
  using sightline::collect::CostPart;
  using sightline::collect::SelfCost;
  SelfCost::ResetForTest();
  nvtxRangePushA("off");
  EXPECT_EQ(SelfCost::Totals(CostPart::kObserver).count, 0u);
  SelfCost::SetEnabled(true);
  nvtxRangePushA("on");
  nvtxMarkA("on");
  SelfCost::SetEnabled(false);
  EXPECT_EQ(SelfCost::Totals(CostPart::kObserver).count, 2u);
  EXPECT_NE(SelfCost::Report().find("] nvtx handlers: 2 calls"), std::string::npos)
      << SelfCost::Report();
}

}  // namespace
