#!/usr/bin/env python3
"""bench/overhead/ab_split.py — in-process A/B rounds: what a part of the
CUPTI state costs, from steps run with it and without it in one process.

  ab_split.py LABEL SWITCH_LOG STEP_LOG [SWITCH_LOG STEP_LOG ...]

SWITCH_LOG: "ab T0 T1 S" lines (the floor subscriber's SIGHTLINE_FLOOR_AB_LOG:
CLOCK_MONOTONIC ns before and after a switch, S = 1 when the part is on
after it; the process starts with it on). STEP_LOG: "START_NS END_NS VALUE"
lines (examples/pytorch/common.py's SIGHTLINE_STEP_LOG: ms a step;
torch_overhead.py --chunk-log: µs an op). A step belongs to the state between
two switches when it starts at least AB_MARGIN_MS (default 1) after the
first ends and ends before the second begins; steps across a switch are left
out. Each stretch between switches with at least 3 steps gives the median of
its steps. Every stretch without the part whose neighbours both have it gives
one paired difference: the mean of the neighbours' medians minus its own
(a slow drift of the machine cancels). Pooled over the processes given, the
line printed is

  AB LABEL pairs=N on=X off=Y diff=D lo=L hi=H pct=P median=M

(medians of the on and off stretches; D the mean paired difference, L..H its
95 % bootstrap interval, P = D as a percentage of the off value; M the
median paired difference, for reference only). The mean, not the median:
the machine switches between speed regimes (a stretch's median jumps by
2-4 ms on the eager LM step, run AB), and with such noise the median of the
paired differences is biased (synthetic regimes in ab_split_test.py: -0.17 ms
at a cost of 0 and of 0.5 ms), while the mean of the contrasts is not (the regimes
cancel on average whatever their distribution). Runs AA and AB printed the
median as diff (2026-12-06). When the part
was off from the start (the first switch turns it on: SIGHTLINE_FLOOR_AB_START
=off), each process also gives

  AB_FIRST LABEL never=X on=Y later_off=Z

the median of the last AB_FIRST_STEPS (default 40) steps before the first
switch, of the stretch after it, and of the later stretches without the part:
later_off well above never means that switching the part off does not take
its cost away (CUPTI keeping state), and D then understates it. Between
processes on the H200 the same step moves by ±15 %; within one process, the
stretches a quarter of a second apart see the same machine.
"""
import os
import random
import statistics
import sys


def read_switches(switch_log):
    """The switches ("ab T0 T1 STATE") and the floor's logged flushes
    ("flush T0 T1") of one process."""
    switches, flushes = [], []
    for line in open(switch_log):
        f = line.split()
        if len(f) == 4 and f[0] == "ab":
            switches.append((int(f[1]), int(f[2]), int(f[3])))
        elif len(f) == 3 and f[0] == "flush":
            flushes.append((int(f[1]), int(f[2])))
    return switches, flushes


def bounds_of(switches):
    """Stretch k: from the end of switch k-1 (the process start for k = 0) to
    the start of switch k, in the state switch k-1 left (on for k = 0; off
    when the first switch turns the part on)."""
    bounds = [(-1, switches[0][0] if switches else 1 << 63, 1)]
    for k, (t0, t1, state) in enumerate(switches):
        end = switches[k + 1][0] if k + 1 < len(switches) else 1 << 63
        bounds.append((t1, end, state))
    if switches and switches[0][2] == 1:
        bounds[0] = (bounds[0][0], bounds[0][1], 0)  # off until the first switch
    return bounds


def flushes_by_state(switch_log):
    """(flushes in stretches with the part on, in stretches with it off):
    with a flush period that is a multiple of the switch period the flushes
    can all fall in one state, and the pairs then price them at the wrong
    density."""
    switches, flushes = read_switches(switch_log)
    counts = [0, 0]
    for t0, t1 in flushes:
        mid = (t0 + t1) // 2
        for lo, hi, state in bounds_of(switches):
            if lo <= mid < hi:
                counts[state] += 1
                break
    return counts[1], counts[0], len(flushes)


def stretches(switch_log, step_log, margin_ns):
    switches, _ = read_switches(switch_log)
    steps = []
    for line in open(step_log):
        f = line.split()
        if len(f) == 3:
            steps.append((int(f[0]), int(f[1]), float(f[2])))
    bounds = bounds_of(switches)
    out = []
    j = 0
    for lo, hi, state in bounds:
        vals = []
        while j < len(steps) and steps[j][0] < hi:
            s, e, v = steps[j]
            if s >= lo + margin_ns and e <= hi:
                vals.append(v)
            j += 1
        out.append((state, statistics.median(vals) if len(vals) >= 3 else None, vals))
    return out


def main():
    if len(sys.argv) < 4 or len(sys.argv) % 2 != 0:
        sys.exit(__doc__)
    label = sys.argv[1]
    margin_ns = int(float(os.environ.get("AB_MARGIN_MS", "1")) * 1e6)
    diffs, on, off = [], [], []
    flush_on = flush_off = flush_all = 0
    for i in range(2, len(sys.argv), 2):
        fo, ff, fa = flushes_by_state(sys.argv[i])
        flush_on, flush_off, flush_all = flush_on + fo, flush_off + ff, flush_all + fa
        st = stretches(sys.argv[i], sys.argv[i + 1], margin_ns)
        if len(st) > 2 and st[0][0] == 0 and st[1][0] == 1 and st[0][2] and st[1][1] is not None:
            last = st[0][2][-int(os.environ.get("AB_FIRST_STEPS", "40")):]
            later = [m for state, m, _ in st[2:] if state == 0 and m is not None]
            print(f"AB_FIRST {label} never={statistics.median(last):.4f} on={st[1][1]:.4f} "
                  f"later_off={statistics.median(later) if later else float('nan'):.4f}")
        for k, (state, med, _) in enumerate(st):
            if med is None:
                continue
            (on if state else off).append(med)
            if state == 0 and 0 < k < len(st) - 1:
                a, b = st[k - 1][:2], st[k + 1][:2]
                if a[0] == 1 and b[0] == 1 and a[1] is not None and b[1] is not None:
                    diffs.append((a[1] + b[1]) / 2 - med)
    if flush_all:
        print(f"AB_FLUSHES {label} in_on={flush_on} in_off={flush_off} logged={flush_all}")
    if not diffs:
        print(f"AB {label} pairs=0 (no stretch without the part between two with it: "
              "too few switches or steps)")
        return 1
    rng = random.Random(1)
    boots = sorted(statistics.mean(rng.choices(diffs, k=len(diffs))) for _ in range(2000))
    d = statistics.mean(diffs)
    off_med = statistics.median(off)
    print(f"AB {label} pairs={len(diffs)} on={statistics.median(on):.4f} off={off_med:.4f} "
          f"diff={d:+.4f} lo={boots[49]:+.4f} hi={boots[1949]:+.4f} "
          f"pct={100 * d / off_med:+.2f} median={statistics.median(diffs):+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
