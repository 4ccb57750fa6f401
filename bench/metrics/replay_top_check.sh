#!/usr/bin/env bash
# bench/metrics/replay_top_check.sh SECTION... — the GPU check of
# --metrics-replay-top's one-pass replays on the LM (issue 14), run from the
# repository root with a build staged by scripts/gpu/stage.sh into
# build-gpu (rm -rf build-gpu && bash scripts/gpu/stage.sh build/release
# build-gpu; carried to the GPU machine). Sections:
#   seqtop  sequence replay (3 sequences) with --metrics-replay-top $TOPK
#           (default 32) against ncu's application replay of the five
#           heaviest kernels, one step (pytorch_vs_ncu.py), then per kernel
#           and per configuration (compare_summary.py); keeps the trace.
#   cnntop  the same for the CNN (cnn_train.py fixed, 44 steps after 4;
#           run CB's 16 left room for one sequence).
#   krlm6   the LM under kernel replay at run BN's scale
#           (--metrics-launches 6, cudaProfilerApi capture): 0 lost records,
#           forced flushes in the writer line.
#   seq0    the same sequence replay without top replays, compared with
#           seqtop's ncu CSV (the in-place control on the same machine;
#           run seqtop first).
#   l2spread  the L2 probe (l2_idle_probe, dirty writer then victim; stage
#           it: stage.sh ... bench/metrics/l2_idle_probe) with a one-pass
#           DRAM list: ncu -k victim against ours in place three ways —
#           sequence (auto ranges over the whole round), spread with
#           application replay and spread with user replay (Start and Stop
#           around each measured victim launch, as ncu brackets a kernel).
#   lmspread  the LM with the same one-pass list in its measured steps
#           (cudaProfilerApi capture after 10 warm-up steps): spread
#           (--metrics-launches 3) against ncu's application replay of
#           three steps (ncu against itself per kernel too), then sequence
#           replay (3 sequences) in the same window and sequence replay
#           from the start (the way runs BE-CB measured), both compared
#           with the same ncu CSV.
# Works in $WORK/res (default /tmp/replay-top-check/res) and writes $OUT/res.tgz
# after every section (one file: the device machine returns only a few).
set -u
R=$(pwd)
B=$R/build-gpu
SL=$B/tools/sightline/sightline
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
OUT=${OUT:-$PWD/replay-top-out}
WORK=${WORK:-/tmp/replay-top-check}
RES=$WORK/res
mkdir -p "$OUT"
mkdir -p "$RES"
LOG=$RES/run.txt
M=gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,sm__warps_active.avg.pct_of_peak_sustained_active
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git -C "$R" log --oneline -1 2>/dev/null; } >> "$LOG"
for sec in "$@"; do
  t0=$(date +%s)
  echo "## $sec" >> "$LOG"
  case $sec in
    seqtop|cnntop)
      if [ "$sec" = seqtop ]; then app="lm_train.py eager"; st="--steps 40"; else
        app="cnn_train.py fixed"; st="--steps 44 --warmup 4"; fi  # 3 sequences of ~12 passes
      timeout 300 python3 bench/metrics/pytorch_vs_ncu.py "$SL" $app --out "$RES/$sec" \
        --ours-replay sequence --ours-sequences 3 --ours-args "--metrics-replay-top ${TOPK:-32}" $st \
        --ncu-replay application --ncu-steps 1 --ncu-metrics "$M" >> "$LOG" 2>&1; echo "rc=$?" >> "$LOG"
      grep -h "^sightline: \(metrics\|writer\|wrote\|warning\)" "$RES/$sec/ours.stderr" >> "$LOG"
      python3 bench/metrics/compare_summary.py --per-kernel "$RES/$sec" >> "$LOG" 2>&1
      python3 bench/metrics/compare_summary.py "$RES/$sec" >> "$LOG" 2>&1
      gzip -c "$RES/$sec/ours.sltrace" > "$RES/${sec}_ours.sltrace.gz" ;;
    seq0)
      mkdir -p "$RES/seq0"; cp "$RES/seqtop/ncu.csv" "$RES/seq0/"
      ( cd examples/pytorch && SIGHTLINE_METRICS_DEBUG=1 timeout 200 "$SL" profile --metrics full \
          --metrics-replay sequence --metrics-sequences 3 -o "$RES/seq0/ours.sltrace" -- \
          python3 lm_train.py --variant eager --steps 40 --warmup 10 ) > "$RES/seq0/ours.stdout" 2> "$RES/seq0/ours.stderr"
      echo "rc=$?" >> "$LOG"
      grep -h "^sightline: \(metrics\|writer\|wrote\|warning\)" "$RES/seq0/ours.stderr" >> "$LOG"
      "$SL" analyze "$RES/seq0/ours.sltrace" --format json -o "$RES/seq0/ours.json" >> "$LOG" 2>&1
      python3 bench/metrics/pytorch_vs_ncu.py "$SL" lm_train.py eager --out "$RES/seq0" --compare-only \
        --ncu-replay application --ncu-metrics "$M" >> "$LOG" 2>&1
      python3 bench/metrics/compare_summary.py --per-kernel "$RES/seq0" >> "$LOG" 2>&1
      gzip -c "$RES/seq0/ours.sltrace" > "$RES/seq0_ours.sltrace.gz" ;;
    l2spread)
      L=$RES/l2spread; P=$B/bench/metrics/l2_idle_probe
      M1=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
      mkdir -p "$L"
      timeout 120 "${NCU:-/usr/local/cuda/bin/ncu}" --cache-control none --clock-control none \
        --replay-mode application --metrics "$M1" -k regex:victim --csv --page raw "$P" --rounds 3 \
        > "$L/l2_ncuk_dirty.csv" 2> "$L/ncu.err"; echo "ncu rc=$?" >> "$LOG"
      for mode in sequence spread spreaduser; do
        mkdir -p "$L/$mode"; cp "$L/l2_ncuk_dirty.csv" "$L/$mode/"
        case $mode in
          sequence) args="--metrics-replay sequence --metrics-sequences 2"; env=;;
          spread) args="--metrics-replay spread --metrics-kernels victim --metrics-launches 3"; env=;;
          spreaduser) args="--metrics-replay spread --metrics-kernels victim --metrics-launches 3"
                      env=SIGHTLINE_METRICS_SPREAD_REPLAY=user;;
        esac
        env $env SIGHTLINE_METRICS_DEBUG=1 timeout 60 "$SL" profile --metrics "$M1" $args \
          -o "$L/$mode/l2_ours_dirty.sltrace" -- "$P" --rounds 30 > "$L/$mode/ours.txt" 2>&1
        echo "$mode rc=$?" >> "$LOG"
        grep -h "^sightline: \(metrics\|warning\)" "$L/$mode/ours.txt" >> "$LOG"
        "$SL" analyze "$L/$mode/l2_ours_dirty.sltrace" --format json -o "$L/$mode/l2_ours_dirty.json" >> "$LOG" 2>&1
        echo "### l2spread $mode" >> "$LOG"
        python3 bench/metrics/l2_idle_summary.py "$L/$mode" >> "$LOG" 2>&1
      done ;;
    lmspread)
      L=$RES/lmspread
      M1=dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
      timeout 300 python3 bench/metrics/pytorch_vs_ncu.py "$SL" lm_train.py eager --out "$L" \
        --ours-replay spread --ours-metrics "$M1" \
        --ours-args "--capture-range cudaProfilerApi --metrics-launches 3" \
        --ours-app-args=--cuda-profiler-range --steps 40 --warmup 10 \
        --ncu-replay application --ncu-steps 3 >> "$LOG" 2>&1; echo "rc=$?" >> "$LOG"
      grep -h "^sightline: \(metrics\|writer\|wrote\|warning\)" "$L/ours.stderr" >> "$LOG"
      python3 bench/metrics/compare_summary.py --per-kernel "$L" >> "$LOG" 2>&1
      python3 bench/metrics/ncu_split_steps.py "$L" 3 >> "$LOG" 2>&1
      for i in 1 2 3; do
        python3 bench/metrics/pytorch_vs_ncu.py "$SL" lm_train.py eager --out "$L/step$i" --compare-only \
          --ncu-replay application > "$L/step$i/compare.txt" 2>&1
      done
      for pair in "1 2" "2 3" "1 3"; do
        set -- $pair
        python3 bench/metrics/compare_summary.py --per-kernel-ncu "$L/step$1" "$L/step$2" >> "$LOG" 2>&1
      done
      for v in seqcap seqstart; do
        mkdir -p "$L-$v"; cp "$L/ncu.csv" "$L-$v/"
        if [ $v = seqcap ]; then cap="--capture-range cudaProfilerApi"; aa=--cuda-profiler-range; else
          cap=; aa=; fi
        ( cd examples/pytorch && SIGHTLINE_METRICS_DEBUG=1 timeout 200 "$SL" profile --metrics "$M1" \
            --metrics-replay sequence --metrics-sequences 3 $cap -o "$L-$v/ours.sltrace" -- \
            python3 lm_train.py --variant eager --steps 40 --warmup 10 $aa ) \
          > "$L-$v/ours.stdout" 2> "$L-$v/ours.stderr"
        echo "$v rc=$?" >> "$LOG"
        grep -h "^sightline: \(metrics\|writer\|wrote\|warning\)" "$L-$v/ours.stderr" >> "$LOG"
        "$SL" analyze "$L-$v/ours.sltrace" --format json -o "$L-$v/ours.json" >> "$LOG" 2>&1
        python3 bench/metrics/pytorch_vs_ncu.py "$SL" lm_train.py eager --out "$L-$v" --compare-only \
          --ncu-replay application >> "$LOG" 2>&1
        python3 bench/metrics/compare_summary.py --per-kernel "$L-$v" >> "$LOG" 2>&1
      done
      gzip -c "$L/ours.sltrace" > "$RES/lmspread_ours.sltrace.gz" ;;
    krlm6)
      mkdir -p "$RES/krlm6"
      ( cd examples/pytorch && SIGHTLINE_METRICS_DEBUG=1 timeout 240 "$SL" profile --metrics full \
          --metrics-replay kernel --metrics-launches 6 --capture-range cudaProfilerApi \
          -o "$RES/krlm6/ours.sltrace" -- python3 lm_train.py --variant eager --steps 12 --warmup 10 \
          --cuda-profiler-range ) > "$RES/krlm6/ours.txt" 2>&1
      echo "rc=$?" >> "$LOG"
      grep -h "^sightline: \(metrics\|writer\|wrote\|warning\|range profiler\)\|SIGHTLINE_STEPS" "$RES/krlm6/ours.txt" >> "$LOG"
      "$SL" info "$RES/krlm6/ours.sltrace" >> "$LOG" 2>&1
      rm -f "$RES/krlm6/ours.sltrace" ;;
  esac
  echo "## $sec took $(( $(date +%s) - t0 )) s" >> "$LOG"
  ( cd "$WORK" && tar czf "$OUT/res.tgz.tmp" --exclude='*.sltrace' res && mv "$OUT/res.tgz.tmp" "$OUT/res.tgz" )
done
tail -c 11000 "$LOG"
