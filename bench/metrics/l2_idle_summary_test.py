#!/usr/bin/env python3
"""bench/metrics/l2_idle_summary_test.py — l2_idle_summary.py on synthetic
input whose answer is known.

ncu's CSV (-k victim) holds two victim launches after gap 0 (grid 2048) and
one after gap 2 (grid 2050), plus a `dirty` row that must be ignored; the
report gives the victim's per-configuration means and ranges. The summary
must print ncu's mean per gap, ours with its [min, max] and sample count,
"-" where a side has no value, and say so when a variant has no files.
Run by ctest (bench_l2_idle_summary)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
W = "dram__bytes_write.sum"
T = "gpu__time_duration.sum"


def main():
    with tempfile.TemporaryDirectory() as d:
        rows = ['==PROF== noise', '"ID","Kernel Name","Grid Size","dram__bytes_write.sum","gpu__time_duration.sum"',
                '"","","","byte","nsecond"',
                '"0","dirty(float*, unsigned long)","(1024, 1, 1)","40,000,000","9,000"',
                '"1","victim(const float*, const float*, float*, unsigned long)","(2048, 1, 1)","4,000,000","8,000"',
                '"2","victim(const float*, const float*, float*, unsigned long)","(2048, 1, 1)","6,000,000","8,200"',
                '"3","victim(const float*, const float*, float*, unsigned long)","(2050, 1, 1)","5,000,000","7,000"']
        open(os.path.join(d, "l2_ncuk_dirty.csv"), "w").write("\n".join(rows) + "\n")
        report = {"kernels": [
            {"name": "_Z5dirtyPfm", "metrics_by_config": [{"grid": [1024, 1, 1], "metrics": {W: 1.0}}]},
            {"name": "_Z6victimPKfS0_Pfm", "metrics_by_config": [
                {"grid": [2048, 1, 1], "metrics": {W: 5500000.0, T: 8100.0},
                 "metrics_range": {W: [5400000.0, 5600000.0], T: [8000.0, 8200.0]}, "metric_samples": 2}]}]}
        json.dump(report, open(os.path.join(d, "l2_ours_dirty.json"), "w"))
        p = subprocess.run([sys.executable, os.path.join(HERE, "l2_idle_summary.py"), d],
                           capture_output=True, text=True)
        out = p.stdout
        fails = []
        if p.returncode != 0:
            fails.append(f"exit {p.returncode}: {p.stderr}")
        want = ["  0 write B       5,000,000              -      5,500,000  [5,400,000, 5,600,000] (2)",
                "  0 ns                8,100              -          8,100  [8,000, 8,200] (2)",
                "  2 write B       5,000,000              -              -  ",
                "## clean: no victim rows (missing or empty files)"]
        for w in want:
            if w not in out.splitlines():
                fails.append(f"missing line {w!r}")
        if "1,024" in out or "40,000,000" in out:
            fails.append("the dirty kernel's row was counted as a victim")
        bad = subprocess.run([sys.executable, os.path.join(HERE, "l2_idle_summary.py")],
                             capture_output=True, text=True)
        if bad.returncode != 2:
            fails.append(f"no argument: exit {bad.returncode}, expected 2")
        if fails:
            print(out)
            print("\n".join("FAIL: " + f for f in fails))
            return 1
        print("ok: per-gap means, ours' ranges, missing sides and variants")
        return 0


if __name__ == "__main__":
    sys.exit(main())
