#!/usr/bin/env bash
# A real Prometheus (Debian package `prometheus`) scrapes the monitor agent of
# a CPU "training loop" (sightline_monitor_demo, 20 ms steps) that slows to
# 60 ms when a flag file appears (thresholds raised above the scheduling
# noise of a loaded CI machine); the query API must return the step series,
# the fake-NVML utilization gauge, the slowdown in the rolling median, and the
# step_time anomaly and capture counters. Skipped (77) without prometheus.
set -u
BIN_DIR="${SIGHTLINE_BINARY_DIR:?}"
DEMO="$BIN_DIR/tests/monitor/sightline_monitor_demo"
PROM="$(command -v prometheus || true)"
if [ -z "$PROM" ]; then
  echo "SKIPPED: the prometheus binary is not installed (Debian package prometheus; scripts/setup-deps.sh)"
  exit 77
fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sightline-prom-XXXXXX")"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
P_METRICS=$(free_port)
P_PROM=$(free_port)

echo "90 4096" > "$WORK/nvml"
SIGHTLINE_METRICS_LISTEN="127.0.0.1:$P_METRICS" SIGHTLINE_JOB=demo RANK=0 \
  SIGHTLINE_NVML_LIB="${SIGHTLINE_FAKE_NVML:?}" SIGHTLINE_FAKE_NVML_FILE="$WORK/nvml" \
  SIGHTLINE_MONITOR_INTERVAL_MS=200 SIGHTLINE_ANOMALY_COOLDOWN_S=0 \
  SIGHTLINE_ANOMALY_MIN_PCT=60 SIGHTLINE_ANOMALY_STEPS=5 \
  "$DEMO" 20 60 "$WORK/slow" 90 2> "$WORK/demo.err" &
PIDS+=($!)

cat > "$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sightline
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$P_METRICS']
YML
"$PROM" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$P_PROM" --log.level=warn 2> "$WORK/prom.err" &
PIDS+=($!)

# query EXPR → prints the first sample's value ("" when none)
query() {
  python3 - "$P_PROM" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
try:
    d = json.load(urllib.request.urlopen(url, timeout=3))
    r = d["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")
PY
}
# wait_for EXPR PYTHON_CONDITION_ON_v SECONDS
wait_for() {
  local expr="$1" cond="$2" secs="$3" v
  for _ in $(seq 1 $((secs * 2))); do
    v=$(query "$expr")
    if [ -n "$v" ] && python3 -c "import sys; v=float(sys.argv[1]); sys.exit(0 if ($cond) else 1)" "$v"; then
      echo "ok: $expr = $v"; return 0
    fi
    sleep 0.5
  done
  echo "FAIL: $expr never satisfied '$cond' (last: '${v:-none}')" >&2
  echo "--- demo stderr"; cat "$WORK/demo.err"; echo "--- prometheus stderr"; tail -20 "$WORK/prom.err"
  return 1
}

fails=0
wait_for 'sightline_step_duration_seconds_count{job="demo",rank="0"}' 'v > 100' 40 || fails=$((fails+1))
wait_for 'sightline_gpu_utilization_ratio{job="demo",device="0"}' 'abs(v - 0.9) < 1e-9' 20 || fails=$((fails+1))
wait_for 'sightline_gpu_memory_used_bytes{job="demo",device="0"}' 'v == 4096 * 2**20' 20 || fails=$((fails+1))
wait_for 'sightline_step_duration_median_seconds{job="demo"}' '0.018 < v < 0.026' 20 || fails=$((fails+1))
wait_for 'sightline_anomalies_total{job="demo",kind="step_time"}' 'v == 0' 5 || fails=$((fails+1))
# The Python hook's allocator markers (the demo marks one per step).
wait_for 'sightline_pytorch_memory_allocated_bytes{job="demo",cuda_device="0"}' 'v >= 2**20' 20 || fails=$((fails+1))
wait_for 'sightline_pytorch_memory_reserved_bytes{job="demo",cuda_device="0"}' 'v == 2**32' 20 || fails=$((fails+1))
touch "$WORK/slow"   # the slowdown switched on by a file flag
wait_for 'sightline_anomalies_total{job="demo",kind="step_time"}' 'v >= 1' 30 || fails=$((fails+1))
wait_for 'sightline_captures_total{job="demo"}' 'v >= 1' 30 || fails=$((fails+1))
wait_for 'sightline_step_duration_median_seconds{job="demo"}' 'v > 0.05' 30 || fails=$((fails+1))
# The series holds both levels: mean step time over 5 s windows, min and max over the last minute.
wait_for 'min_over_time((rate(sightline_step_duration_seconds_sum{job="demo"}[5s]) / rate(sightline_step_duration_seconds_count{job="demo"}[5s]))[60s:1s])' 'v < 0.026' 10 || fails=$((fails+1))
wait_for 'max_over_time((rate(sightline_step_duration_seconds_sum{job="demo"}[5s]) / rate(sightline_step_duration_seconds_count{job="demo"}[5s]))[60s:1s])' 'v > 0.05' 20 || fails=$((fails+1))
grep -q "anomaly (step_time)" "$WORK/demo.err" || { echo "FAIL: no anomaly line in the log"; fails=$((fails+1)); }
grep -q "capture #1 (" "$WORK/demo.err" || { echo "FAIL: no capture line in the log"; fails=$((fails+1)); }
echo "$fails failed"
[ "$fails" -eq 0 ]
