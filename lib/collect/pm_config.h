// lib/collect/pm_config.h — which PM-sampling metrics a chip gets: the host
// side of `--gpu-metrics` set-up (libcupti's profiler host API and
// libnvperf_host only, no GPU and no driver), so the choice for GA100 and
// GH100 is unit-tested offline (tests/collect/pm_config_test.cc).
//
// Each quantity (lib/trace/pm_quantities.h) gets its first candidate name
// that configures alone in one pass (one unknown name makes a whole
// ConfigAddMetrics call fail with CUPTI_ERROR_UNKNOWN on the H200); the
// accepted ones are added in one call (each call adds a pass) and, while
// that needs more than one pass, the last quantities are dropped.
#ifndef SIGHTLINE_LIB_COLLECT_PM_CONFIG_H_
#define SIGHTLINE_LIB_COLLECT_PM_CONFIG_H_

#include <cupti.h>
#include <cupti_profiler_host.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sightline::collect {

// A profiler host object for PM sampling on one chip: configures metrics and
// evaluates samples.
class HostObject {
 public:
  HostObject() = default;
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;
  ~HostObject() { Reset(); }
  void Reset();
  CUptiResult Init(const std::string& chip, const std::vector<uint8_t>& availability);
  // One ConfigAddMetrics call with all names, then the config image and its
  // pass count.
  CUptiResult Configure(const std::vector<const char*>& names, std::vector<uint8_t>* image,
                        size_t* passes);
  CUpti_Profiler_Host_Object* get() const { return host_; }

 private:
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

struct PmMetricChoice {
  std::vector<const char*> metrics;  // CUPTI names (static strings of pm_quantities.cc)
  std::vector<std::string> missing;  // quantity keys not sampled
  std::vector<uint8_t> config;       // the single-pass config image
};

// Fills *out and leaves `host` configured with out->metrics (for
// evaluation). `availability`: the device's counter-availability image, or
// empty (offline). `wanted(key)` filters quantities. Returns "" or what
// failed.
std::string ChoosePmMetrics(const std::string& chip, const std::vector<uint8_t>& availability,
                            bool (*wanted)(const char* key), HostObject* host,
                            PmMetricChoice* out);

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_PM_CONFIG_H_
