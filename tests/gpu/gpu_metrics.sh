#!/usr/bin/env bash
# PM sampling (`sightline profile --gpu-metrics`, issue 14 item 4) on the H200:
#  - naive_matmul (CUDA C++) at 10 kHz: the samples line up with the trace's
#    own activity (Chrome export): samples inside a MatmulNaive kernel read
#    SM active >= 80 %, samples inside the host-to-device copies read SM
#    active <= 10 % and PCIe traffic > 1 GB/s; the kernel's report row is
#    resolved and busy; 100 us +-5 % measured; >= 95 % of the window covered;
#    no sample missing; the trace complete with 0 records lost.
#  - the corpus's eager transformer (examples/pytorch/lm_train.py, bf16,
#    NVTX steps) at the default 1 kHz (1 ms +-5 %): one row per steady-state
#    step, each with SM active in [0, 100] %, tensor pipe active in some
#    step; the NVTX range train_step has a row; percentages of every
#    quantity in [0, 100]; no sample missing in the window.
#  - the same with --capture-range nvtx:train_step (skip 10, 5 windows):
#    samples only inside the windows, covering >= 90 % of them.
#  - the CNN with --gpu-metrics-frequency 2000: 500 us samples.
#  - a Python child forked after CUDA started exits normally (its exit
#    handlers must leave the parent's sampler alone).
# SIGHTLINE_TEST_OUT keeps the traces (tests/data/metrics/*_gm_h200.sltrace).
source "$(dirname "$0")/lib.sh"
E=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)
have_torch=1
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || have_torch=0

check() {  # name trace [python check args...]
  local name=$1 t=$2
  "$SL" info "$t" | grep -E '^(status|losses)'
  "$SL" analyze "$t" --format json >"$WORK/$name.json" || { echo "FAIL analyze $name"; fail=1; return; }
  "$SL" analyze "$t" | sed -n '/^GPU metrics/,/^$/p' | head -40
  "$SL" export "$t" --format chrome -o "$WORK/$name.chrome.json" >/dev/null || { echo "FAIL export $name"; fail=1; return; }
  python3 - "$name" "$WORK/$name.json" "$WORK/$name.chrome.json" "$WORK/$name.err" <<'PY' || fail=1
import bisect, json, sys
name, report = sys.argv[1], json.load(open(sys.argv[2]))
chrome, err = json.load(open(sys.argv[3])), open(sys.argv[4]).read()
ev = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
ok = True
def num(x, default=-1.0):  # JSON null (no sample) as `default`
    return default if x is None else x
def check(cond, what):
    global ok
    print(("  ok   " if cond else "  FAIL ") + what)
    ok &= bool(cond)
t = report["traces"][0]
check(t["complete"], "trace complete")
g = report["gpu_metrics"]
check(len(g) == 1, f"{len(g)} sampled devices")
if not g:
    sys.exit(1)
g = g[0]
m = {s["key"]: s for s in g["metrics"]}
print("  metrics: " + ", ".join(f"{k} mean {num(s['mean']):.3g}" for k, s in m.items()))
print(f"  samples {g['samples']} in window of {g['samples_total']}, missing {g['samples_missing']}, "
      f"interval {g['interval_ns']:.0f} ns (asked {g['interval_asked_ns']}), coverage {g['coverage_pct']:.1f} %")
for k in ("sm_active", "tensor_active", "dram_read", "dram_write"):
    check(k in m, f"{k} sampled")
check(any(k.startswith("pcie") for k in m), "PCIe sampled")
for k, s in m.items():
    if s["unit"] == "%":
        check(-0.5 <= num(s["p50"]) <= 100.5 and num(s["max"]) <= 100.5,
              f"{k} within [0, 100] % (max {num(s['max']):.1f})")
# Gaps in the sample stream: the analysed window (steady state, or the
# capture windows) has none; the whole run's count is printed (the start-up
# gap while CUDA creates its context is one).
check(g["samples_missing_in_window"] == 0,
      f"{g['samples_missing_in_window']} samples missing in the window "
      f"({g['samples_missing']} in the whole trace of {g['samples_total']})")
check("GPU metrics on device 0" in err, "set-up line")
ctr = {}
for e in ev:
    if e.get("ph") == "C" and "(device 0), " in e.get("name", "") and "value" in e.get("args", {}):
        ctr.setdefault(e["name"].split(" (device")[0] + e["name"].split(",")[-1], []).append((e["ts"], e["args"]["value"]))
for v in ctr.values():
    v.sort()
def inside(series, spans):  # values of samples wholly inside one of the spans (us)
    out = []
    starts = [s[0] for s in spans]
    for i, (ts, val) in enumerate(series[:-1]):
        end = series[i + 1][0]
        j = bisect.bisect_right(starts, ts) - 1
        if j >= 0 and spans[j][0] <= ts and end <= spans[j][1]:
            out.append(val)
    return out
kernels = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X")
copies = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "memcpy" and e.get("ph") == "X" and "HtoD" in e.get("name", ""))
sm = ctr.get("SM active %", [])
check(len(sm) >= g["samples"], f"{len(sm)} SM-active counter values in the export")
if name == "matmul":
    check(abs(g["interval_ns"] - 100000) <= 5000, f"interval {g['interval_ns']:.0f} ns")
    check(g["coverage_pct"] >= 95, f"coverage {g['coverage_pct']:.1f} %")
    check(g["samples_missing"] == 0, "no sample missing")
    check(t["lost_records"] == 0, f"{t['lost_records']} records lost")
    mm = [(a, b) for a, b, n in kernels if "MatmulNaive" in n]
    in_k = inside(sm, mm)
    check(len(in_k) >= 100 and sum(v >= 80 for v in in_k) >= 0.95 * len(in_k),
          f"{len(in_k)} samples inside MatmulNaive: {sum(v >= 80 for v in in_k)} at >= 80 % SM active")
    in_c = inside(sm, copies)
    pcie = [c for k, c in ctr.items() if k.startswith("PCIe read") or k.startswith("PCIe write")]
    in_cp = [max(vals) for vals in zip(*[inside(c, copies) for c in pcie])] if pcie else []
    check(len(in_c) >= 10 and all(v <= 10 for v in in_c),
          f"{len(in_c)} samples inside HtoD copies: SM active max {max(in_c, default=-1):.1f} %")
    med = sorted(in_cp)[len(in_cp) // 2] if in_cp else -1
    # Pageable copies are staged through a host buffer: PCIe is not busy in
    # every sample, but in most.
    check(len(in_cp) >= 10 and med > 1, f"PCIe inside HtoD copies: median {med:.2f} GB/s, "
          f"{sum(v > 1 for v in in_cp)} of {len(in_cp)} samples above 1 GB/s")
    rows = [k for k in g["kernels"] if "MatmulNaive" in k["name"]]
    check(rows and rows[0]["resolved"] and num(rows[0]["values"].get("sm_active")) >= 80,
          f"MatmulNaive row: {rows[0]['values'] if rows else None}")
if name in ("lm", "lm_cap"):
    check(abs(g["interval_ns"] - 1e6) <= 5e4, f"interval {g['interval_ns']:.0f} ns at the default 1 kHz")
    steps = g["steps"]
    want = report["summary"]["steps"]["count"] if name == "lm" else None
    if want is not None:
        check(len(steps) == want, f"{len(steps)} step rows, {want} steady-state steps")
    check(steps and all(0 <= num(s["values"].get("sm_active")) <= 100.5 for s in steps),
          "every step has SM active in [0, 100] %")
    check(max((num(s["values"].get("tensor_active"), 0) for s in steps), default=0) > 0,
          "tensor pipe active in some step (bf16 GEMMs)")
    check(any(r["name"] == "train_step" for r in g["ranges"]), "NVTX range train_step has a row")
if name == "lm_cap":
    wins = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "capture" and e.get("ph") == "X"]
    check(len(wins) == 5, f"{len(wins)} capture windows")
    iv = g["interval_ns"] / 1e3  # us; a kept sample overlaps a window
    outside = [ts for ts, _ in sm if not any(ts < b and ts + 1.01 * iv > a for a, b in wins)]
    check(not outside, f"{len(outside)} samples outside the windows")
    check(g["coverage_pct"] >= 90, f"coverage of the windows {g['coverage_pct']:.1f} %")
if name == "cnn":
    check(abs(g["interval_ns"] - 500000) <= 25000, f"interval {g['interval_ns']:.0f} ns at 2 kHz")
    check(g["coverage_pct"] >= 95, f"coverage {g['coverage_pct']:.1f} %")
print(("PASS " if ok else "FAIL ") + name)
sys.exit(0 if ok else 1)
PY
}

t=$WORK/matmul_gm_h200.sltrace
"$SL" profile --gpu-metrics --gpu-metrics-frequency 10000 -o "$t" -- "$EX/naive_matmul" >"$WORK/matmul.out" 2>"$WORK/matmul.err" \
  && check matmul "$t" || { echo "FAIL run matmul"; tail -5 "$WORK/matmul.err"; fail=1; }
if [ "$have_torch" = 1 ]; then
  run() {  # name trace script variant steps warmup [profile options...]
    local name=$1 t=$2 script=$3 variant=$4 steps=$5 warmup=$6
    shift 6
    (cd "$E" && "$SL" profile -o "$t" --gpu-metrics "$@" -- \
      python3 "$script" --variant "$variant" --nvtx --steps "$steps" --warmup "$warmup") \
      >"$WORK/$name.out" 2>"$WORK/$name.err" && check "$name" "$t" \
      || { echo "FAIL run $name"; tail -5 "$WORK/$name.err"; fail=1; }
  }
  # A child forked after CUDA started exits through exit() (atexit handlers
  # run): it must not touch the parent's sampler (no thread to join there).
  cat >"$WORK/fork.py" <<'PY'
import os, sys, torch
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
pid = os.fork()
if pid == 0:
    sys.exit(3)
_, status = os.waitpid(pid, 0)
print(f"FORK_CHILD exit={os.waitstatus_to_exitcode(status)}", flush=True)
PY
  if timeout 120 "$SL" profile --gpu-metrics -o "$WORK/fork.sltrace" -- python3 "$WORK/fork.py" \
      >"$WORK/fork.out" 2>"$WORK/fork.err" && grep -q "FORK_CHILD exit=3" "$WORK/fork.out"; then
    echo "  ok   a forked child exits normally (exit 3 seen by the parent)"
  else
    echo "  FAIL forked child: $(cat "$WORK/fork.out") $(tail -3 "$WORK/fork.err")"; fail=1
  fi
  run lm "$WORK/lm_gm_h200.sltrace" lm_train.py eager 40 10
  run lm_cap "$WORK/lm_cap_gm_h200.sltrace" lm_train.py eager 40 10 \
    --capture-range nvtx:train_step --capture-skip 10 --capture-count 5
  run cnn "$WORK/cnn_gm_h200.sltrace" cnn_train.py fixed 30 6 --gpu-metrics-frequency 2000
else
  echo "no PyTorch with CUDA: the PyTorch part is skipped"
fi
[ "$fail" = 0 ] && echo PASS || echo FAIL
exit "$fail"
