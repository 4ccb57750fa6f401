#!/usr/bin/env bash
# sightline serve under hostile clients (issue 17, item 2):
#  1. 24 clients each holding an unfinished 60 MiB frame (8 MiB sent): the
#     server's buffered bytes stay under --max-buffered-mb (before: every
#     partial frame buffered whole, 24 x 8 MiB); a normal client is served
#     while they wait (fair share); stalled clients are dropped at the cap.
#  2. Out of file descriptors (ulimit -n 20, 40 clients): the server backs off
#     instead of spinning on accept (before: 100 % CPU).
#  3. A host name with control characters is escaped in the log.
source "$(dirname "$0")/common.sh"

chmod 700 "$WORK"
OUT="$WORK/traces"
mkdir "$OUT"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

# Clients that open a stream, send a preamble, then a frame header claiming
# LEN bytes and SENT of them, and hold the connection (held until killed).
cat > "$WORK/holder.py" <<'EOF'
import socket, struct, sys, time
path, n, length, sent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
socks = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        print("connect failed:", e, file=sys.stderr)
        break
    s.setblocking(False)
    payload = (b"SLTRACE\n" + struct.pack("<I", 1) + b"SLFR" + bytes([2, 0, 0, 0]) +
               struct.pack("<II", length, 0) + b"x" * sent)
    socks.append([s, memoryview(payload), 0])
# Push what the server takes (it may stop reading some: backpressure).
deadline = time.time() + (float(sys.argv[5]) if len(sys.argv) > 5 else 3)
while time.time() < deadline and any(e[2] < len(e[1]) for e in socks):
    for entry in socks:
        s, data, off = entry
        if off < len(data):
            try:
                entry[2] += s.send(data[off:off + (1 << 20)])
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                entry[2] = len(data)
    time.sleep(0.002)
print("held", len(socks), flush=True)
time.sleep(600)
EOF

# ---- 1. total buffered bytes are capped ------------------------------------
SOCK="$WORK/a.sock"
"$SL" serve --listen "unix:$SOCK" --out "$OUT" --max-buffered-mb 32 --stall-timeout 1 --status-interval 0.5 \
  2> "$WORK/serve-a.log" &
SERVE=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
base_rss=$(rss_kb $SERVE)
python3 "$WORK/holder.py" "$SOCK" 24 $((60 << 20)) $((8 << 20)) 6 > "$WORK/holder-a.out" &
HOLDER=$!
for _ in $(seq 200); do grep -q held "$WORK/holder-a.out" 2> /dev/null && break; sleep 0.05; done
rss=$(rss_kb $SERVE)
echo "serve VmHWM: ${base_rss} kB at start, ${rss} kB with 24 x 8 MiB partial frames offered"
check "memory bounded by --max-buffered-mb (VmHWM ${rss} kB)" test $((rss - base_rss)) -lt $((100 * 1024))
# A normal client still gets through while the holders wait.
"$GEN" "unix:$SOCK" --pid 5151 --host normal --steps 3 > /dev/null 2>&1 &
GENPID=$!
wait $GENPID
for _ in $(seq 100); do grep -q "pid 5151: finished cleanly" "$WORK/serve-a.log" && break; sleep 0.1; done
check "normal client served while the holders wait (fair share)" grep -q "pid 5151: finished cleanly" "$WORK/serve-a.log"
check "normal client's trace written" bash -c "ls '$OUT' | grep -q 'normal-pid5151'"
kill $HOLDER; wait $HOLDER 2> /dev/null
kill -TERM $SERVE; wait $SERVE
cat "$WORK/serve-a.log" | tail -3
peak=$(sed -n 's/.*peak [0-9]* connections, \([0-9.]*\) MB buffered.*/\1/p' "$WORK/serve-a.log")
check "peak buffered reported (${peak} MB) and within the cap + one frame" \
  python3 -c "import sys; sys.exit(0 if 0 < float('${peak:-0}') <= 33.6 + 64 * 1.05 else 1)"

# ---- 2. out of file descriptors: back off, do not spin ----------------------
SOCK="$WORK/b.sock"
( ulimit -n 20; exec "$SL" serve --listen "unix:$SOCK" --out "$OUT" --status-interval 5 ) \
  2> "$WORK/serve-b.log" &
SERVE=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
python3 "$WORK/holder.py" "$SOCK" 40 100 10 0.5 > "$WORK/holder-b.out" 2>&1 &
HOLDER=$!
for _ in $(seq 200); do grep -q held "$WORK/holder-b.out" 2> /dev/null && break; sleep 0.05; done
t0=$(cpu_ticks $SERVE)
sleep 2
t1=$(cpu_ticks $SERVE)
echo "serve CPU over 2 s with accept failing: $((t1 - t0)) ticks"
check "no busy loop on EMFILE ($((t1 - t0)) ticks of CPU in 2 s)" test $((t1 - t0)) -lt 40
check "EMFILE logged" grep -q "cannot accept more connections" "$WORK/serve-b.log"
kill $HOLDER; wait $HOLDER 2> /dev/null
# Once descriptors are free again, new clients are served.
sleep 0.3
"$GEN" "unix:$SOCK" --pid 6161 --host after --steps 2 > /dev/null 2>&1
sleep 0.3
check "served again after the back-off" bash -c "ls '$OUT' | grep -q 'after-pid6161'"
kill -TERM $SERVE; wait $SERVE

# ---- 3. control characters in the log --------------------------------------
SOCK="$WORK/c.sock"
"$SL" serve --listen "unix:$SOCK" --out "$OUT" 2> "$WORK/serve-c.log" &
SERVE=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
"$GEN" "unix:$SOCK" --pid 7171 --host $'x\x1b]0;title\x07y' --steps 2 > /dev/null 2>&1
sleep 0.3
kill -TERM $SERVE; wait $SERVE
check "serve log: no raw ESC" bash -c "! grep -q $'\x1b' '$WORK/serve-c.log'"
check "serve log: names the client" grep -q "pid 7171" "$WORK/serve-c.log"

finish
