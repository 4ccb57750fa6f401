// bench/analysis/child_rss.h — peak resident memory of one piece of work,
// measured in forked children (ru_maxrss from wait4): one child that only
// exits gives the baseline (the parent's resident pages a child starts with),
// one that runs `work` gives the peak. Used by analyzer_bench and
// multirank_bench.
#ifndef SIGHTLINE_BENCH_ANALYSIS_CHILD_RSS_H_
#define SIGHTLINE_BENCH_ANALYSIS_CHILD_RSS_H_

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include <benchmark/benchmark.h>

namespace sightline::bench {

struct ChildRss {
  long baseline_kb = 0;
  long peak_kb = 0;
  bool ok = false;  // both children ran and exited 0 (work returned true)
};

inline ChildRss MeasureChildRss(const std::function<bool()>& work) {
  ChildRss out;
  for (int run_work = 0; run_work < 2; ++run_work) {
    const pid_t pid = fork();
    if (pid == 0) _exit(run_work == 0 || work() ? 0 : 1);
    if (pid < 0) return out;
    int status = 0;
    struct rusage usage = {};
    if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      return out;
    }
    (run_work ? out.peak_kb : out.baseline_kb) = usage.ru_maxrss;
  }
  out.ok = true;
  return out;
}

// The peak-RSS benchmarks' loop: `work` measured in children each
// iteration, counters peak_rss_bytes and baseline_rss_bytes set; returns the
// last measurement (ok false: the state was skipped with an error).
inline ChildRss BenchChildRss(benchmark::State& state, const std::function<bool()>& work) {
  ChildRss rss;
  for (auto _ : state) {
    rss = MeasureChildRss(work);
    if (!rss.ok) {
      state.SkipWithError("analysis failed in the child");
      return rss;
    }
  }
  state.counters["peak_rss_bytes"] = double(rss.peak_kb) * 1024;
  state.counters["baseline_rss_bytes"] = double(rss.baseline_kb) * 1024;
  return rss;
}

}  // namespace sightline::bench

#endif  // SIGHTLINE_BENCH_ANALYSIS_CHILD_RSS_H_
