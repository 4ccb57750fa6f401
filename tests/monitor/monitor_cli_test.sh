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
finish
