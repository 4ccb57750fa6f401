#!/usr/bin/env bash
# Runs the trace reader fuzzer, then the analyzer fuzzer, then the report JSON
# reader's, each for a bounded time (CI calls it with ~60 s).
#
#   fuzz/run_fuzz.sh BUILD_DIR SECONDS [ANALYZER_SECONDS (default SECONDS)]
#
# BUILD_DIR is a CMake build configured with clang and -DSIGHTLINE_FUZZ=ON, e.g.
#   cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
#         -DSIGHTLINE_FUZZ=ON -DSIGHTLINE_WITH_CUDA=OFF -DSIGHTLINE_BUILD_TESTS=OFF \
#         -DSIGHTLINE_BUILD_BENCH=OFF
# The script builds the fuzz targets, generates the seed corpora (small valid
# traces for the reader; tests/data's real traces up to 256 KB, unframed, for
# the analyzer: analyze_fuzz.cc; their reports for the report JSON reader),
# runs libFuzzer and exits non-zero on any
# crash, sanitizer report, timeout or out-of-memory. Crash inputs are left in BUILD_DIR/fuzz/artifacts;
# once fixed, copy one into fuzz/regressions/TARGET/ (run first every time).
set -euo pipefail
if [[ $# -ne 2 && $# -ne 3 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [ANALYZER_SECONDS]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
seconds=$2
analyzer_seconds=${3:-$2}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
cmake --build "$build_dir" --target trace_reader_fuzz trace_fuzz_seeds analyze_fuzz \
  analyze_fuzz_seeds report_json_fuzz -- -j"${FUZZ_BUILD_JOBS:-2}"

work="$build_dir/fuzz"
seeds="$work/seeds"
corpus="$work/corpus"
artifacts="$work/artifacts"
large_seeds="$work/large-seeds"
large_corpus="$work/large-corpus"
mkdir -p "$seeds" "$corpus" "$artifacts" "$large_seeds" "$large_corpus"
"$build_dir/fuzz/trace_fuzz_seeds" "$seeds" "$large_seeds"

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Inputs that once failed (fuzz/regressions/TARGET/, one file each, named
# for the bug): each is run once before fuzzing, so a fixed bug stays fixed.
regressions=$(cd "$(dirname "$0")" && pwd)/regressions
run_regressions() {  # TARGET
  local inputs=()
  shopt -s nullglob
  inputs=("$regressions/$1"/*)
  shopt -u nullglob
  [[ ${#inputs[@]} -gt 0 ]] || return 0
  if ! "$build_dir/fuzz/$2" "${inputs[@]}" >"$work/regressions-$1.log" 2>&1; then
    tail -n 40 "$work/regressions-$1.log" >&2
    echo "run_fuzz.sh: a regression input fails again (fuzz/regressions/$1)" >&2
    exit 1
  fi
  echo "run_fuzz.sh: ${#inputs[@]} $1 regression input(s) pass"
}
# Runs fuzz target TARGET over CORPUS and SEEDS with the given libFuzzer
# flags; a failure names WHAT and where its reproducers are, and exits.
run_fuzzer() {  # WHAT TARGET CORPUS SEEDS ARTIFACT_PREFIX [libFuzzer flags...]
  local what=$1 target=$2 corpus_dir=$3 seed_dir=$4 prefix=$5
  shift 5
  local status=0
  # (`|| status=`: under errexit and pipefail a failing pipeline would end
  # the script before the message.)
  "$build_dir/fuzz/$target" "$corpus_dir" "$seed_dir" "$@" -artifact_prefix="$prefix" \
    -print_final_stats=1 2>&1 | tail -n 30 || status=${PIPESTATUS[0]}
  if [[ $status -ne 0 ]]; then
    echo "run_fuzz.sh: $what fuzzer failed (exit $status); reproducers in ${prefix}*" >&2
    exit 1
  fi
}

run_regressions reader trace_reader_fuzz
# -rss_limit_mb: the reader must never allocate more than the input justifies.
run_fuzzer reader trace_reader_fuzz "$corpus" "$seeds" "$artifacts/" \
  -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=512
# Multi-MiB inputs (resync after damage, fake frame headers): a quarter of
# the time again, with inputs up to 8 MiB.
large_seconds=$(( (seconds + 3) / 4 ))
run_fuzzer "reader (large inputs)" trace_reader_fuzz "$large_corpus" "$large_seeds" "$artifacts/" \
  -max_total_time="$large_seconds" -max_len=8388608 -timeout=30 -rss_limit_mb=2048 \
  -malloc_limit_mb=1024
echo "run_fuzz.sh: reader: no failures in ${seconds}s + ${large_seconds}s (multi-MiB inputs)"

# The analyzer and renderers behind the reader, seeded with real traces.
analyze_seeds="$work/analyze-seeds"
analyze_corpus="$work/analyze-corpus"
report_seeds="$work/report-json-seeds"
report_corpus="$work/report-json-corpus"
mkdir -p "$analyze_seeds" "$analyze_corpus" "$report_seeds" "$report_corpus"
mapfile -t seed_traces < <(find "$source_dir/tests/data" -maxdepth 1 -name '*.sltrace' -size -257k | sort)
"$build_dir/fuzz/analyze_fuzz_seeds" --reports "$report_seeds" "$analyze_seeds" "${seed_traces[@]}"
run_regressions analyze analyze_fuzz
run_fuzzer analyzer analyze_fuzz "$analyze_corpus" "$analyze_seeds" "$artifacts/analyze-" \
  -max_total_time="$analyzer_seconds" -max_len=262144 -timeout=20 -rss_limit_mb=2048 \
  -malloc_limit_mb=1024
echo "run_fuzz.sh: analyzer: no failures in ${analyzer_seconds}s (${#seed_traces[@]} real traces as seeds)"

# The report JSON reader (diff, history read reports from anywhere), seeded
# with those traces' reports, for half the analyzer's time.
report_seconds=$(( (analyzer_seconds + 1) / 2 ))
run_regressions report_json report_json_fuzz
run_fuzzer "report JSON" report_json_fuzz "$report_corpus" "$report_seeds" "$artifacts/report-json-" \
  -dict="$source_dir/fuzz/report_json.dict" -max_total_time="$report_seconds" -max_len=131072 \
  -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
echo "run_fuzz.sh: report JSON reader: no failures in ${report_seconds}s"
