#!/usr/bin/env bash
# One run, several processes: with an output path without %p, every traced
# process keeps its own trace (the run's first process the path itself, the
# others PATH.<pid>.sltrace), processes without GPU work keep none, and
# `sightline profile` lists them. Cases: fork without exec, fork+exec (waited
# for, and started after the first process exited), a child that only
# initialises CUDA, plain injection without the CLI, and PyTorch:
# torch.compile (Inductor's compile workers), DataLoader workers, a spawn Pool.
source "$(dirname "$0")/lib.sh"
APP=$B/tests/gpu/sightline_multiproc_app
PY=$(dirname "$0")/pytorch_multiproc.py
INFO() { "$SL" info "$1" --format json; }
count() {  # count TRACE KIND
  INFO "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['counts'].get('$2',0))"
}
field() { INFO "$1" | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
is() {  # is "what" GOT WANT
  if [ "$2" = "$3" ]; then echo "PASS $1 ($2)"; else echo "FAIL $1: got '$2', want '$3'"; fail=1; fi
}
procs() {  # procs OUT ROLE → "pid memsets"
  sed -n "s/^SIGHTLINE_PROC role=$2 pid=\([0-9]*\) memset=\([0-9]*\)$/\1 \2/p" "$1"; }

for mode in fork exec late idle; do
  note "multiproc_app $mode"
  rm -f "$WORK"/mp_$mode*.sltrace
  "$SL" profile -o "$WORK/mp_$mode.sltrace" -- "$APP" $mode 20 7 >"$WORK/mp_$mode.out" 2>"$WORK/mp_$mode.err"
  rc=$?; is "$mode: exit" $rc 0
  [ $mode = late ] && sleep 4  # the late child outlives the command
  cat "$WORK/mp_$mode.err" | grep -v '^  ' | head -12
  read -r parent parent_n < <(procs "$WORK/mp_$mode.out" parent)
  is "$mode: the command's trace holds its own memsets" "$(count "$WORK/mp_$mode.sltrace" memset)" "$parent_n"
  is "$mode: the command's trace is the command's" "$(field "$WORK/mp_$mode.sltrace" "d['process']['pid']")" "$parent"
  is "$mode: complete" "$(field "$WORK/mp_$mode.sltrace" "d['complete']")" True
  others=$(ls "$WORK"/mp_$mode.*.sltrace 2>/dev/null | wc -l)
  case $mode in
    fork|idle)
      is "$mode: no other trace" "$others" 0 ;;
    exec|late)
      read -r child child_n < <(procs "$WORK/mp_$mode.out" child)
      is "$mode: the child's own trace" "$(count "$WORK/mp_$mode.$child.sltrace" memset)" "$child_n" ;;
  esac
  [ $mode = idle ] && { grep -q "recorded no GPU work" "$WORK/mp_$mode.err"; is "idle: listed as without GPU work" $? 0; }
  [ $mode = exec ] && { grep -q "2 traced processes wrote traces" "$WORK/mp_$mode.err"; is "exec: both listed" $? 0; }
done

note "plain injection (no CLI): the first traced process sets the session"
rm -f "$WORK"/mp_plain*.sltrace
CUDA_INJECTION64_PATH=$B/injection/libsightline_inject.so SIGHTLINE_OUTPUT=$WORK/mp_plain.sltrace \
  SIGHTLINE_QUIET=1 "$APP" exec 12 4 >"$WORK/mp_plain.out" 2>&1
read -r parent parent_n < <(procs "$WORK/mp_plain.out" parent)
read -r child child_n < <(procs "$WORK/mp_plain.out" child)
is "plain: parent trace" "$(count "$WORK/mp_plain.sltrace" memset)" "$parent_n"
is "plain: child trace" "$(count "$WORK/mp_plain.$child.sltrace" memset)" "$child_n"

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  for mode in compile dataloader pool; do
    note "pytorch $mode"
    rm -f "$WORK"/py_$mode*.sltrace
    "$SL" profile -o "$WORK/py_$mode.sltrace" -- python3 "$PY" $mode >"$WORK/py_$mode.out" 2>"$WORK/py_$mode.err"
    rc=$?; is "py $mode: exit" $rc 0
    grep -v '^  ' "$WORK/py_$mode.err" | tail -8
    pid=$(sed -n 's/^SIGHTLINE_PY pid=\([0-9]*\) steps=.*/\1/p' "$WORK/py_$mode.out")
    steps=$(sed -n 's/^SIGHTLINE_PY pid=[0-9]* steps=\([0-9]*\)/\1/p' "$WORK/py_$mode.out")
    is "py $mode: run.sltrace is the training process's" "$(field "$WORK/py_$mode.sltrace" "d['process']['pid']")" "$pid"
    is "py $mode: complete" "$(field "$WORK/py_$mode.sltrace" "d['complete']")" True
    k=$(count "$WORK/py_$mode.sltrace" kernel)
    # forward + backward + optimizer: several kernels a step (torch.compile fuses some)
    if [ "$k" -ge $((steps * 3)) ]; then echo "PASS py $mode: $k kernels for $steps steps"; else
      echo "FAIL py $mode: only $k kernels for $steps steps"; fail=1; fi
    if [ $mode = pool ]; then
      for w in $(sed -n 's/^SIGHTLINE_PY_WORKER pid=//p' "$WORK/py_$mode.out"); do
        wk=$(count "$WORK/py_$mode.$w.sltrace" kernel)
        if [ "${wk:-0}" -ge 10 ]; then echo "PASS pool worker $w: $wk kernels"; else
          echo "FAIL pool worker $w: ${wk:-no trace}"; fail=1; fi
      done
    fi
  done
else
  echo "SKIP pytorch cases: no torch with CUDA"
fi
exit $fail
