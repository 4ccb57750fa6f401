#!/usr/bin/env python3
"""bench/metrics/pytorch_vs_ncu_test.py — pytorch_vs_ncu.py --compare-only on a
synthetic report and ncu CSV whose answer is known: one kernel launched with
grids (8, 128, 1) and (16, 64, 1) — the same 1024 blocks — and (2, 1, 1).
Each configuration must be compared with ncu's launches of that
configuration alone (before 2026-12-06 the harness keyed configurations by
the grid's product and merged the first two on ncu's side: the CNN's
batch-norm kernels read 22-33 % apart on counters of work). Also ncu's
kernel selection and launch window, for the top kernels and with
--ncu-all-kernels. Run by ctest (bench_pytorch_vs_ncu)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "_Z9bn_kernelPf"
INST = "smsp__inst_executed.sum"
TIME = "gpu__time_duration.sum"


def config(grid, inst, ns):
    return {"grid": grid, "block": [32, 16, 1], "metrics": {INST: inst, TIME: ns}}


def main():
    report = {
        "summary": {"metrics_coverage_pct": 100.0},
        "kernels": [{
            "name": NAME, "short_name": "bn_kernel", "class": "compute", "total_ns": 1000,
            "metrics": {INST: 0.0, TIME: 0.0},
            "metrics_by_config": [config([8, 128, 1], 1000.0, 5000.0),
                                  config([16, 64, 1], 700.0, 4000.0),
                                  config([2, 1, 1], 50.0, 2000.0)],
        }],
    }
    # ncu --csv --page raw: header, units, one row per launch.
    head = ['"ID"', '"Kernel Name"', '"Block Size"', '"Grid Size"', f'"{INST}"', f'"{TIME}"']
    rows = [",".join(head), '"","","","","inst","nsecond"']
    launches = [((8, 128, 1), 1000, 5000), ((16, 64, 1), 700, 4010), ((8, 128, 1), 1000, 5020),
                ((16, 64, 1), 700, 3990), ((2, 1, 1), 50, 2000)]
    for i, (g, inst, ns) in enumerate(launches):
        rows.append(f'"{i}","{NAME}","(32, 16, 1)","({g[0]}, {g[1]}, {g[2]})","{inst}","{ns}"')
    failures = []
    with tempfile.TemporaryDirectory() as d:
        json.dump(report, open(os.path.join(d, "ours.json"), "w"))
        open(os.path.join(d, "ncu.csv"), "w").write("==PROF== noise before the table\n" +
                                                     "\n".join(rows) + "\n")
        p = subprocess.run([sys.executable, os.path.join(HERE, "pytorch_vs_ncu.py"), "-", "-", "-",
                            "--out", d, "--compare-only"], capture_output=True, text=True)
        print(p.stdout)
        if p.returncode != 0:
            failures.append(f"exit {p.returncode} (every value agrees): {p.stderr[-800:]}")
        values = json.load(open(os.path.join(d, "compare.json")))["values"]
    by = {(v["grid"], v["metric"]): v for v in values}
    want = {("8x128x1", INST): (1000.0, 2), ("16x64x1", INST): (700.0, 2), (2, INST): (50.0, 1)}
    for key, (ncu, n) in want.items():
        v = by.get(key)
        if v is None:
            failures.append(f"no row for {key}: {sorted(by)}")
        elif v["ncu"] != ncu or v["ncu_launches"] != n or not v["ok"]:
            failures.append(f"{key}: {v}, expected ncu={ncu} over {n} launches, ok")
    if len(values) != 6:
        failures.append(f"{len(values)} rows, expected 6 (3 configurations x 2 metrics)")
    # ncu's selection: the top kernels by regex, or every kernel of the step.
    sys.path.insert(0, HERE)
    import pytorch_vs_ncu  # noqa: E402
    rep = {"summary": {"steps": {"count": 4}},
           "kernels": [{"name": NAME, "count": 8}, {"name": "_Z5otherv", "count": 32}]}
    sel, per, skip, count = pytorch_vs_ncu.ncu_selection(rep, rep["kernels"][:1], 10, 3, False)
    if sel != ["-k", "regex:^(_Z9bn_kernelPf)$"] or (per, skip, count) != (2, 24, 6):
        failures.append(f"top-kernel selection: {sel} {per} {skip} {count}")
    sel, per, skip, count = pytorch_vs_ncu.ncu_selection(rep, rep["kernels"][:1], 10, 3, True)
    if sel != [] or (per, skip, count) != (10, 120, 30):
        failures.append(f"every-kernel selection: {sel} {per} {skip} {count}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
