#!/usr/bin/env bash
# Hostile inputs and outputs (issue 17, item 2), driven like a user would:
#  - special files as output (FIFO, a symlink to our stdout, a character
#    device when we may create one) are written in place, never replaced;
#    `-o ""` is an error, `-o -` is stdout;
#  - a FIFO as input is refused at once (no command hangs);
#  - control characters from a trace never reach the terminal raw (info,
#    analyze/diff text, error messages);
#  - numeric options are finite and bounded (nan/inf/1e309/empty refused);
#    rule parameters are bounded (num_chunks=1e8 refused);
#  - timestamps spanning the int64 range give no percentage above 100;
#  - diff of a damaged trace says so;
#  - an export killed by SIGTERM/SIGINT/SIGHUP leaves no temporary file.
# Every check here failed on the tree before the fix (see the commit).
source "$(dirname "$0")/common.sh"

"$GEN" "$WORK/ok.sltrace" --steps 3 || exit 1
has() { grep -qF -- "$2" "$1"; }
no_esc() { ! grep -q $'\x1b' "$1" && ! grep -q $'\x07' "$1"; }

# ---- special files as output ---------------------------------------------
mkfifo "$WORK/out.fifo"
for cmd in analyze diff export report; do
  case $cmd in
    analyze) args=(analyze "$WORK/ok.sltrace" --format json) ;;
    diff)    args=(diff "$WORK/ok.sltrace" "$WORK/ok.sltrace") ;;
    export)  args=(export "$WORK/ok.sltrace" --format chrome) ;;
    report)  args=(report "$WORK/ok.sltrace") ;;
  esac
  rm -f "$WORK/fifo.got"
  timeout 20 cat "$WORK/out.fifo" > "$WORK/fifo.got" &
  reader=$!
  expect_exit 0 "$cmd -o FIFO" timeout 20 "$SL" "${args[@]}" -o "$WORK/out.fifo"
  wait $reader
  check "$cmd: the FIFO is still a FIFO" test -p "$WORK/out.fifo"
  check "$cmd: its reader got the output" test -s "$WORK/fifo.got"
  check "$cmd: no temporary file beside it" bash -c "! ls '$WORK'/out.fifo.tmp-* 2>/dev/null | grep -q ."
done

# A symlink to our own stdout (what /dev/stdout is): written through, not replaced.
ln -s /proc/self/fd/1 "$WORK/stdout-link"
"$SL" analyze "$WORK/ok.sltrace" --format json -o "$WORK/stdout-link" 2> "$WORK/last.err" | cat > "$WORK/piped.json"
check "-o symlink-to-stdout: output on the pipe" grep -q '"schema"' "$WORK/piped.json"
check "-o symlink-to-stdout: link kept" test -L "$WORK/stdout-link"
# ... also when stdout is redirected to a regular file (before: the link,
# as root /dev/stdout itself, was replaced by a regular file).
"$SL" analyze "$WORK/ok.sltrace" --format json -o "$WORK/stdout-link" > "$WORK/redirected.json" 2> "$WORK/last.err"
check "-o symlink-to-stdout, stdout a file: output in the file" grep -q '"schema"' "$WORK/redirected.json"
check "-o symlink-to-stdout, stdout a file: link kept" test -L "$WORK/stdout-link"

# A character device of our own (root only: mknod), never /dev/null itself.
if mknod "$WORK/null" c 1 3 2> /dev/null; then
  expect_exit 0 "export -o chardev" "$SL" export "$WORK/ok.sltrace" --format chrome -o "$WORK/null"
  check "chardev still a character device" test -c "$WORK/null"
  expect_exit 0 "analyze -o chardev" "$SL" analyze "$WORK/ok.sltrace" -o "$WORK/null"
  check "chardev still a character device (analyze)" test -c "$WORK/null"
else
  echo "note: cannot mknod (not root): character-device case skipped"
fi

# -o "" is an error everywhere; -o - is stdout.
for cmd in analyze diff export report; do
  case $cmd in
    analyze) args=(analyze "$WORK/ok.sltrace") ;;
    diff)    args=(diff "$WORK/ok.sltrace" "$WORK/ok.sltrace") ;;
    export)  args=(export "$WORK/ok.sltrace" --format chrome) ;;
    report)  args=(report "$WORK/ok.sltrace") ;;
  esac
  expect_exit 2 "$cmd -o ''" "$SL" "${args[@]}" -o ""
  check "$cmd -o '': nothing on stdout" test ! -s "$WORK/last.out"
  expect_exit 0 "$cmd -o -" "$SL" "${args[@]}" -o -
  check "$cmd -o -: output on stdout" test -s "$WORK/last.out"
done
expect_exit 2 "analyze --output=" "$SL" analyze "$WORK/ok.sltrace" --output=

# ---- a FIFO as input: refused at once ------------------------------------
mkfifo "$WORK/in.fifo"
for args in "info $WORK/in.fifo" "analyze $WORK/in.fifo" "diff $WORK/in.fifo $WORK/ok.sltrace" \
            "diff $WORK/ok.sltrace $WORK/in.fifo" "export $WORK/in.fifo --format chrome -o $WORK/x.json" \
            "report $WORK/in.fifo -o $WORK/x.html"; do
  # shellcheck disable=SC2086
  expect_exit 2 "input FIFO: $args" timeout 10 "$SL" $args
  check "input FIFO: $args: says fifo" has "$WORK/last.err" "not a regular file (fifo)"
done

# ---- control characters from a trace --------------------------------------
"$GEN" "$WORK/esc.sltrace" --steps 3 --host $'evil\x1b]0;pwned\x07host' \
  --kernel-name $'k\x1b[2J\x1b[31mred\xc2\x9bclear' --extra-arg $'\x1b[H\x7f' || exit 1
expect_exit 0 "info of an escape-laden trace" "$SL" info "$WORK/esc.sltrace"
check "info: no raw ESC/BEL" no_esc "$WORK/last.out"
check "info: host shown escaped" has "$WORK/last.out" 'evil\x1b]0;pwned\x07host'
check "info: command line escaped" has "$WORK/last.out" '\x1b[H\x7f'
expect_exit 0 "analyze text of an escape-laden trace" "$SL" analyze "$WORK/esc.sltrace"
check "analyze: no raw ESC" no_esc "$WORK/last.out"
check "analyze: C1 control escaped" bash -c "! grep -q $'\xc2\x9b' '$WORK/last.out'"
expect_exit 0 "diff text of an escape-laden trace" "$SL" diff "$WORK/esc.sltrace" "$WORK/ok.sltrace"
check "diff: no raw ESC" no_esc "$WORK/last.out"
expect_exit 2 "error message naming an escape-laden path" "$SL" info $'/nonexistent/\x1b[2Jx.sltrace'
check "error message: no raw ESC" no_esc "$WORK/last.err"

# ---- HTML report: names that would end or confuse the data block ----------
"$GEN" "$WORK/html.sltrace" --steps 3 --kernel-name '<!--<script>alert(1)</script>&amp;' || exit 1
expect_exit 0 "report of a trace with <!--<script> names" "$SL" report "$WORK/html.sltrace" -o "$WORK/html.html"
check "report: no '<' inside the JSON data block" python3 -c '
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"<script type=\"application/json\" id=\"sl-data\">(.*?)</script>", page, re.S)
sys.exit(0 if m and "<" not in m.group(1) and "u003c!--" in m.group(1) else 1)' "$WORK/html.html"

# ---- numbers -------------------------------------------------------------
"$GEN" "$WORK/slow.sltrace" --steps 3 --kernel-us 200 || exit 1
for v in nan NaN inf -inf 1e309 -1 "" 12abc 0x10; do
  expect_exit 2 "--fail-on-regression '$v'" "$SL" diff "$WORK/ok.sltrace" "$WORK/slow.sltrace" --fail-on-regression "$v"
  check "--fail-on-regression '$v': names the option" has "$WORK/last.err" "--fail-on-regression"
done
expect_exit 1 "--fail-on-regression 5% gates a regression" "$SL" diff "$WORK/ok.sltrace" "$WORK/slow.sltrace" --fail-on-regression 5%
expect_exit 2 "--min-kernel-share nan" "$SL" diff "$WORK/ok.sltrace" "$WORK/ok.sltrace" --min-kernel-share nan
expect_exit 2 "report --max-events 1e99" "$SL" report "$WORK/ok.sltrace" -o "$WORK/r.html" --max-events 1e99
for set in gpu_low_utilization.num_chunks=1e8 gpu_low_utilization.num_chunks=0 \
           gpu_idle.min_idle_pct=101 gpu_idle.min_gap_ns=nan gpu_idle.min_gap_ns=1e309 \
           kernel_wait_ns=-5 min_saving_pct=inf; do
  expect_exit 2 "--set $set" "$SL" analyze "$WORK/ok.sltrace" --set "$set"
  check "--set $set: names the parameter" has "$WORK/last.err" "${set%%=*}"
done
expect_exit 0 "--set num_chunks=1000 accepted" "$SL" analyze "$WORK/ok.sltrace" --set gpu_low_utilization.num_chunks=1000
expect_exit 2 "profile --duration inf" "$SL" profile --duration inf -- true
expect_exit 2 "profile --delay 1e309" "$SL" profile --delay 1e309 -- true
expect_exit 2 "serve --status-interval nan" timeout 5 "$SL" serve --listen "unix:$WORK/s.sock" --status-interval nan

# ---- timestamps spanning the int64 range ----------------------------------
"$GEN" "$WORK/span.sltrace" --steps 3 --start-ns 1000 --outlier-kernel-ns 9223372036854775000 || exit 1
expect_exit 0 "analyze a trace spanning int64" "$SL" analyze "$WORK/span.sltrace" --format json -o "$WORK/span.json"
check "no percentage above 100 %" python3 -c '
import json, sys
bad = []
def walk(v, name=""):
    if isinstance(v, dict):
        if "key" in v and "value" in v:
            walk(v["value"], str(v["key"]))
        for k, x in v.items():
            walk(x, k)
    elif isinstance(v, list):
        for x in v:
            walk(x, name)
    elif isinstance(v, (int, float)) and not isinstance(v, bool) and name.endswith("_pct") and v > 100.0001:
        bad.append((name, v))
walk(json.load(open(sys.argv[1])))
print("over 100 %:", bad[:10]) if bad else None
sys.exit(1 if bad else 0)' "$WORK/span.json"

# ---- diff of a damaged trace says so --------------------------------------
"$GEN" "$WORK/big.sltrace" --steps 40 || exit 1
size=$(stat -c %s "$WORK/big.sltrace")
head -c $((size * 2 / 3)) "$WORK/big.sltrace" > "$WORK/cut.sltrace"
expect_exit 0 "diff with a damaged NEW" "$SL" diff "$WORK/big.sltrace" "$WORK/cut.sltrace"
check "diff: damage on stderr" has "$WORK/last.err" "incomplete trace"
check "diff: damage in the text" has "$WORK/last.out" "WARNING: new: $WORK/cut.sltrace: incomplete trace"
expect_exit 0 "diff json with a damaged BASE" "$SL" diff "$WORK/cut.sltrace" "$WORK/big.sltrace" --format json
check "diff json: damage_notes" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['damage_notes'] and d['damage_notes'][0].startswith('base: ') else 1)" "$WORK/last.out"
"$SL" analyze "$WORK/big.sltrace" --format json -o "$WORK/base.json"
expect_exit 0 "diff of a saved report and a trace" "$SL" diff "$WORK/base.json" "$WORK/big.sltrace"
check "diff: a saved complete report is not called damaged" bash -c "! grep -q 'incomplete' '$WORK/last.err'"

# ---- interrupted export leaves no temporary file --------------------------
"$GEN" "$WORK/huge.sltrace" --steps 3000 --kernels-per-step 100 --chunk-bytes 1048576 || exit 1
for sig in TERM INT HUP; do
  rm -f "$WORK"/cut-$sig.json*
  # (A background job of a script starts with SIGINT ignored; an ignored
  # signal stays ignored, so give it its default disposition.)
  env --default-signal=INT "$SL" export "$WORK/huge.sltrace" --format chrome -o "$WORK/cut-$sig.json" 2> /dev/null &
  pid=$!
  for _ in $(seq 1 400); do
    ls "$WORK"/cut-$sig.json.tmp-* > /dev/null 2>&1 && break
    sleep 0.01
  done
  kill -STOP $pid 2> /dev/null
  seen=$(ls "$WORK"/cut-$sig.json.tmp-* 2> /dev/null | wc -l)
  kill -$sig $pid; kill -CONT $pid 2> /dev/null
  wait $pid; rc=$?
  if [ "$seen" -eq 0 ]; then echo "note: SIG$sig: export finished before the temp file was seen"; continue; fi
  check "SIG$sig: export died of the signal (rc $rc)" test "$rc" -gt 128
  check "SIG$sig: no temporary file left" bash -c "! ls '$WORK'/cut-$sig.json.tmp-* 2>/dev/null | grep -q ."
  check "SIG$sig: no partial output" test ! -e "$WORK/cut-$sig.json"
done

finish
