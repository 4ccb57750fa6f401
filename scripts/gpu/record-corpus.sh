#!/usr/bin/env bash
# scripts/gpu/record-corpus.sh BUILD_DIR OUT_DIR [NAME...] — records the real
# PyTorch corpus (examples/pytorch/*.py, slow/fixed pairs) on the GPU
# machine: for each variant, ROUNDS (default 2) interleaved rounds of a plain
# run (no profiler) and a `sightline profile` run, each printing its
# steady-state step time (SIGHTLINE_STEPS, CUDA events). Writes
#   OUT_DIR/NAME.sltrace       the last profiled run's trace
#   OUT_DIR/NAME.out.txt       its stdout
#   OUT_DIR/NAME.plain.txt     every plain run's SIGHTLINE_STEPS line
#   OUT_DIR/NAME.profiled.txt  every profiled run's SIGHTLINE_STEPS and
#                              SIGHTLINE_MEMORY (allocator peak) lines
# PROFILE_ARGS adds options to `sightline profile` (e.g. "--pytorch");
# SKIP_PLAIN=1 records the traces only (the plain truth kept from before).
# Plain runs use each script's default step counts (the truth); profiled runs
# use fewer steps (STEPS:WARMUP of the table) so that the traces stay small
# enough for tests/data/pytorch/, unless FULL=1.
set -u
B=$(cd "${1:?usage: record-corpus.sh BUILD_DIR OUT_DIR [NAME...]}" && pwd)
O=${2:?usage: record-corpus.sh BUILD_DIR OUT_DIR [NAME...]}
shift 2
mkdir -p "$O"
SL=$B/tools/sightline/sightline
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
E=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)
ROUNDS=${ROUNDS:-2}
# name script variant
# name:script:variant:steps:warmup (profiled runs)
ALL="lm_eager:lm_train.py:eager:30:10 lm_graph:lm_train.py:graph:60:10
sync_slow:sync_copy.py:slow:30:10 sync_fixed:sync_copy.py:fixed:60:10
loader_slow:dataloader.py:slow:16:4 loader_fixed:dataloader.py:fixed:16:4
decode_eager:decode.py:eager:60:20 decode_graph:decode.py:graph:120:20
cnn_slow:cnn_train.py:slow:10:4 cnn_fixed:cnn_train.py:fixed:16:4
mem_leak:memory.py:leak:30:10 mem_fixed:memory.py:fixed:30:10
mem_cache:memory.py:empty_cache:30:10"
want=" $* "
for r in $(seq 1 "$ROUNDS"); do
  for entry in $ALL; do
    IFS=: read -r name script variant psteps pwarm <<<"$entry"
    small="--steps $psteps --warmup $pwarm"
    [ "${FULL:-0}" = 1 ] && small=""
    [ $# -gt 0 ] && [[ "$want" != *" $name "* ]] && continue
    if [ "${SKIP_PLAIN:-0}" != 1 ]; then
      ( cd "$E" && timeout 120 python3 "$script" --variant "$variant" ) >"$O/$name.plain.log" 2>&1
      grep '^SIGHTLINE_STEPS' "$O/$name.plain.log" >>"$O/$name.plain.txt" || echo "FAIL plain $name: $(tail -3 "$O/$name.plain.log")"
    fi
    rm -f "$O/$name.sltrace" "$O"/"$name".*.sltrace
    ( cd "$E" && timeout 150 "$SL" profile ${PROFILE_ARGS:-} -o "$O/$name.sltrace" -- \
        python3 "$script" --variant "$variant" $small ) >"$O/$name.out.txt" 2>"$O/$name.err"
    grep -E '^SIGHTLINE_(STEPS|MEMORY)' "$O/$name.out.txt" >>"$O/$name.profiled.txt" || echo "FAIL profiled $name: $(tail -3 "$O/$name.err")"
    printf '%-14s round %s plain %s | profiled %s\n' "$name" "$r" \
      "$(tail -1 "$O/$name.plain.txt" 2>/dev/null | grep -o 'median_ms=[0-9.]*')" \
      "$(grep SIGHTLINE_STEPS "$O/$name.profiled.txt" | tail -1 2>/dev/null | grep -o 'median_ms=[0-9.]*')"
  done
done
