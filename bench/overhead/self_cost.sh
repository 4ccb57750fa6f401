#!/usr/bin/env bash
# bench/overhead/self_cost.sh BUILD_DIR — sightline's own time per training
# step, measured inside the process (SIGHTLINE_SELF_COST=1,
# lib/collect/self_cost.h), next to the wall-clock step of the same rounds.
#
# For each SCRIPT:VARIANT of SELF_COST_SCRIPTS (default: the eager
# transformer, and memory.py's empty_cache and fixed loops), each round runs,
# in an order that rotates with the round:
#   plain         the script alone
#   floor-same    the floor subscriber with exactly sightline's records
#   records       sightline, the same records, no stacks        (self-cost on)
#   default       `sightline profile` as a user runs it          (self-cost on)
#   default-short the same with SELF_COST_SHORT steps instead of SELF_COST_LONG
# Self-cost per step = (default − default-short totals) / (LONG − SHORT): the
# difference leaves out start-up and warm-up, which both runs share.
# Prints one line per run ("step SCRIPT-VARIANT ROUND MODE MS") and per
# self-cost part ("cost SCRIPT-VARIANT ROUND MODE PART CALLS TOTAL_MS"), then
# a summary per workload: median step per mode, sightline's own time per step
# by part, and what is left of the default's added cost after it.
# SELF_COST_OP_ROUNDS (0): also the PyTorch op loop (torch_overhead.py,
# x.add_(1)) in that many rounds of: plain; nopy (sightline, Python stacks
# off: no launch callbacks); drv (stacks off, the launch callbacks of the
# driver-launch records on); py (the default: launch callbacks and the stack
# walk); lines "op ROUND MODE US_PER_OP" and "opcost ROUND MODE PART CALLS
# TOTAL_MS" — the walk's own cost per launch next to what each step up costs
# on the wall clock.
# SELF_COST_ROUNDS (2), SELF_COST_PIN ("taskset -c 2-9"), SELF_COST_LONG
# (260), SELF_COST_SHORT (60), SELF_COST_WARMUP (30), SELF_COST_OUT (a file for
# the raw lines).
set -u
B=$(cd "${1:?usage: self_cost.sh BUILD_DIR}" && pwd)
SL=$B/tools/sightline/sightline
FLOOR=$B/bench/overhead/libfloor_inject.so
EXAMPLES=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)
SCRIPTS=${SELF_COST_SCRIPTS:-lm_train.py:eager memory.py:empty_cache memory.py:fixed}
ROUNDS=${SELF_COST_ROUNDS:-2}
PIN=${SELF_COST_PIN:-taskset -c 2-9}
LONG=${SELF_COST_LONG:-260}
SHORT=${SELF_COST_SHORT:-60}
WARM=${SELF_COST_WARMUP:-30}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
R=$W/raw.txt
: >"$R"
# SELF_COST_MODES overrides the list; floor-same+X[+Y] runs the floor with
# SIGHTLINE_FLOOR_EXTRA=X,Y (floor_subscriber.cc: attributes, subscriber,
# flush, writer), e.g. "plain floor-same floor-same+writer records".
MODES=${SELF_COST_MODES:-plain floor-same records default default-short}
fail=0

cost_lines() {  # PREFIX OUTPUT: "PREFIX PART CALLS TOTAL_MS" per part, summed over processes
  # "sightline: self-cost [pid 812] api callbacks: 1234 calls, mean ..., total 0.510 ms"
  sed -n 's/^sightline: self-cost \[pid [0-9]*\] \(.*\): \([0-9]*\) calls, .*total \([0-9.]*\) ms$/\1|\2|\3/p' "$2" |
    awk -F'|' '{ gsub(/ /, "_", $1); if (!($1 in c)) order[n++] = $1; c[$1] += $2; t[$1] += $3 }
               END { for (i = 0; i < n; i++) printf "%s %d %.3f\n", order[i], c[order[i]], t[order[i]] }' |
    while read -r part calls total; do
      echo "$1 $part $calls $total" | tee -a "$R"
    done
}

one() {  # MODE ROUND SCRIPT:VARIANT
  local mode=$1 round=$2 script=${3%%:*} variant=${3#*:} o=$W/out steps=$LONG
  [ "$mode" = default-short ] && steps=$SHORT
  local cmd=(python3 "$EXAMPLES/$script" --variant "$variant" --steps "$steps" --warmup "$WARM")
  local tag=${script%.py}-$variant
  case $mode in
    plain) $PIN "${cmd[@]}" >"$o" 2>&1 ;;
    floor-same*)
      local extra=${mode#floor-same}
      extra=${extra#+}
      SIGHTLINE_FLOOR_EXTRA=${extra//+/,} SIGHTLINE_FLOOR_KINDS=same CUDA_INJECTION64_PATH=$FLOOR \
        $PIN "${cmd[@]}" >"$o" 2>&1
      grep -q 'floor subscriber: [1-9]' "$o" || { echo "FAIL: floor injection did not record"; tail -3 "$o"; fail=1; } ;;
    records)
      SIGHTLINE_SELF_COST=1 SIGHTLINE_TRACE=cuda,cuda-memory,nvtx,nccl SIGHTLINE_PYTHON_BACKTRACE=off \
        $PIN "$SL" profile -q -o "$W/t.sltrace" -- "${cmd[@]}" >"$o" 2>&1 ;;
    default | default-short)
      SIGHTLINE_SELF_COST=1 $PIN "$SL" profile -q -o "$W/t.sltrace" -- "${cmd[@]}" >"$o" 2>&1 ;;
    *) echo "FAIL: unknown mode $mode"; fail=1; return ;;
  esac
  rm -f "$W"/t*.sltrace
  local ms
  ms=$(grep -o 'SIGHTLINE_STEPS .*' "$o" | grep -o 'median_ms=[0-9.]*' | cut -d= -f2)
  [ -n "$ms" ] || { echo "FAIL: $mode $3 printed no step time"; tail -5 "$o"; fail=1; ms=nan; }
  echo "step $tag $round $mode $ms" | tee -a "$R"
  cost_lines "cost $tag $round $mode" "$o"
  grep '^sightline: self-cost' "$o" | sed 's/^/    /'
}

op_one() {  # MODE ROUND
  local o=$W/op.out env=(SIGHTLINE_SELF_COST=1)
  local cmd=(python3 "$B/bench/overhead/torch_overhead.py" --mode plain --ops 50000 --reps 3)
  case $1 in
    plain) $PIN "${cmd[@]}" >"$o" 2>&1 ;;
    nopy | drv | py)
      [ "$1" = nopy ] && env+=(SIGHTLINE_PYTHON_BACKTRACE=off)
      [ "$1" = drv ] && env+=(SIGHTLINE_PYTHON_BACKTRACE=off SIGHTLINE_DRIVER_LAUNCH_RECORDS=1)
      env "${env[@]}" $PIN "$SL" profile -q -o "$W/t.sltrace" -- "${cmd[@]}" >"$o" 2>&1 ;;
    *) echo "FAIL: unknown op-loop mode $1"; fail=1; return ;;
  esac
  rm -f "$W"/t*.sltrace
  local us
  us=$(grep -o 'median_us_per_op=[0-9.]*' "$o" | cut -d= -f2)
  [ -n "$us" ] || { echo "FAIL: op loop $1 printed no time"; tail -5 "$o"; fail=1; us=nan; }
  echo "op $2 $1 $us" | tee -a "$R"
  cost_lines "opcost $2 $1" "$o"
}

opmodes=(plain nopy drv py)
for r in $(seq 1 "${SELF_COST_OP_ROUNDS:-0}"); do
  for i in "${!opmodes[@]}"; do op_one "${opmodes[$(((i + r - 1) % 4))]}" "$r"; done
done

read -r -a modes <<<"$MODES"
for r in $(seq 1 "$ROUNDS"); do
  for sc in $SCRIPTS; do
    for i in "${!modes[@]}"; do  # the order rotates with the round
      one "${modes[$(((i + r - 1) % ${#modes[@]}))]}" "$r" "$sc"
    done
  done
done
[ -n "${SELF_COST_OUT:-}" ] && cp "$R" "$SELF_COST_OUT"

python3 - "$LONG" "$SHORT" "$R" <<'PY'
import statistics, sys
long_, short = int(sys.argv[1]), int(sys.argv[2])
steps, costs = {}, {}
for line in open(sys.argv[3]):
    f = line.split()
    if f[0] == "step" and f[4] != "nan":
        steps.setdefault(f[1], {}).setdefault(f[3], []).append(float(f[4]))
    elif f[0] == "cost":
        costs.setdefault(f[1], {}).setdefault((f[2], f[3]), {})[f[4]] = (int(f[5]), float(f[6]))
ops, opcost = {}, {}
for line in open(sys.argv[3]):
    f = line.split()
    if f[0] == "op" and f[3] != "nan":
        ops.setdefault(int(f[1]), {})[f[2]] = float(f[3])
    elif f[0] == "opcost" and f[2] == "py":
        opcost.setdefault(int(f[1]), {})[f[3]] = (int(f[4]), float(f[5]))
if ops:
    def paired(a, b):
        d = sorted(r[a] - r[b] for r in ops.values() if a in r and b in r)
        if not d:
            return "(no round has both)"
        return f"{statistics.median(d):+.3f} us (rounds " + ", ".join(f"{x:+.2f}" for x in d) + ")"
    print("== op loop (x.add_(1)), median us/op: " + ", ".join(
        f"{m} {statistics.median([r[m] for r in ops.values() if m in r]):.3f}"
        for m in ("plain", "nopy", "drv", "py") if any(m in r for r in ops.values())))
    print("   launch callbacks (drv - nopy): " + paired("drv", "nopy"))
    print("   the stack walk on the wall clock (py - drv): " + paired("py", "drv"))
    for part in sorted({p for r in opcost.values() for p in r}):
        v = [r[part][1] * 1e6 / r[part][0] for r in opcost.values() if part in r and r[part][0]]
        print(f"   py, inside sightline, {part}: {statistics.median(v):.0f} ns per call")
    per_launch = [r["api_callbacks"][1] * 1e3 / r["python_stacks"][0] for r in opcost.values()
                  if "api_callbacks" in r and r.get("python_stacks", (0,))[0]]
    if per_launch:
        print(f"   py, all of sightline's callbacks per launch (stack walk included): "
              f"{statistics.median(per_launch):.3f} us")
for tag in steps:
    s = steps[tag]
    med = {m: statistics.median(v) for m, v in s.items()}
    print(f"== {tag}: median ms/step " + ", ".join(f"{m} {v:.3f}" for m, v in med.items()))
    rounds = {}
    for line in open(sys.argv[3]):
        f = line.split()
        if f[0] == "step" and f[1] == tag and f[4] != "nan":
            rounds.setdefault(f[2], {})[f[3]] = float(f[4])
    for m in sorted(med):
        if m.startswith("floor-same+") or m == "records":
            d = sorted(r[m] - r["floor-same"] for r in rounds.values() if m in r and "floor-same" in r)
            if d:
                print(f"   {m} - floor-same: {statistics.median(d):+.3f} ms (rounds "
                      + ", ".join(f"{x:+.2f}" for x in d) + ")")
    per = {}
    for (rnd, mode), parts in costs.get(tag, {}).items():
        if mode != "default":
            continue
        if (rnd, "default-short") not in costs[tag]:
            continue  # no short run to difference against: start-up not removable
        short_parts = costs[tag][(rnd, "default-short")]
        for part, (calls, total) in parts.items():
            c0, t0 = short_parts.get(part, (0, 0.0))
            per.setdefault(part, []).append(((calls - c0) / (long_ - short),
                                             (total - t0) / (long_ - short)))
    for part, v in per.items():
        calls = statistics.median(x[0] for x in v)
        ms = statistics.median(x[1] for x in v)
        print(f"   sightline's own time per step, {part}: {ms * 1e3:.1f} us "
              f"({calls:.1f} calls, {ms * 1e6 / calls if calls else 0:.0f} ns each; rounds: "
              + ", ".join(f"{x[1] * 1e3:.1f}" for x in v) + " us)")
    if "api_callbacks" in per and {"plain", "floor-same", "default"} <= med.keys():
        own = statistics.median(x[1] for x in per["api_callbacks"]) + \
            statistics.median(x[1] for x in per.get("nvtx_callbacks", [(0, 0.0)]))
        added = med["default"] - med["plain"]
        floor = med["floor-same"] - med["plain"]
        print(f"   default adds {added:.3f} ms/step over plain; the floor {floor:.3f}; "
              f"sightline's callbacks {own:.3f}; left: {added - floor - own:+.3f} ms "
              f"(CUPTI's dispatch into the callbacks, the writer, contention)")
PY
exit $fail
