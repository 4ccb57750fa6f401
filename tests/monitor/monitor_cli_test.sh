#!/usr/bin/env bash
# `sightline trigger` and `sightline monitor` without a GPU: trigger refuses a
# process without the monitor agent (and sends it nothing: it survives),
# triggers a capture in one that runs it; monitor refuses bad usage, runs a
# command that never uses CUDA unchanged (exit status passed through).
source "$SIGHTLINE_SOURCE_DIR/tests/cli/common.sh"
DEMO="$BIN_DIR/tests/monitor/sightline_monitor_demo"

sleep 30 & VICTIM=$!
expect_exit 2 "trigger: a process without the monitor is refused" "$SL" trigger "$VICTIM"
check "message says why" grep -q "does not run sightline's monitor" "$WORK/last.err"
check "the process was not signalled" kill -0 "$VICTIM"
kill "$VICTIM"; wait "$VICTIM" 2>/dev/null
expect_exit 2 "trigger: not a pid" "$SL" trigger abc
expect_exit 2 "trigger: pid 1 refused" "$SL" trigger 1
expect_exit 2 "trigger: no such process" "$SL" trigger 999999999

SIGHTLINE_CAPTURE_MAX_S=0.5 "$DEMO" 20 20 "$WORK/never" 20 2> "$WORK/demo.err" & DEMO_PID=$!
for _ in $(seq 1 50); do grep -q sl-monitor /proc/$DEMO_PID/task/*/comm 2>/dev/null && break; sleep 0.1; done
expect_exit 0 "trigger: monitored process" "$SL" trigger "$DEMO_PID"
for _ in $(seq 1 50); do grep -q "capture #1 started" "$WORK/demo.err" && break; sleep 0.1; done
check "the demo started a capture on demand" grep -q "anomaly (manual)" "$WORK/demo.err"
check "capture #1 started" grep -q "capture #1 started at step" "$WORK/demo.err"
check "the demo is still running" kill -0 "$DEMO_PID"
kill "$DEMO_PID"; wait "$DEMO_PID" 2>/dev/null

expect_exit 2 "monitor: no command" "$SL" monitor --metrics-listen 127.0.0.1:0
expect_exit 2 "monitor: unknown option" "$SL" monitor --bogus 1 -- true
expect_exit 2 "monitor: command not found" "$SL" monitor -- /nonexistent/cmd
check "names the command" grep -q "/nonexistent/cmd" "$WORK/last.err"
expect_exit 3 "monitor: exit status passed through" "$SL" monitor -- sh -c 'exit 3'
check "summary line" grep -q "0 anomalies, 0 captures" "$WORK/last.err"

# PyTorch allocator gauges: a Python command gets the start-up hook in memory
# mode (unless asked otherwise); other commands and --pytorch-memory off do not.
expect_exit 2 "monitor: --pytorch-memory takes a boolean" "$SL" monitor --pytorch-memory maybe -- true
probe='import os; p = os.environ.get("PYTHONPATH", "").split(":")[0]
print(os.environ.get("SIGHTLINE_PYTORCH", "unset"), os.path.isfile(os.path.join(p, "sitecustomize.py")))'
expect_exit 0 "monitor: python command" "$SL" monitor -q -- python3 -c "$probe"
check "hook in memory mode, first on PYTHONPATH" grep -qx "memory True" "$WORK/last.out"
expect_exit 0 "monitor: --pytorch-memory off" "$SL" monitor -q --pytorch-memory off -- python3 -c "$probe"
check "no hook" grep -q "^unset " "$WORK/last.out"
SIGHTLINE_PYTORCH=ops expect_exit 0 "monitor: SIGHTLINE_PYTORCH set by the user" "$SL" monitor -q -- python3 -c "$probe"
check "the user's mode kept" grep -q "^ops " "$WORK/last.out"
expect_exit 0 "monitor: not a python command" "$SL" monitor -q -- sh -c 'echo "${SIGHTLINE_PYTORCH:-unset}"'
check "no hook for it" grep -qx "unset" "$WORK/last.out"
expect_exit 0 "monitor: --pytorch-memory on, a shell command" "$SL" monitor -q --pytorch-memory on -- sh -c 'echo "${SIGHTLINE_PYTORCH:-unset}"'
check "hook when asked for (a script that starts Python)" grep -qx "memory" "$WORK/last.out"

# What sightline monitor does with the agent's capture events: a baseline is
# kept per process, a later capture is analysed on its own window and
# compared with it (synthetic traces: the later one's kernels twice as long).
"$GEN" "$WORK/base.sltrace" --steps 20 --kernel-us 50 > /dev/null
"$GEN" "$WORK/slow.sltrace" --steps 20 --kernel-us 100 > /dev/null
emit='printf "capture\t77\t1\tbaseline\t20\t%s\tthe steady state\t1\n" "$0" >> "$SIGHTLINE_MONITOR_EVENTS"
      printf "capture\t77\t2\tstep_time\t20\t%s\tstep time up\t1\n" "$1" >> "$SIGHTLINE_MONITOR_EVENTS"
      printf "capture\t78\t1\tstep_time\t20\t%s\tanother process, no baseline\t1\n" "$1" >> "$SIGHTLINE_MONITOR_EVENTS"
      printf "capture\t79\t1\tstep_time\t20\t%s\tits window is not in the trace\t5\n" "$1" >> "$SIGHTLINE_MONITOR_EVENTS"'
expect_exit 0 "monitor: capture events analysed" "$SL" monitor -- sh -c "$emit" "$WORK/base.sltrace" "$WORK/slow.sltrace"
check "the baseline is announced, not listed as findings" grep -q "baseline capture #1 of pid 77: [0-9]* steps, step " "$WORK/last.err"
check "the later capture is compared with it: the step" grep -q "capture #2 vs baseline: step .* -> .* (+" "$WORK/last.err"
check "and the kernel that grew" grep -q "capture #2 vs baseline: grown: kernel" "$WORK/last.err"
check "another process's capture is not compared" bash -c "! grep -q 'capture #1 vs baseline' '$WORK/last.err'"
check "a capture whose window is missing is not analysed as the whole trace" grep -q "capture #1: its window was not found" "$WORK/last.err"
check "summary counts them" grep -q "0 anomalies, 4 captures" "$WORK/last.err"
finish
