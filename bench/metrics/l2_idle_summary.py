#!/usr/bin/env python3
"""Summary of an l2_idle_probe run (bench/metrics/l2_idle_probe.sh).

Per variant (dirty: the kernel before the victim writes DIRTY_MB; clean: it
only reads) and per gap index (the victim's grid minus 2048), the victim's
mean DRAM bytes read and written, duration and warps active as

  ncu -k   ncu --replay-mode application -k regex:victim (the writer unprofiled)
  ncu all  the same without -k (ncu also measures the kernel before)
  ours     sightline profile --metrics-replay sequence (kernels_by_config)

  l2_idle_summary.py DIR
"""
import csv
import io
import json
import os
import statistics
import sys

METRICS = [("dram__bytes_read.sum", "read B", 1), ("dram__bytes_write.sum", "write B", 1),
           ("gpu__time_duration.sum", "ns", 1),
           ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps %", 1)]


def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def ncu_by_gap(path):
    """{gap index: {metric: [values per victim launch]}} from ncu --csv --page raw."""
    if not os.path.exists(path):
        return {}
    text = open(path, errors="replace").read()
    start = text.find('"ID"')
    if start < 0:
        return {}
    rows = list(csv.reader(io.StringIO(text[start:])))
    col = {h: i for i, h in enumerate(rows[0])}
    out = {}
    for row in rows[2:]:
        if len(row) != len(rows[0]) or "victim" not in row[col["Kernel Name"]]:
            continue
        grid = row[col["Grid Size"]].strip("() ").split(",")
        gap = int(grid[0]) - 2048
        for m, _, _ in METRICS:
            if m in col and num(row[col[m]]) is not None:
                out.setdefault(gap, {}).setdefault(m, []).append(num(row[col[m]]))
    return out


def ours_by_gap(path):
    """{gap index: ({metric: mean}, {metric: [min, max]}, samples)} from analyze --format json."""
    if not os.path.exists(path):
        return {}
    out = {}
    for k in json.load(open(path)).get("kernels", []):
        if "victim" not in k.get("name", ""):
            continue
        for c in k.get("metrics_by_config") or []:
            out[c["grid"][0] - 2048] = (c.get("metrics", {}), c.get("metrics_range", {}),
                                        c.get("metric_samples", 0))
    return out


def fmt(v):
    return "-" if v is None else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    d = sys.argv[1]
    for variant in ("dirty", "clean"):
        k = ncu_by_gap(os.path.join(d, f"l2_ncuk_{variant}.csv"))
        a = ncu_by_gap(os.path.join(d, f"l2_ncuall_{variant}.csv"))
        o = ours_by_gap(os.path.join(d, f"l2_ours_{variant}.json"))
        gaps = sorted(set(k) | set(a) | set(o))
        if not gaps:
            print(f"## {variant}: no victim rows (missing or empty files)")
            continue
        print(f"## {variant}: victim's mean per gap index (0 none, 1 sync, 2.. sync + sleep)")
        print(f"{'gap':>3} {'metric':<8} {'ncu -k':>14} {'ncu all':>14} {'ours':>14}  ours [min, max] (n)")
        for g in gaps:
            for m, label, _ in METRICS:
                kv = statistics.mean(k[g][m]) if g in k and m in k[g] else None
                av = statistics.mean(a[g][m]) if g in a and m in a[g] else None
                om = o.get(g, ({}, {}, 0))
                ov = om[0].get(m)
                rng = om[1].get(m)
                r = f"[{fmt(rng[0])}, {fmt(rng[1])}] ({om[2]})" if rng else ""
                print(f"{g:>3} {label:<8} {fmt(kv):>14} {fmt(av):>14} {fmt(ov):>14}  {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
