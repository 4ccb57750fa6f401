#!/usr/bin/env bash
# Coexistence on a real GPU: another CUPTI client holds CUPTI *before*
# sightline starts. Each case: the application finishes with its own correct
# output and exit code, sightline prints exactly one clear warning and leaves
# no half-written trace behind.
#   1. an app that cuptiSubscribe()s itself first, under `sightline profile`
#   2. the same app with sightline LD_PRELOADed (initialises on first CUDA use)
#   3. ncu holding CUPTI, sightline LD_PRELOADed into the profiled app
#   4. torch.profiler started before any CUDA work, under `sightline profile`
#   5. the app of 1 under `sightline monitor` (CUPTI deferred to the first
#      capture; none comes): the app keeps CUPTI, and there is no warning
source "$(dirname "$0")/lib.sh"
OS=$B/tests/gpu/sightline_other_subscriber
one_warning() {  # FILE: exactly one sightline warning, naming the other client
  local w
  w=$(grep -c 'sightline: warning' "$1")
  echo "sightline warnings: $w"
  grep 'sightline: warning' "$1" | head -2
  [ "$w" = 1 ] || { echo "FAIL: expected exactly one sightline warning in $1"; fail=1; }
  grep -q 'another CUPTI client' "$1" || { echo "FAIL: the warning does not name the other client"; fail=1; }
}

subscriber_unharmed() {  # RC NAME: exit 0, the app's subscriber and result intact, one warning
  cat "$WORK/$2.out"; tail -4 "$WORK/$2.err"
  [ "$1" -eq 0 ] || { echo "FAIL: exit $1"; fail=1; }
  grep -q 'subscribed=1 callbacks=[1-9][0-9]* result=ok' "$WORK/$2.out" ||
    { echo "FAIL: the app's own subscriber or result was harmed"; fail=1; }
  one_warning "$WORK/$2.err"
}

note "reference: the app alone"
"$OS" >"$WORK/os_plain.out" 2>&1
cat "$WORK/os_plain.out"
grep -q 'subscribed=1 .*result=ok' "$WORK/os_plain.out" || { echo "FAIL: app alone"; fail=1; }

note "1. app subscribes first, sightline injected (CUDA_INJECTION64_PATH)"
"$SL" profile -o "$WORK/os_inject.sltrace" -- "$OS" >"$WORK/os_inject.out" 2>"$WORK/os_inject.err"
subscriber_unharmed $? os_inject
[ ! -e "$WORK/os_inject.sltrace" ] || { echo "FAIL: a trace was left behind"; fail=1; }

note "2. app subscribes first, sightline LD_PRELOADed"
( cd "$WORK" && LD_PRELOAD="$B/injection/libsightline_inject.so" \
  SIGHTLINE_OUTPUT="$WORK/os_preload.sltrace" "$OS" >"$WORK/os_preload.out" 2>"$WORK/os_preload.err" )
subscriber_unharmed $? os_preload

NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ -x "$NCU" ]; then
  note "3. ncu holds CUPTI, sightline LD_PRELOADed into the app"
  "$EX/naive_matmul" --variant slow --n=512 --reps=2 >"$WORK/ncu_plain.out" 2>&1
  "$NCU" --metrics sm__cycles_elapsed.avg -c 1 env LD_PRELOAD="$B/injection/libsightline_inject.so" \
    SIGHTLINE_OUTPUT="$WORK/ncu_preload.sltrace" "$EX/naive_matmul" --variant slow --n=512 --reps=2 \
    >"$WORK/ncu_preload.out" 2>"$WORK/ncu_preload.err"
  rc=$?
  grep -E 'sm__cycles_elapsed|naive_matmul|==PROF==' "$WORK/ncu_preload.out" | head -6
  tail -3 "$WORK/ncu_preload.err"
  [ $rc -eq 0 ] || { echo "FAIL: exit $rc under ncu"; fail=1; }
  grep -q 'sm__cycles_elapsed.avg' "$WORK/ncu_preload.out" || { echo "FAIL: ncu lost its metric"; fail=1; }
  want=$(grep -o 'C\[[0-9]*\]\[[0-9]*\]=[^ ]* ref=[^ ]* OK' "$WORK/ncu_plain.out" | head -1)
  got=$(grep -o 'C\[[0-9]*\]\[[0-9]*\]=[^ ]* ref=[^ ]* OK' "$WORK/ncu_preload.out" | head -1)
  echo "result alone: $want; under ncu with sightline preloaded: $got"
  [ -n "$got" ] && [ "$want" = "$got" ] || { echo "FAIL: result differs"; fail=1; }
  cat "$WORK/ncu_preload.out" "$WORK/ncu_preload.err" >"$WORK/ncu_preload.all"
  if grep -q 'sightline: warning' "$WORK/ncu_preload.all"; then
    one_warning "$WORK/ncu_preload.all"
  else
    # ncu did not hold a CUPTI subscription in the app: then both must work.
    echo "no sightline warning under ncu: sightline traced alongside ncu"
    expect_ok "$CHECK" "$WORK/ncu_preload.sltrace"
  fi
else
  echo "SKIP: no ncu"
fi

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  note "4. torch.profiler started before any CUDA work, under sightline profile"
  cat >"$WORK/tp_first.py" <<'PY'
import torch
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as p:
    x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    for _ in range(20):
        x = x * 0.5 + 1.0
    s = float(x.sum())
n = sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)
print(f"TP_FIRST sum={s:.6e} torch_profiler_cuda_events={n}")
PY
  python3 "$WORK/tp_first.py" >"$WORK/tp_plain.out" 2>&1
  "$SL" profile -o "$WORK/tp_first.sltrace" -- python3 "$WORK/tp_first.py" \
    >"$WORK/tp_first.out" 2>"$WORK/tp_first.err"
  rc=$?
  cat "$WORK/tp_plain.out" "$WORK/tp_first.out"; grep sightline "$WORK/tp_first.err" | head -4
  [ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
  want=$(grep -o 'sum=[^ ]*' "$WORK/tp_plain.out"); got=$(grep -o 'sum=[^ ]*' "$WORK/tp_first.out")
  [ -n "$got" ] && [ "$want" = "$got" ] || { echo "FAIL: result differs ($want vs $got)"; fail=1; }
  # Who wins CUPTI depends on who subscribes first; either way: at most one warning.
  w=$(grep -c 'sightline: warning' "$WORK/tp_first.err")
  echo "sightline warnings: $w"
  [ "$w" -le 1 ] || { echo "FAIL: more than one warning"; fail=1; }
  if [ -e "$WORK/tp_first.sltrace" ]; then
    expect_ok "$CHECK" "$WORK/tp_first.sltrace"
  fi
fi

note "5. monitor mode (CUPTI deferred to its first capture): the app subscribes and keeps CUPTI"
# No capture happens in this short run: sightline never subscribes, so the
# app's own subscriber is the only one, and there is nothing to warn about.
"$SL" monitor -o "$WORK/os_mon.sltrace" -- "$OS" >"$WORK/os_mon.out" 2>"$WORK/os_mon.err"
rc=$?
cat "$WORK/os_mon.out"; grep sightline "$WORK/os_mon.err" | head -4
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
grep -q 'subscribed=1 callbacks=[1-9][0-9]* result=ok' "$WORK/os_mon.out" ||
  { echo "FAIL: the app's own subscriber or result was harmed under the monitor"; fail=1; }
! grep -q 'sightline: warning' "$WORK/os_mon.err" || { echo "FAIL: a warning without a capture"; fail=1; }
exit $fail
