// sightline/sightline.hpp — header-only C++ RAII over sightline.h.
//
//   sightline::Session session;          // sightline_start() … sightline_stop()
//   for (uint64_t i = 0; i < steps; ++i) {
//     sightline::Step step(i);           // StepEvent at each iteration
//     sightline::ScopedRange r("forward");
//     ...
//   }
// Nothing here allocates or throws; when no capture window is open a
// ScopedRange costs two calls that each do one load and a branch.
#ifndef SIGHTLINE_SIGHTLINE_HPP_
#define SIGHTLINE_SIGHTLINE_HPP_

#include <cstdint>

#include "sightline/sightline.h"

namespace sightline {

// Opens a capture window for its lifetime (flushes on destruction).
class Session {
 public:
  Session() : ok_(sightline_start() == 0) {}
  ~Session() {
    if (ok_) {
      sightline_stop();
      sightline_flush();
    }
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

// A named range on the calling thread for the enclosing scope. `name` must
// outlive the scope (use string literals).
class ScopedRange {
 public:
  explicit ScopedRange(const char* name) { sightline_range_push(name); }
  ~ScopedRange() { sightline_range_pop(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

// Marks the beginning of training step `n`, and times it as a range "step".
class Step {
 public:
  explicit Step(uint64_t n) {
    sightline_step(n);
    sightline_range_push("step");
  }
  ~Step() { sightline_range_pop(); }
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;
};

}  // namespace sightline

#endif  // SIGHTLINE_SIGHTLINE_HPP_
