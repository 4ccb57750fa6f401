#!/usr/bin/env bash
# `sightline history add` / `sightline trend` end to end: five runs (saved JSON
# reports with set step times, one regressed) → the trend flags that one, the
# HTML page has a plot per quantity, --fail-on-regression gates on the newest
# run, bad inputs are clear errors (exit 2), a trace can be added directly.
source "$SIGHTLINE_SOURCE_DIR/tests/cli/common.sh"
DB="$WORK/db/history.db"
TRACE="$SRC/tests/data/fragmented_kernels_fixed.sltrace"

expect_exit 0 "analyze a real trace to a JSON report" "$SL" analyze "$TRACE" --format json -o "$WORK/base.json"
# Five reports whose step p50 is 10, 10.1, 13 (regressed), 9.9, 10 ms.
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
base = json.load(open(work + "/base.json"))
for i, ms in enumerate([10.0, 10.1, 13.0, 9.9, 10.0]):
    r = json.loads(json.dumps(base))
    r["summary"]["steps"] = {"count": 50, "mean_ns": ms * 1e6, "p50_ns": int(ms * 1e6),
                             "p99_ns": int(ms * 1.1e6)}
    json.dump(r, open("%s/run%d.json" % (work, i + 1), "w"))
PY
for i in 1 2 3 4 5; do
  expect_exit 0 "history add run $i" "$SL" history add "$WORK/run$i.json" --label commit=c$i --label branch=main --db "$DB"
done
check "the database file is 0600" test "$(stat -c %a "$DB")" = 600
expect_exit 0 "trend" "$SL" trend --db "$DB" --label branch=main -o "$WORK/trend.html"
check "trend lists 5 runs" test "$(grep -c 'commit=c' "$WORK/last.out")" -eq 5
check "the regressed run (commit c3) is flagged" python3 - "$WORK/last.out" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
flagged = [lines[i - 1] for i, l in enumerate(lines) if "REGRESSION step_p50_ms" in l]
print(flagged)
sys.exit(0 if len(flagged) == 1 and "commit=c3" in flagged[0] else 1)
PY
check "HTML page: a section per quantity, plots, a red point" python3 - "$WORK/trend.html" <<'PY'
import sys
h = open(sys.argv[1]).read()
heads = ["Step time p50", "Step time p99", "GPU utilization", "GPU memory peak"]
ok = all("<h2>" + t in h for t in heads) and h.count("<svg") >= 3 and "class=reg" in h and "commit=c3" in h
sys.exit(0 if ok else 1)
PY
expect_exit 0 "newest run within 5 %: gate passes" "$SL" trend --db "$DB" -o none --fail-on-regression 5
# A sixth, regressed run: the gate fails with exit 1.
python3 -c "
import json,sys; r=json.load(open('$WORK/run1.json')); r['summary']['steps']['p50_ns']=int(12.5e6)
json.dump(r, open('$WORK/run6.json','w'))"
expect_exit 0 "history add run 6" "$SL" history add "$WORK/run6.json" --label commit=c6 --label branch=main --db "$DB"
expect_exit 1 "newest run 25 % slower: gate fails" "$SL" trend --db "$DB" -o none --fail-on-regression 10
check "gate says why" grep -q "REGRESSION over the threshold" "$WORK/last.out"
expect_exit 0 "label filter: other branch has no runs" "$SL" trend --db "$DB" -o none --label branch=dev
check "no runs message" grep -q "no runs match" "$WORK/last.out"
# Bad inputs.
expect_exit 2 "NaN threshold refused" "$SL" trend --db "$DB" -o none --fail-on-regression nan
check "NaN message" grep -q "not a finite percentage" "$WORK/last.err"
expect_exit 2 "inf threshold refused" "$SL" trend --db "$DB" -o none --fail-on-regression inf
expect_exit 2 "bad label" "$SL" history add "$WORK/run1.json" --label nokey --db "$DB"
expect_exit 2 "missing input named" "$SL" history add "$WORK/nope.json" --db "$DB"
check "message names the file" grep -q "nope.json" "$WORK/last.err"
printf 'garbage that is not sqlite at all, padded...........................................................' > "$WORK/bad.db"
expect_exit 2 "corrupt database" "$SL" trend --db "$WORK/bad.db" -o none
check "corrupt message names the db" grep -q "bad.db.*not a SQLite database or corrupt" "$WORK/last.err"
expect_exit 2 "unknown quantity" "$SL" trend --db "$DB" -o none --quantity nope
# A trace directly (analyzed on the way in).
expect_exit 0 "history add a trace" "$SL" history add "$TRACE" --label kind=trace --db "$DB"
check "trace run stored" grep -q "added to" "$WORK/last.out"
# Concurrent CLI writers: 8 at once, all land.
for i in $(seq 1 8); do "$SL" history add "$WORK/run1.json" --label batch=par --db "$DB" > "$WORK/par$i.out" 2>"$WORK/par$i.err" & done
wait
expect_exit 0 "trend of the parallel batch" "$SL" trend --db "$DB" -o none --label batch=par
check "8 concurrent adds stored" test "$(grep -c 'batch=par' "$WORK/last.out")" -eq 8
finish
