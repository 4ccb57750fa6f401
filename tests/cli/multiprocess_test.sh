#!/usr/bin/env bash
# One run, several processes (CPU part; tests/gpu/multiprocess.sh runs the
# real collector): `sightline profile` marks its child as the run's first
# process (SIGHTLINE_SESSION_PID) and lists every traced process from the
# run's manifest; analyze/report/diff take a directory or a quoted glob and
# leave out traces without GPU work.
source "$(dirname "$0")/common.sh"

# 1. The command is the run's first process; the manifest is private.
out=$("$SL" profile -q -- sh -c 'echo "pid=$$ session=$SIGHTLINE_SESSION_PID manifest=$SIGHTLINE_MANIFEST"; \
  stat -c "%a" "$SIGHTLINE_MANIFEST" "$(dirname "$SIGHTLINE_MANIFEST")"' 2>&1)
pid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' <<<"$out")
session=$(sed -n 's/.* session=\([0-9]*\) .*/\1/p' <<<"$out")
manifest=$(sed -n 's/.* manifest=\(.*\)$/\1/p' <<<"$out")
check "SIGHTLINE_SESSION_PID is the command's pid ($out)" [ -n "$pid" -a "$pid" = "$session" ]
check "manifest is 0600 in a 0700 directory" grep -qx 600 <<<"$(sed -n 2p <<<"$out")"
check "manifest directory is 0700" grep -qx 700 <<<"$(sed -n 3p <<<"$out")"
check "manifest removed after the run" [ ! -e "$manifest" ]
# An inherited SIGHTLINE_SESSION_PID (a nested profile) is replaced.
out=$(SIGHTLINE_SESSION_PID=1 "$SL" profile -q -- sh -c 'echo "$$ $SIGHTLINE_SESSION_PID"')
check "nested profile: its own command is the first process" [ "$(cut -d' ' -f1 <<<"$out")" = "$(cut -d' ' -f2 <<<"$out")" ]

# 2. The listing comes from the manifest: the command's trace, a worker's
# per-process trace, and a process without GPU work (its trace removed).
"$GEN" "$WORK/cmd.sltrace" --steps 6 --kernels-per-step 4 >/dev/null || exit 1
"$GEN" "$WORK/run.777.sltrace" --steps 3 --kernels-per-step 2 --pid 777 >/dev/null || exit 1
cat > "$WORK/fake_run.sh" <<SH
line() { printf '%s\t%s\t%s\t%s\t%s\n' "\$@" >> "\$SIGHTLINE_MANIFEST"; }
line start \$\$ 0 0 $WORK/cmd.sltrace
line start 777 0 0 $WORK/run.777.sltrace
line start 778 0 0 $WORK/run.778.sltrace
line done 777 9 30 $WORK/run.777.sltrace
line empty 778 0 3 $WORK/run.778.sltrace
line done \$\$ 40 120 $WORK/cmd.sltrace
SH
expect_exit 0 "profile of a fake multi-process run" "$SL" profile -- sh "$WORK/fake_run.sh"
err=$(cat "$WORK/last.err")
check "lists both traces ($err)" grep -q "2 traced processes wrote traces" <<<"$err"
check "the command's trace first" grep -q "(the command): $WORK/cmd.sltrace (40 GPU records)" <<<"$err"
check "the worker's trace" grep -q "pid 777: $WORK/run.777.sltrace (9 GPU records)" <<<"$err"
check "the process without GPU work" grep -q "1 process(es) initialised CUDA but recorded no GPU work; no trace kept for them (pid 778)" <<<"$err"
check "a summary per trace" [ "$(grep -c '^sightline: trace ' <<<"$err")" = 2 ]

# 3. A process still running when the command exits is waited for.
cat > "$WORK/straggler.sh" <<SH
line() { printf '%s\t%s\t%s\t%s\t%s\n' "\$@" >> "\$SIGHTLINE_MANIFEST"; }
( sleep 1; line done \$BASHPID 5 10 $WORK/run.777.sltrace ) &
line start \$! 0 0 $WORK/run.777.sltrace
SH
expect_exit 0 "profile waits for a traced straggler" "$SL" profile -- bash "$WORK/straggler.sh"
check "says it waits ($(cat "$WORK/last.err"))" grep -q "waiting up to 15s for 1 traced process" "$WORK/last.err"
check "then summarises its trace" grep -q "^sightline: trace $WORK/run.777.sltrace" "$WORK/last.err"

# 4. A directory (or quoted glob) is a set; traces without GPU work are left out.
mkdir -p "$WORK/run"
"$GEN" "$WORK/run/run.sltrace" --steps 8 --kernels-per-step 4 >/dev/null || exit 1
"$GEN" "$WORK/run/run.901.sltrace" --steps 0 --pid 901 >/dev/null || exit 1
expect_exit 0 "analyze a directory" "$SL" analyze "$WORK/run" --format json -o "$WORK/dir.json"
check "the empty trace is left out with a note" grep -q "run.901.sltrace: no GPU work recorded" "$WORK/last.err"
check "one trace analyzed" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d['traces'])==1 and d['traces'][0]['path'].endswith('run/run.sltrace') else 1)" "$WORK/dir.json"
expect_exit 0 "analyze a quoted glob" "$SL" analyze "$WORK/run/run*.sltrace"
check "glob: same note" grep -q "run.901.sltrace: no GPU work recorded" "$WORK/last.err"
expect_exit 0 "diff two directories" "$SL" diff "$WORK/run" "$WORK/run"
expect_exit 0 "report of a directory" "$SL" report "$WORK/run" -o "$WORK/run.html"
mkdir -p "$WORK/nothing" "$WORK/onlyempty"
expect_exit 2 "a directory without traces is a usage error" "$SL" analyze "$WORK/nothing"
check "names the directory" grep -q "$WORK/nothing: is a directory without .sltrace files" "$WORK/last.err"
"$GEN" "$WORK/onlyempty/a.sltrace" --steps 0 >/dev/null
"$GEN" "$WORK/onlyempty/b.sltrace" --steps 0 >/dev/null
expect_exit 2 "a set without GPU work is a usage error" "$SL" analyze "$WORK/onlyempty"
check "says none holds GPU work" grep -q "none of its 2 traces holds GPU work" "$WORK/last.err"
expect_exit 2 "a glob matching nothing is a usage error" "$SL" analyze "$WORK/none*.sltrace"
finish
