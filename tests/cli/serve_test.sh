#!/usr/bin/env bash
# sightline serve: 8 concurrent clients, one killed mid-chunk; one trace per
# process, 0600, named from the header; the killed one readable up to its last
# complete frame; other users refused; live status; clean stop on SIGTERM.
source "$(dirname "$0")/common.sh"

chmod 700 "$WORK"
SOCK="$WORK/serve.sock"
OUT="$WORK/traces"
mkdir "$OUT"
"$SL" serve --listen "unix:$SOCK" --out "$OUT" --status-interval 0.2 2> "$WORK/serve.log" &
SERVE=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
check "socket created" test -S "$SOCK"
check "socket is 0600" test "$(stat -c %a "$SOCK")" = 600

# 8 clients streaming ~1.5 s each; client 5 SIGKILLs itself mid-frame after 10 kB.
pids=()
for i in 0 1 2 3 4 5 6 7; do
  extra=()
  [ "$i" -eq 5 ] && extra=(--die-after-bytes 10000)
  "$GEN" "unix:$SOCK" --pid $((7000 + i)) --rank "$i" --host "node$((i % 2))" --steps 30 \
      --kernels-per-step 10 --chunk-bytes 4096 --step-delay-ms 50 "${extra[@]}" &
  pids+=($!)
done
codes=()
for p in "${pids[@]}"; do wait "$p"; codes+=($?); done
echo "client exit codes: ${codes[*]}"
check "client 5 was killed (SIGKILL)" test "${codes[5]}" -eq 137
for i in 0 1 2 3 4 6 7; do check "client $i exited 0" test "${codes[$i]}" -eq 0; done

# Another user is refused (needs root to become uid 65534). Open the socket
# and its directory to everyone so that only the server's SO_PEERCRED check
# stands between them.
if [ "$(id -u)" -eq 0 ]; then
  chmod 755 "$WORK"; chmod 777 "$SOCK"
  "$GEN" "unix:$SOCK" --pid 9999 --as-uid 65534 --steps 2 > /dev/null 2>&1
  sleep 0.3
  check "other uid refused" grep -q "refused connection from uid 65534" "$WORK/serve.log"
  check "no file for the other uid" bash -c "! ls '$OUT' | grep -q pid9999"
  chmod 700 "$WORK"
fi

sleep 0.5
kill -TERM "$SERVE"
wait "$SERVE"
check "serve exits 0 on SIGTERM" test $? -eq 0
check "socket removed" test ! -e "$SOCK"
cat "$WORK/serve.log" | tail -n 12

count=$(ls "$OUT"/*.sltrace | wc -l)
check "8 trace files (got $count)" test "$count" -eq 8
for i in 0 1 2 3 4 5 6 7; do
  f="$OUT/node$((i % 2))-pid$((7000 + i))-rank$i.sltrace"
  check "file for client $i" test -f "$f" || continue
  check "client $i file is 0600" test "$(stat -c %a "$f")" = 600
  "$SL" export "$f" --format chrome -o "$WORK/c$i.json" 2> "$WORK/c$i.err"
  check "client $i exports" test $? -eq 0
  check "client $i kernels" python3 - "$WORK/c$i.json" "$i" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); i = int(sys.argv[2])
kernels = sum(1 for e in d["traceEvents"] if e.get("cat") == "kernel")
complete = d["otherData"]["complete"]
print(f"client {i}: {kernels} kernels, complete={complete}, {d['otherData']['integrity']}")
if i == 5:
    sys.exit(0 if (not complete and 0 < kernels < 300) else 1)
sys.exit(0 if (complete and kernels == 300) else 1)
PY
done
check "killed client logged mid-frame" grep -q "pid 7005: disconnected mid-frame" "$WORK/serve.log"
check "live status lines" grep -Eq "pid 70[0-9]{2} \(node[01], rank [0-7]\): [0-9.]+k? events/s, GPU util [0-9.]+% \(last" "$WORK/serve.log"
check "summary line" grep -q "8 traces written (7 complete)" "$WORK/serve.log"

# Usage errors.
expect_exit 2 "serve without --listen" "$SL" serve
expect_exit 2 "serve tcp address" "$SL" serve --listen tcp:1234
expect_exit 2 "serve missing out dir" "$SL" serve --listen "unix:$WORK/x.sock" --out "$WORK/nope"
check "message names the directory" grep -q "$WORK/nope" "$WORK/last.err"
touch "$WORK/plain"
expect_exit 2 "serve on a regular file" "$SL" serve --listen "unix:$WORK/plain"
finish
