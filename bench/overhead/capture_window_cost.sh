#!/usr/bin/env bash
# bench/overhead/capture_window_cost.sh [ROUNDS] — what an NVTX capture window
# per step costs on a real PyTorch loop against whole-run profiling (issue 12
# item 5: "a window costs no more per step than whole-run profiling"), run
# from the repository root on the GPU machine with a build staged into
# build-gpu (scripts/gpu/stage.sh). examples/pytorch/lm_train.py --variant
# eager --nvtx (each step an NVTX range train_step), 40 steps after 10, its
# own CUDA-event step median, ROUNDS (default 3) interleaved rounds of:
#   plain       no profiler
#   whole       sightline profile (whole run: runtime API records per API)
#   wholekind   the same with SIGHTLINE_RUNTIME_PER_API=0 (the RUNTIME kind,
#               what capture windows use)
#   nvtx        --capture-range nvtx:train_step (50 windows)
# each pinned to cores 2-9 (taskset), with SIGHTLINE_SELF_COST=1: the
# "capture windows" part is the time spent opening and closing windows. Prints
# one line per run, then the median and spread per configuration and the
# nvtx run's self-cost lines. Timings move ±15 % between processes on this
# machine: compare medians of the rounds.
set -u
ROUNDS=${1:-3}
B=$PWD/build-gpu; SL=$B/tools/sightline/sightline
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
E=examples/pytorch; W=${WORK:-/tmp/capture-window-cost}; mkdir -p "$W"
ARGS="--variant eager --nvtx --steps 40 --warmup 10"
run() {
  local tag=$1; shift
  ( cd "$E" && env SIGHTLINE_SELF_COST=1 taskset -c 2-9 "$@" ) > "$W/$tag.out" 2> "$W/$tag.err"
  local ms; ms=$(grep -o 'median_ms=[0-9.]*' "$W/$tag.out" | cut -d= -f2)
  echo "$tag ${ms:-none}" | tee -a "$W/times.txt"
}
: > "$W/times.txt"
for r in $(seq "$ROUNDS"); do
  run plain$r python3 lm_train.py $ARGS
  run whole$r "$SL" profile -q -o "$W/whole$r.sltrace" -- python3 lm_train.py $ARGS
  run wholekind$r env SIGHTLINE_RUNTIME_PER_API=0 "$SL" profile -q -o "$W/kind$r.sltrace" -- \
    python3 lm_train.py $ARGS
  run nvtx$r "$SL" profile -q --capture-range nvtx:train_step -o "$W/nvtx$r.sltrace" -- \
    python3 lm_train.py $ARGS
done
python3 - "$W/times.txt" <<'PY'
import re, statistics, sys
by = {}
for line in open(sys.argv[1]):
    tag, ms = line.split()
    if ms != "none":
        by.setdefault(re.sub(r"\d+$", "", tag), []).append(float(ms))
base = statistics.median(by.get("whole", [0])) or None
for k in ("plain", "whole", "wholekind", "nvtx"):
    v = by.get(k)
    if not v:
        continue
    m = statistics.median(v)
    rel = f", {100 * (m / base - 1):+.1f} % vs whole" if base and k != "whole" else ""
    print(f"{k:10s} median {m:.3f} ms over {len(v)} rounds (min {min(v):.3f}, max {max(v):.3f}){rel}")
PY
for t in "$W"/nvtx1.sltrace "$W"/whole1.sltrace; do
  echo "$(basename "$t") api records: $("$SL" info "$t" --format json | python3 -c "import json,sys; print(json.load(sys.stdin)['counts'].get('api',0))")"
done
grep -h "self-cost" "$W/nvtx1.err"
