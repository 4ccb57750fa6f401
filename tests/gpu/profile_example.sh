#!/usr/bin/env bash
# Profiles one example (EXE ARGS...) with `sightline profile` and checks that
# the trace is complete, lossless, holds exactly the counts the program
# printed and (naive_matmul) kernel durations agree with CUDA events.
source "$(dirname "$0")/lib.sh"
exe=$1; shift
name=$(basename "$exe")_$(echo "$*" | tr -c 'a-z0-9' '_' | sed 's/^_*//;s/_*$//')
trace="$WORK/$name.sltrace"
rm -f "$trace"
"$SL" profile -o "$trace" -- "$exe" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
rc=$?
cat "$WORK/$name.out" "$WORK/$name.err"
[ $rc -eq 0 ] || { echo "FAIL: $exe exited $rc"; exit 1; }
"$CHECK" "$trace" --stdout "$WORK/$name.out" --timing-tolerance 0.02 --min-timed-ms 1
