#!/usr/bin/env bash
# PyTorch: a training loop profiled through `sightline profile -- python3`, and
# coexistence with torch.profiler (the app finishes with correct output).
source "$(dirname "$0")/lib.sh"
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || { echo "SKIPPED: no torch"; exit 77; }
PY=$(dirname "$0")/../../examples/pytorch_train.py
for v in slow fixed; do
  note "pytorch_train $v"
  "$SL" profile -o "$WORK/pytorch_$v.sltrace" -- python3 "$PY" --variant $v \
    >"$WORK/pytorch_$v.out" 2>"$WORK/pytorch_$v.err"
  rc=$?
  cat "$WORK/pytorch_$v.out"; tail -4 "$WORK/pytorch_$v.err"
  [ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
  expect_ok "$CHECK" "$WORK/pytorch_$v.sltrace" --stdout "$WORK/pytorch_$v.out"
done
note "reference run without any profiler"
python3 "$PY" --variant fixed >"$WORK/pytorch_plain.out" 2>&1
note "torch.profiler active under sightline"
"$SL" profile -o "$WORK/pytorch_coexist.sltrace" -- python3 "$PY" --variant fixed --torch-profiler \
  >"$WORK/pytorch_coexist.out" 2>"$WORK/pytorch_coexist.err"
rc=$?
cat "$WORK/pytorch_coexist.out"; cat "$WORK/pytorch_coexist.err" | tail -8
[ $rc -eq 0 ] || { echo "FAIL: exit $rc with torch.profiler"; fail=1; }
want=$(grep -o 'loss=[0-9.]*' "$WORK/pytorch_plain.out")
got=$(grep -o 'loss=[0-9.]*' "$WORK/pytorch_coexist.out")
echo "loss plain $want, with torch.profiler under sightline $got"
[ -n "$got" ] && [ "$want" = "$got" ] || { echo "FAIL: output differs"; fail=1; }
w=$(grep -c 'sightline: warning' "$WORK/pytorch_coexist.err")
echo "sightline warnings: $w"
[ "$w" -le 1 ] || { echo "FAIL: more than one warning"; fail=1; }
exit $fail
