#!/usr/bin/env bash
# tests/gpu/nccl_payload_check.sh TRACE_RANK0 TRACE_RANK1 [PROGRAM_STDOUT]
#
# Checks that NCCL's NVTX payloads made it into the traces of a 2-rank
# examples/nccl_allreduce run: every AllReduce carries the message size the
# program used, both ranks name the same non-zero communicator, and the
# communicator gives rank 0/1 of 2. Reads `sightline analyze --format json`
# (the per-op table `nccl_ops`, see docs/report-schema.md), one trace at a time.
#
# Expected size and count: from the program's "SIGHTLINE_EXPECT_NCCL rank=R
# allreduce=N bytes=B" lines when PROGRAM_STDOUT is given, else bytes =
# ${EXPECT_BYTES:-16777216} (the example's default 1<<22 floats) and any count.
#
# Run on the 2-GPU machine, e.g.:
#   sightline profile -o /tmp/ar_rank%r.sltrace -- build-gpu/examples/nccl_allreduce \
#       --variant slow > /tmp/ar.out
#   tests/gpu/nccl_payload_check.sh /tmp/ar_rank0.sltrace /tmp/ar_rank1.sltrace /tmp/ar.out
# Exit 0 all checks passed, 1 a check failed, 2 usage/unreadable input.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 TRACE_RANK0 TRACE_RANK1 [PROGRAM_STDOUT]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
B=${SIGHTLINE_BINARY_DIR:-$here/../../build-gpu}
SL=${SIGHTLINE_BIN:-$B/tools/sightline/sightline}
[ -x "$SL" ] || SL=$(command -v sightline || true)
[ -n "$SL" ] && [ -x "$SL" ] || { echo "sightline CLI not found (set SIGHTLINE_BIN)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for r in 0 1; do
  t=$1; [ $r -eq 1 ] && t=$2
  if ! "$SL" analyze "$t" --format json -o "$work/rank$r.json" 2>"$work/rank$r.err"; then
    echo "cannot analyze $t:"; cat "$work/rank$r.err"; exit 2
  fi
done
python3 - "$work/rank0.json" "$work/rank1.json" "${3:-}" "${EXPECT_BYTES:-16777216}" <<'PY'
import json, re, sys
reports = [json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))]
stdout_path, default_bytes = sys.argv[3], int(sys.argv[4])
expect = {0: {"bytes": default_bytes, "count": None}, 1: {"bytes": default_bytes, "count": None}}
if stdout_path:
    for line in open(stdout_path):
        m = re.search(r"SIGHTLINE_EXPECT_NCCL rank=(\d+) allreduce=(\d+) bytes=(\d+)", line)
        if m and int(m.group(1)) in expect:
            expect[int(m.group(1))] = {"count": int(m.group(2)), "bytes": int(m.group(3))}
failures = 0
def check(ok, what):
    global failures
    print(("PASS " if ok else "FAIL ") + what)
    failures += 0 if ok else 1
comms = []
for rank, rep in enumerate(reports):
    rows = [o for o in rep.get("nccl_ops", []) if o["op"] == "AllReduce"]
    check(len(rows) == 1, f"rank {rank}: one AllReduce row in nccl_ops (got {len(rows)})")
    if not rows:
        continue
    o = rows[0]
    print(f"     rank {rank}: " + json.dumps(o, sort_keys=True))
    e = expect[rank]
    if e["count"] is not None:
        check(o["count"] == e["count"], f"rank {rank}: {o['count']} AllReduce ranges == {e['count']}")
    else:
        check(o["count"] > 0, f"rank {rank}: AllReduce ranges present ({o['count']})")
    check(o["sized_count"] == o["count"],
          f"rank {rank}: every AllReduce carries a size ({o['sized_count']}/{o['count']})")
    check(o["bytes_min"] == e["bytes"] and o["bytes_max"] == e["bytes"],
          f"rank {rank}: bytes {o['bytes_min']}..{o['bytes_max']} == {e['bytes']}")
    check(o["comm_id"] not in ("", "multiple", "0x0000000000000000"),
          f"rank {rank}: one non-zero communicator ({o['comm_id']!r})")
    check(o["comm_rank"] == rank and o["comm_nranks"] == 2,
          f"rank {rank}: communicator rank {o['comm_rank']} of {o['comm_nranks']} == {rank} of 2")
    if o["gpu_count"] == o["count"] and o["gpu_total_ns"] > 0:
        check(o["algbw_gbps"] > 0, f"rank {rank}: algbw {o['algbw_gbps']:.1f} GB/s")
    else:
        print(f"NOTE rank {rank}: {o['gpu_count']} NCCL kernels for {o['count']} calls: no algbw")
    comms.append(o["comm_id"])
if len(comms) == 2:
    check(comms[0] == comms[1] and comms[0] not in ("", "multiple"),
          f"both ranks name the same communicator ({comms[0]} / {comms[1]})")
print("nccl_payload_check: " + ("all passed" if failures == 0 else f"{failures} failed"))
sys.exit(1 if failures else 0)
PY
