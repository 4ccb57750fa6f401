// sightline_trace_gen — writes a synthetic training-loop trace (see
// tests/export/synthetic_trace.h) to a file or to `sightline serve`
// ("unix:PATH"). Used by the CLI script tests and for demos.
//
//   sightline_trace_gen OUT [--steps N] [--kernels-per-step K] [--kernel-us U]
//       [--host-work-us H] [--pinned] [--pid P] [--rank R] [--host NAME]
//       [--chunk-bytes B] [--step-delay-ms D] [--die-after-bytes N] [--as-uid UID]
//       [--kernel-name NAME] [--extra-arg ARG] [--outlier-kernel-ns T] [--start-ns T]
//
// --die-after-bytes N: the process sends exactly N bytes of its stream, then
// kills itself with SIGKILL (a client dying mid-chunk). --as-uid: drop to that
// uid before connecting (root only; the "other user" test).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "tests/export/synthetic_trace.h"

namespace {

// Forwards to a sink until `limit` bytes went through, then dies mid-write.
class DyingSink : public sightline::trace::Sink {
 public:
  DyingSink(std::unique_ptr<sightline::trace::Sink> inner, uint64_t limit)
      : inner_(std::move(inner)), limit_(limit) {}
  bool Write(const void* data, size_t size) override {
    if (sent_ + size > limit_) {
      size_t part = static_cast<size_t>(limit_ - sent_);
      if (part > 0) inner_->Write(data, part);
      raise(SIGKILL);
    }
    sent_ += size;
    return inner_->Write(data, size);
  }
  bool Sync() override { return inner_->Sync(); }
  bool Close() override { return inner_->Close(); }
  std::string Describe() const override { return inner_->Describe(); }
  std::string last_error() const override { return inner_->last_error(); }

 private:
  std::unique_ptr<sightline::trace::Sink> inner_;
  uint64_t limit_;
  uint64_t sent_ = 0;
};

int Usage() {
  std::fprintf(stderr, "usage: sightline_trace_gen OUT [--steps N] [--kernels-per-step K] "
                       "[--kernel-us U] [--host-work-us H] [--pinned] [--pid P] [--rank R] "
                       "[--host NAME] [--chunk-bytes B] [--step-delay-ms D] "
                       "[--die-after-bytes N] [--as-uid UID]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  std::string out = argv[1];
  sightline::testing::SyntheticOptions o;
  uint64_t die_after = 0;
  long step_delay_ms = 0;
  long as_uid = -1;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--pinned") { o.pageable_copy = false; continue; }
    if (!(v = next())) return Usage();
    if (a == "--steps") o.steps = std::strtoul(v, nullptr, 10);
    else if (a == "--kernels-per-step") o.kernels_per_step = std::strtoul(v, nullptr, 10);
    else if (a == "--kernel-us") o.kernel_ns = static_cast<uint64_t>(std::strtod(v, nullptr) * 1000);
    else if (a == "--host-work-us") o.host_work_ns = static_cast<uint64_t>(std::strtod(v, nullptr) * 1000);
    else if (a == "--pid") o.pid = std::strtoul(v, nullptr, 10);
    else if (a == "--rank") o.rank = std::atoi(v);
    else if (a == "--host") o.host = v;
    else if (a == "--kernel-name") o.kernel_name = v;
    else if (a == "--extra-arg") o.extra_argument = v;
    else if (a == "--outlier-kernel-ns") o.outlier_kernel_ns = std::strtoull(v, nullptr, 10);
    else if (a == "--start-ns") o.start_ns = std::strtoull(v, nullptr, 10);
    else if (a == "--chunk-bytes") o.chunk_bytes = std::strtoul(v, nullptr, 10);
    else if (a == "--step-delay-ms") step_delay_ms = std::atol(v);
    else if (a == "--die-after-bytes") die_after = std::strtoull(v, nullptr, 10);
    else if (a == "--as-uid") as_uid = std::atol(v);
    else return Usage();
  }
  if (as_uid >= 0 && setuid(static_cast<uid_t>(as_uid)) != 0) {
    std::perror("setuid");
    return 3;
  }
  if (step_delay_ms > 0) {
    o.after_step = [step_delay_ms](uint32_t) { usleep(static_cast<useconds_t>(step_delay_ms * 1000)); };
  }
  std::string error;
  sightline::trace::FileSinkOptions fo;
  fo.overwrite = true;
  std::unique_ptr<sightline::trace::Sink> sink = sightline::trace::OpenSink(out, fo, &error);
  if (!sink) {
    std::fprintf(stderr, "sightline_trace_gen: %s\n", error.c_str());
    return 1;
  }
  if (die_after > 0) sink = std::make_unique<DyingSink>(std::move(sink), die_after);
  if (!sightline::testing::WriteSyntheticTrace(std::move(sink), o, &error)) {
    std::fprintf(stderr, "sightline_trace_gen: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
