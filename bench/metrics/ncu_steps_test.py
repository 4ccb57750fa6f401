#!/usr/bin/env python3
"""bench/metrics/ncu_steps_test.py — ncu_split_steps.py and
compare_summary.py --per-kernel on synthetic input whose answer is known.

ncu's CSV holds two steps of one kernel launched with grids 4 and 8 (two
launches of grid 4 a step, one of grid 8). Split into two steps, each step's
compare.json must hold that step's launches only; ncu's step 2 reads 10 %
more instructions on grid 8, which --between must show as ncu's change.
Per kernel, a counter is the mean per launch over every launch and a
percentage the duration-weighted mean. A CSV whose launches do not split
into equal steps is refused, naming the file. Run by ctest
(bench_ncu_steps)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "_Z4workPf"
INST = "smsp__inst_executed.sum"
TIME = "gpu__time_duration.sum"
PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"


def ncu_csv(launches):
    head = ['"ID"', '"Kernel Name"', '"Block Size"', '"Grid Size"', f'"{INST}"', f'"{TIME}"', f'"{PCT}"']
    rows = ["==PROF== noise", ",".join(head), '"","","","","inst","nsecond","%"']
    for i, (grid, inst, ns, pct) in enumerate(launches):
        rows.append(f'"{i}","{NAME}","(128, 1, 1)","({grid}, 1, 1)","{inst}","{ns}","{pct}"')
    return "\n".join(rows) + "\n"


def run(args):
    return subprocess.run([sys.executable] + args, capture_output=True, text=True)


def main():
    failures = []
    report = {"summary": {"metrics_coverage_pct": 100.0}, "kernels": [{
        "name": NAME, "short_name": "work", "class": "compute", "total_ns": 1000,
        "metrics": {INST: 0.0, TIME: 0.0, PCT: 0.0},
        "metrics_by_config": [
            {"grid": [4, 1, 1], "block": [128, 1, 1], "metrics": {INST: 100.0, TIME: 1000.0, PCT: 10.0}},
            {"grid": [8, 1, 1], "block": [128, 1, 1], "metrics": {INST: 200.0, TIME: 3000.0, PCT: 50.0}}]}]}
    step1 = [(4, 100, 1000, 10.0), (8, 200, 3000, 50.0), (4, 100, 1000, 10.0)]
    step2 = [(4, 100, 1000, 10.0), (8, 220, 3000, 50.0), (4, 100, 1000, 10.0)]
    with tempfile.TemporaryDirectory() as d:
        json.dump(report, open(os.path.join(d, "ours.json"), "w"))
        open(os.path.join(d, "ncu.csv"), "w").write(ncu_csv(step1 + step2))
        p = run([os.path.join(HERE, "ncu_split_steps.py"), d, "2"])
        if p.returncode != 0:
            failures.append(f"split exited {p.returncode}: {p.stderr}")
        for k in (1, 2):
            s = os.path.join(d, f"step{k}")
            q = run([os.path.join(HERE, "pytorch_vs_ncu.py"), "-", "-", "-", "--out", s, "--compare-only"])
            values = json.load(open(os.path.join(s, "compare.json")))["values"]
            by = {(v["grid"], v["metric"]): v for v in values}
            want = {(4, INST): (100.0, 2), (8, INST): (200.0 if k == 1 else 220.0, 1)}
            for key, (ncu, n) in want.items():
                v = by.get(key)
                if v is None or v["ncu"] != ncu or v["ncu_launches"] != n:
                    failures.append(f"step{k} {key}: {v}, expected ncu={ncu} over {n} launches")
            if k == 1 and q.returncode != 0:
                failures.append(f"step1 compare exited {q.returncode} (every value agrees)")
        b = run([os.path.join(HERE, "compare_summary.py"), "--between",
                 os.path.join(d, "step1"), os.path.join(d, "step2")])
        line = [l for l in b.stdout.splitlines() if l.startswith(INST)]
        # ncu's change on grid 8 is +10 %, on grid 4 none: median +5 %, 1 of 2 within 2 %.
        if not line or "+5.00" not in line[0] or "1/2" not in line[0]:
            failures.append(f"--between: {line or b.stdout}")
        pk = run([os.path.join(HERE, "compare_summary.py"), "--per-kernel", os.path.join(d, "step1")])
        rows = {l.split()[1]: l for l in pk.stdout.splitlines() if l.startswith("  ok") or l.startswith("  BAD")}
        # Instructions: (2 x 100 + 1 x 200) / 3 launches; throughput weighted by
        # launches x duration: (2 x 1000 x 10 + 3000 x 50) / (2 x 1000 + 3000) = 34.
        expect = {INST: "ours=      133.3333 ncu=      133.3333", PCT: "ours=       34.0000 ncu=       34.0000"}
        for metric, text in expect.items():
            if metric not in rows or text not in rows[metric] or not rows[metric].startswith("  ok"):
                failures.append(f"--per-kernel {metric}: {rows.get(metric)}; expected {text}")
        if "2 configurations, 3 launches" not in pk.stdout:
            failures.append(f"--per-kernel header: {pk.stdout[:300]}")
        # ncu against itself per kernel: instructions (2 x 100 + 200) / 3 in
        # step 1, (2 x 100 + 220) / 3 in step 2: +5 %, outside 2 %.
        pn = run([os.path.join(HERE, "compare_summary.py"), "--per-kernel-ncu",
                  os.path.join(d, "step1"), os.path.join(d, "step2")])
        rows = {l.split()[1]: l for l in pn.stdout.splitlines() if l.startswith("  ok") or l.startswith("  BAD")}
        text = "ours=      133.3333 ncu=      140.0000 rel=  4.762%"
        if INST not in rows or text not in rows[INST] or not rows[INST].startswith("  BAD"):
            failures.append(f"--per-kernel-ncu {INST}: {rows.get(INST)}; expected BAD {text}")
        open(os.path.join(d, "ncu.csv"), "w").write(ncu_csv(step1 + step2[:2]))
        p = run([os.path.join(HERE, "ncu_split_steps.py"), d, "2"])
        if p.returncode != 1 or "ncu.csv: 5 launches do not split into 2 equal steps" not in p.stderr:
            failures.append(f"uneven split: exit {p.returncode}, {p.stderr}")
        open(os.path.join(d, "ncu.csv"), "w").write(ncu_csv(step1 + [(8, 1, 1, 1), (4, 1, 1, 1), (8, 1, 1, 1)]))
        p = run([os.path.join(HERE, "ncu_split_steps.py"), d, "2"])
        if p.returncode != 1 or "step 2 launches other configurations" not in p.stderr:
            failures.append(f"different steps: exit {p.returncode}, {p.stderr}")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
