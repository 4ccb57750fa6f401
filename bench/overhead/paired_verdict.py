"""bench/overhead/paired_verdict.py — the verdict rule of the interleaved
overhead runs against a target excess (monitor_overhead.sh, issue 15;
bench/metrics/pm_overhead.sh, issue 14): decided only when most rounds agree.
MET when the upper quartile of the paired excess is within the target (with
at least `min_rounds` rounds), NOT MET when the lower quartile is above it,
else UNDECIDED (the H200's step moves +-15 % run to run, far more than the
1 % looked for)."""
import statistics


def verdict(excess_pct, target_pct=1.0, min_rounds=8):
    """Returns (quartiles [q1, q2, q3], "MET" | "NOT MET" | "UNDECIDED")."""
    ex = list(excess_pct)
    q = statistics.quantiles(ex, n=4) if len(ex) >= 2 else [ex[0]] * 3
    v = ("MET" if q[2] <= target_pct and len(ex) >= min_rounds else
         "NOT MET" if q[0] > target_pct else "UNDECIDED")
    return q, v
