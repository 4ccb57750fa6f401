// lib/collect/cupti_params.h — a zeroed CUPTI parameter struct with its
// structSize set (every CUPTI profiler call takes one). Header-only, CUPTI
// headers aside nothing else: the range profiler and the standalone probe
// (bench/metrics/spread_probe.cu) both use it.
#ifndef SIGHTLINE_LIB_COLLECT_CUPTI_PARAMS_H_
#define SIGHTLINE_LIB_COLLECT_CUPTI_PARAMS_H_

#include <cstddef>
#include <cstring>

namespace sightline::collect {

template <typename Params>
Params MakeParams(size_t struct_size) {
  Params p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = struct_size;
  return p;
}

}  // namespace sightline::collect

#endif  // SIGHTLINE_LIB_COLLECT_CUPTI_PARAMS_H_
