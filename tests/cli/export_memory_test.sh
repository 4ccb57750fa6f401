#!/usr/bin/env bash
# Streaming export: a 5 M-event trace is exported with memory bounded by the
# chunk, not the trace. Peak RSS of `sightline export` is measured for a
# 0.5 M- and a 5 M-event trace: it must stay under 96 MB and must not grow
# with the trace (5 M within 1.5x + 8 MB of 0.5 M), while the output grows 10x.
source "$(dirname "$0")/common.sh"

# events = steps * (2 * 200 + 7) + 2
"$GEN" "$WORK/small.sltrace" --steps 1229 --kernels-per-step 200 --kernel-us 8 --chunk-bytes 1048576 || exit 1
"$GEN" "$WORK/big.sltrace" --steps 12285 --kernels-per-step 200 --kernel-us 8 --chunk-bytes 1048576 || exit 1
ls -l "$WORK"/*.sltrace

peak() {  # peak RSS (kB) and output size of: sightline export TRACE --format F -o - > /dev/null
  python3 - "$SL" "$1" "$2" <<'PY'
import resource, subprocess, sys, time
sl, trace, fmt = sys.argv[1:]
t = time.time()
err = open(trace + "." + fmt + ".err", "wb")
p = subprocess.Popen([sl, "export", trace, "--format", fmt, "-o", "-"], stdout=subprocess.PIPE,
                     stderr=err)
size = 0
while True:  # count the streamed output without keeping it
    block = p.stdout.read(1 << 20)
    if not block:
        break
    size += len(block)
rc = p.wait()
dt = time.time() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
if rc != 0:
    print("export failed with exit", rc, file=sys.stderr); sys.exit(1)
print(rss, size, f"{dt:.2f}")
PY
}
for fmt in chrome perfetto; do
  read -r small_rss small_bytes small_s < <(peak "$WORK/small.sltrace" $fmt)
  read -r big_rss big_bytes big_s < <(peak "$WORK/big.sltrace" $fmt)
  echo "$fmt: 0.5M events -> ${small_rss} kB peak RSS, $((small_bytes / 1000000)) MB out, ${small_s} s;" \
       "5M events -> ${big_rss} kB peak RSS, $((big_bytes / 1000000)) MB out, ${big_s} s"
  check "$fmt: output grows with the trace" test "$big_bytes" -gt $((small_bytes * 9))
  check "$fmt: 5M-event peak RSS under 96 MB" test "$big_rss" -lt 98304
  check "$fmt: RSS does not grow with the trace" test "$big_rss" -lt $((small_rss * 3 / 2 + 8192))
  # Reads longer than a second show progress on stderr (not on stdout: the output).
  if python3 -c "import sys; sys.exit(0 if float('$big_s') > 1.5 else 1)"; then
    check "$fmt: progress shown for a slow read" grep -q "sightline: reading .*big.sltrace: .*%" "$WORK/big.sltrace.$fmt.err"
  fi
  check "$fmt: no progress for a fast read" bash -c "! grep -q 'reading' '$WORK/small.sltrace.$fmt.err' || [ \$(python3 -c 'print(int(float(\"$small_s\") > 1))') = 1 ]"
done
finish
