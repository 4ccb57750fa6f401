#!/usr/bin/env bash
# bench/metrics/l2_idle_probe.sh BUILD OUT — the DRAM bytes one kernel is
# charged, measured by ncu and by sightline, after a kernel that leaves dirty
# L2 lines (or only reads), with gaps of 0 to 100 ms between them
# (l2_idle_probe.cu). For each variant (dirty, clean):
#   ncu -k     ncu --replay-mode application -k regex:victim
#   ncu all    the same without -k
#   ours       sightline profile --metrics-replay sequence --metrics-sequences 2
# and, for dirty, ours through CUPTI's kernel replay (OUT/kr). Summaries:
# OUT/summary.txt, OUT/kr/summary.txt (l2_idle_summary.py). GPU machine only;
# exit 77 without a GPU or ncu. Issue 14; README "DRAM bytes in place".
set -u
B=$(cd "${1:?usage: l2_idle_probe.sh BUILD OUT}" && pwd)
R=${2:?usage: l2_idle_probe.sh BUILD OUT}
here=$(cd "$(dirname "$0")" && pwd)
NCU=${NCU:-/usr/local/cuda/bin/ncu}
P=$B/bench/metrics/l2_idle_probe
SL=$B/tools/sightline/sightline
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIPPED: no GPU"; exit 77; fi
[ -x "$NCU" ] || { echo "SKIPPED: no ncu at $NCU"; exit 77; }
[ -x "$P" ] || { echo "missing $P (build with CUDA)" >&2; exit 1; }
mkdir -p "$R/kr"
M=${METRICS:-dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg}
for v in dirty clean; do
  fl=; [ $v = clean ] && fl=--clean
  "$NCU" --cache-control none --clock-control none --replay-mode application --metrics "$M" \
    -k regex:victim --csv --page raw "$P" --rounds 3 $fl > "$R/l2_ncuk_$v.csv" 2> "$R/l2_ncuk_$v.err"
  "$NCU" --cache-control none --clock-control none --replay-mode application --metrics "$M" \
    --csv --page raw "$P" --rounds 3 $fl > "$R/l2_ncuall_$v.csv" 2> "$R/l2_ncuall_$v.err"
  "$SL" profile --metrics "$M" --metrics-replay sequence --metrics-sequences 2 \
    -o "$R/l2_ours_$v.sltrace" -- "$P" --rounds 30 $fl > "$R/l2_ours_$v.txt" 2>&1
  "$SL" analyze "$R/l2_ours_$v.sltrace" --format json -o "$R/l2_ours_$v.json" >> "$R/l2_ours_$v.txt" 2>&1
done
cp "$R/l2_ncuk_dirty.csv" "$R/kr/"
SIGHTLINE_METRICS_LAUNCHES=3 "$SL" profile --metrics "$M" --metrics-replay kernel \
  -o "$R/kr/l2_ours_dirty.sltrace" -- "$P" --rounds 3 > "$R/kr/l2_ours_dirty.txt" 2>&1
"$SL" analyze "$R/kr/l2_ours_dirty.sltrace" --format json -o "$R/kr/l2_ours_dirty.json" >> "$R/kr/l2_ours_dirty.txt" 2>&1
python3 "$here/l2_idle_summary.py" "$R" | tee "$R/summary.txt"
python3 "$here/l2_idle_summary.py" "$R/kr" | tee "$R/kr/summary.txt"
