#!/usr/bin/env python3
"""Compares metric sets from metrics_harness --json (spread or kernel replay,
one set per kernel configuration) with ncu --csv output of the same workload
profiled one launch per configuration. Sets are matched by kernel name and
order of appearance (name up to '(' without a leading 'void ': saxpy_loop's
two configurations appear in the same order in both).

usage: compare_spread.py OURS.jsonl NCU.csv [--judge REGEX] [--tolerance-pct 2]
                         [--near-zero 0.5] [--out REPORT.json] [--label NAME]

Tolerances as compare_ncu.py (issue 4): ±2% relative, ±0.5 points for
percentages below 5%; gpu__time_duration.sum is reported, not judged.
Incomplete sets (passes_collected < passes, no values) are listed and fail
when their kernel is judged. Exit 0 when every judged value agrees.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_ncu import UNJUDGED, agrees, parse_ncu_csv, parse_ours  # noqa: E402


def base_name(name):
    """'void ns::k<1>(float*)' and 'k<1>(const float *)' -> 'k<1>': ncu's CSV
    leaves the namespace out, the demangled name has it."""
    n = name.strip()
    if n.startswith("void "):
        n = n[5:]
    n = n.split("(", 1)[0].strip()
    head, sep, tmpl = n.partition("<")
    return head.rsplit("::", 1)[-1] + sep + tmpl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("ncu_csv")
    ap.add_argument("--judge", default=r"^(matmul_naive|matmul_tiled|transpose_shared<0>)$")
    ap.add_argument("--tolerance-pct", type=float, default=2.0)
    ap.add_argument("--near-zero", type=float, default=0.5)
    ap.add_argument("--out", default="")
    ap.add_argument("--label", default="ours")
    args = ap.parse_args()

    sets, summary = parse_ours(args.ours)
    with open(args.ncu_csv) as f:
        theirs = parse_ncu_csv(f.read())
    ncu_by_name = {}
    for lid in sorted(theirs):
        ncu_by_name.setdefault(base_name(theirs[lid]["name"]), []).append(theirs[lid])
    seen = {}
    failures, judged, report = 0, 0, []
    for s in sets:
        name = base_name(s.get("demangled") or s["name"])
        k = seen.get(name, 0)
        seen[name] = k + 1
        is_judged = re.search(args.judge, name) is not None
        complete = s.get("passes_collected", s.get("passes")) >= s.get("passes", 0) and s.get("metrics")
        span = f"launches={s.get('launches', 1)} corr={s.get('first_correlation')}..{s.get('correlation')}"
        if not complete:
            print(f"{'BAD' if is_judged else 'n/j'} {name}#{k}: incomplete "
                  f"({s.get('passes_collected')}/{s.get('passes')} passes, {span})")
            if is_judged:
                failures += 1
            continue
        cand = ncu_by_name.get(name, [])
        if k >= len(cand):
            print(f"{'BAD' if is_judged else 'n/j'} {name}#{k}: no ncu launch to compare with")
            if is_judged:
                failures += 1
            continue
        t = cand[k]
        print(f"--- {name}#{k} ({span})")
        for metric, ours_v in s["metrics"].items():
            theirs_v = t["metrics"].get(metric)
            if theirs_v is None:
                print(f"BAD {name}: ncu lacks {metric}")
                failures += 1 if is_judged else 0
                continue
            ok, rel = agrees(metric, ours_v, theirs_v, t["units"].get(metric, ""), args.tolerance_pct,
                             args.near_zero)
            j = is_judged and metric not in UNJUDGED
            if j:
                judged += 1
                failures += 0 if ok else 1
            flag = "ok " if ok else ("BAD" if j else "n/j")
            print(f"{flag} {name[:24]:24} {metric:66} {args.label}={ours_v:14.4f} ncu={theirs_v:14.4f} "
                  f"rel={rel:7.3f}%")
            report.append({"kernel": name, "occurrence": k, "metric": metric, "ours": ours_v, "ncu": theirs_v,
                           "rel_pct": rel, "ok": ok, "judged": j, "launches": s.get("launches", 1)})
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"label": args.label, "summary": summary, "values": report, "judged": judged,
                       "failures": failures}, f, indent=1)
    print(f"{args.label}: judged {judged} values, {failures} outside tolerance; sets {len(sets)}; "
          f"summary {json.dumps(summary)}")
    return 0 if failures == 0 and judged > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
