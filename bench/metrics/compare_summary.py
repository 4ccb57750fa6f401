#!/usr/bin/env python3
"""Per-metric summary of pytorch_vs_ncu.py's DIR/compare.json files.

For each metric: configurations compared, how many within the tolerance
(the comparison's own `ok`), the median relative difference ours vs ncu and
the median absolute difference (ours - ncu, in the metric's unit; for
gpu__time_duration.sum that is ns a launch). Several DIRs: one block each,
so two runs of ours against one ncu can be read side by side.

  compare_summary.py DIR [DIR ...]
"""
import json
import os
import statistics
import sys


def summarize(path):
    rows = json.load(open(os.path.join(path, "compare.json")))["values"]
    by_metric = {}
    for r in rows:
        if r.get("ours") is None or r.get("ncu") is None:
            continue
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


def main(argv):
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
