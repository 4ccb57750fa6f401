#!/usr/bin/env bash
# sightline report in headless Chromium: loads without console errors, the
# findings and every chart render (screenshot regions not blank), and a
# 1 M-event trace stays responsive. Skipped (77) without chromium.
source "$(dirname "$0")/common.sh"
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROME" ]; then echo "chromium not installed: skipped"; exit 77; fi

chrome() {  # chrome OUT_PREFIX FILE.html: dumps DOM + console log + a full-page screenshot
  local prefix="$1" page="$2" profile height
  profile="$(mktemp -d "$WORK/profile-XXXXXX")"
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking
               --disable-component-update --disable-sync --user-data-dir="$profile"
               --hide-scrollbars --virtual-time-budget=20000 --force-device-scale-factor=1)
  timeout 120 "$CHROME" "${flags[@]}" --window-size=1400,2000 --enable-logging=stderr --v=0 \
      --dump-dom "file://$page" > "$prefix.dom" 2> "$prefix.log"
  # The page reports its height; screenshot the whole of it.
  height=$(rects "$prefix.dom" | python3 -c "import json,sys; print(min(16000, max(800, json.load(sys.stdin).get('page', [0, 0, 0, 2000])[3] + 20)))")
  timeout 120 "$CHROME" "${flags[@]}" --window-size=1400,"$height" --screenshot="$prefix.png" \
      "file://$page" > /dev/null 2>&1
}
rects() { python3 -c "
import html,re,sys; d=open(sys.argv[1]).read(); m=re.search(r'data-rects=\"([^\"]*)\"',d)
print(html.unescape(m.group(1)) if m else '{}')" "$1"; }
attr() { grep -o "data-$2=\"[^\"]*\"" "$1" | head -1 | cut -d'"' -f2; }
no_console_errors() {  # Chromium logs page console messages as "CONSOLE(...)" / "Uncaught"
  if grep -E "CONSOLE|Uncaught|SyntaxError|TypeError|ReferenceError" "$1" | grep -v "DevTools listening"; then
    return 1
  fi
  return 0
}

"$GEN" "$WORK/slow.sltrace" --steps 40 --kernels-per-step 16 --kernel-us 25 --host-work-us 700 || exit 1
"$GEN" "$WORK/fixed.sltrace" --steps 40 --kernels-per-step 16 --kernel-us 25 --pinned || exit 1

# One run.
expect_exit 0 "report one trace" "$SL" report "$WORK/slow.sltrace" -o "$WORK/one.html"
check "self-contained (no external URLs)" bash -c "! grep -Eo '(src|href)=\"(https?:)?//' '$WORK/one.html'"
chrome "$WORK/one" "$WORK/one.html"
check "one: rendered" test "$(attr "$WORK/one.dom" rendered)" = ok
check "one: no script error" bash -c "! grep -q 'data-error=' '$WORK/one.dom'"
check "one: no console errors" no_console_errors "$WORK/one.log"
check "one: findings listed" grep -q 'class="finding high\|class="finding medium' "$WORK/one.dom"
rects "$WORK/one.dom" > "$WORK/one.rects"
check "one: charts not blank" python3 "$SRC/tests/cli/png_regions.py" "$WORK/one.png" "$WORK/one.rects" timeline util kernels steps findings

# A kernel named "<!--<script>" once swallowed the page's script: it renders.
"$GEN" "$WORK/hostile.sltrace" --steps 10 --kernel-name '<!--<script>x</script>' || exit 1
expect_exit 0 "report hostile names" "$SL" report "$WORK/hostile.sltrace" -o "$WORK/hostile.html"
chrome "$WORK/hostile" "$WORK/hostile.html"
check "hostile names: rendered" test "$(attr "$WORK/hostile.dom" rendered)" = ok
check "hostile names: no console errors" no_console_errors "$WORK/hostile.log"

# PM samples (--gpu-metrics, a real H200 trace): the GPU-metrics chart and
# its tables render.
expect_exit 0 "report with GPU metrics" "$SL" report "$SRC/tests/data/metrics/lm_cap_gm_h200.sltrace" -o "$WORK/gm.html"
check "gm: section" grep -q 'id="gpu-metrics-section"' "$WORK/gm.html"
chrome "$WORK/gm" "$WORK/gm.html"
check "gm: rendered" test "$(attr "$WORK/gm.dom" rendered)" = ok
check "gm: no console errors" no_console_errors "$WORK/gm.log"
rects "$WORK/gm.dom" > "$WORK/gm.rects"
check "gm: chart not blank" python3 "$SRC/tests/cli/png_regions.py" "$WORK/gm.png" "$WORK/gm.rects" gpu-metrics
check "gm: busy and saturated per quantity" grep -q 'saturated' "$WORK/gm.dom"
if [ -n "${SIGHTLINE_GM_SCREENSHOT:-}" ]; then cp "$WORK/gm.png" "$SIGHTLINE_GM_SCREENSHOT"; fi

# Per-range metrics (--metrics-range nvtx:train_step, a real H200 trace: 5
# sets, the first the warm-up's, the last incomplete): the mean and each set.
expect_exit 0 "report with range metrics" "$SL" report "$SRC/tests/data/metrics/lm_range_h200.sltrace" -o "$WORK/rm.html"
check "rm: section" grep -q 'id="range-metrics-section"' "$WORK/rm.html"
chrome "$WORK/rm" "$WORK/rm.html"
check "rm: rendered" test "$(attr "$WORK/rm.dom" rendered)" = ok
check "rm: no console errors" no_console_errors "$WORK/rm.log"
check "rm: mean over the sets in the window" grep -q 'train_step: 4 complete sets of 5 .*mean over 3 in the analysed window' "$WORK/rm.dom"
check "rm: warm-up and incomplete sets marked" \
  bash -c "grep -q 'set 1 (outside the window)' '$WORK/rm.dom' && grep -q 'set 5 (incomplete)' '$WORK/rm.dom'"
check "rm: a value per set" grep -q '<td>gpu__time_duration.sum</td><td class="n">18.93 ms</td>' "$WORK/rm.dom"

# Before/after.
expect_exit 0 "report comparison" "$SL" report "$WORK/slow.sltrace" "$WORK/fixed.sltrace" -o "$WORK/cmp.html"
check "comparison section" grep -q 'id="comparison"' "$WORK/cmp.html"
chrome "$WORK/cmp" "$WORK/cmp.html"
check "cmp: rendered" test "$(attr "$WORK/cmp.dom" rendered)" = ok
check "cmp: no console errors" no_console_errors "$WORK/cmp.log"
rects "$WORK/cmp.dom" > "$WORK/cmp.rects"
check "cmp: charts not blank" python3 "$SRC/tests/cli/png_regions.py" "$WORK/cmp.png" "$WORK/cmp.rects" timeline util kernels steps cmp-kernels
check "cmp: step time improvement shown" grep -q 'step_time_mean_ns.*class="n imp"' "$WORK/cmp.html"
if [ -n "${SIGHTLINE_REPORT_SCREENSHOT:-}" ]; then cp "$WORK/cmp.png" "$SIGHTLINE_REPORT_SCREENSHOT"; fi

# 1 M events: 2450 steps x (2 x 200 + 7) events + 2.
"$GEN" "$WORK/big.sltrace" --steps 2450 --kernels-per-step 200 --kernel-us 8 --chunk-bytes 1048576 || exit 1
start=$(date +%s.%N)
expect_exit 0 "report 1M events" "$SL" report "$WORK/big.sltrace" -o "$WORK/big.html"
end=$(date +%s.%N)
cat "$WORK/last.err"
size=$(stat -c %s "$WORK/big.html")
echo "1M-event report: $(python3 -c "print(f'{$end-$start:.1f}')") s to write, $((size / 1000)) kB"
check "1M: page under 12 MB" test "$size" -lt 12000000
chrome "$WORK/big" "$WORK/big.html"
check "1M: rendered" test "$(attr "$WORK/big.dom" rendered)" = ok
check "1M: no console errors" no_console_errors "$WORK/big.log"
render_ms=$(attr "$WORK/big.dom" render-ms); redraw_ms=$(attr "$WORK/big.dom" redraw-ms)
echo "1M: first render ${render_ms} ms, slowest zoom redraw ${redraw_ms} ms"
check "1M: first render < 4 s" python3 -c "import sys; sys.exit(0 if float('$render_ms') < 4000 else 1)"
check "1M: zoom redraw < 250 ms" python3 -c "import sys; sys.exit(0 if float('$redraw_ms') < 250 else 1)"
rects "$WORK/big.dom" > "$WORK/big.rects"
check "1M: charts not blank" python3 "$SRC/tests/cli/png_regions.py" "$WORK/big.png" "$WORK/big.rects" timeline util kernels steps

# Hardware metrics from a real PyTorch step (sequence replay on the H200):
# the kernel details pages of the heaviest kernels render.
M="$SRC/tests/data/metrics/cnn_fixed_sequence_h200.sltrace"
expect_exit 0 "report metrics" "$SL" report "$M" -o "$WORK/metrics.html"
check "metrics: kernel details section" grep -q 'id="kernel-details"' "$WORK/metrics.html"
check "metrics: five kernel pages" test "$(grep -o 'class="kernel-page"' "$WORK/metrics.html" | wc -l)" = 5
check "metrics: coverage line" grep -qF 'hardware metrics for 100.0% of kernel time' "$WORK/metrics.html"
chrome "$WORK/metrics" "$WORK/metrics.html"
check "metrics: rendered" test "$(attr "$WORK/metrics.dom" rendered)" = ok
check "metrics: no console errors" no_console_errors "$WORK/metrics.log"

# Two ranks merged (issue 16): the Ranks section lists both.
R0="$SRC/tests/data/nccl_allreduce_slow_rank0.sltrace"
R1="$SRC/tests/data/nccl_allreduce_slow_rank1.sltrace"
if [ -f "$R0" ] && [ -f "$R1" ]; then
  expect_exit 0 "report two ranks" "$SL" report --merge "$R0" "$R1" -o "$WORK/ranks.html"
  check "ranks: section" grep -q '<section id="ranks"><h2>Ranks</h2>' "$WORK/ranks.html"
  check "ranks: two rows" test "$(grep -o '<tr><td>[01]</td>' "$WORK/ranks.html" | wc -l)" = 2
fi

for t in $(real_traces); do
  b=$(basename "$t" .sltrace)
  expect_exit 0 "report $b" "$SL" report "$t" -o "$WORK/$b.html" || continue
  chrome "$WORK/$b" "$WORK/$b.html"
  check "$b: rendered" test "$(attr "$WORK/$b.dom" rendered)" = ok
  check "$b: no console errors" no_console_errors "$WORK/$b.log"
  rects "$WORK/$b.dom" > "$WORK/$b.rects"
  check "$b: timeline and utilization drawn" python3 "$SRC/tests/cli/png_regions.py" "$WORK/$b.png" "$WORK/$b.rects" timeline util
done
finish
