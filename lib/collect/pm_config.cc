// lib/collect/pm_config.cc — see pm_config.h.
#include "lib/collect/pm_config.h"

#include "lib/collect/cupti_params.h"
#include "lib/trace/pm_quantities.h"

namespace sightline::collect {

#define SL_PARAMS(T) MakeParams<T>(T##_STRUCT_SIZE)

void HostObject::Reset() {
  if (host_ == nullptr) return;
  auto p = SL_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  p.pHostObject = host_;
  cuptiProfilerHostDeinitialize(&p);
  host_ = nullptr;
}

CUptiResult HostObject::Init(const std::string& chip, const std::vector<uint8_t>& availability) {
  Reset();
  auto p = SL_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  p.pChipName = chip.c_str();
  p.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
  CUptiResult r = cuptiProfilerHostInitialize(&p);
  if (r == CUPTI_SUCCESS) host_ = p.pHostObject;
  return r;
}

CUptiResult HostObject::Configure(const std::vector<const char*>& names,
                                  std::vector<uint8_t>* image, size_t* passes) {
  auto a = SL_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  a.pHostObject = host_;
  a.ppMetricNames = const_cast<const char**>(names.data());
  a.numMetrics = names.size();
  CUptiResult r = cuptiProfilerHostConfigAddMetrics(&a);
  if (r != CUPTI_SUCCESS) return r;
  auto s = SL_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  s.pHostObject = host_;
  if ((r = cuptiProfilerHostGetConfigImageSize(&s)) != CUPTI_SUCCESS) return r;
  image->assign(s.configImageSize, 0);
  auto g = SL_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  g.pHostObject = host_;
  g.configImageSize = image->size();
  g.pConfigImage = image->data();
  if ((r = cuptiProfilerHostGetConfigImage(&g)) != CUPTI_SUCCESS) return r;
  auto n = SL_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  n.configImageSize = image->size();
  n.pConfigImage = image->data();
  if ((r = cuptiProfilerHostGetNumOfPasses(&n)) != CUPTI_SUCCESS) return r;
  *passes = n.numOfPasses;
  return CUPTI_SUCCESS;
}

std::string ChoosePmMetrics(const std::string& chip, const std::vector<uint8_t>& availability,
                            bool (*wanted)(const char* key), HostObject* host,
                            PmMetricChoice* out) {
  *out = PmMetricChoice();
  for (size_t q = 0; q < kNumPmQuantities; ++q) {
    const PmQuantityInfo& info = PmQuantities()[q];
    if (wanted != nullptr && !wanted(info.key)) continue;
    const char* pick = nullptr;
    for (const char* const* c = info.candidates; *c != nullptr && pick == nullptr; ++c) {
      HostObject probe;
      std::vector<uint8_t> image;
      size_t passes = 0;
      if (probe.Init(chip, availability) == CUPTI_SUCCESS &&
          probe.Configure({*c}, &image, &passes) == CUPTI_SUCCESS && passes == 1) {
        pick = *c;
      }
    }
    if (pick != nullptr) {
      out->metrics.push_back(pick);
    } else {
      out->missing.push_back(info.key);
    }
  }
  while (!out->metrics.empty()) {
    size_t passes = 0;
    if (CUptiResult r = host->Init(chip, availability); r != CUPTI_SUCCESS) {
      const char* s = nullptr;
      cuptiGetResultString(r, &s);
      return std::string("cuptiProfilerHostInitialize: ") + (s != nullptr ? s : "error");
    }
    const CUptiResult r = host->Configure(out->metrics, &out->config, &passes);
    if (r == CUPTI_SUCCESS && passes == 1) return std::string();
    PmQuantity q;
    out->missing.push_back(PmQuantityForMetric(out->metrics.back(), &q) ? PmQuantityOf(q).key
                                                                        : out->metrics.back());
    out->metrics.pop_back();
  }
  return "no PM-sampling metric configures on " + chip;
}

}  // namespace sightline::collect
