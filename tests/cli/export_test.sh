#!/usr/bin/env bash
# sightline export: Chrome JSON parsed back by a JSON parser with event counts
# checked against the trace; Perfetto decoded with our generated classes.
source "$(dirname "$0")/common.sh"

"$GEN" "$WORK/s.sltrace" --steps 30 --kernels-per-step 12 --chunk-bytes 4096 || exit 1
# Expected from the generator's arithmetic (tests/export/synthetic_trace.h).
K=$((30 * 12)); M=30; S=30; API=$((30 * 14)); NV=30; MK=30; ST=30

expect_exit 0 "chrome export" "$SL" export "$WORK/s.sltrace" --format chrome -o "$WORK/s.json"
check "chrome JSON counts" python3 - "$WORK/s.json" $K $M $S $API $NV $MK $ST <<'PY'
import json, sys
from collections import Counter
path, K, M, S, API, NV, MK, ST = sys.argv[1], *map(int, sys.argv[2:])
doc = json.load(open(path))
ev = doc["traceEvents"]
cat = Counter(e.get("cat") for e in ev if e["ph"] == "X")
ph = Counter(e["ph"] for e in ev)
want = {"kernel": K, "memcpy": M, "sync": S, "cuda_runtime": API, "nvtx": NV, "capture": 1}
bad = [f"{c}: {cat.get(c, 0)} != {n}" for c, n in want.items() if cat.get(c, 0) != n]
if ph["s"] != K + M or ph["f"] != K + M: bad.append(f"flows s={ph['s']} f={ph['f']}")
if ph["i"] != MK + ST: bad.append(f"instants {ph['i']}")
ids = Counter(e["id"] for e in ev if e["ph"] in "sf")
if any(n != 2 for n in ids.values()): bad.append("flow ids not paired")
pids = {e["pid"] for e in ev}
if pids != {4242}: bad.append(f"pids {pids}")
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
if "GPU 0 stream 7" not in names or "CPU thread 4100" not in names: bad.append(f"tracks {names}")
if not doc["otherData"]["complete"]: bad.append("not complete")
for e in ev:
    if e["ph"] == "X" and (e["dur"] < 0 or not isinstance(e["ts"], float)): bad.append("bad ts/dur"); break
print("chrome:", dict(cat), dict(ph), "problems:", bad)
sys.exit(1 if bad else 0)
PY

expect_exit 0 "perfetto export" "$SL" export "$WORK/s.sltrace" --format perfetto -o "$WORK/s.pftrace"
"$PDUMP" "$WORK/s.pftrace" > "$WORK/p.json" || fail "perfetto file does not decode"
check "perfetto counts" python3 - "$WORK/p.json" $K $M $S $API $NV $MK $ST <<'PY'
import json, sys
path, K, M, S, API, NV, MK, ST = sys.argv[1], *map(int, sys.argv[2:])
d = json.load(open(path))
want = {"kernel": K, "memcpy": M, "sync": S, "cuda_runtime": API, "nvtx": NV, "capture": 1}
bad = [f"{c}: {d['slices'].get(c, 0)} != {n}" for c, n in want.items() if d["slices"].get(c, 0) != n]
if d["flow_starts"] != K + M or d["flow_ends"] != K + M: bad.append("flows")
if d["instants"] != MK + ST: bad.append("instants")
if d["undefined_iids"] or d["unbalanced_tracks"]: bad.append("undefined ids / unbalanced")
if d["process_tracks"] != 1 or d["thread_tracks"] != 1: bad.append("descriptors")
print("perfetto:", d, "problems:", bad)
sys.exit(1 if bad else 0)
PY

# Format inferred from the extension; --strict on an intact trace is fine.
expect_exit 0 "format from .json" "$SL" export "$WORK/s.sltrace" -o "$WORK/t.json" --strict

# A trace cut mid-chunk (writer killed) exports its complete chunks with a warning;
# --strict refuses it.
size=$(stat -c %s "$WORK/s.sltrace")
head -c $((size * 2 / 3)) "$WORK/s.sltrace" > "$WORK/cut.sltrace"
expect_exit 0 "cut trace exports" "$SL" export "$WORK/cut.sltrace" --format chrome -o "$WORK/cut.json"
check "cut trace warns" grep -q "warning" "$WORK/last.err"
check "cut trace JSON parses" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d['otherData']['complete'] is not False)" "$WORK/cut.json"
expect_exit 2 "--strict refuses a cut trace" "$SL" export "$WORK/cut.sltrace" --format perfetto -o "$WORK/cut.pftrace" --strict

# Real traces recorded on the H200, when committed.
for t in $(real_traces); do
  b=$(basename "$t" .sltrace)
  expect_exit 0 "chrome export of $b" "$SL" export "$t" --format chrome -o "$WORK/$b.json" &&
    check "chrome JSON of $b parses" python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); n=sum(1 for e in d['traceEvents'] if e['ph']=='X')
print(sys.argv[1], n, 'slices', d['otherData']['events_read'], 'events'); sys.exit(0 if n > 0 else 1)" "$WORK/$b.json"
  expect_exit 0 "perfetto export of $b" "$SL" export "$t" --format perfetto -o "$WORK/$b.pftrace" &&
    check "perfetto of $b decodes" bash -c "'$PDUMP' '$WORK/$b.pftrace' | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d[\"undefined_iids\"] or d[\"unbalanced_tracks\"])'"
done
finish
