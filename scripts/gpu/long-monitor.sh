#!/usr/bin/env bash
# scripts/gpu/long-monitor.sh start|collect — issue 15's 10-minute monitored
# run (tests/gpu/monitor.sh with MONITOR_SECONDS=600, the sync switched on at
# 300 s, MONITOR_FLIGHT=0) across two GPU commands, since one command may run
# 10 minutes at most:
#   start    copies the working tree (build-gpu carried) to /tmp/long/tree and
#            runs the test there in its own process session (setsid: it
#            outlives the command while the machine stays warm), then waits
#            LONG_WAIT_S (570) printing progress every 30 s;
#   collect  waits for the test to end (at most 240 s), prints its log and
#            puts it, Prometheus's series and the work folder (traces under
#            12 MB) into $OUT (monitor.log, series.txt, long.tgz).
# Issue `collect` at once after `start` returns: the machine is given back
# after 30 s idle, and with it the run (2026-12-02: lost that way).
set -u
case ${1:-} in
  start)
    rm -rf /tmp/long && mkdir -p /tmp/long/tree && cp -a . /tmp/long/tree/ && rm -rf /tmp/long/tree/.git ||
      { echo "long-monitor: cannot copy the tree to /tmp/long/tree" >&2; exit 1; }
    if [ -f build-gpu/prometheus/prometheus.xz ] && ! command -v prometheus >/dev/null; then
      xz -dc build-gpu/prometheus/prometheus.xz > /tmp/long/prometheus && chmod +x /tmp/long/prometheus
    fi
    cd /tmp/long/tree || exit 1
    setsid nohup bash -c 'export PATH=/tmp/long:$PATH PYTHONUNBUFFERED=1 SIGHTLINE_BINARY_DIR=/tmp/long/tree/build-gpu \
      SIGHTLINE_TEST_OUT=/tmp/long/w MONITOR_SECONDS=${MONITOR_SECONDS:-600} MONITOR_FLIGHT=0 MONITOR_SERIES_OUT=/tmp/long/series.txt
      echo $$ > /tmp/long/sid; date -u > /tmp/long/started
      timeout 780 bash tests/gpu/monitor.sh > /tmp/long/monitor.log 2>&1
      echo "monitor.sh rc=$?" >> /tmp/long/monitor.log; date -u >> /tmp/long/monitor.log' >/dev/null 2>&1 </dev/null &
    w=${LONG_WAIT_S:-570}
    for ((t = 30; t <= w; t += 30)); do
      sleep 30
      echo "+${t}s: $(grep -c 'anomaly (' /tmp/long/w/mon.err 2>/dev/null) anomalies," \
           "$(grep -c 'started at step' /tmp/long/w/mon.err 2>/dev/null) captures started"
    done ;;
  collect)
    for _ in $(seq 1 120); do grep -q 'monitor.sh rc=' /tmp/long/monitor.log 2>/dev/null && break; sleep 2; done
    # Whatever of the session is still running (the monitored app, Prometheus
    # after a timeout) ends here.
    [ -s /tmp/long/sid ] && kill -- -"$(cat /tmp/long/sid)" 2>/dev/null
    grep -v 'finding [3-9]' /tmp/long/monitor.log
    cp /tmp/long/monitor.log /tmp/long/series.txt "${OUT:?}/" 2>/dev/null
    ( cd /tmp/long && find w -name '*.sltrace' -size +12M -delete; rm -rf w/tsdb; tar czf "$OUT/long.tgz" w ) ;;
  *) echo "usage: $0 start|collect" >&2; exit 2 ;;
esac
