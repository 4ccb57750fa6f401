#!/usr/bin/env python3
"""Hardware metrics on a real PyTorch step: sightline's sequence replay vs ncu.

usage: pytorch_vs_ncu.py SIGHTLINE SCRIPT VARIANT --out DIR [--steps 30 --warmup 10]
                         [--top 5] [--ncu-steps N] [--ncu-replay kernel|application]
                         [--ncu-metrics M1,M2] [--ours-metrics SET|M1,M2]
                         [--ours-sequences N] [--ncu-all-kernels] [--reuse-ours DIR]
                         [--ncu PATH]

1. `sightline profile --metrics full --metrics-replay sequence` (or
   --ours-metrics, --ours-replay; --ours-sequences N: N sets per launch
   position, `--metrics-sequences N`, averaged per configuration) runs the
   example (examples/pytorch/SCRIPT --variant VARIANT), timed; `sightline
   analyze --format json` gives kernels[].metrics and the coverage
   (summary.metrics_coverage_pct).
2. The TOP heaviest kernels (by steady-state kernel time) that have metrics
   are profiled by `ncu --clock-control none --cache-control none` with the
   same metric list, `--launch-skip` past the warm-up, `--launch-count`
   launches of those kernels, kernel names mangled as ours.
3. Per kernel name and launch configuration (grid and block dimensions,
   x, y and z: before 2026-12-06 only their products, which merged e.g. a
   batch-norm kernel's (8, 128, 1) and (16, 64, 1) launches on ncu's side
   while ours kept one of them), the mean
   of each metric is compared: within 2 % of ncu, or 0.5 points for
   percentages both under 5 %; gpu__time_duration.sum is listed, not judged
   (clocks are not locked). Prints one line per value, the counts, the
   coverage and both wall times. Writes DIR/compare.json.
Exit 0 when every judged value agrees, 1 otherwise, 77 without ncu.
"""
import argparse
import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "gpu_metrics"))
from compare_ncu import agrees, run_timed  # noqa: E402

UNJUDGED = {"gpu__time_duration.sum"}


def parse_ncu_raw(text):
    """ncu --csv --page raw: a header row of columns, a units row, one row per
    profiled launch. Returns [(kernel name, grid label, block label, {metric:
    value}, {metric: unit})], the labels from config_label."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units = rows[0], rows[1] if len(rows) > 1 else []
    out = []
    col = {h: i for i, h in enumerate(header)}
    for row in rows[1:]:
        if len(row) != len(header) or not row[col["ID"]].strip():
            continue
        metrics = {}
        for i, h in enumerate(header):
            if "__" not in h:
                continue
            t = row[i].replace(",", "").strip()
            try:
                metrics[h] = float(t)
            except ValueError:
                pass
        dims = lambda s: [int(x) for x in re.findall(r"\d+", s)] if s else []
        out.append((row[col["Kernel Name"]], config_label(dims(row[col.get("Grid Size", 0)])),
                    config_label(dims(row[col.get("Block Size", 0)])), metrics,
                    {h: units[i] for i, h in enumerate(header) if i < len(units)}))
    return out


def prod(v):
    n = 1
    for x in v:
        n *= int(x)
    return n


def label_order(label):
    """Sort key of a config_label: by its size, then its text."""
    return (prod(re.findall(r"\d+", str(label))), str(label))


def config_label(dims):
    """A grid's or block's (x, y, z) as one key: the product where y = z = 1
    (as earlier compare.json files wrote every configuration), else "XxYxZ"."""
    d = (list(dims) + [1, 1, 1])[:3] if dims else []
    if not d:
        return 0
    return prod(d) if d[1] == 1 and d[2] == 1 else "x".join(str(x) for x in d)


def ncu_selection(report, top, warmup, ncu_steps, all_kernels):
    """ncu's kernel filter and launch window: (filter arguments, launches per
    step, --launch-skip, --launch-count). Per step from the analysed window
    (steady state): the top kernels' launches, or with all_kernels every
    kernel's (no -k: ncu measures each kernel of the step, as sequence
    passes do, and the comparison still reads the top kernels)."""
    steps = max(1, int(report["summary"]["steps"].get("count") or 1))
    counted = report["kernels"] if all_kernels else top
    per_step = max(1, round(sum(k["count"] for k in counted) / steps))
    select = [] if all_kernels else [
        "-k", "regex:^(" + "|".join(re.escape(k["name"]) for k in top) + ")$"]
    return select, per_step, per_step * (warmup + 2), per_step * ncu_steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sightline")
    ap.add_argument("script")
    ap.add_argument("variant")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--ncu-steps", type=int, default=1,
                    help="steady-state steps ncu profiles (launches of the top kernels in that many "
                         "steps, after warm-up + 2 steps): the same launches ours are means over")
    ap.add_argument("--ncu-all-kernels", action="store_true",
                    help="ncu measures every kernel of the step (no -k), as sequence passes do; "
                         "the top kernels are compared")
    ap.add_argument("--ncu-replay", default="kernel", choices=["kernel", "application"],
                    help="ncu --replay-mode: 'application' measures kernels in place, as our "
                         "sequence replay does (the app runs once per pass)")
    ap.add_argument("--ncu-metrics", default="",
                    help="comma-separated subset of our metrics for ncu to collect (fewer passes: "
                         "what application replay, one app run per pass, can afford)")
    ap.add_argument("--reuse-ours", default="",
                    help="take ours.json (and the wall time) from this earlier --out directory "
                         "instead of profiling again, so two ncu replay modes meet one run of ours")
    ap.add_argument("--ours-replay", default="sequence", choices=["sequence", "kernel", "spread"],
                    help="sightline's --metrics-replay (sequence measures the app's own launches in "
                         "place; kernel replays each measured launch as ncu's default does)")
    ap.add_argument("--ours-metrics", default="full",
                    help="sightline's --metrics (a set name or a comma-separated list): the "
                         "passes' schedule depends on it, as ncu's does on its list")
    ap.add_argument("--ours-sequences", type=int, default=1,
                    help="sequence replay: sets per launch position (--metrics-sequences), "
                         "to average as many steps as --ncu-steps does")
    ap.add_argument("--ours-args", default="",
                    help="more `sightline profile` options (shell words), e.g. kernel replay's "
                         "'--metrics-launches 3 --capture-range cudaProfilerApi'")
    ap.add_argument("--ours-app-args", default="",
                    help="more arguments for the script in our run only (ncu's run is left as "
                         "it is), e.g. '--cuda-profiler-range' for a cudaProfilerApi capture")
    ap.add_argument("--ncu", default="/usr/local/cuda/bin/ncu")
    ap.add_argument("--tolerance-pct", type=float, default=2.0)
    ap.add_argument("--near-zero", type=float, default=0.5)
    ap.add_argument("--min-judged", type=int, default=1,
                    help="fail unless at least this many values were compared (a name mismatch "
                         "or an empty ncu CSV judges nothing)")
    ap.add_argument("--compare-only", action="store_true",
                    help="compare DIR/ours.json and DIR/ncu.csv of an earlier run, run nothing")
    args = ap.parse_args()
    if args.compare_only:
        report = json.load(open(os.path.join(args.out, "ours.json")))
        text = open(os.path.join(args.out, "ncu.csv")).read()
        prev = {}
        if os.path.exists(os.path.join(args.out, "compare.json")):
            prev = json.load(open(os.path.join(args.out, "compare.json"))).get("summary", {})
        return compare(args, report, text, prev.get("ours_wall_s", 0), prev.get("ncu_wall_s", 0), [])
    if not shutil.which(args.ncu) and not os.path.exists(args.ncu):
        print("SKIPPED: ncu not found at", args.ncu)
        return 77
    os.makedirs(args.out, exist_ok=True)
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                            "pytorch")
    app = ["python3", args.script, "--variant", args.variant, "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    if args.reuse_ours:
        report = json.load(open(os.path.join(args.reuse_ours, "ours.json")))
        json.dump(report, open(os.path.join(args.out, "ours.json"), "w"))
        prev_path = os.path.join(args.reuse_ours, "compare.json")
        ours_s = (json.load(open(prev_path)).get("summary", {}).get("ours_wall_s", 0)
                  if os.path.exists(prev_path) else 0)
        steps_line = []
    else:
        trace = os.path.join(args.out, "ours.sltrace")
        env_debug = dict(os.environ, SIGHTLINE_METRICS_DEBUG="1")
        t0 = time.monotonic()
        seq = ["--metrics-sequences", str(args.ours_sequences)] if args.ours_sequences > 1 else []
        p = subprocess.run([args.sightline, "profile", "--metrics", args.ours_metrics, "--metrics-replay",
                            args.ours_replay] + seq + shlex.split(args.ours_args) + ["-o", trace, "--"] +
                           app + shlex.split(args.ours_app_args), capture_output=True, text=True,
                           cwd=examples, env=env_debug)
        ours_s = time.monotonic() - t0
        open(os.path.join(args.out, "ours.stderr"), "w").write(p.stderr)
        open(os.path.join(args.out, "ours.stdout"), "w").write(p.stdout)
        if p.returncode != 0:
            print("FAIL: sightline profile exited", p.returncode, p.stderr[-3000:])
            return 1
        steps_line = [l for l in p.stdout.splitlines() if l.startswith("SIGHTLINE_STEPS")]
        _, a = run_timed([args.sightline, "analyze", trace, "--format", "json", "-o",
                      os.path.join(args.out, "ours.json")])
        if a.returncode != 0:
            print("FAIL: analyze", a.stderr[-2000:])
            return 1
        report = json.load(open(os.path.join(args.out, "ours.json")))
    coverage = report["summary"].get("metrics_coverage_pct")
    kernels = [k for k in report["kernels"] if k.get("metrics") and k["class"] == "compute"]
    kernels.sort(key=lambda k: -k["total_ns"])
    top = kernels[:args.top]
    if not top:
        print("FAIL: no kernel has metrics; coverage", coverage)
        print(p.stderr[-3000:])
        return 1
    metric_names = sorted(top[0]["metrics"].keys())
    if args.ncu_metrics:
        wanted = [m for m in args.ncu_metrics.split(",") if m]
        missing = [m for m in wanted if m not in metric_names]
        if missing:
            print("FAIL: --ncu-metrics names metrics ours did not collect:", ", ".join(missing))
            return 1
        metric_names = wanted
    names = [k["name"] for k in top]
    select, per_step, skip, count = ncu_selection(report, top, args.warmup, args.ncu_steps,
                                                  args.ncu_all_kernels)
    ncu_cmd = [args.ncu, "--clock-control", "none", "--cache-control", "none",
               "--replay-mode", args.ncu_replay, "--metrics", ",".join(metric_names),
               "--kernel-name-base", "mangled", "--print-kernel-base", "mangled"] + select + [
               "--launch-skip", str(skip), "--launch-count", str(count),
               "--csv", "--page", "raw"] + app
    print(f"ncu: {per_step} launches of {'every kernel' if args.ncu_all_kernels else 'the top kernels'} "
          f"per step (top {len(names)} compared), skipping {skip}, --replay-mode {args.ncu_replay}",
          flush=True)
    ncu_s, n = run_timed(ncu_cmd, cwd=examples)
    open(os.path.join(args.out, "ncu.csv"), "w").write(n.stdout)
    open(os.path.join(args.out, "ncu.stderr"), "w").write(n.stderr)
    if n.returncode != 0:
        print("FAIL: ncu exited", n.returncode, n.stderr[-2000:])
        return 1
    return compare(args, report, n.stdout, ours_s, ncu_s, steps_line)


def compare(args, report, ncu_text, ours_s, ncu_s, steps_line):
    coverage = report["summary"].get("metrics_coverage_pct")
    kernels = [k for k in report["kernels"] if k.get("metrics") and k["class"] == "compute"]
    kernels.sort(key=lambda k: -k["total_ns"])
    top = kernels[:args.top]
    metric_names = sorted(top[0]["metrics"].keys())
    if args.ncu_metrics:
        metric_names = [m for m in args.ncu_metrics.split(",") if m in metric_names]
    names = [k["name"] for k in top]
    launches = parse_ncu_raw(ncu_text)
    # ncu: mean per (name, grid size, block size).
    theirs = {}
    for name, grid, block, m, units in launches:
        acc = theirs.setdefault((name, grid, block), {"n": 0, "sum": {}, "units": units})
        acc["n"] += 1
        for k, v in m.items():
            acc["sum"][k] = acc["sum"].get(k, 0.0) + v
    failures = judged = 0
    rows = []
    for k in top:
        ours_by_key = {}
        if k.get("metrics_by_config"):
            for c in k["metrics_by_config"]:
                key = (config_label(c["grid"]), config_label(c["block"]))
                if key in ours_by_key:  # ncu's CSV has no shared memory column to tell them apart
                    print(f"note {k['short_name'][:40]} grid {key[0]} block {key[1]}: several of our "
                          f"configurations (shared memory differs); the last is compared")
                ours_by_key[key] = c["metrics"]
        for (name, grid, block), acc in sorted(theirs.items(), key=lambda kv: (
                kv[0][0], label_order(kv[0][1]), label_order(kv[0][2]))):
            if name != k["name"]:
                continue
            ours_m = ours_by_key.get((grid, block), k["metrics"] if not ours_by_key else None)
            if ours_m is None:
                print(f"n/a  {k['short_name'][:40]} grid {grid} block {block}: no metrics of ours for "
                      f"this configuration")
                continue
            for metric in metric_names:
                if metric not in acc["sum"] or ours_m.get(metric) is None:
                    continue
                ncu_v = acc["sum"][metric] / acc["n"]
                ok, rel = agrees(metric, ours_m[metric], ncu_v, acc["units"].get(metric, ""),
                                 args.tolerance_pct, args.near_zero)
                judge = metric not in UNJUDGED
                judged += judge
                failures += judge and not ok
                rows.append({"kernel": name, "grid": grid, "block": block, "ncu_launches": acc["n"],
                             "metric": metric, "ours": ours_m[metric], "ncu": ncu_v, "rel_pct": rel,
                             "ok": ok, "judged": judge})
                flag = "ok " if ok else ("BAD" if judge else "n/j")
                print(f"{flag} {k['short_name'][:36]:36} g{str(grid):<6} b{str(block):<5} {metric[:62]:62} "
                      f"ours={ours_m[metric]:14.4f} ncu={ncu_v:14.4f} rel={rel:7.3f}%")
    summary = {"coverage_pct": coverage, "ours_wall_s": ours_s, "ncu_wall_s": ncu_s,
               "ncu_launches": len(launches), "kernels": names, "metrics": len(metric_names),
               "judged": judged, "failures": failures, "steps_line": steps_line}
    json.dump({"summary": summary, "values": rows}, open(os.path.join(args.out, "compare.json"), "w"),
              indent=1)
    print(f"coverage {coverage}% of steady-state kernel time; judged {judged} values, {failures} "
          f"outside tolerance")
    print(f"wall: sightline (every kernel of the step, {len(metric_names)} metrics) {ours_s:.1f} s; "
          f"ncu ({len(launches)} launches of the top {len(names)} kernels) {ncu_s:.1f} s")
    if judged < args.min_judged:
        print(f"FAIL: only {judged} values compared, fewer than --min-judged {args.min_judged}")
        return 1
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
