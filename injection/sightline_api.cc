// injection/sightline_api.cc — the C ABI of include/sightline/sightline.h.
#include "sightline/sightline.h"

#include <string>

#include "lib/collect/collector.h"

namespace {
using sightline::collect::Collector;
using sightline::collect::sightline_internal_capturing;

thread_local uint32_t t_open_ranges = 0;
thread_local std::string t_last_error;
}  // namespace

extern "C" {

int sightline_start(void) { return Collector::Get().ApiStart(); }

int sightline_stop(void) { return Collector::Get().ApiStop(); }

int sightline_flush(void) { return Collector::Get().ApiFlush(); }

void sightline_range_push(const char* name) {
  if (__builtin_expect(__atomic_load_n(&sightline_internal_capturing, __ATOMIC_RELAXED) == 0, 1)) {
    return;
  }
  ++t_open_ranges;
  Collector::Get().RangePush(name);
}

void sightline_range_pop(void) {
  if (__builtin_expect(t_open_ranges == 0, 1)) return;
  --t_open_ranges;
  Collector::Get().RangePop();
}

void sightline_step(uint64_t step) {
  // Always: the monitor times steps between captures too (Step() records
  // the step in the trace only while capturing).
  Collector::Get().Step(step);
}

const char* sightline_version(void) { return SIGHTLINE_VERSION; }

const char* sightline_last_error(void) {
  if (!Collector::Get().initialized()) return "";
  t_last_error = Collector::Get().last_error();
  return t_last_error.c_str();
}

}  // extern "C"
