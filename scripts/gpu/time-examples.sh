#!/usr/bin/env bash
# scripts/gpu/time-examples.sh BUILD_DIR [ROUNDS] — the unprofiled truth for
# the savings table (docs/steady-state.md) of the example pairs in
# examples/: runs each example variant plainly (no profiler), with the
# arguments scripts/gpu/record-examples.sh records it with, ROUNDS times
# (default 3) in interleaved rounds, and prints one line per variant:
#   NAME<TAB>wall_ms,wall_ms,...
# (the SIGHTLINE_EXPECT line's wall_ms: the example's timed loop, host
# clock, device synchronized at its end), the format of
# tests/data/examples_wall.tsv. Exit status 1 if a run failed.
set -u
B=$(cd "${1:?usage: time-examples.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-3}
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
NAMES="starved_gpu_slow starved_gpu_fixed fragmented_kernels_slow fragmented_kernels_fixed
fragmented_kernels_graph serialized_streams_slow serialized_streams_fixed training_loop_slow
training_loop_fixed naive_matmul_slow naive_matmul_fixed"
declare -A walls
fail=0
for r in $(seq 1 "$ROUNDS"); do
  for name in $NAMES; do
    ex=${name%_*} variant=${name##*_}
    out=$(timeout 120 "$B/examples/$ex" --variant "$variant" 2>&1) || { echo "FAIL $name round $r: $(tail -2 <<<"$out")" >&2; fail=1; continue; }
    w=$(sed -n 's/^SIGHTLINE_EXPECT .* wall_ms=\([0-9.]*\).*/\1/p' <<<"$out" | tail -1)
    [ -n "$w" ] || { echo "FAIL $name round $r: no wall_ms" >&2; fail=1; continue; }
    walls[$name]="${walls[$name]:+${walls[$name]},}$w"
  done
done
for name in $NAMES; do printf '%s\t%s\n' "$name" "${walls[$name]:-}"; done
exit $fail
