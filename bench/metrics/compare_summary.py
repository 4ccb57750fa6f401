#!/usr/bin/env python3
"""Per-metric summary of pytorch_vs_ncu.py's DIR/compare.json files.

For each metric: configurations compared, how many within the tolerance
(the comparison's own `ok`), the median relative difference ours vs ncu and
the median absolute difference (ours - ncu, in the metric's unit; for
gpu__time_duration.sum that is ns a launch). Several DIRs: one block each,
so two runs of ours against one ncu can be read side by side.

  compare_summary.py DIR [DIR ...]
  compare_summary.py --between DIR_A DIR_B
  compare_summary.py --by-size BYTES DIR
  compare_summary.py --per-kernel DIR [DIR ...]
  compare_summary.py --per-kernel-ncu DIR_A DIR_B

--between: two runs over the same kernels (e.g. a 7-metric set and the
full set, or one ours against ncu's kernel and application replay): per
metric both have, the median change B/A of ours and of ncu's values over
the configurations both measured — whether each side's values move with
the metric set or the replay mode — and, for ncu, the median absolute
change and how many configurations moved by at most 2 %.

--by-size: the byte metrics (dram__bytes*) split at BYTES of ncu's value:
small transfers are dominated by what earlier kernels left in L2.

--per-kernel: each kernel (name) over all its configurations, the way a
per-kernel summary (nsys, HTA) reads it: a counter, cycle or duration is
the mean per launch over every launch of the kernel (each configuration's
mean weighted by its launches, the same count on both sides); a
percentage or ratio is weighted by launches times that side's own
duration (time-weighted utilisation). Judged as the configurations are
(within 2 %, or 0.5 points for percentages both under 5 %).

--per-kernel-ncu: the same for ncu against itself: DIR_A's ncu values in
place of ours, against DIR_B's (e.g. two steps of one run split by
ncu_split_steps.py): whether ncu repeats its own per-kernel values.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "gpu_metrics"))
from compare_ncu import agrees  # noqa: E402

TIME = "gpu__time_duration.sum"


def compared_rows(path):
    """DIR/compare.json's values that both sides measured."""
    rows = json.load(open(os.path.join(path, "compare.json")))["values"]
    return [r for r in rows if r.get("ours") is not None and r.get("ncu") is not None]


def summarize(path):
    by_metric = {}
    for r in compared_rows(path):
        by_metric.setdefault(r["metric"], []).append(r)
    out = []
    for metric in sorted(by_metric):
        rs = by_metric[metric]
        rel = [r["rel_pct"] for r in rs if r.get("rel_pct") is not None]
        diff = [r["ours"] - r["ncu"] for r in rs]
        ok = sum(1 for r in rs if r.get("ok"))
        out.append((metric, len(rs), ok,
                    statistics.median(rel) if rel else float("nan"),
                    statistics.median(diff) if diff else float("nan")))
    return out


def by_config(path):
    return {(r["metric"], r["kernel"], r["grid"], r["block"]): r for r in compared_rows(path)}


def between(a_dir, b_dir):
    a, b = by_config(a_dir), by_config(b_dir)
    per_metric = {}
    for key, ra in a.items():
        rb = b.get(key)
        if rb is None:
            continue
        m = per_metric.setdefault(key[0], ([], []))
        if ra["ours"]:
            m[0].append(rb["ours"] / ra["ours"] - 1)
        if ra["ncu"]:
            m[1].append(rb["ncu"] / ra["ncu"] - 1)
    print(f"## {b_dir} / {a_dir}")
    print(f"{'metric':60s} {'n':>4s} {'ours B/A %':>11s} {'ncu B/A %':>11s} "
          f"{'ncu |B/A| %':>12s} {'ncu within 2 %':>15s}")
    for metric in sorted(per_metric):
        ours, ncu = per_metric[metric]
        med = lambda v: 100 * statistics.median(v) if v else float("nan")
        absolute = [abs(x) for x in ncu]
        within = sum(1 for x in absolute if x <= 0.02)
        print(f"{metric:60s} {max(len(ours), len(ncu)):4d} {med(ours):+11.2f} {med(ncu):+11.2f} "
              f"{med(absolute):12.2f} {within:9d}/{len(ncu):<5d}")


def by_size(path, threshold):
    """Byte metrics split at `threshold` (ncu's value): within the
    tolerance, and the median relative difference, on each side."""
    rows = compared_rows(path)
    print(f"## {path}: byte metrics split at {threshold:g} bytes (ncu's value)")
    print(f"{'metric':40s} {'side':>6s} {'n':>4s} {'ok':>4s} {'median rel %':>13s}")
    metrics = sorted({r["metric"] for r in rows if "bytes" in r["metric"]})
    for metric in metrics:
        for label, keep in ((">=", lambda v: v >= threshold), ("<", lambda v: v < threshold)):
            rs = [r for r in rows if r["metric"] == metric and keep(r["ncu"])]
            if not rs:
                continue
            rel = [r["rel_pct"] for r in rs if r.get("rel_pct") is not None]
            ok = sum(1 for r in rs if r.get("ok"))
            med = statistics.median(rel) if rel else float("nan")
            print(f"{metric:40s} {label:>6s} {len(rs):4d} {ok:4d} {med:13.2f}")


def is_rate(metric):
    """Percentages and ratios: averaged over time, not over launches."""
    return "pct" in metric or metric.endswith(".ratio")


def ncu_against_ncu_rows(a_dir, b_dir):
    """B's rows with A's ncu value as "ours", for the configurations both hold."""
    a = by_config(a_dir)
    out = []
    for r in compared_rows(b_dir):
        ra = a.get((r["metric"], r["kernel"], r["grid"], r["block"]))
        if ra is not None:
            out.append(dict(r, ours=ra["ncu"]))
    return out


def per_kernel_values(rows):
    """{kernel: {metric: (ours, ncu, configurations, launches)}}, each
    kernel's configurations (compare.json rows) aggregated as the docstring
    says."""
    dur = {(r["kernel"], r["grid"], r["block"]): r for r in rows if r["metric"] == TIME}
    acc = {}
    for r in rows:
        cfg = (r["kernel"], r["grid"], r["block"])
        n = r.get("ncu_launches") or 1
        if is_rate(r["metric"]):
            d = dur.get(cfg)
            if d is None:
                continue
            w_ours, w_ncu = n * d["ours"], n * d["ncu"]
        else:
            w_ours = w_ncu = n
        a = acc.setdefault(r["kernel"], {}).setdefault(r["metric"], [0.0, 0.0, 0.0, 0.0, 0, 0])
        a[0] += w_ours * r["ours"]
        a[1] += w_ours
        a[2] += w_ncu * r["ncu"]
        a[3] += w_ncu
        a[4] += 1
        a[5] += n
    out = {}
    for kernel, metrics in acc.items():
        for metric, (so, wo, sn, wn, c, n) in metrics.items():
            if wo > 0 and wn > 0:
                out.setdefault(kernel, {})[metric] = (so / wo, sn / wn, c, n)
    return out


def per_kernel(label, rows, tol=2.0, near_zero=0.5):
    values = per_kernel_values(rows)
    print(f"## {label}: per kernel, all configurations aggregated")
    totals = {}
    for kernel in sorted(values):
        metrics = values[kernel]
        any_m = next(iter(metrics.values()))
        short = kernel if len(kernel) < 70 else kernel[:67] + "..."
        print(f"# {short}: {any_m[2]} configurations, {any_m[3]} launches")
        for metric in sorted(metrics):
            ours, ncu, _, _ = metrics[metric]
            ok, rel = agrees(metric, ours, ncu, "", tol, near_zero)
            t = totals.setdefault(metric, [0, 0, []])
            t[0] += 1
            t[1] += ok
            t[2].append(rel)
            print(f"  {'ok ' if ok else 'BAD'} {metric:62s} ours={ours:14.4f} ncu={ncu:14.4f} "
                  f"rel={rel:7.3f}%")
    print(f"{'metric':60s} {'kernels':>8s} {'ok':>4s} {'median rel %':>13s} {'max rel %':>10s}")
    for metric in sorted(totals):
        n, ok, rel = totals[metric]
        print(f"{metric:60s} {n:8d} {ok:4d} {statistics.median(rel):13.2f} {max(rel):10.2f}")


def main(argv):
    if len(argv) == 4 and argv[1] == "--per-kernel-ncu":
        try:
            per_kernel(f"ncu {argv[2]} (as ours) vs ncu {argv[3]}", ncu_against_ncu_rows(argv[2], argv[3]))
        except (OSError, ValueError, KeyError, StopIteration) as e:
            print(f"cannot read compare.json: {e}", file=sys.stderr)
            return 1
        return 0
    if len(argv) >= 3 and argv[1] == "--per-kernel":
        for d in argv[2:]:
            try:
                per_kernel(d, compared_rows(d))
            except (OSError, ValueError, KeyError, StopIteration) as e:
                print(f"{d}: cannot read compare.json: {e}", file=sys.stderr)
                return 1
        return 0
    if len(argv) == 4 and argv[1] == "--by-size":
        try:
            by_size(argv[3], float(argv[2]))
        except (OSError, ValueError, KeyError) as e:
            print(f"cannot read compare.json: {e}", file=sys.stderr)
            return 1
        return 0
    if len(argv) == 4 and argv[1] == "--between":
        try:
            between(argv[2], argv[3])
        except (OSError, ValueError, KeyError) as e:
            print(f"cannot read compare.json: {e}", file=sys.stderr)
            return 1
        return 0
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for d in argv[1:]:
        try:
            lines = summarize(d)
        except (OSError, ValueError, KeyError) as e:
            print(f"{d}: cannot read compare.json: {e}", file=sys.stderr)
            return 1
        print(f"## {d}")
        print(f"{'metric':60s} {'n':>4s} {'ok':>4s} {'median rel %':>13s} {'median ours-ncu':>16s}")
        for metric, n, ok, rel, diff in lines:
            print(f"{metric:60s} {n:4d} {ok:4d} {rel:13.2f} {diff:16.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
