#!/usr/bin/env bash
# Python call stacks and PyTorch ops on the GPU (issue 13): a workload with
# threads, a generator, an exception unwinding through a launch, a per-step
# .item(), backward(), torch.compile and a daemon thread launching during
# interpreter shutdown runs to the same result under sightline (stacks on by
# default for python3; --pytorch; strict GIL mode; cuda-driver for Triton),
# and the analysis names the script's lines. Then the corpus transformer
# (examples/pytorch/lm_train.py) with --pytorch: >= 95 % of kernel time at a
# line of the script and >= 95 % inside an op range.
source "$(dirname "$0")/lib.sh"
PYTHON=${SIGHTLINE_PYTHON:-python3}
"$PYTHON" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || { echo "SKIPPED: no torch"; exit 77; }
APP=$(cd "$(dirname "$0")" && pwd)/python_stacks_app.py
LM=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)/lm_train.py
line() { grep -n "# $1\$" "$APP" | cut -d: -f1; }

note "reference run without a profiler"
# The daemon thread still launching at interpreter shutdown makes PyTorch
# itself abort on the H200 (torch 2.11: "terminate called without an active
# exception", exit 134, after the result is printed): sightline must give
# the same exit status and the same result, not a clean exit.
"$PYTHON" "$APP" >"$WORK/ps_plain.out" 2>&1
plain_rc=$?
want=$(grep -o 'OK checksum=.*' "$WORK/ps_plain.out")
[ -n "$want" ] || { echo "FAIL: plain run printed no result (exit $plain_rc)"; fail=1; }
echo "plain: $want (exit $plain_rc)"

run_case() {  # NAME EXTRA_PROFILE_ARGS... -- APP_ARGS...
  local name=$1; shift
  local pargs=() aargs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pargs+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  aargs=("$@")
  note "$name: sightline profile ${pargs[*]} -- python ${aargs[*]}"
  "$SL" profile -o "$WORK/ps_$name.sltrace" "${pargs[@]}" -- "$PYTHON" "$APP" "${aargs[@]}" \
    >"$WORK/ps_$name.out" 2>"$WORK/ps_$name.err"
  local rc=$?
  grep -E 'Python stacks|no Python stacks|--pytorch' "$WORK/ps_$name.err"
  if [ $rc -ne "$plain_rc" ] && [ $rc -ne 0 ]; then
    echo "FAIL: $name exit $rc (plain run: $plain_rc)"; tail -20 "$WORK/ps_$name.err"; fail=1; return
  fi
  echo "PASS: $name exit $rc (plain run: $plain_rc)"
  local got
  got=$(grep -o 'OK checksum=.*' "$WORK/ps_$name.out")
  if [ "${aargs[*]}" = "" ]; then
    [ "$got" = "$want" ] || { echo "FAIL: $name output '$got' != '$want'"; fail=1; }
  else
    [ -n "$got" ] || { echo "FAIL: $name printed no result"; fail=1; }
  fi
  # The app dies of SIGABRT at exit (PyTorch's, see above): the trace must
  # still be finished (signal flush), not cut at its last periodic flush.
  "$SL" info "$WORK/ps_$name.sltrace" | grep -q '^status *COMPLETE' ||
    { echo "FAIL: $name trace not complete: $("$SL" info "$WORK/ps_$name.sltrace" 2>&1 | grep -m1 '^status')"; fail=1; }
  # The whole trace: this app is a sequence of cases, not a training loop,
  # so the steady-state scope (the repeating part only) would leave most out.
  "$SL" analyze "$WORK/ps_$name.sltrace" --window all --format json -o "$WORK/ps_$name.json" ||
    { echo "FAIL: $name analyze"; fail=1; return; }
  "$SL" analyze "$WORK/ps_$name.sltrace" --window all --group-by python | head -15
}

check_sites() {  # NAME MARK... : each marked line is a python_sites[] entry with GPU or blocked time
  local name=$1; shift
  for m in "$@"; do
    local l; l=$(line "$m")
    python3 - "$WORK/ps_$name.json" "python_stacks_app.py:$l " "$m" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
want, mark = sys.argv[2], sys.argv[3]
rows = [s for s in r["python_sites"] if want in s["site"] + " " and not s["inferred"]]
ok = any(s["gpu_ns"] > 0 or s["host_blocked_ns"] > 0 for s in rows)
print(("PASS" if ok else "FAIL") + f": {mark} ({want.strip()}) in python_sites: {rows[:1]}")
if not ok:  # what the script's lines got instead
    for s in [s for s in r["python_sites"] if "python_stacks_app.py" in s["site"]][:12]:
        print("   ", s)
sys.exit(0 if ok else 1)
PY
  done
}

run_case default --
check_sites default MARK_THREAD MARK_GEN MARK_RAISE MARK_FORWARD MARK_ITEM
python3 - "$WORK/ps_default.json" "python_stacks_app.py:$(line MARK_ITEM) " <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
syncs = [o for f in r["findings"] if f["rule"] in ("sync_api", "sync_memcpy") for o in f["offenders"]]
named = [o for o in syncs if sys.argv[2].strip() in o["python_site"]]
print(("PASS" if named or not syncs else "FAIL") +
      f": sync offenders name the .item() line ({len(named)} of {len(syncs)})")
sys.exit(0 if named or not syncs else 1)
PY
run_case gil --python-backtrace=gil --
run_case off --python-backtrace=off --
python3 -c "import json,sys; r=json.load(open('$WORK/ps_off.json')); sys.exit(1 if r['python_sites'] else 0)" ||
  { echo "FAIL: --python-backtrace=off recorded stacks"; fail=1; }
run_case pytorch --pytorch=shapes --
python3 -c "import json; r=json.load(open('$WORK/ps_pytorch.json')); print('ops:', [o['op'] for o in r['ops'][:8]])"
python3 -c "import json,sys; r=json.load(open('$WORK/ps_pytorch.json')); sys.exit(0 if r['ops'] else 1)" ||
  { echo "FAIL: --pytorch gave no ops"; fail=1; }
run_case compiled -t cuda,cuda-driver,nvtx -- --compile
check_sites compiled MARK_FORWARD MARK_ITEM

note "corpus transformer with --pytorch: coverage"
"$SL" profile -o "$WORK/ps_lm.sltrace" --pytorch -- "$PYTHON" "$LM" --variant eager >"$WORK/ps_lm.out" 2>"$WORK/ps_lm.err" ||
  { echo "FAIL: lm_train under sightline"; tail -20 "$WORK/ps_lm.err"; fail=1; }
"$SL" analyze "$WORK/ps_lm.sltrace" --format json -o "$WORK/ps_lm.json" && python3 - "$WORK/ps_lm.json" <<'PY' || fail=1
import json, sys
a = json.load(open(sys.argv[1]))["python_attribution"]
site, op = a["kernel_time_with_user_site_pct"], a["kernel_time_with_op_pct"]
print(f"lm_train: {site:.1f}% of kernel time at a user line, {op:.1f}% inside an op")
sys.exit(0 if site >= 95 and op >= 95 else 1)
PY
exit $fail
