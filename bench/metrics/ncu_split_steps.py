#!/usr/bin/env python3
"""Split one pytorch_vs_ncu.py run made with --ncu-steps N into N runs of one
step each, so ncu can be compared with itself step against step.

  ncu_split_steps.py DIR N

DIR holds ours.json and ncu.csv (`ncu --csv --page raw`, one row per
launch, in launch order) of a run whose ncu profiled N consecutive steady
steps of the same launches. Writes DIR/step1 .. DIR/stepN, each with the
same ours.json and an ncu.csv of that step's launches only (the CSV's rows
split into N equal consecutive parts; the preamble, header and units rows
are kept), then run

  pytorch_vs_ncu.py - - - --out DIR/stepK --compare-only
  compare_summary.py --between DIR/step1 DIR/step2

The ncu columns of --between are then ncu's step-to-step repeatability per
configuration (its own launches of the same kernels one step apart), and
each step's compare.json judges ours against one step of ncu, as the
single-step runs did. Exit 1 when the rows do not split into N equal parts
(the steps differ) or a part holds other (kernel, grid, block) counts than
the first.
"""
import csv
import io
import json
import os
import shutil
import sys


def split(text, n):
    """(preamble + header + units lines, [rows of step 1, ..., rows of step n])
    or raises ValueError. Rows are the CSV's launch rows as parsed lists."""
    start = text.find('"ID"')
    if start < 0:
        raise ValueError("no ncu raw table (no \"ID\" header)")
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units = rows[0], rows[1] if len(rows) > 1 else []
    col = {h: i for i, h in enumerate(header)}
    launches = [r for r in rows[2:] if len(r) == len(header) and r[col["ID"]].strip()]
    if n < 1 or len(launches) % n:
        raise ValueError(f"{len(launches)} launches do not split into {n} equal steps")
    per = len(launches) // n
    parts = [launches[i * per:(i + 1) * per] for i in range(n)]

    def counts(part):
        out = {}
        for r in part:
            key = (r[col["Kernel Name"]], r[col.get("Grid Size", 0)], r[col.get("Block Size", 0)])
            out[key] = out.get(key, 0) + 1
        return out
    first = counts(parts[0])
    for i, p in enumerate(parts[1:], start=2):
        if counts(p) != first:
            raise ValueError(f"step {i} launches other configurations than step 1")
    return text[:start], header, units, parts


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    d, n = sys.argv[1], int(sys.argv[2])
    text = open(os.path.join(d, "ncu.csv")).read()
    try:
        pre, header, units, parts = split(text, n)
    except ValueError as e:
        print(f"ncu_split_steps: {os.path.join(d, 'ncu.csv')}: {e}", file=sys.stderr)
        return 1
    for i, part in enumerate(parts, start=1):
        out = os.path.join(d, f"step{i}")
        os.makedirs(out, exist_ok=True)
        shutil.copyfile(os.path.join(d, "ours.json"), os.path.join(out, "ours.json"))
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(header)
        w.writerow(units)
        w.writerows(part)
        open(os.path.join(out, "ncu.csv"), "w").write(pre + buf.getvalue())
        prev = os.path.join(d, "compare.json")
        if os.path.exists(prev):  # the wall times, for --compare-only's summary
            json.dump({"summary": json.load(open(prev)).get("summary", {}), "values": []},
                      open(os.path.join(out, "compare.json"), "w"))
        print(f"{out}: {len(part)} launches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
